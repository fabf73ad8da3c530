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


READERS = {"read_bytes", "read_range", "list_dir", "read_header", "tensor_spans", "sample_weights", "read_json_object",
           "SafeTree"}   # SafeTree and what opens or lists a submitted file through it, outside read/'s own readers


def _readers_called(source: str) -> list[tuple[int, str]]:
    """(line, name) of every call of a reader in ``source``, as ``tree.read_bytes(...)`` or ``read_header(...)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in READERS:
                found.append((node.lineno, name))
    return found


def test_the_checks_receive_evidence_and_never_open_a_submitted_file():
    """Issue 42: ``checker/read/`` is the only code that opens a submitted file; a check (trainmark's, or MLPerf's
    scoring) is handed what was read, or calls a reader of ``read/`` for what it alone needs (an implementation
    record, a trial's weights, an MLPerf run's log)."""
    checks = sorted([*(ROOT / "checker" / "checks").glob("*.py"), *(ROOT / "checker" / "mlperf").glob("*.py")])
    assert len(checks) > 30
    calls = [(p.name, line, name) for p in checks for line, name in _readers_called(p.read_text(encoding="utf-8"))]
    assert calls == []
    planted = "def check(tree, rel):\n    data = tree.read_bytes(rel, 1)\n    return read_header(tree, rel), data\n"
    assert sorted(_readers_called(planted)) == [(2, "read_bytes"), (3, "read_header")]  # the test can fail


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


TENSORFLOW_MODULES = ("tensorflow", "keras", "tensorflow_datasets", "tf_keras")
TF_PACKAGES = ("trainmark.reference.keras_twins", "trainmark.reference.tfds_builders")


def _imports_tensorflow(name: str) -> bool:
    return name.split(".")[0] in TENSORFLOW_MODULES or name.startswith(TF_PACKAGES)


def _imports_torch_first(name: str) -> bool:
    """torch, torchvision, tf_import, or a PyTorch reference (they import torchvision)."""
    return (name.split(".")[0] in ("torch", "torchvision") or name.endswith("tf_import")
            or (name.startswith("trainmark.reference.") and not name.startswith(TF_PACKAGES)))


def tensorflow_before_torch(source: str) -> int | None:
    """The line of a module-level import that loads TensorFlow before anything loads torchvision, or None."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        if any(_imports_torch_first(n) for n in names) and not any(_imports_tensorflow(n) for n in names[:1]):
            return None
        if any(_imports_tensorflow(n) for n in names):
            return node.lineno
    return None


def test_tensorflow_is_imported_after_torchvision_everywhere():
    """reference/tf_import.py imports torchvision before TensorFlow (Triton's LLVM loaded after TensorFlow's
    segfaults); a module that imports TensorFlow itself must reach tf_import, or torch, first. Import sorting
    (ruff's I) would reorder them: `# isort: split` keeps the order, and this test keeps the markers honest."""
    wrong = [f"{path.relative_to(ROOT)}:{line}"
             for path in _package_files() + sorted((ROOT / "benchmarks").glob("*.py")) if path.name != "tf_import.py"
             if (line := tensorflow_before_torch(path.read_text(encoding="utf-8"))) is not None]
    assert not wrong, "TensorFlow imported before torchvision/tf_import at module level:\n" + "\n".join(wrong)


def test_sorted_imports_that_load_tensorflow_first_are_caught():
    sorted_badly = "import tensorflow_datasets as tfds\nimport torch\nfrom trainmark.reference.tf_import import tf\n"
    assert tensorflow_before_torch(sorted_badly) == 1
    keras_first = "import keras\nimport numpy as np\nfrom trainmark.reference import fashion_mnist\n"
    assert tensorflow_before_torch(keras_first) == 1
    assert tensorflow_before_torch("import torch\n\nimport keras\n") is None
    assert tensorflow_before_torch("from trainmark.reference.keras_twins import weights\nimport torch\n") == 1
