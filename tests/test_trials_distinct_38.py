"""Distinct trials, robustly (issue 38): weights compared tensor by tensor, by name and value, never by bytes or
file order; reading bounded by the header's sizes; weights swapped between trials caught by re-evaluation; the
trial re-evaluated by default drawn at random; a hard-linked file refused and never quoted.

Each forgery is made on a copy of the committed resnet-mini example (tests/forge.py); the untouched copy keeps
its trials apart.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from forge import bench_dir, check, error_codes, example
from safetensors.numpy import load_file

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import distinct, reeval
from trainmark.checker.read.safefs import SafeTree
from trainmark.checker.read.weights import MAX_SAMPLED_BYTES, TooLarge, read_weights, read_weights_bytes
from trainmark.cli import main
from trainmark.reference import fashion_mnist

needs_fashion_mnist = pytest.mark.skipif(not fashion_mnist.resolve_dir(None).is_dir(),
                                         reason="Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], order: list[str], extra: dict | None = None) -> None:
    """A safetensors file with its tensors laid out in ``order`` (the library sorts them); ``extra``: name ->
    (shape, bytes) declared after them and left as a hole (a sparse file)."""
    header, offset = {}, 0
    for name in order:
        a = np.ascontiguousarray(tensors[name])
        header[name] = {"dtype": {"float32": "F32", "int64": "I64"}[str(a.dtype)], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    holes = offset
    for name, (shape, nbytes) in (extra or {}).items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [holes, holes + nbytes]}
        holes += nbytes
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for name in order:
            f.write(np.ascontiguousarray(tensors[name]).tobytes())
        f.truncate(8 + len(raw) + holes)


def work_004(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == "WORK-004"]


def test_the_untouched_example_keeps_its_trials_apart(tmp_path, capsys):
    rc, report = check(example(tmp_path), capsys)
    assert rc == 0 and not work_004(report)


def test_a_clone_with_one_in_a_million_noise_is_work_004(tmp_path, capsys):
    root = example(tmp_path)
    bench = bench_dir(root)
    tensors = load_file(str(bench / "trial_2" / "model.safetensors"))
    noise = np.random.default_rng(0)
    noisy = {n: (a * (1 + 1e-6 * noise.standard_normal(a.shape))).astype(a.dtype) if a.dtype == np.float32 else a
             for n, a in tensors.items()}
    write_safetensors(bench / "trial_5" / "model.safetensors", noisy, sorted(noisy))
    rc, report = check(root, capsys)
    assert rc == 1 and "WORK-004" in error_codes(report)
    (finding,) = work_004(report)
    assert "trial_5" in finding["file"] and "trial 2" in finding["seen"]


def test_a_clone_with_its_tensors_in_another_order_is_work_004(tmp_path, capsys):
    root = example(tmp_path)
    bench = bench_dir(root)
    tensors = load_file(str(bench / "trial_1" / "model.safetensors"))
    write_safetensors(bench / "trial_4" / "model.safetensors", tensors, sorted(tensors, reverse=True))
    assert (bench / "trial_4" / "model.safetensors").read_bytes() != (bench / "trial_1" / "model.safetensors"
                                                                      ).read_bytes()
    rc, report = check(root, capsys)
    assert rc == 1 and any("trial_4" in f["file"] and "trial 1" in f["seen"] for f in work_004(report))


def test_the_closest_committed_pair_lies_far_above_the_threshold():
    """The threshold's comment in checker/checks/distinct.py: every pair of the committed examples lies at 0.888 or
    more, nine times CLONE_DISTANCE."""
    root = Path(__file__).resolve().parent.parent / "submissions" / "closed" / "trainmark" / "results"
    tree = SafeTree(root)
    closest = []
    for bench in sorted(root.glob("*/*")):
        weights = [read_weights(tree, f"{bench.relative_to(root)}/trial_{k}/model.safetensors") for k in range(1, 6)]
        closest.append(min(distinct.distance(a, b) for i, a in enumerate(weights) for b in weights[:i]))
    assert len(closest) == 12 and min(closest) > 8 * distinct.CLONE_DISTANCE, closest


def test_five_16_gib_sparse_extra_tensors_are_never_read(tmp_path, capsys, monkeypatch):
    root = example(tmp_path)
    weights = bench_dir(root) / "trial_3" / "model.safetensors"
    tensors = load_file(str(weights))
    extra = {f"extra_{i}.weight": ([1 << 16, 1 << 16], 16 << 30) for i in range(5)}
    write_safetensors(weights, tensors, sorted(tensors), extra)
    read: list[int] = []
    original = SafeTree.read_range

    def counting(self, rel, offset, length):
        data = original(self, rel, offset, length)
        if rel.endswith("trial_3/model.safetensors"):
            read.append(len(data))
        return data
    monkeypatch.setattr(SafeTree, "read_range", counting)
    rc, report = check(root, capsys)
    assert rc == 1 and "CONFORM-005" in error_codes(report)
    assert sum(read) <= MAX_SAMPLED_BYTES  # the blocks sampled, not 80 GiB


def test_re_evaluation_never_reads_weights_larger_than_the_reference(tmp_path):
    from trainmark.rules import get_rules

    root = example(tmp_path)
    weights = bench_dir(root) / "trial_1" / "model.safetensors"
    tensors = load_file(str(weights))
    write_safetensors(weights, tensors, sorted(tensors), {"extra.weight": ([1 << 20, 1 << 10], 4 << 30)})
    read = []

    def read_weights(rel, limit):
        read.append(rel)
        return read_weights_bytes(SafeTree(weights.parent), rel, limit)

    with pytest.raises(reeval.HeaderError) as refused:
        reeval._read_weights(read_weights, "model.safetensors", get_rules("resnet-mini"))
    assert "more than the" in refused.value.message and read == ["model.safetensors"]
    with pytest.raises(TooLarge):  # the read layer's own bound, whatever the caller makes of it
        read_weights_bytes(SafeTree(weights.parent), "model.safetensors", 1 << 20)


class _Spy:
    """An evaluator that says which weights it was handed (no model, no data)."""

    def __init__(self):
        self.handed: list[bytes] = []

    def data_problem(self, rules):
        return None

    def measure(self, rules, framework, precision, weights):
        from types import SimpleNamespace

        self.handed.append(weights)
        return SimpleNamespace(metric=0.95, seconds=0.0, refused=None)


def test_the_trial_re_evaluated_by_default_is_drawn_at_random_and_only_one(tmp_path):
    root = example(tmp_path)
    drawn = []
    spy = _Spy()
    plan = reeval.Reevaluate(spy, reeval.ONE_PER_MINI, draw=lambda n: drawn.append(n) or 3)
    report = check_path(root, CheckOptions(reevaluate=plan))
    assert drawn == [5] and len(spy.handed) == 1
    assert spy.handed[0] == (bench_dir(root) / "trial_4" / "model.safetensors").read_bytes()
    assert [f.rule for f in report.findings if f.rule.startswith("REEVAL")] == ["REEVAL-001"]  # 0.95, logged 0.9212


def test_missing_data_by_default_is_an_info_saying_why(tmp_path):
    class NoData(_Spy):
        def data_problem(self, rules):
            return "dataset in /nowhere does not match rules 1.1: not found"

    report = check_path(example(tmp_path), CheckOptions(reevaluate=reeval.Reevaluate(NoData())))
    (info,) = [f for f in report.findings if f.rule == "REEVAL-005"]
    assert info.severity == "info" and "not found" in info.message and report.exit_code == 0


@needs_fashion_mnist
def test_weights_swapped_between_two_trials_are_caught_by_re_evaluation(tmp_path):
    from trainmark.harness.reevaluate import Reevaluation

    root = example(tmp_path)
    bench = bench_dir(root)
    one, three = (bench / "trial_1" / "model.safetensors"), (bench / "trial_3" / "model.safetensors")
    thirds = json.loads((bench / "trial_3" / "trial.json").read_text())["final_metric"]  # what its weights score
    a, b = one.read_bytes(), three.read_bytes()
    one.write_bytes(b)
    three.write_bytes(a)
    report = check_path(root, CheckOptions(reevaluate=reeval.Reevaluate(Reevaluation(), draw=lambda n: 0)))
    assert not [f for f in report.findings if f.rule == "WORK-004"]  # each other's weights: distinct
    (finding,) = [f for f in report.findings if f.rule == "REEVAL-001"]
    assert "trial_1" in finding.file and finding.seen == f"{thirds:.4f}" and report.exit_code == 1


@pytest.mark.parametrize("name", ["epochs.log", "result_1.txt", "trial_2/trial.json"])
def test_a_hard_linked_file_is_refused_and_never_quoted(tmp_path, capsys, name):
    root = example(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n" * 3)
    target = bench_dir(root) / name
    target.unlink()
    os.link(secret, target)
    capsys.readouterr()
    rc = main(["check", str(root), "--json"])
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert rc == 1 and "HOSTILE-008" in error_codes(report)
    assert "SECRET-HASH" not in out.out + out.err
    (finding,) = [f for f in report["findings"] if f["rule"] == "HOSTILE-008" and f["file"].endswith(name)]
    assert "2 hard links" in finding["message"]
