"""Shared test fixtures: the tiny reference and test-only rule files."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tiny_reference import TinyData, TinyTest  # noqa: F401  (tests/rules' tiny-test.yaml names it)

from trainmark.rules import LATEST_VERSION

TEST_RULES = Path(__file__).parent / "rules"
SHIPPED_RULES = Path(__file__).resolve().parents[1] / "rules"


@pytest.fixture(autouse=True)
def _reset_tiny():
    yield
    TinyTest.nan_at_epoch = TinyTest.interrupt_at = TinyTest.metric_override = None
    TinyTest.tick = staticmethod(lambda: None)
    TinyTest.eval_tick = staticmethod(lambda: None)


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
