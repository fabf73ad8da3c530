"""Issue 30: code verification cannot be declined, nothing is silently lost, bad run options are one line.

Forgeries of the committed resnet-mini example (tests/forge.py) that passed before, each caught by its
own finding; tiny runs under the test rules (rules 1.2) for what only a fresh run shows.
"""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import TEST_RULES
from forge import PYTORCH_SYSTEM, SUBMITTER, bench_dir, check, edit_json, edit_records, error_codes, example, record
from test_resume_integrity import interrupted_run
from test_trial_loop import bench_dir as tiny_bench_dir
from test_trial_loop import run_tiny

from trainmark import RESULT_FORMAT_VERSION
from trainmark.cli import main
from trainmark.format import mllog
from trainmark.harness import code_record

SYSTEM = PYTORCH_SYSTEM


def _record_dir(root, system=SYSTEM):
    return root / "closed" / "trainmark" / "benchmarks" / "resnet-mini" / "implementations" / system


def _remanifest(record_dir) -> None:
    """What a forger does after editing the record: hash it again."""
    (record_dir / code_record.MANIFEST).write_text(code_record.manifest_text(record_dir), encoding="utf-8")


def _trial_jsons(root):
    return sorted(bench_dir(root).glob("trial_*/trial.json"))


# -- 1. code verification cannot be declined ----------------------------------------------
def test_format_1_claim_without_the_record_is_an_error(tmp_path, capsys):
    """trial.json and the logs say format 1 (before records existed) and the record is deleted: the example's rules
    version ships code hashes, so the record is required all the same."""
    root = example(tmp_path)
    for path in _trial_jsons(root):
        edit_json(path, lambda d: d.update(format_version=1))
    for path in bench_dir(root).glob("result_*.txt"):  # format 3 logs the format too (format 2 did not)
        edit_records(path, lambda records: [r.update(value=1) for r in records if r["key"] == mllog.FORMAT_VERSION])
    shutil.rmtree(_record_dir(root))
    rc, report = check(root, capsys)
    assert rc == 1 and "CODE-013" in error_codes(report)


def test_an_unknown_framework_in_the_record_is_an_error(tmp_path, capsys):
    """A code file edited, the framework renamed so no released table applies, the manifest regenerated."""
    root = example(tmp_path)
    record_dir = _record_dir(root)
    model = record_dir / "code" / "trainmark" / "reference" / "resnet_mini.py"
    model.write_text(model.read_text() + "\n# faster\n")
    edit_json(record_dir / "implementation.json", lambda d: d.update(framework="pytorch2"))
    _remanifest(record_dir)
    rc, report = check(root, capsys)
    assert rc == 1 and {"CODE-011", "CODE-012", "CODE-007"} <= error_codes(report)


def test_a_framework_that_is_not_a_name_is_an_unknown_framework(tmp_path, capsys):
    root = example(tmp_path)
    edit_json(_record_dir(root) / "implementation.json", lambda d: d.update(framework=["pytorch"]))
    _remanifest(_record_dir(root))
    rc, report = check(root, capsys)
    assert rc == 1 and "CODE-011" in error_codes(report) and "CHECKER-001" not in error_codes(report)


def test_another_frameworks_code_beside_the_results_is_an_error(tmp_path, capsys):
    """The TensorFlow record's code in place of the PyTorch record (its names fixed, hashed again)."""
    root = example(tmp_path)
    record_dir = _record_dir(root)
    shutil.rmtree(record_dir)
    shutil.copytree(SUBMITTER / "benchmarks" / "resnet-mini" / "implementations" / f"{SYSTEM}-tf", record_dir)
    edit_json(record_dir / "implementation.json", lambda d: d.update(system=SYSTEM))
    _remanifest(record_dir)
    rc, report = check(root, capsys)
    assert rc == 1 and "CODE-012" in error_codes(report)


def test_the_untouched_example_still_passes(tmp_path, capsys):
    rc, report = check(example(tmp_path), capsys)
    assert rc == 0, error_codes(report)


def test_a_fresh_run_logs_its_format_version_and_framework(tmp_path):
    run_tiny(tmp_path, trials=1)
    events = mllog.read(tiny_bench_dir(tmp_path) / "result_1.txt")
    trial = json.loads((tiny_bench_dir(tmp_path) / "trial_1" / "trial.json").read_text())
    assert mllog.first_value(events, mllog.FORMAT_VERSION) == trial["format_version"] == RESULT_FORMAT_VERSION
    assert mllog.first_value(events, mllog.FRAMEWORK) == trial["framework"] == "pytorch"


def _tiny_check(tmp_path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main(["check", str(tmp_path / "out"), "--rules-dir", str(TEST_RULES), "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_format_version_missing_from_a_rules_1_1_mllog_is_an_error(tmp_path, capsys):
    run_tiny(tmp_path, trials=1)
    edit_records(tiny_bench_dir(tmp_path) / "result_1.txt",
                 lambda rs: [r for r in rs if r["key"] != mllog.FORMAT_VERSION])
    rc, report = _tiny_check(tmp_path, capsys)
    assert rc == 1 and "MLLOG-013" in error_codes(report)


def test_trial_json_format_version_disagreeing_with_the_mllog_is_an_error(tmp_path, capsys):
    run_tiny(tmp_path, trials=1)
    edit_json(tiny_bench_dir(tmp_path) / "trial_1" / "trial.json", lambda d: d.update(format_version=1))
    rc, report = _tiny_check(tmp_path, capsys)
    assert rc == 1 and "TRIALJSON-003" in error_codes(report)
    assert any("format_version" in f["message"] for f in report["findings"] if f["rule"] == "TRIALJSON-003")


def test_trial_json_framework_disagreeing_with_the_mllog_is_an_error(tmp_path, capsys):
    run_tiny(tmp_path, trials=1)
    edit_records(tiny_bench_dir(tmp_path) / "result_1.txt",
                 lambda rs: record(rs, mllog.FRAMEWORK).update(value="tensorflow"))
    rc, report = _tiny_check(tmp_path, capsys)
    assert rc == 1 and "TRIALJSON-003" in error_codes(report)


def test_the_model_record_holds_the_modules_it_imports(tmp_path, monkeypatch):
    """--model mymodel_e30:build, whose module imports a sibling: both files are recorded."""
    (tmp_path / "helper_e30.py").write_text(
        "import torch.nn as nn\n\ndef layers():\n    return [nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)]\n")
    (tmp_path / "mymodel_e30.py").write_text(
        "import torch.nn as nn\nfrom helper_e30 import layers\n\ndef build():\n    return nn.Sequential(*layers())\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    summary = run_tiny(tmp_path, trials=1, division="open", model="mymodel_e30:build")
    assert summary.ok
    record_dir = tmp_path / "out" / "open" / "acme" / "benchmarks" / "tiny-test" / "implementations" / "box"
    info = json.loads((record_dir / "implementation.json").read_text())
    assert {"model/mymodel_e30.py", "model/helper_e30.py"} <= set(info["model_files"])
    assert (record_dir / "model" / "helper_e30.py").read_text() == (tmp_path / "helper_e30.py").read_text()
    assert not [f for f in info["model_files"] if "torch" in f or "trainmark" in f]


# -- 2. nothing is silently lost -------------------------------------------------------------
def test_an_interrupted_attempt_is_named_and_its_removal_is_an_error(tmp_path, capsys):
    interrupted_run(tmp_path)          # trial 2 (seed 101) interrupted in its second epoch
    run_tiny(tmp_path, trials=3, resume=True, seed=None)
    bench = tiny_bench_dir(tmp_path)
    attempts = mllog.first_value(mllog.read(bench / "result_2.txt"), mllog.INTERRUPTED_ATTEMPTS)
    assert [(a["seed"], a["status"]) for a in attempts] == [(101, "aborted")]
    assert (bench / "interrupted" / attempts[0]["folder"]).is_dir()
    assert mllog.first_value(mllog.read(bench / "result_3.txt"), mllog.INTERRUPTED_ATTEMPTS) is None
    rc, report = _tiny_check(tmp_path, capsys)
    assert "TRIAL-004" not in {f["rule"] for f in report["findings"]}
    shutil.rmtree(bench / "interrupted")
    rc, report = _tiny_check(tmp_path, capsys)
    assert rc == 1 and "TRIAL-004" in error_codes(report)


# -- 3. bad run options: one line, exit 2, nothing written ---------------------------------------
def _run_cli(tmp_path, *extra: str) -> int:
    return main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(tmp_path / "out"), "--trials", "1",
                 "--division", "open", "--quiet", "--submitter", "acme", "--system-name", "box", "--seed", "5",
                 *extra])


def test_a_learning_rate_that_is_not_a_number_is_one_line(tmp_path, capsys):
    rc = _run_cli(tmp_path, "--hparam", "opt_base_learning_rate=abc")
    err = capsys.readouterr().err
    assert rc == 2 and "opt_base_learning_rate='abc': must be a number" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("returned", ["42", "'a model'", "None"])
def test_a_model_that_is_not_a_module_is_one_line(tmp_path, capsys, monkeypatch, returned):
    (tmp_path / "notamodule_e30.py").write_text(f"def build():\n    return {returned}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "notamodule_e30", raising=False)
    rc = _run_cli(tmp_path, "--model", "notamodule_e30:build")
    err = capsys.readouterr().err
    assert rc == 2 and "not a torch.nn.Module" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
