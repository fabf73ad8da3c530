"""The released reference code of a rules version: which source files a benchmark's reference is, and their hashes.

A closed-division submission must have run the released reference, byte for byte. The
harness copies the reference's source files into the submission's implementation record
(``trainmark.harness.code_record``); the checker compares their SHA-256 with the hashes
shipped beside the rule files, ``rules/<version>/reference-code.json``. That file is
generated (``trainmark rules code-hashes``) and a test fails when it is stale.

A benchmark's reference code is the module its rule file names (``implementations: {pytorch:
MODULE:CLASS}``), every module of ``trainmark.reference`` it imports (found by reading the source,
never by running it), and its rule file; under another framework, also the module of the twin the
rule file names there and what that imports, plus the framework's helpers in ``trainmark.reference``
that the backend runs for every twin (``FRAMEWORK_HELPERS``). Paths inside the record are
``code/<module/path>.py`` and ``code/rules/<version>/<benchmark>.yaml``.

A table may be frozen (a top-level ``frozen`` note): the hashes of a rules version as released,
which results under that version are verified against; it is never regenerated, and a closed run
under it is refused (the installed reference code is a later one).
"""
from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

from trainmark.digest import sha256_file
from trainmark.format import layout
from trainmark.rules.ruleset import RULES_ROOT, BenchmarkRules, load_ruleset

HASH_FILE = layout.RELEASED_CODE_FILE
FORMAT = "trainmark-reference-code/1"
PACKAGE = "trainmark.reference"


def module_path(module: str, origin: Path) -> str:
    """Where a module's source goes in the record: ``code/trainmark/reference/base.py``."""
    stem = module.replace(".", "/")
    return f"{layout.CODE_DIR}/{stem}/__init__.py" if origin.name == "__init__.py" else f"{layout.CODE_DIR}/{stem}.py"


def _origin(module: str) -> Path | None:
    """A module's source file. One of ``trainmark.reference`` is found on disk: nothing is imported or run
    (a name imported from a module, ``keras_twins.recipe.as_tf``, has no file of its own and gives None;
    asking importlib would run ``recipe``, and TensorFlow with it)."""
    if module == PACKAGE or module.startswith(PACKAGE + "."):
        spec = importlib.util.find_spec(PACKAGE)  # the package itself: trainmark.reference is TensorFlow-free
        path = Path(spec.submodule_search_locations[0]).joinpath(*module.removeprefix(PACKAGE).split(".")[1:])
        return next((p for p in (path / "__init__.py", path.parent / f"{path.name}.py") if p.is_file()), None)
    try:  # a reference registered from elsewhere (the tests' tiny one)
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _imported(module: str, source: str) -> set[str]:
    """Modules of ``trainmark.reference`` that ``source`` imports (anywhere, also inside functions)."""
    package = module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}


def reference_modules(root_module: str) -> dict[str, Path]:
    """``root_module`` and every ``trainmark.reference`` module it imports, transitively: name -> file."""
    out: dict[str, Path] = {}
    todo = [root_module]
    while todo:
        name = todo.pop()
        if name in out or name == PACKAGE:
            continue
        origin = _origin(name)
        if origin is None:  # a name imported from a module, not a module
            continue
        out[name] = origin
        todo.extend(_imported(name, origin.read_text(encoding="utf-8")))
    return dict(sorted(out.items()))


# Modules of ``trainmark.reference`` that a framework's backend runs for every twin, whichever twin it is:
# TensorFlow's import guard and the weight mapping that loads, writes and describes a twin's weights.
FRAMEWORK_HELPERS = {"tensorflow": ("trainmark.reference.tf_import", "trainmark.reference.keras_twins.weights")}


def implementation_of(rules: BenchmarkRules, framework: object) -> str:
    """Whose trial this is: the reference model's id (``resnet-mini``) for PyTorch, ``resnet-mini@tensorflow``
    for a twin; what the rules' convergence points and curve bands are kept per."""
    model = rules.data["reference_model"]["id"]
    if framework is None or framework == "pytorch":
        return model
    # the value comes from a submitted log: only a short framework name makes it into a finding
    known = isinstance(framework, str) and re.fullmatch(r"[a-z0-9]{1,32}", framework)
    return f"{model}@{framework if known else 'unknown-framework'}"


def released_key(benchmark: str, framework: str = "pytorch") -> str:
    """A benchmark's entry in reference-code.json: ``resnet-mini``, or ``resnet-mini@tensorflow``."""
    return benchmark if framework == "pytorch" else f"{benchmark}@{framework}"


def implementation_module(rules: BenchmarkRules, framework: str = "pytorch") -> str | None:
    """The module that the rule file names for ``framework`` (None: the benchmark has no such implementation)."""
    spec = rules.data["implementations"].get(framework)
    return spec.partition(":")[0] if spec else None


def reference_sources(rules: BenchmarkRules, framework: str = "pytorch") -> dict[str, Path]:
    """Record path -> source file of a benchmark's released reference code (modules and rule file);
    under another framework, also its twin's module, its data builders, the framework's helpers and what
    those import. Nothing is imported: the rule file names the modules, their sources are read."""
    twin = implementation_module(rules, framework) if framework != "pytorch" else None
    roots = [implementation_module(rules), *([twin, *FRAMEWORK_HELPERS.get(framework, ())] if twin else [])]
    sources = {module_path(name, path): path for root in roots for name, path in reference_modules(root).items()}
    sources[f"{layout.CODE_DIR}/rules/{rules.version}/{rules.name}.yaml"] = rules.path
    return sources


def hash_table(version: str, rules_root: Path | None = None) -> dict:
    """The content of ``<rules_root>/<version>/reference-code.json`` for the code installed now."""
    benchmarks = {}
    for name, rules in load_ruleset(version, rules_root).items():
        for framework in rules.data["implementations"]:
            benchmarks[released_key(name, framework)] = {
                path: sha256_file(src) for path, src in reference_sources(rules, framework).items()}
    return {"format": FORMAT, "rules_version": version,
            "generated_by": "trainmark rules code-hashes --rules-version " + version,
            "benchmarks": benchmarks}


def render(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def hash_file(version: str, rules_root: Path | None = None) -> Path:
    return Path(rules_root or RULES_ROOT) / version / HASH_FILE


def frozen(version: str, rules_root: Path | None = None) -> str | None:
    """Why ``version``'s table is frozen as released (its ``frozen`` note), or None: not frozen, or no table."""
    try:
        note = json.loads(hash_file(version, rules_root).read_text(encoding="utf-8")).get("frozen")
    except (OSError, ValueError, AttributeError):
        return None
    return note if isinstance(note, str) and note else None


def released_differences(rules: BenchmarkRules, rules_root: Path | None, sources: dict[str, Path],
                         framework: str = "pytorch") -> list[str] | None:
    """Record paths whose installed file differs from the released hashes (None: no hashes for this version)."""
    try:
        table = json.loads(hash_file(rules.version, rules_root).read_text(encoding="utf-8"))
        released = table["benchmarks"][released_key(rules.name, framework)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    differ = [p for p, src in sources.items() if released.get(p) != sha256_file(src)]
    return sorted(differ + [p for p in released if p not in sources])
