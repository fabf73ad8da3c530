"""Records are exactly what ran (issue 38): a closed implementation record holds the released files, the environment
and the manifest and nothing else (CODE-014); an open record names the model its trials ran and holds every module of
the user's tree the model's files import, read from their import statements, never run (CODE-015); an interrupted
attempt keeps its result file (TRIAL-004).

Forgeries keep the manifest consistent (rewritten after the edit), as a forger would.
"""
from __future__ import annotations

import json
import shutil

from conftest import TEST_RULES
from forge import PYTORCH_SYSTEM, check, error_codes, example
from test_resume_integrity import interrupted_run
from test_trial_loop import bench_dir as tiny_bench_dir
from test_trial_loop import run_tiny

from trainmark.checker.checks.code_imports import missing_imports
from trainmark.cli import main
from trainmark.format import mllog
from trainmark.harness.code_record import manifest_text

RECORD = f"closed/trainmark/benchmarks/resnet-mini/implementations/{PYTORCH_SYSTEM}"
OPEN_RECORD = "out/open/acme/benchmarks/tiny-test/implementations/box"


def rewrite_manifest(record) -> None:
    (record / "MANIFEST.sha256").write_text(manifest_text(record), encoding="utf-8")


def tiny_check(tmp_path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main(["check", str(tmp_path / "out"), "--rules-dir", str(TEST_RULES), "--json"])
    return rc, json.loads(capsys.readouterr().out)


def codes_of(report: dict, prefix: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"].startswith(prefix)]


def test_the_committed_closed_record_holds_nothing_else(tmp_path, capsys):
    rc, report = check(example(tmp_path), capsys)
    assert rc == 0 and not codes_of(report, "CODE-")


def test_an_extra_patch_in_a_closed_record_is_code_014(tmp_path, capsys):
    root = example(tmp_path)
    record = root / RECORD
    (record / "patches").mkdir()
    (record / "patches" / "fast_kernels.py").write_text("def conv2d(x, w):\n    return x\n")
    rewrite_manifest(record)
    rc, report = check(root, capsys)
    assert rc == 1 and "CODE-014" in error_codes(report)
    (finding,) = codes_of(report, "CODE-014")
    assert finding["file"].endswith("patches/fast_kernels.py") and "CODE-005" not in error_codes(report)


def _open_run(tmp_path, monkeypatch):
    """One open tiny-test trial with --model mymodel_r38:build, whose module imports a sibling module."""
    (tmp_path / "helper_r38.py").write_text(
        "import torch.nn as nn\n\ndef layers():\n    return [nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)]\n")
    (tmp_path / "mymodel_r38.py").write_text(
        "import os\nimport torch.nn as nn\nfrom helper_r38 import layers\ntry:\n    import apex_r38\n"
        "except ImportError:\n    apex_r38 = None\n\ndef build():\n    return nn.Sequential(*layers())\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run_tiny(tmp_path, trials=1, division="open", model="mymodel_r38:build").ok
    return tmp_path / OPEN_RECORD


def test_an_open_record_missing_an_imported_sibling_or_its_model_is_code_015(tmp_path, capsys, monkeypatch):
    record = _open_run(tmp_path, monkeypatch)
    rc, report = tiny_check(tmp_path, capsys)
    assert not codes_of(report, "CODE-"), codes_of(report, "CODE-")
    (record / "model" / "helper_r38.py").unlink()
    rewrite_manifest(record)
    rc, report = tiny_check(tmp_path, capsys)
    (finding,) = codes_of(report, "CODE-015")
    assert rc == 1 and finding["file"].endswith("model/mymodel_r38.py") and finding["line"] == 3
    assert "helper_r38" in finding["message"]
    shutil.rmtree(record / "model")
    info = json.loads((record / "implementation.json").read_text())
    info.update(model=None, model_files=[])
    (record / "implementation.json").write_text(json.dumps(info, indent=2))
    rewrite_manifest(record)
    rc, report = tiny_check(tmp_path, capsys)
    assert rc == 1 and any("mymodel_r38:build" in f["message"] for f in codes_of(report, "CODE-015"))


def test_imports_are_read_never_run():
    marker = "open('/tmp/never_written_r38', 'w')\nimport helper_r38\n"
    files = {"model/m.py": marker.encode(), "model/pkg/__init__.py": b"from .sub import x\nfrom . import y\n"}
    assert missing_imports(files, {}) == [("model/m.py", 2, "helper_r38"), ("model/pkg/__init__.py", 1, ".sub")]
    files["model/pkg/sub.py"] = b"import numpy, json\nfrom ..outside import z\n"
    assert missing_imports(files, {})[1:] == [("model/pkg/sub.py", 2, "..outside")]
    assert missing_imports({"model/m.py": b"import helper_r38\n"}, {"helper-r38": "1.0"}) == []


def test_an_emptied_interrupted_attempt_is_trial_004(tmp_path, capsys):
    interrupted_run(tmp_path)          # trial 2 (seed 101) interrupted in its second epoch
    run_tiny(tmp_path, trials=3, resume=True, seed=None)
    bench = tiny_bench_dir(tmp_path)
    (attempt,) = mllog.first_value(mllog.read(bench / "result_2.txt"), mllog.INTERRUPTED_ATTEMPTS)
    folder = bench / "interrupted" / attempt["folder"]
    rc, report = tiny_check(tmp_path, capsys)
    assert not codes_of(report, "TRIAL-004")
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / "notes.txt").write_text("")
    rc, report = tiny_check(tmp_path, capsys)
    (finding,) = codes_of(report, "TRIAL-004")
    assert rc == 1 and "emptied" in finding["message"] and finding["severity"] == "error"
