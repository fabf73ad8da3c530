"""The framework seam: one Trainer builds, steps, evaluates and saves; run and sweep share its step."""
import ast
import subprocess
import sys
from pathlib import Path

import torch
from conftest import TEST_RULES, TinyTest
from safetensors.torch import load_file

from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend, autocast_for
from trainmark.harness.throughput import sweep
from trainmark.rules import get_rules

ROOT = Path(__file__).resolve().parents[1]


def trainer(seed=3, **hp):
    ref = TinyTest()
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    return ref, PyTorchBackend(torch.device("cpu"), "fp32").trainer(
        ref, ref.build_model, {**rules.defaults(), **hp}, ref.load_data(None), seed)


def test_a_trainer_trains_evaluates_and_saves(tmp_path):
    TinyTest.metric_override = None
    ref, t = trainer()
    assert t.precision_used == "fp32" and t.local_batch == t.samples_per_step == 32 and t.steps_per_epoch == 16
    assert t.structure["parameter_count"] == sum(p.numel() for p in t.model.parameters())
    before = t.evaluate()
    for _ in range(3):
        for batch in t.epoch_batches(1):
            t.step(batch)
    assert not t.diverged() and t.loss_value() < 0.5 and t.evaluate() > before
    t.save_weights(tmp_path / "model.safetensors")
    saved = load_file(tmp_path / "model.safetensors")
    assert sorted(saved) == sorted(e["name"] for e in t.structure["parameters"])
    assert all(torch.equal(saved[n], p.detach()) for n, p in t.model.named_parameters())


def test_the_same_seed_trains_the_same_weights():
    weights = []
    for _ in range(2):
        _, t = trainer(seed=11)
        for batch in t.epoch_batches(1):
            t.step(batch)
        weights.append([p.detach().clone() for p in t.model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights))


def test_a_non_finite_loss_is_noticed_and_forgotten_at_the_next_epoch():
    TinyTest.nan_at_epoch = 2
    try:
        _, t = trainer()
        for batch in t.epoch_batches(1):
            t.step(batch)
        assert not t.diverged()
        for batch in t.epoch_batches(2):
            t.step(batch)
        assert t.diverged()
        next(iter(t.epoch_batches(3)))
        assert not t.diverged()
    finally:
        TinyTest.nan_at_epoch = None


def test_the_sweep_times_the_same_step_as_a_run():
    """A sweep step and a run's Trainer.step from the same seed and batch leave the same weights."""
    ref = TinyTest()
    hp = get_rules("tiny-test", rules_root=TEST_RULES).defaults()
    x, y = ref.load_data(None).x[:8], ref.load_data(None).y[:8]
    swept = sweep._Step(ref, hp, torch.device("cpu"), 8, "fp32", None)
    swept.next_batch = lambda: swept.trainer.prepare((x, y))
    _, t = trainer(seed=0, global_batch_size=8)
    for _ in range(3):
        swept()
        t.step((x, y))
    assert all(torch.equal(a, b) for a, b in zip(swept.trainer.model.parameters(), t.model.parameters()))


def test_amp_on_cpu_is_bf16_without_a_scaler():
    _, scaler, label = autocast_for(torch.device("cpu"), "amp")
    assert scaler is None and label == "amp-bf16"
    assert PyTorchBackend(torch.device("cpu"), "amp").precision_label() == "amp-bf16"


def test_the_seam_names_backends_without_importing_them():
    code = ("import sys; from trainmark.harness.frameworks import backend as framework; print('torch' in sys.modules); "
            "b = framework.backend('pytorch', __import__('torch').device('cpu'), 'fp32'); print(type(b).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "PyTorchBackend"]


def test_the_trial_loop_never_calls_torch():
    """harness/trial.py reaches the framework only through the seam."""
    tree = ast.parse((ROOT / "harness" / "trial.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {m for m in imported if m == "torch" or m.startswith("torch.")}, imported


def test_a_backend_gives_its_device_sync_and_the_flops_of_a_step():
    """The seam's device, ``sync()`` and FLOPs: the sweep's count is the backend's (on the meta device)."""
    ref = TinyTest()
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    backend = PyTorchBackend(torch.device("cpu"), "fp32")
    backend.sync()  # nothing to wait for on a CPU
    assert backend.device == torch.device("cpu")
    count, reason = backend.step_flops(ref, rules.defaults(), 8)
    assert count and reason is None
    assert sweep._count_flops(ref, rules.defaults(), torch.device("cpu"), 8) == (count, reason)
    assert backend.step_flops(ref, rules.defaults(), 16)[0] == 2 * count


def test_a_run_builds_its_backend_once():
    from trainmark.harness.frameworks.distributed import Dist
    from trainmark.harness.run import Prepared, RunOptions

    prep = Prepared(RunOptions("tiny-test"), None, None, TinyTest().build_model, {}, 1, torch.device("cpu"), Dist(),
                    {}, Path("."), Path("."), Path("."))
    assert isinstance(prep.backend, PyTorchBackend) and prep.backend is prep.backend


def test_collectives_of_a_world_of_one_return_their_input():
    import numpy as np

    from trainmark.harness.frameworks.distributed import Dist

    flat = np.arange(4, dtype=np.float32)
    assert Dist().mean(flat) is flat and Dist().gather({"node": 0}) == [{"node": 0}]
    assert Dist().sum([1.0, 2.0]) == [1.0, 2.0] and Dist().any(True) is True


def test_only_the_framework_seam_imports_a_framework():
    found = set()
    for path in sorted((ROOT / "harness").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("harness/frameworks/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        if any(m.split(".")[0] in ("torch", "tensorflow", "keras", "torchvision") or m.endswith(".tf_import")
               for m in names):
            found.add(rel)
    assert not found, f"outside harness/frameworks/, {sorted(found)} import a framework (pyproject's contracts too)"
