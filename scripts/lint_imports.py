"""Run import-linter's contracts (pyproject.toml) over the package as it installs.

The design's top-level folders (harness/, checker/, ...) install as sub-packages of ``trainmark``
through ``package-dir``; import-linter's graph builder walks one folder per root package, so this
script lays the installed tree out in a temporary folder (the .py files only, copied, never run)
and points ``lint-imports`` at it. Exit status: lint-imports' own (0: every contract kept).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lay_out(target: Path) -> None:
    """Copy every package's .py files to where ``pip install`` puts them (package-dir mapping)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    mapping = config["package-dir"]
    for package in config["packages"]:
        top = max((p for p in mapping if package == p or package.startswith(p + ".")), key=len)
        source = ROOT / mapping[top] / Path(*package[len(top):].split(".")[1:])
        dest = target / Path(*package.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        for file in source.glob("*.py"):
            shutil.copy2(file, dest / file.name)


def run_contracts(tree: Path, capture: bool = True) -> subprocess.CompletedProcess:
    """``lint-imports`` over a laid-out tree (``lay_out``), with the contracts of pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint)] if lint.exists() else ["lint-imports"]
    return subprocess.run([*command, str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tree, env=env,
                          capture_output=capture, text=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="trainmark-lint-") as tmp:
        lay_out(Path(tmp))
        return run_contracts(Path(tmp), capture=False).returncode


if __name__ == "__main__":
    sys.exit(main())
