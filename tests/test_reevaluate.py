"""``trainmark check --reevaluate`` (issue 30): every trial's saved weights scored again on the evaluation set.

The committed resnet-mini examples (PyTorch and TensorFlow) re-measure to their logged final metric; weights
zeroed with the header kept (forgery 5 of issue 30), weights of another model and a pickle posing as
safetensors are caught by their own finding; an open-division model that is not the reference is a warning,
not a crash; missing data is one line and exit status 2. The evaluation data is the full Fashion-MNIST test set
(the Debian package dataset-fashion-mnist, which CI installs): those tests skip where it is absent.
"""
from __future__ import annotations

import importlib.util
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from forge import TENSORFLOW_SYSTEM, bench_dir, check, edit_json, error_codes, example
from safetensors.numpy import load_file, save_file

from trainmark.cli import main
from trainmark.cli.check import data_dirs
from trainmark.reference import fashion_mnist
from trainmark.rules import LATEST_VERSION, load_ruleset
from trainmark.rules.ruleset import reevaluation

needs_fashion_mnist = pytest.mark.skipif(not fashion_mnist.resolve_dir(None).is_dir(),
                                         reason="Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")
needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow not installed")


def findings_of(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == code]


def reevaluated(report: dict) -> list[tuple[float, float]]:
    """(logged, re-measured) of every trial of the report."""
    return [(t["final_metric"], t.get("reevaluated_metric")) for b in report["benchmarks"] for t in b["trials"]]


@needs_fashion_mnist
def test_the_committed_example_re_measures_to_its_logged_metric(tmp_path, capsys):
    rc, report = check(example(tmp_path), capsys, "--reevaluate")
    assert rc == 0 and report["passed"], [f for f in report["findings"] if f["severity"] == "error"]
    pairs = reevaluated(report)
    assert len(pairs) == 5 and all(abs(logged - measured) <= 0.002 for logged, measured in pairs), pairs
    assert any(n.startswith("--reevaluate ") and "s per trial" in n for n in report["notes"])


@needs_fashion_mnist
def test_zeroed_weights_with_their_header_kept_fail(tmp_path, capsys):
    root = example(tmp_path)
    weights = bench_dir(root) / "trial_3" / "model.safetensors"
    save_file({name: np.zeros_like(a) for name, a in load_file(str(weights)).items()}, str(weights))
    rc, report = check(root, capsys, "--reevaluate")
    assert rc == 1 and {"REEVAL-001", "REEVAL-002"} <= error_codes(report)
    flagged = findings_of(report, "REEVAL-001") + findings_of(report, "REEVAL-002")
    assert {f["file"].split("/")[-2] for f in flagged} == {"trial_3"}
    assert "0.1" in findings_of(report, "REEVAL-001")[0]["seen"]  # ten classes, one answer: chance


@needs_fashion_mnist
def test_weights_of_another_model_cannot_be_re_evaluated(tmp_path, capsys):
    root = example(tmp_path)
    weights = bench_dir(root) / "trial_2" / "model.safetensors"
    tensors = load_file(str(weights))
    tensors["fc.weight"] = np.zeros((7, 3), dtype=np.float32)
    save_file(tensors, str(weights))
    rc, report = check(root, capsys, "--reevaluate")
    assert rc == 1 and "REEVAL-004" in error_codes(report)
    (finding,) = findings_of(report, "REEVAL-004")
    assert "trial_2" in finding["file"] and "fc.weight" in finding["message"]


class _Marker:
    """Unpickling this writes a file: the proof that a pickle was loaded."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@needs_fashion_mnist
def test_a_pickle_posing_as_safetensors_is_never_unpickled(tmp_path, capsys):
    root = example(tmp_path)
    marker = tmp_path / "unpickled"
    (bench_dir(root) / "trial_1" / "model.safetensors").write_bytes(pickle.dumps(_Marker(str(marker))))
    rc, report = check(root, capsys, "--reevaluate")
    assert rc == 1 and not marker.exists()
    assert any("trial_1" in f["file"] for f in findings_of(report, "REEVAL-004"))


def test_an_open_division_model_that_is_not_the_reference_is_a_warning(tmp_path, capsys):
    root = example(tmp_path)
    (root / "closed").rename(root / "open")
    for trial_json in (root / "open").glob("**/trial.json"):
        edit_json(trial_json, lambda d: d.update(division="open", model="mynet:build"))
    rc, report = check(root, capsys, "--reevaluate", "--data-dir", str(tmp_path / "no-data"))
    assert rc in (0, 1)  # whatever else the move breaks, the re-evaluation neither crashes nor needs data
    warned = findings_of(report, "REEVAL-003")
    assert len(warned) == 5 and all(f["severity"] == "warning" for f in warned)
    assert "cannot be re-evaluated" in warned[0]["message"]
    assert not {"REEVAL-001", "REEVAL-002", "REEVAL-004"} & {f["rule"] for f in report["findings"]}


def test_missing_data_is_one_line_and_exit_2(tmp_path, capsys):
    root = example(tmp_path)
    capsys.readouterr()
    assert main(["check", str(root), "--reevaluate", "--data-dir", f"resnet-mini={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not found" in err and "--data-dir" in err


def test_data_dir_and_device_are_refused_without_reevaluation(tmp_path, capsys):
    root = example(tmp_path)
    assert main(["check", str(root), "--no-reevaluate", "--data-dir", str(tmp_path)]) == 2
    assert "--no-reevaluate" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["check", str(root), "--reevaluate", "--no-reevaluate"])
    assert exit_.value.code == 2


def test_data_dir_for_every_benchmark_or_one():
    assert data_dirs(["/d", "lstm-mini=/l"]) == {None: Path("/d"), "lstm-mini": Path("/l")}
    assert data_dirs(["/a=b"]) == {None: Path("/a=b")}  # not a benchmark name: a folder with '=' in it


def test_every_shipped_rule_file_states_its_tolerance_and_why():
    for name, rules in load_ruleset(LATEST_VERSION).items():
        allowed = rules.data.get("reevaluation")
        assert allowed is not None, f"rules/{LATEST_VERSION}/{name}.yaml has no reevaluation field"
        assert allowed["tolerance"] >= 0 and len(allowed["reason"]) > 40
    for name, rules in load_ruleset("1.0").items():  # frozen before the field: the latest rules' is used
        assert reevaluation(rules)["tolerance"] == load_ruleset(LATEST_VERSION)[name].data["reevaluation"]["tolerance"]


@needs_fashion_mnist
@needs_tf
def test_a_tensorflow_trial_re_measures_through_the_keras_twin(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    root = example(tmp_path, system=TENSORFLOW_SYSTEM)
    rc, report = check(root, capsys, "--reevaluate")
    assert rc == 0, [f for f in report["findings"] if f["severity"] == "error"]
    pairs = reevaluated(report)
    assert len(pairs) == 5 and all(abs(logged - measured) <= 0.002 for logged, measured in pairs), pairs
    trial = json.loads((bench_dir(root, system=TENSORFLOW_SYSTEM) / "trial_1" / "trial.json").read_text())
    assert trial["final_metric"] == pairs[0][1]
