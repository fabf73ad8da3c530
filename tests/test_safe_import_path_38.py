"""The current folder is never on trainmark's import path (issue 38): a ``rich.py`` left in the folder a reviewer
runs ``trainmark`` from is never executed, through the scripts (scripts/env.sh's ``tm``) or the docs' commands.

The control shows the hazard is real: plain ``python -m trainmark`` in that folder runs it.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = 'open("MARKER", "w").write("ran")\nraise SystemExit(7)\n'

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="-P needs Python 3.11")


@pytest.fixture
def hostile_cwd(tmp_path) -> Path:
    (tmp_path / "rich.py").write_text(HOSTILE)
    return tmp_path


def test_plain_python_m_would_run_it(hostile_cwd):
    proc = subprocess.run([sys.executable, "-m", "trainmark", "list"], cwd=hostile_cwd, capture_output=True)
    assert proc.returncode == 7 and (hostile_cwd / "MARKER").exists()


def test_python_p_m_trainmark_never_runs_it(hostile_cwd):
    proc = subprocess.run([sys.executable, "-P", "-m", "trainmark", "list"], cwd=hostile_cwd, capture_output=True)
    assert proc.returncode == 0 and not (hostile_cwd / "MARKER").exists()


def test_the_scripts_trainmark_never_runs_it(hostile_cwd):
    proc = subprocess.run(["bash", "-c", f'PYTHON="{sys.executable}" source "{ROOT}/scripts/env.sh" && tm list'],
                          cwd=hostile_cwd, capture_output=True)
    assert proc.returncode == 0 and not (hostile_cwd / "MARKER").exists(), proc.stderr


def test_no_script_or_doc_calls_python_m_trainmark_without_p():
    """Every ``python -m trainmark`` the scripts and docs show has -P; torchrun starts the console script."""
    unsafe = re.compile(r"python[0-9.]*(?: -[a-zA-OQ-Z]\w*)* -m trainmark\b|torchrun[^\n`]* -m trainmark\b"
                        r"|^\s*-m trainmark\b")
    files = [*ROOT.glob("scripts/*.sh"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if unsafe.search(line)]
    assert not found, found
