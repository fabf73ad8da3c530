"""Shared test fixtures: the tiny reference and test-only rule files."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from tiny_reference import TinyData, TinyTest  # noqa: F401  (tests/rules' tiny-test.yaml names it)

from trainmark.rules import LATEST_VERSION

TEST_RULES = Path(__file__).parent / "rules"
SHIPPED_RULES = Path(__file__).resolve().parents[1] / "rules"


@pytest.fixture(scope="session", autouse=True)
def _tfds_dir_per_test_process(tmp_path_factory):
    """Under pytest-xdist (scripts/test.sh) each test process builds TensorFlow's datasets into a folder of its
    own: two processes building one dataset into one folder race on tfds's final rename (the loser's fails)."""
    if "PYTEST_XDIST_WORKER" in os.environ and "TRAINMARK_TFDS_DIR" not in os.environ:
        os.environ["TRAINMARK_TFDS_DIR"] = str(tmp_path_factory.getbasetemp() / "tfds")


@pytest.fixture(autouse=True)
def _forget_modules_imported_from_temp_folders(tmp_path_factory):
    """A module a test imported from its tmp_path (an open-division model, a plugin) is forgotten after the test:
    pytest deletes a passing test's tmp_path, and a later test importing the same name would get the cached
    module, whose source is gone (or, were it kept, another test's file)."""
    yield
    base = str(tmp_path_factory.getbasetemp()) + os.sep
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(base):
            del sys.modules[name]


@pytest.fixture(autouse=True)
def _reset_tiny():
    yield
    TinyTest.nan_at_epoch = TinyTest.interrupt_at = TinyTest.metric_override = None
    TinyTest.tick = staticmethod(lambda: None)
    TinyTest.eval_tick = staticmethod(lambda: None)


@pytest.fixture(autouse=True)
def _no_default_reevaluation(monkeypatch):
    """``trainmark check`` re-evaluates one trial per mini by default: a real model and the Fashion-MNIST test set
    in every CLI test (seconds each), and the synthetic submissions hold a tiny model's weights. Off here; the
    tests of the default (tests/test_reevaluate_default.py) turn it back on."""
    from trainmark.cli import check

    monkeypatch.setattr(check, "DEFAULT_REEVALUATION", "none")


@pytest.fixture
def rules_copy(tmp_path) -> Path:
    """A writable copy of the test rules plus the shipped ones, for tests that edit a rule."""
    dest = tmp_path / "rules"
    shutil.copytree(TEST_RULES, dest)
    for f in (SHIPPED_RULES / LATEST_VERSION).glob("*.yaml"):
        if not (dest / LATEST_VERSION / f.name).exists():
            shutil.copy(f, dest / LATEST_VERSION / f.name)
    return dest


@pytest.fixture(scope="session")
def clean_submission(tmp_path_factory) -> Path:
    """A clean synthetic resnet-mini submission (closed division), written once per test session."""
    import synthetic

    from trainmark.rules import get_rules

    root = tmp_path_factory.mktemp("clean")
    synthetic.write_submission(root, get_rules("resnet-mini"), synthetic.tiny_reference_model())
    return root


@pytest.fixture
def submission_copy(clean_submission, tmp_path) -> Path:
    """A private copy of ``clean_submission`` that a test may break."""
    dest = tmp_path / "sub"
    shutil.copytree(clean_submission, dest, symlinks=True)
    return dest


def one_trial(tmp_path: Path, benchmark: str, data: Path, seed: int) -> tuple[Path, dict, float]:
    """One trial of ``benchmark`` under the test rules into ``tmp_path/sub``: the output folder, the trial's
    trial.json and the rules' target (the sequence benchmarks' one-trial tests)."""
    import json

    from trainmark.cli import main
    from trainmark.rules import get_rules

    out = tmp_path / "sub"
    rc = main(["run", benchmark, "--rules-dir", str(TEST_RULES), "--data-dir", str(data), "--out", str(out),
               "--submitter", "ci", "--system-name", "ci-box", "--seed", str(seed), "--quiet"])
    assert rc == 0
    bench = out / "closed" / "ci" / "results" / "ci-box" / benchmark
    trial = json.loads((bench / "trial_1" / "trial.json").read_text())
    return out, trial, get_rules(benchmark, rules_root=TEST_RULES).target


def check_passes(out: Path, capsys) -> dict:
    """``trainmark check OUT --json`` under the test rules: it passes with no error; its report."""
    import json

    from trainmark.cli import main

    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(TEST_RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True and not [f for f in report["findings"] if f["severity"] == "error"]
    return report


@pytest.fixture
def ex(tmp_path):
    """A copy of the committed resnet-mini example (tests/forge.py), for the forgeries of issues 30 and 38."""
    import forge

    return forge.example(tmp_path)
