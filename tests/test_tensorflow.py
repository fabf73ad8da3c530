"""--framework tensorflow (issue 17): the Keras twins are the PyTorch references, tensor for tensor.

Without TensorFlow only the missing-framework error is tested; scripts/install.sh and CI install it.
"""
import importlib.util
import json
import shutil

import numpy as np
import pytest
import torch

from trainmark.cli import main
from trainmark.format import structure

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="TensorFlow not installed (pip install -e '.[tensorflow]')")
MINIS = ["resnet-mini", "vgg-mini", "inception-mini"]  # the Fashion-MNIST twins
TWINS = [*MINIS, "transformer-mini", "ds2-mini", "lstm-mini"]
FULL_SIZE_IMAGENET = ["resnet50", "vgg16", "inception-v3"]  # reference/keras_twins/imagenet.py
FULL_SIZE = [*FULL_SIZE_IMAGENET, "transformer", "ds2", "lstm"]
# The full-size sequence models' FLOPs are compared on a smaller step than the rules': PyTorch's count runs a
# real step where the meta device cannot (attention, GRUs, LSTMs), and TensorFlow's traces recurrent layers
# unrolled, frame by frame (the lstm's two layers over 128-token windows). ds2's twin is traced on two short
# cuts of its utterances and extrapolated (at the rules' 12 s both counts are 369,703,910,400 FLOPs at batch 2,
# but PyTorch's real step takes a minute there: 1 s utterances suffice to test the extrapolation, 50 lattice
# units from cuts of 2 and 4). (hyperparameters, reference attributes) per benchmark.
SMALL_STEP = {"transformer": ({"global_batch_size": 16}, {}),
              "ds2": ({"global_batch_size": 2}, {"synthetic_seconds": 1.0, "synthetic_labels": 12}),
              "lstm": ({"global_batch_size": 4}, {"bptt": 8})}


def test_framework_not_installed_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    out = tmp_path / "sub"
    assert main(["run", "resnet-mini", "--framework", "tensorflow", "--out", str(out), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install -e '.[tensorflow]'" in err
    assert not out.exists()


@needs_tf
def test_a_benchmark_without_a_twin_is_refused_before_its_data_is_checked(tmp_path, capsys):
    """A closed run would check the data first (ImageNet's 147 GB of archives, say): a benchmark that no twin
    module names is refused before that, in one line that lists the ones that have a twin."""
    from conftest import TEST_RULES

    out = tmp_path / "sub"
    assert main(["run", "tiny-test", "--framework", "tensorflow", "--rules-dir", str(TEST_RULES), "--data-dir",
                 str(tmp_path / "absent"), "--out", str(out), "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tiny-test has no TensorFlow reference yet" in err
    assert "transformer-mini" in err and "absent" not in err and not out.exists()


def _pair(name):
    """(Keras twin, PyTorch reference) of a benchmark, each freshly initialised."""
    from trainmark.harness.frameworks.tensorflow_backend import keras_model
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    torch.manual_seed(0)
    ref = registry.for_rules(get_rules(name))
    return keras_model(ref), ref.build_model()


@needs_tf
def test_every_trial_of_a_twin_has_the_same_description():
    """Keras names unnamed layers by a process-wide count (``re_lu_17``): a second model of the same twin
    in one process must still describe itself, and fingerprint, as the first (CONFORM-007 compares trials)."""
    from trainmark.reference.keras_twins import weights as keras_weights

    first, second = (keras_weights.describe(_pair("resnet-mini")[0]) for _ in range(2))
    assert first["fingerprint"] == second["fingerprint"] and first["modules"] == second["modules"]
    assert any(m["name"].startswith("ReLU#") for m in first["modules"])


@needs_tf
@pytest.mark.parametrize("name", TWINS + FULL_SIZE)
def test_keras_twin_has_the_reference_tensors(name):
    from trainmark.reference.keras_twins import weights as keras_weights

    keras_model, torch_model = _pair(name)
    ours, ref = keras_weights.describe(keras_model), structure.describe(torch_model)
    assert structure.same_tensors(ours, ref), structure.diff(ref, ours, kinds=structure.TENSOR_KINDS)
    assert ours["parameter_count"] == ref["parameter_count"]
    assert ours["fingerprint"] != ref["fingerprint"]  # the modules are Keras layers, and say so


@needs_tf
@pytest.mark.parametrize("name", MINIS)
def test_weights_carried_either_way_give_the_same_logits(name):
    """Keras weights into the PyTorch model, and PyTorch weights into the Keras model: same outputs."""
    from trainmark.reference.keras_twins import weights as keras_weights

    keras_model, torch_model = _pair(name)
    x = np.random.default_rng(1).standard_normal((8, 1, 28, 28)).astype(np.float32)
    arrays, _ = keras_weights.tensors(keras_model)
    torch_model.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()}, strict=True)
    torch_model.eval()
    with torch.no_grad():
        from_torch = torch_model(torch.from_numpy(x)).numpy()
    from_keras = keras_model(x.transpose(0, 2, 3, 1), training=False).numpy()
    np.testing.assert_allclose(from_keras, from_torch, rtol=1e-4, atol=1e-4)

    other_keras, other_torch = _pair(name)
    keras_weights.load(other_keras, {k: v.numpy() for k, v in other_torch.state_dict().items()})
    other_torch.eval()
    with torch.no_grad():
        want = other_torch(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(other_keras(x.transpose(0, 2, 3, 1), training=False).numpy(), want,
                               rtol=1e-4, atol=1e-4)


@needs_tf
@pytest.mark.parametrize("name", FULL_SIZE_IMAGENET)
def test_full_size_weights_carried_either_way_give_the_same_logits(name):
    """torchvision's network and its Keras twin at the reference's resolution, in evaluation mode: the Keras
    weights in torchvision's model, then torchvision's in the Keras model, give the same logits (inception-v3's
    Keras model also returns its auxiliary logits, which torchvision computes in training mode only)."""
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    side = registry.for_rules(get_rules(name)).train_crop
    x = np.random.default_rng(2).standard_normal((2, 3, side, side)).astype(np.float32)
    for direction, keras_model, torch_model in _carried_either_way(name):
        torch_model.eval()
        with torch.no_grad():
            want = torch_model(torch.from_numpy(x)).numpy()
        got = keras_model(x.transpose(0, 2, 3, 1), training=False)
        got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()), err_msg=direction)


def _carried_either_way(name):
    """(direction, Keras model, PyTorch model) twice: the Keras weights in the PyTorch model, then the
    PyTorch weights in the Keras model."""
    from trainmark.reference.keras_twins import weights as keras_weights

    keras_model, torch_model = _pair(name)
    arrays, _ = keras_weights.tensors(keras_model)
    torch_model.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    yield "keras -> torch", keras_model, torch_model
    keras_model, torch_model = _pair(name)
    keras_weights.load(keras_model, {k: v.numpy() for k, v in torch_model.state_dict().items()})
    yield "torch -> keras", keras_model, torch_model


@needs_tf
@pytest.mark.parametrize("name", ["transformer-mini", "transformer"])  # pre-norm, and the full size's post-norm
def test_transformer_weights_carried_either_way_give_the_same_logits(name):
    """Padded sources and targets (every mask in use): the same logits at every real target position."""
    from trainmark.reference import registry
    from trainmark.reference.tf_import import tf
    from trainmark.rules import get_rules

    vocab = registry.for_rules(get_rules(name)).vocab_size
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(4, vocab, (3, 9), generator=g), torch.randint(4, vocab, (3, 7), generator=g)
    src[1, 6:], src[2, 3:], tgt[0, 5:] = 0, 0, 0
    real = (tgt != 0).numpy()
    for direction, keras_model, torch_model in _carried_either_way(name):
        with torch.no_grad():
            want = torch_model.eval()(src, tgt).numpy()
        got = keras_model((tf.constant(src.numpy()), tf.constant(tgt.numpy())), training=False).numpy()
        print(f"{name} {direction}: largest difference {np.abs(got[real] - want[real]).max():.2e}, "
              f"largest logit {np.abs(want[real]).max():.2e}")
        np.testing.assert_allclose(got[real], want[real], rtol=0, atol=1e-4 * float(np.abs(want[real]).max()),
                                   err_msg=direction)


@needs_tf
@pytest.mark.parametrize("name", ["ds2-mini", "ds2"])
def test_ds2_weights_carried_either_way_give_the_same_log_probs(name):
    """Utterances of four lengths (the masks and the backward GRUs' starts in use): the same
    log-probabilities at every valid frame, and the same frame counts."""
    from trainmark.reference import registry
    from trainmark.reference.tf_import import tf
    from trainmark.rules import get_rules

    ref = registry.for_rules(get_rules(name))
    ref.synthetic_seconds = min(ref.synthetic_seconds, 3.0)  # the full size's 12 s utterances only cost CI time
    waves, samples, targets, target_lens = ref.synthetic_batch(4)
    samples = samples - (samples[0] * torch.tensor([0, 5, 9, 2]) // 20)  # 100 %, 75 %, 55 % and 90 % of it
    feats, frames, _, _ = ref.to_device((waves, samples, targets, target_lens), torch.device("cpu"), False)
    for direction, keras_model, torch_model in _carried_either_way(name):
        with torch.no_grad():
            want, want_frames = torch_model.eval()(feats, frames)
        got, got_frames = keras_model((tf.constant(feats.numpy()), tf.constant(frames.numpy())), training=False)
        assert got_frames.numpy().tolist() == want_frames.tolist() and len(set(want_frames.tolist())) == 4
        valid = (torch.arange(want.shape[0])[:, None] < want_frames[None]).numpy()
        print(f"{name} {direction}: largest difference {np.abs(got.numpy()[valid] - want.numpy()[valid]).max():.2e}")
        np.testing.assert_allclose(got.numpy()[valid], want.numpy()[valid], rtol=1e-4, atol=1e-4, err_msg=direction)


@needs_tf
@pytest.mark.parametrize("name", ["lstm-mini", "lstm"])  # one LSTM layer; the full size's two, and 267,736 words
def test_lstm_weights_carried_either_way_give_the_same_nll_and_state(name):
    """Every word class in use (shortlist and both clusters), and a second chunk that starts from the first
    chunk's state (every layer's), as the reference's evaluation carries it: the same NLL of every token
    either way."""
    from trainmark.reference import registry
    from trainmark.reference.tf_import import tf
    from trainmark.rules import get_rules

    ref = registry.for_rules(get_rules(name))
    g = torch.Generator().manual_seed(2)
    tokens, targets = torch.randint(0, ref.vocab_size, (2, 2, 3, 12), generator=g)  # 2 chunks of 3 streams x 12
    targets[0, 0, :4] = torch.tensor([3, ref.cutoffs[0] + 200, ref.cutoffs[1] + 500, ref.vocab_size - 1])
    largest = 0.0
    for direction, keras_model, torch_model in _carried_either_way(name):
        with torch.no_grad():
            first, state = torch_model.eval()(tokens[0], targets[0])
            second, _ = torch_model(tokens[1], targets[1], state)
        got, keras_state = keras_model.nll(tf.constant(tokens[0].numpy()), tf.constant(targets[0].numpy()))
        np.testing.assert_allclose(got.numpy(), first.numpy(), rtol=1e-4, atol=1e-4, err_msg=direction)
        assert len(keras_state) == ref.layers
        largest = max(largest, float(np.abs(got.numpy() - first.numpy()).max()))
        got, _ = keras_model.nll(tf.constant(tokens[1].numpy()), tf.constant(targets[1].numpy()), keras_state)
        np.testing.assert_allclose(got.numpy(), second.numpy(), rtol=1e-4, atol=1e-4, err_msg=direction)
        largest = max(largest, float(np.abs(got.numpy() - second.numpy()).max()))
    print(f"{name}: largest NLL difference {largest:.2e} (NLLs of about {float(first.mean()):.1f})")


@needs_tf
def test_transformer_twin_starts_from_the_pytorch_trials_weights_and_decodes_as_it_does():
    """Under one seed the twin holds the PyTorch trial's initial weights, and the reference's own greedy
    decoding, run on the twin, gives the PyTorch model's output (a briefly trained model: not all EOS)."""
    from trainmark.harness.frameworks.tensorflow_backend import TensorFlowBackend
    from trainmark.reference import registry
    from trainmark.reference.keras_twins import weights as keras_weights
    from trainmark.rules import get_rules

    rules = get_rules("transformer-mini")
    ref, hp = registry.for_rules(rules), {**rules.defaults(), "opt_learning_rate_warmup_steps": 1}
    trainer = TensorFlowBackend(torch.device("cpu"), "fp32").trainer(ref, None, hp, None, 5, count_flops=False)
    torch.manual_seed(5)
    initial = ref.build_model().state_dict()
    arrays, _ = keras_weights.tensors(trainer.model)
    assert all(np.array_equal(arrays[k], v.numpy()) for k, v in initial.items())
    src, tgt_in, tgt_out = ref.synthetic_batch(16)
    first = None
    for _ in range(30):  # copy the synthetic source: learnable in a few dozen steps
        trainer.step(trainer.twin.inputs(src, torch.cat([tgt_in[:, :1], src[:, :-1]], 1), src))
        first = first or trainer.loss_value()
    assert trainer.loss_value() < first
    model = ref.build_model()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in keras_weights.tensors(trainer.model)[0].items()})
    want = model.eval().greedy(src[:4], max_len=12)
    assert trainer.twin.greedy(src[:4], max_len=12) == want and any(want)


@needs_tf
def test_a_changed_layer_is_named_by_the_conformity_check():
    from trainmark.checker.checks.conformity import CONFORM_002, check_reference
    from trainmark.checker.verdict.findings import Findings
    from trainmark.reference.keras_twins import weights as keras_weights
    from trainmark.reference.keras_twins.fashion_mnist import resnet_mini

    ref = structure.describe(_pair("resnet-mini")[1])
    wider = keras_weights.describe(resnet_mini(widths=(16, 48, 64, 128)))

    class Record:  # the MLLOG of a TensorFlow trial, as far as the check reads it
        points = {"trainmark_framework": None, "trainmark_flops_per_step": None}

        def value(self, key):
            return "tensorflow" if key == "trainmark_framework" else None

    findings = Findings()
    check_reference(wider, json.dumps(wider, indent=1), ref, "closed", "trial_1/structure.json", Record(), findings)
    (finding,) = list(findings)
    assert finding.rule == CONFORM_002 and "layer2.0.bn1.bias" in finding.message
    findings = Findings()
    same = keras_weights.describe(resnet_mini())
    check_reference(same, json.dumps(same), ref, "closed", "trial_1/structure.json", Record(), findings)
    assert list(findings) == []


def _subset_rules(dest):
    """The test rules, with resnet-mini on tests/vision_mini_run.py's subset (vgg-mini's test dataset
    block), its schedule compressed into 3 epochs, and the released hashes generated for them."""
    import shutil

    import yaml
    from conftest import TEST_RULES
    from test_implementation_record import _rules_with_hashes

    shutil.copytree(TEST_RULES, dest / "src")
    vgg = yaml.safe_load((TEST_RULES / "1.2" / "vgg-mini.yaml").read_text())
    (dest / "src" / "1.2" / "resnet-mini.yaml").write_text(yaml.safe_dump({
        "benchmark": "resnet-mini", "rules_version": "1.2", "include": "resnet-mini",
        "dataset": vgg["dataset"], "evaluation": vgg["evaluation"], "max_epochs": 3, "trials": 1,
        "scoring": {"drop_fastest_and_slowest": 0},
        "metric": {"target": 0.75, "source": "test-only: the 12,000-image subset, 3 epochs"},
        "hyperparameters": {"opt_learning_rate_warmup_epochs": {"default": 0.5},
                            "opt_learning_rate_decay_start_epochs": {"default": 2},
                            "opt_learning_rate_decay_epochs": {"default": 3}},
        "convergence": {"command": "n/a (tests only)", "points": [], "measured_on": None}, "curve_band": None}))
    return _rules_with_hashes(dest / "rules", dest / "src")


def _pinned_subset(tmp_path):
    """tests/vision_mini_run.py's Fashion-MNIST subset, and its files' SHA-256 as a rule file pins them."""
    from vision_mini_run import needs_fashion_mnist, write_subset

    from trainmark.digest import sha256_file

    if needs_fashion_mnist.args[0]:
        pytest.skip(needs_fashion_mnist.kwargs["reason"])
    folder = write_subset(tmp_path / "data")
    return folder, {p.name: sha256_file(p) for p in sorted(folder.iterdir())}


@needs_tf
def test_tfds_fashion_mnist_is_the_reference_data_in_the_same_order(tmp_path):
    from trainmark.reference import fashion_mnist
    from trainmark.reference.tfds_builders import fashion_mnist as tfds_fashion_mnist

    folder, files = _pinned_subset(tmp_path)
    ours, ref = tfds_fashion_mnist.load(folder, files, tmp_path / "tfds"), fashion_mnist.load(folder)
    for key in fashion_mnist.FILES:
        assert torch.equal(getattr(ours, key), getattr(ref, key)), key
    built = tmp_path / "tfds" / "trainmark_fashion_mnist" / tfds_fashion_mnist.config_for(files).name / "1.0.0"
    info = json.loads((built / "dataset_info.json").read_text())
    assert {s["name"]: int(s["shardLengths"][0]) for s in info["splits"]} == {"train": 12_000, "test": 2_000}
    assert info["disableShuffling"] is True
    # a second load reads the built dataset and does not rebuild it
    stamp = (built / "dataset_info.json").stat().st_mtime_ns
    assert torch.equal(tfds_fashion_mnist.load(folder, files, tmp_path / "tfds").eval_labels, ref.eval_labels)
    assert (built / "dataset_info.json").stat().st_mtime_ns == stamp


@needs_tf
def test_tfds_fashion_mnist_refuses_a_file_the_rules_do_not_pin(tmp_path):
    from trainmark.errors import UserError
    from trainmark.reference.tfds_builders import fashion_mnist as tfds_fashion_mnist

    folder, files = _pinned_subset(tmp_path)
    files["t10k-labels-idx1-ubyte"] = "0" * 64
    with pytest.raises(UserError, match=r"t10k-labels-idx1-ubyte: sha256 .*rules say 0000"):
        tfds_fashion_mnist.load(folder, files, tmp_path / "tfds")
    built = tmp_path / "tfds" / "trainmark_fashion_mnist" / tfds_fashion_mnist.config_for(files).name / "1.0.0"
    assert not built.exists()  # nothing half-built is left to be read next time


@needs_tf
@pytest.mark.slow
def test_resnet_mini_trains_under_tensorflow_then_passes_the_checker(tmp_path, capsys, monkeypatch):
    from vision_mini_run import needs_fashion_mnist, run_then_check

    if needs_fashion_mnist.args[0]:
        pytest.skip(needs_fashion_mnist.kwargs["reason"])
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    rules = _subset_rules(tmp_path)  # released hashes: the record is compared with resnet-mini@tensorflow
    t = run_then_check("resnet-mini", tmp_path, capsys, "--framework", "tensorflow", rules=rules)
    assert [f for f in t["findings"] if f["rule"].startswith("CODE-")] == []
    record = tmp_path / "sub/closed/ci/benchmarks/resnet-mini/implementations/ci-box"
    info = json.loads((record / "implementation.json").read_text())
    assert info["framework"] == "tensorflow"
    assert "code/trainmark/reference/keras_twins/fashion_mnist.py" in info["code_files"]
    assert "code/trainmark/reference/tfds_builders/fashion_mnist.py" in info["code_files"]
    assert list((tmp_path / "tfds" / "trainmark_fashion_mnist").iterdir())  # the data came through tfds
    result = (tmp_path / "sub/closed/ci/results/ci-box/resnet-mini/result_1.txt").read_text()
    assert '"key": "trainmark_framework", "value": "tensorflow"' in result
    assert t["precision_used"] == "fp32"
    # the trained Keras weights, loaded into the PyTorch reference, score the same on the same images
    from safetensors.torch import load_file

    from trainmark.reference import registry
    from trainmark.rules import get_rules

    ref = registry.for_rules(get_rules("resnet-mini"))
    model = ref.build_model()
    model.load_state_dict(load_file(tmp_path / "sub/closed/ci/results/ci-box/resnet-mini/trial_1/model.safetensors"))
    model.eval()
    correct, count = ref.evaluate(model, ref.load_data(tmp_path / "data"), torch.device("cpu"))
    assert abs(correct / count - t["final_metric"]) <= 0.002  # 4 of the 2,000 images: float summation order


@needs_tf
@pytest.mark.parametrize("name", TWINS + FULL_SIZE)
def test_flops_per_step_agree_with_the_pytorch_count_within_2_percent(name):
    from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend
    from trainmark.harness.frameworks.tensorflow_backend import TensorFlowBackend
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    rules = get_rules(name)
    ref = registry.for_rules(rules)
    hp_overrides, ref_overrides = SMALL_STEP.get(name, ({}, {}))
    hp = {**rules.defaults(), **hp_overrides}
    for attribute, value in ref_overrides.items():
        setattr(ref, attribute, value)
    ours = TensorFlowBackend(torch.device("cpu"), "fp32").trainer(ref, None, hp, None, 1).flops_per_step
    theirs = PyTorchBackend(torch.device("cpu"), "fp32").trainer(ref, ref.build_model, hp, None, 1).flops_per_step
    print(f"{name}: FLOPs per step at batch {hp['global_batch_size']}: TensorFlow {ours:,}, PyTorch {theirs:,}")
    assert abs(ours / theirs - 1) <= 0.02, (ours, theirs)


@needs_tf
def test_a_recurrent_twin_counted_on_two_short_cuts_equals_its_whole_unrolled_step(monkeypatch):
    """ds2's unrolled GRUs are traced on cuts of 2 and 4 lattice units and the count extrapolated: equal to
    tracing the whole step, and only the cuts are traced; a length off the lattice is traced whole."""
    from trainmark.harness.frameworks import tensorflow_backend as tfb
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    rules = get_rules("ds2-mini")
    ref = registry.for_rules(rules)
    ref.synthetic_seconds = 0.4  # 3,200 samples at 8 kHz: 10 units of 80-sample hops x time strides 2 x 2
    trainer = tfb.TensorFlowBackend(torch.device("cpu"), "fp32").trainer(
        ref, None, {**rules.defaults(), "global_batch_size": 2}, None, 1, count_flops=False)
    batch = ref.synthetic_batch(2)
    assert trainer.twin.length_units(batch) == 10
    example = trainer.prepare(batch)
    whole = tfb.step_flops(tfb.training_step(trainer.twin.unrolled(example)), example)
    traced, real = [], tfb.step_flops
    monkeypatch.setattr(tfb, "step_flops", lambda step, ex: traced.append(int(ex[0].shape[-1])) or real(step, ex))
    assert trainer._traced_flops(batch) == whole  # noqa: SLF001 - the count a trial logs
    frames = lambda b: int(trainer.prepare(b)[0].shape[-1])  # noqa: E731 - the reference's feature frames
    assert traced == [frames(trainer.twin.cut(batch, 2)), frames(trainer.twin.cut(batch, 4))] == [5, 13]
    assert frames(batch) == 37  # never traced whole (4 frames a unit, less 3)
    off = (batch[0][:, :3000], batch[1].clamp(max=3000), *batch[2:])
    assert trainer.twin.length_units(off) is None
    traced.clear()
    trainer._traced_flops(off)  # noqa: SLF001
    assert traced == [frames(off)]


@needs_tf
def test_ops_times_tensorflow_kernels_with_the_shapes_flops():
    from trainmark.harness.throughput import ops

    small = [ops.Shape("mm", "matmul", {"m": 64, "n": 48, "k": 32}, "test shape"),
             ops.Shape("conv", "conv2d", {"n": 2, "c": 8, "h": 9, "w": 9, "k": 4, "r": 3, "s": 3,
                                          "stride": 2, "pad": 1}, "test shape")]
    report = ops.run_ops("cpu", ["fp32"], quick=True, shapes=small, repeats=2, target_s=0.002, warmup_s=0.0,
                         numpy_backend=False, framework="tensorflow")
    rows = {(r["name"], r["pass"]): r for r in report["results"]}
    assert set(rows) == {("mm", "fwd"), ("mm", "bwd"), ("conv", "fwd"), ("conv", "bwd")}
    assert all(r["backend"] == "tensorflow" and r["tflops"] > 0 for r in rows.values())
    assert rows[("mm", "fwd")]["flops"] == 2 * 64 * 48 * 32 == rows[("mm", "bwd")]["flops"] // 2
    assert report["settings"]["framework"] == "tensorflow"
    from trainmark.reference.tf_import import tf
    assert report["device"]["tensorflow"] == tf.__version__
    assert f"tensorflow {tf.__version__}" in ops.format_report(report)
    record = ops.ceilings_record(report, "ops.json", "0" * 64)  # what --ceilings puts in the system description
    assert record["framework"] == "tensorflow" and record["tensorflow"] == tf.__version__
    assert record["memory_gbs"] == max(b["gbs"] for b in report["bandwidth"])
    # the bandwidth cases run too, as TensorFlow's own kernels on the same bytes
    bandwidth = {b["op"]: b for b in report["bandwidth"]}
    assert set(bandwidth) == {"copy", "add"} and report["skipped"] == []
    n_bytes = 8 * 2**20  # quick: 8 MiB of fp32
    assert bandwidth["copy"]["bytes_moved"] == 2 * n_bytes and bandwidth["add"]["bytes_moved"] == 3 * n_bytes
    for b in bandwidth.values():
        assert b["backend"] == "tensorflow" and b["gbs"] == pytest.approx(b["bytes_moved"] / b["median_s"] / 1e9)
        # a copy that moved no byte (tf.identity hands back the same buffer) would read as thousands of GB/s
        assert 0 < b["gbs"] < 1000, b


@needs_tf
def test_tensorflow_copy_case_really_copies():
    """DeepCopy writes a new buffer with the same values; identity would return the source's own."""
    from trainmark.harness.frameworks import tensorflow_ops as ops_tensorflow

    copy, add, _ = ops_tensorflow.copy_and_add(1000, "cpu")
    a, b = copy().numpy(), copy().numpy()
    assert a.shape == (1000,) and (a == b).all() and 0 < a.min() and a.max() < 1
    other = add().numpy() - a  # src + other: what is left is the second source, uniform in [0, 1)
    assert (other > -1e-6).all() and (other < 1 + 1e-6).all() and other.std() > 0.2
    with pytest.raises(NotImplementedError, match="--device cpu"):
        ops_tensorflow.copy_and_add(10, "cuda")


def test_ops_framework_not_installed_is_one_line(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    assert main(["ops", "--framework", "tensorflow", "--quick"]) != 0
    assert "pip install -e '.[tensorflow]'" in capsys.readouterr().err


@needs_tf
def test_sweep_times_the_tensorflow_step(tmp_path, capsys):
    """`trainmark sweep --framework tensorflow`: the TensorFlow trainer's step, with its own FLOP count."""
    from trainmark.harness.frameworks.tensorflow_backend import TensorFlowBackend
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    out = tmp_path / "sw"
    assert main(["sweep", "transformer-mini", "--framework", "tensorflow", "--batch-sizes", "4", "--steps", "2",
                 "--warmup-steps", "1", "--out", str(out), "--no-plots"]) == 0
    data = json.loads((out / "sweep.json").read_text())
    (point,) = data["points"]
    assert point["status"] == "ok" and point["precision_used"] == "fp32" and point["loss_finite"]
    assert data["device"]["framework"] == "tensorflow" and data["settings"]["framework"] == "tensorflow"
    rules = get_rules("transformer-mini")
    ref, hp = registry.for_rules(rules), {**rules.defaults(), "global_batch_size": 4}
    assert point["flops_per_step"] == TensorFlowBackend(torch.device("cpu"), "fp32").trainer(
        ref, None, hp, None, 0).flops_per_step
    assert main(["sweep", "transformer-mini", "--framework", "tensorflow", "--precisions", "fp32,amp"]) == 2
    assert "only --precisions fp32" in capsys.readouterr().err


def _trial_under_tensorflow(name, rules, data, seed, tfds_name, tmp_path, capsys, monkeypatch):
    """One TensorFlow trial of ``name`` through `trainmark run`, its data read through tensorflow-datasets,
    then `trainmark check`: (trial.json, the rules' target, the PyTorch reference, its model holding the
    trial's weights), after asserting what every such trial must show: it converged, counted its FLOPs,
    built its tfds dataset, kept tfds's own lines out of --quiet, named TensorFlow in the system
    description, and passed the checker with no code finding against the released ``name@tensorflow``."""
    from safetensors.torch import load_file

    from trainmark.reference import registry
    from trainmark.rules import get_rules

    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    out = tmp_path / "sub"
    capsys.readouterr()
    assert main(["run", name, "--framework", "tensorflow", "--rules-dir", str(rules), "--data-dir", str(data),
                 "--out", str(out), "--submitter", "ci", "--system-name", "ci-box", "--seed", str(seed),
                 "--quiet"]) == 0
    assert "Downloading and preparing" not in capsys.readouterr().out
    d = out / "closed" / "ci" / "results" / "ci-box" / name
    t = json.loads((d / "trial_1" / "trial.json").read_text())
    assert t["status"] == "converged" and t["flops_per_step"] > 0
    assert list((tmp_path / "tfds" / tfds_name).iterdir())
    described = json.loads((out / "closed" / "ci" / "systems" / "ci-box.json").read_text())
    assert described["framework"].startswith("TensorFlow ") and described["software_versions"]["tensorflow"]
    assert main(["check", str(out), "--rules-dir", str(rules), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True and not [f for f in report["findings"] if f["rule"].startswith("CODE-")]
    ref = registry.for_rules(get_rules(name, rules_root=rules))
    model = ref.build_model()
    model.load_state_dict(load_file(d / "trial_1" / "model.safetensors"))
    return t, get_rules(name, rules_root=rules).target, ref, model.eval()


def transformer_mini_test_cut(tmp_path):
    """(the test rules' cut of the verse pairs, the test rules with its subword model pinned, as tfds reads it)."""
    import yaml
    from conftest import TEST_RULES
    from test_implementation_record import _rules_with_hashes
    from test_sequence_transformer import prepare_test_cut

    from trainmark.digest import sha256_file
    from trainmark.reference import parallel_text

    data = prepare_test_cut(tmp_path)
    src = tmp_path / "src"
    shutil.copytree(TEST_RULES, src)
    rule_file = src / "1.2" / "transformer-mini.yaml"
    rule = yaml.safe_load(rule_file.read_text())
    rule["dataset"]["files"][parallel_text.SPM_FILE] = sha256_file(data / parallel_text.SPM_FILE)
    rule_file.write_text(yaml.safe_dump(rule))
    return data, _rules_with_hashes(tmp_path / "rules", src)


@needs_tf
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("diatheke") is None, reason="Debian diatheke + sword-text-kjv/-web not installed")
def test_transformer_mini_trains_under_tensorflow_then_passes_the_checker(tmp_path, capsys, monkeypatch):
    """tests/test_sequence_transformer.py's short trial (the test rules' 1,500 + 50 pairs), under TensorFlow
    (``_trial_under_tensorflow``); its weights, in the PyTorch reference, score the BLEU the twin did."""
    data, rules = transformer_mini_test_cut(tmp_path)
    t, target, ref, model = _trial_under_tensorflow("transformer-mini", rules, data, 7, "trainmark_bible_parallel",
                                                    tmp_path, capsys, monkeypatch)
    assert target <= t["final_metric"] <= 100
    stats = ref.evaluate(model, ref.load_data(data), torch.device("cpu"))
    assert abs(ref.finalize_metric(*stats) - t["final_metric"]) <= 1.0  # BLEU points: greedy ties may differ


@needs_tf
@pytest.mark.slow
def test_ds2_mini_trains_under_tensorflow_then_passes_the_checker(tmp_path, capsys, monkeypatch):
    """tests/test_sequence_ds2.py's short trial under TensorFlow (``_trial_under_tensorflow``), on real FSDD;
    its weights, in the PyTorch reference, score the same WER."""
    from conftest import TEST_RULES
    from test_implementation_record import _rules_with_hashes
    from test_sequence_ds2 import FSDD

    if not (FSDD / "recordings").is_dir():
        pytest.skip("FSDD not at ../shared/datasets/fsdd")
    data = tmp_path / "data"
    assert main(["data", "prepare", "ds2-mini", "--source", str(FSDD), "--data-dir", str(data)]) == 0
    rules = _rules_with_hashes(tmp_path / "rules", TEST_RULES)
    t, target, ref, model = _trial_under_tensorflow("ds2-mini", rules, data, 3, "trainmark_fsdd",
                                                    tmp_path, capsys, monkeypatch)
    assert 0.0 <= t["final_metric"] <= target
    errors, words = ref.evaluate(model, ref.load_data(data), torch.device("cpu"))
    assert abs(errors / words - t["final_metric"]) <= 0.01  # greedy decoding: a near-tie may flip a frame


@needs_tf
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bible") is None, reason="Debian bible-kjv not installed")
def test_lstm_mini_trains_under_tensorflow_then_passes_the_checker(tmp_path, capsys, monkeypatch):
    """tests/test_sequence_lstm.py's short trial under TensorFlow (``_trial_under_tensorflow``), on the test
    rules' cut of the KJV; its weights, in the PyTorch reference, score the same perplexity."""
    from conftest import TEST_RULES
    from test_implementation_record import _rules_with_hashes
    from test_sequence_lstm import prepare_test_cut

    data = prepare_test_cut(tmp_path)
    rules = _rules_with_hashes(tmp_path / "rules", TEST_RULES)
    t, target, ref, model = _trial_under_tensorflow("lstm-mini", rules, data, 7, "trainmark_kjv",
                                                    tmp_path, capsys, monkeypatch)
    assert 1.0 < t["final_metric"] <= target
    perplexity = ref.finalize_metric(*ref.evaluate(model, ref.load_data(data), torch.device("cpu")))
    assert abs(perplexity / t["final_metric"] - 1) <= 1e-3
