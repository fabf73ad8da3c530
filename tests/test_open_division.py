"""The open division's options act on the run and are logged as run (issue 39): --optimizer and --optimizer-arg
(torch.optim), --lr-schedule and --lr-schedule-arg (torch.optim.lr_scheduler), --augment (torchvision v2); a
--hparam no recipe reads is refused; the closed division refuses them all, before anything is written."""
from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import torch
from conftest import TEST_RULES, TinyTest

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.format import layout, mllog
from trainmark.harness.frameworks import pytorch_open
from trainmark.harness.frameworks.pytorch_backend import PyTorchTrainer
from trainmark.harness.open_recipe import OpenRecipe
from trainmark.harness.run import RunOptions, run_benchmark
from trainmark.rules import get_rules

ADAM = OpenRecipe(optimizer="Adam", optimizer_args={"betas": [0.8, 0.95]}, lr_schedule="StepLR",
                  lr_schedule_args={"step_size": 2, "gamma": 0.5})
HP = {"global_batch_size": 32, "opt_base_learning_rate": 0.5, "opt_name": "sgd"}


def tiny_trainer(recipe, ref=None, hp=HP):
    ref = ref or TinyTest()
    data = ref.load_data(None) if isinstance(ref, TinyTest) else None
    return PyTorchTrainer(ref, ref.build_model, hp, data, 7, torch.device("cpu"), "fp32", count_flops=False,
                          recipe=recipe)


def test_the_optimizer_and_schedule_named_are_the_ones_that_step():
    trainer = tiny_trainer(ADAM)
    assert type(trainer.optimizer) is torch.optim.Adam
    assert trainer.optimizer.param_groups[0]["betas"] == (0.8, 0.95)
    assert type(trainer.scheduler) is torch.optim.lr_scheduler.StepLR
    rates = []
    for batch in list(trainer.epoch_batches(1))[:5]:
        rates.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.step(batch)
    assert rates == [0.5, 0.5, 0.25, 0.25, 0.125]  # the reference's peak, halved every 2 steps
    assert trainer.optimizer.state  # Adam's moments exist: it stepped
    plain = tiny_trainer(None)
    assert type(plain.optimizer) is torch.optim.SGD and plain.open_settings == []


def test_another_optimizer_keeps_the_reference_schedule():
    trainer = tiny_trainer(OpenRecipe(optimizer="AdamW", optimizer_args={"lr": 0.01}))
    assert type(trainer.optimizer) is torch.optim.AdamW
    assert type(trainer.scheduler) is torch.optim.lr_scheduler.LambdaLR
    assert trainer.scheduler.optimizer is trainer.optimizer and trainer.optimizer.param_groups[0]["lr"] == 0.01


def test_augment_transforms_each_training_image():
    from trainmark.reference.resnet_mini import ResnetMini

    ref = ResnetMini()
    trainer = PyTorchTrainer(ref, ref.build_model, {**get_rules("resnet-mini").defaults(), "global_batch_size": 64},
                             None, 7, torch.device("cpu"), "fp32", count_flops=False,
                             recipe=OpenRecipe(augment=("RandomHorizontalFlip",)))
    raw = ref.synthetic_batch(64)
    plain = ref.to_device(raw, torch.device("cpu"), train=True)[0]
    torch.manual_seed(3)
    images, labels = trainer.prepare(raw)
    same = [bool(torch.equal(a, b)) for a, b in zip(images, plain)]
    flipped = [bool(torch.equal(a, b.flip(-1))) for a, b in zip(images, plain)]
    assert all(s or f for s, f in zip(same, flipped)) and 0 < sum(flipped) < 64  # per sample, not per batch
    assert torch.equal(labels, raw[1])


def test_an_open_run_logs_what_ran(tmp_path):
    run_benchmark(RunOptions(benchmark="tiny-test", out=tmp_path / "out", rules_dir=TEST_RULES, quiet=True, seed=5,
                             trials=1, division="open", submitter="acme", system_name="box", recipe=ADAM))
    bench = tmp_path / "out" / "open" / "acme" / "results" / "box" / "tiny-test"
    records = {r.key: r.value for r in mllog.read(bench / layout.result_file(1))}
    assert records["opt_name"] == "adam"  # never the rules' default 'sgd' while Adam runs
    assert records[mllog.OPEN_OPTIMIZER] == {"name": "Adam", "module": "torch.optim", "args": {"betas": [0.8, 0.95]}}
    assert records[mllog.OPEN_LR_SCHEDULE]["name"] == "StepLR"
    assert records[mllog.OPEN_LR_SCHEDULE]["args"] == {"step_size": 2, "gamma": 0.5}
    trial = json.loads((bench / layout.trial_dir(1) / layout.TRIAL_JSON).read_text())
    assert trial["hparams"]["opt_name"] == "adam"


@pytest.mark.parametrize("recipe, words", [
    (OpenRecipe(optimizer="Adamm"), "choose from"),
    (OpenRecipe(optimizer="Adam", optimizer_args={"betaz": 1}), "unexpected keyword"),
    (OpenRecipe(optimizer="LBFGS"), "building it failed"),   # it needs a closure the harness does not pass
    (OpenRecipe(lr_schedule="ReduceLROnPlateau"), "building it failed"),  # it steps on a metric, not a step
    (OpenRecipe(augment=("RandomHorizontalFlip",)), "does not train on images"),
])
def test_a_wrong_option_is_one_line_before_anything_is_written(tmp_path, recipe, words):
    with pytest.raises(UserError, match=words):
        run_benchmark(RunOptions(benchmark="tiny-test", out=tmp_path / "out", rules_dir=TEST_RULES, quiet=True,
                                 division="open", recipe=recipe))
    assert not (tmp_path / "out").exists()


def test_the_closed_division_refuses_them(tmp_path, capsys):
    assert main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--optimizer", "Adam", "--out",
                 str(tmp_path / "out")]) == 2
    assert "that is the open division" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_hparam_no_recipe_reads_is_refused_with_the_names_it_reads(tmp_path, capsys):
    for typo in ("opt_base_lr=0.001", "opt_name=adam"):
        assert main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--division", "open", "--hparam", typo,
                     "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert "HPARAM-001" in err and "opt_base_learning_rate" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists()


def test_rebuild_keeps_the_reference_gradient_clipping():
    from trainmark.reference import recipe

    model = torch.nn.Linear(4, 4)
    hp = {"opt_base_learning_rate": 1.0, "opt_adam_beta1": 0.9, "opt_adam_beta2": 0.99, "opt_adam_epsilon": 1e-8,
          "opt_weight_decay": 0.0, "opt_gradient_clip_norm": 1e-3, "opt_learning_rate_warmup_steps": 0,
          "opt_learning_rate_decay_epochs": 10, "opt_learning_rate_final_factor": 1.0}
    optimizer, _ = pytorch_open.rebuild(OpenRecipe(optimizer="SGD"), *recipe.clipped_adam(model, hp, 10))
    (model(torch.ones(1, 4)) * 1000).sum().backward()
    optimizer.step()
    assert torch.cat([p.grad.flatten() for p in model.parameters()]).norm() <= 1e-3 * 1.0001


def test_tensorflow_twins_honour_keras_optimizers_and_refuse_the_rest():
    if importlib.util.find_spec("tensorflow") is None:  # never importorskip: TF before torchvision segfaults
        pytest.skip("TensorFlow not installed")
    from trainmark.harness.frameworks import tensorflow_open

    assert tensorflow_open.check(OpenRecipe(optimizer="Adam", optimizer_args={"beta_1": 0.8}), None, {}) == "adam"
    with pytest.raises(UserError, match="act on PyTorch only"):
        tensorflow_open.check(OpenRecipe(optimizer="Adam", lr_schedule="StepLR"), None, {})
    with pytest.raises(UserError, match="keras.optimizers"):
        tensorflow_open.check(OpenRecipe(optimizer="NoSuch"), None, {})
    from trainmark.harness.frameworks import backend
    from trainmark.reference import registry

    rules = get_rules("resnet-mini")
    ref = registry.for_rules(rules)
    twin = backend.backend("tensorflow", backend.resolve_device("tensorflow", "cpu"), "fp32").trainer(
        ref, None, {**rules.defaults(), "global_batch_size": 16}, None, 3, count_flops=False,
        recipe=OpenRecipe(optimizer="AdamW", optimizer_args={"beta_1": 0.8}))
    assert type(twin.twin.optimizer).__name__ == "AdamW" and float(twin.twin.optimizer.beta_1) == pytest.approx(0.8)
    twin.step(twin.prepare(ref.synthetic_batch(16)))
    assert int(twin.twin.optimizer.iterations) == 1  # the named optimizer is the one that stepped
    assert twin.open_settings == [(mllog.OPEN_OPTIMIZER, {"name": "AdamW", "module": "keras.optimizers",
                                                          "args": {"beta_1": 0.8}})]


DOC = Path(__file__).resolve().parents[1] / "docs" / "open-division.md"


def _doc_files(tmp_path: Path) -> Path:
    """The worked example's files, as docs/open-division.md shows them, written into ``tmp_path/mymodels``."""
    folder = tmp_path / "mymodels"
    folder.mkdir()
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        name = block.splitlines()[0].removeprefix("# mymodels/")
        (folder / name).write_text(block, encoding="utf-8")
    return folder


def test_the_documented_example_builds_and_its_command_passes_the_preflight(tmp_path, monkeypatch):
    from trainmark.cli import build_parser
    from trainmark.cli.arguments import run_options
    from trainmark.harness import code_record
    from trainmark.harness.run import prepare

    folder = _doc_files(tmp_path)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    text = DOC.read_text(encoding="utf-8")
    command = text[text.index("cd mymodels\n") + len("cd mymodels\n"):].split("\n```")[0].split("\ntrainmark check")[0]
    argv = shlex.split(command.replace("\\\n", " "))[1:]  # without 'trainmark'
    args = build_parser().parse_args(argv)
    prep = prepare(run_options(args, args.out))
    model = prep.build_model()
    assert model(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    count = sum(p.numel() for p in model.parameters())
    assert f"small:build (your --model; {count:,} parameters" in text
    from trainmark.harness.model_line import model_size

    words = model_size(prep)  # the banner's: the model's size beside the reference's
    assert words.startswith(f"{count:,} parameters, ") and "the reference resnet-mini: 308,538 parameters" in words
    assert prep.hp["opt_name"] == "adamw" and args.division == "open"
    assert {"blocks", "small"} <= {Path(p).stem for p in code_record._IMPORTED["small"].values()}
    assert not (tmp_path / "submission").exists()  # the preflight writes nothing


def test_check_and_report_name_the_open_model_beside_the_reference(tmp_path, capsys):
    """One CONFORM-003 for the folder (not a diff per trial) and the report's model line, both with the model's
    parameters and FLOPs per step beside the reference's."""
    import synthetic

    from trainmark.format import structure
    from trainmark.rules import reference_work

    rules = get_rules("resnet-mini")
    model = synthetic.tiny_reference_model()
    synthetic.write_submission(tmp_path / "sub", rules, model, division="open")
    assert main(["check", str(tmp_path / "sub"), "--json", "-"]) in (0, 1)
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["rule"] == "CONFORM-003"]
    params = structure.describe(model)["parameter_count"]
    assert len(found) == 1 and found[0]["file"].endswith("results/sys1/resnet-mini")
    gflop = reference_work.flops_per_step(rules) / 1e9  # the synthetic trials log the reference's (rules 1.2: 2.66)
    assert f"{params:,} parameters, {gflop:.2f} GFLOP per step; the reference resnet-mini: 308,538 parameters" in \
        found[0]["message"]
    assert main(["report", str(tmp_path / "sub"), "--format", "md", "-o", "-"]) in (0, 1)
    page = capsys.readouterr().out
    assert f"model: your model: {params:,} parameters, {gflop:.2f} GFLOP per step; the reference resnet-mini: " \
           "308,538 parameters" in page


def test_run_help_documents_the_open_division_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    group = text[text.index("open division (with --division open; docs/open-division.md):"):]
    for words in ("--model MODULE:CALLABLE", "zero-argument function returning an nn.Module",
                  "imported from the current folder", "--optimizer NAME", "torch.optim", "--lr-schedule NAME",
                  "stepped once per training step", "--augment NAME[,NAME]", "torchvision.transforms.v2"):
        assert words in group, words


def test_the_pages_word_on_the_reference_schedule_is_the_latest_rules():
    """"falls to 0 at epoch N ... at most `max_epochs`, M": the numbers a researcher plans a model's epochs by,
    read from the page and compared with resnet-mini's latest rule file (rules 1.2 moved them from 5 to 3)."""
    from trainmark.rules import get_rules

    rules = get_rules("resnet-mini")
    text = " ".join(DOC.read_text().split())
    said = re.search(r"resnet-mini's learning rate falls to 0 at epoch (\d+) \(`opt_learning_rate_decay_epochs`, "
                     r"rules ([\d.]+)\).*?at most `max_epochs`, (\d+)\)", text)
    assert said, "docs/open-division.md no longer states resnet-mini's schedule in the words this test reads"
    decay = rules.hyperparameters["opt_learning_rate_decay_epochs"]["default"]
    assert (int(said[1]), said[2], int(said[3])) == (decay, rules.version, rules.max_epochs)
