"""The layout is the architecture (docs/architecture.md): layers that import only downward, and
functions that fit a screen. The contracts live in pyproject.toml; scripts/lint_imports.py runs them."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 60  # one screen; ruff's C901/PLR0915 (pyproject.toml) bound the complexity beside it


def _lint_module():
    spec = importlib.util.spec_from_file_location("lint_imports", ROOT / "scripts" / "lint_imports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package_files() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {ROOT / folder for folder in config["package-dir"].values()}
    return sorted(p for folder in folders for p in folder.rglob("*.py"))


def test_every_package_folder_is_installed():
    """A sub-package missing from pyproject's `packages` would be left out of a wheel (and of the contracts)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(config["packages"])
    for top, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            assert ".".join([top, *rel]) in listed, f"{init.parent} is a package not listed in pyproject.toml"


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in _package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over a screen:\n" + "\n".join(long)


def test_the_import_contracts_hold():
    lint = _lint_module()
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_imports.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "BROKEN" not in result.stdout and lint.ROOT == ROOT


@pytest.mark.parametrize("module, arrow", [
    ("trainmark/format/labels.py", "import trainmark.rules"),                  # format imports nothing of ours
    ("trainmark/rules/ruleset.py", "import trainmark.checker"),                # rules sits below the checker
    ("trainmark/report/fmt.py", "import trainmark.harness"),                  # siblings never import each other
    ("trainmark/harness/trial.py", "import torch"),                          # frameworks stay behind the seam
])
def test_an_upward_arrow_breaks_a_contract(tmp_path, module, arrow):
    """The contracts are not vacuous: one added import that runs the wrong way fails lint-imports."""
    lint = _lint_module()
    lint.lay_out(tmp_path)
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{arrow}  # added by the test\n", encoding="utf-8")
    result = lint.run_contracts(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
