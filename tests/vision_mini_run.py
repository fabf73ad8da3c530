"""One CI trial of a mini vision reference through `trainmark run`, then `trainmark check` on it.

To keep CI within a minute, the trial reads a fixed subset of Fashion-MNIST (the first
``N_TRAIN`` training and ``N_EVAL`` test images, written as plain IDX files): test-only rules
(tests/rules/1.2/<mini>.yaml) pin those files' SHA-256, compress the schedule into ``max_epochs``
and set a target that the subset reaches; the shipped targets are reached on the full data in the
runs committed under submissions/.
"""
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import TEST_RULES

from trainmark.cli import main
from trainmark.reference import fashion_mnist
from trainmark.rules import get_rules

N_TRAIN, N_EVAL = 12_000, 2_000

needs_fashion_mnist = pytest.mark.skipif(not fashion_mnist.resolve_dir(None).is_dir(),
                                         reason="Fashion-MNIST not installed (scripts/install.sh installs it)")


def write_idx(path: Path, array: np.ndarray) -> None:
    """IDX: magic (0, 0, 0x08 = unsigned byte, ndim), big-endian dimensions, then the bytes."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_subset(folder: Path) -> Path:
    data = fashion_mnist.load(None)
    folder.mkdir(parents=True)
    for key, stem in fashion_mnist.FILES.items():
        n = N_TRAIN if key.startswith("train") else N_EVAL
        write_idx(folder / stem, getattr(data, key)[:n].numpy())
    return folder


def run_then_check(name: str, tmp_path: Path, capsys, *extra: str, rules: Path = TEST_RULES) -> dict:
    """``extra``: more `trainmark run` arguments (``--framework tensorflow``); ``rules``: the rules folder."""
    out = tmp_path / "sub"
    rc = main(["run", name, "--rules-dir", str(rules), "--data-dir", str(write_subset(tmp_path / "data")),
               "--out", str(out), "--submitter", "ci", "--system-name", "ci-box", "--seed", "7", "--quiet", *extra])
    rule = get_rules(name, rules_root=rules)
    batch = rule.defaults()["global_batch_size"]
    d = out / "closed" / "ci" / "results" / "ci-box" / name
    t = json.loads((d / "trial_1" / "trial.json").read_text())
    assert rc == 0, t
    assert t["status"] == "converged" and t["final_metric"] >= rule.target
    assert t["train_samples"] == t["epochs"] * (N_TRAIN // batch * batch) and t["flops_per_step"] > 0
    desc = json.loads((d / "trial_1" / "structure.json").read_text())
    tensor_bytes = sum(int(np.prod(e["shape"])) * (8 if e["dtype"] == "int64" else 4)
                       for e in desc["parameters"] + desc["buffers"])
    assert 0 < (d / "trial_1" / "model.safetensors").stat().st_size - tensor_bytes < 100_000  # weights alone
    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(rules), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and [f for f in report["findings"] if f["severity"] == "error"] == []
    t["findings"] = report["findings"]
    return t
