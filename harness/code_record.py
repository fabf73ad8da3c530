"""The implementation record: the code that ran, written next to the results.

MLPerf's place for it: ``<division>/<submitter>/benchmarks/<benchmark>/implementations/<system>/``
(one record per system that ran the benchmark, named after the system)::

    implementation.json   what ran: benchmark, rules version, division, system, model, files by role
    code/...              the reference modules and the rule file used (trainmark.rules.reference_code)
    model/...             open division with --model: the source of MODULE (the file, or the package's .py files)
                          and of every module of the user's own tree that importing it loaded
    environment.json      every installed distribution and version, Python, CUDA, cuDNN, driver
    command.json          the process's exact command line and the resolved run options
    MANIFEST.sha256       SHA-256 of every other file, ``sha256sum -c`` format

The record is built in a temporary sibling folder and moved into place, so a reader sees
the old record or the new one, never half of one. ``trainmark check`` verifies it
(``trainmark.checker.checks.code``); nothing in it is ever run by the checker.
"""
from __future__ import annotations

import importlib
import json
import platform
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from trainmark import __version__
from trainmark.digest import sha256_file
from trainmark.errors import UserError
from trainmark.format import layout
from trainmark.rules.reference_code import frozen, reference_sources, released_differences

FORMAT = layout.IMPLEMENTATION_FORMAT
MANIFEST = layout.MANIFEST
MAX_MODEL_FILES = 200            # an open-division package copied whole; more means --model names too much
MAX_MODEL_BYTES = 16 * (1 << 20)


def record_dir(submitter_root: Path, benchmark: str, system: str) -> Path:
    return Path(submitter_root).joinpath(*layout.record_parts(benchmark, system))


_IMPORTED: dict[str, dict[str, Path]] = {}  # --model module -> record path -> file of its import closure


def import_model_module(module_name: str):
    """Import the ``--model`` module and remember its import closure: every module of the user's own tree
    that the import loaded (sys.modules before and after), not site-packages, the standard library or trainmark.
    The run finds it, not a pattern over the source, so a sibling module imported any way is recorded."""
    before = set(sys.modules)
    module = importlib.import_module(module_name)
    if module_name not in before or module_name not in _IMPORTED:
        _IMPORTED[module_name] = _user_tree_files(module_name, set(sys.modules) - before)
    return module


def _user_tree_files(module_name: str, loaded: set[str]) -> dict[str, Path]:
    """Record path -> source file of each module in ``loaded`` that lies in the tree ``module_name`` came from."""
    origin = Path(getattr(sys.modules.get(module_name), "__file__", "") or "")
    if origin.suffix != ".py":
        return {}
    origin = origin.resolve()
    root = origin.parents[module_name.count(".") + (origin.name == "__init__.py")]
    own = root / module_name.split(".")[0]  # the module's top-level package (or own file, without .py)
    files = {}
    for name in sorted(loaded | {module_name}):
        path = Path(getattr(sys.modules.get(name), "__file__", "") or "")
        if name.split(".")[0] == "trainmark" or path.suffix != ".py" or not path.is_file():
            continue
        path = path.resolve()
        installed = {"site-packages", "dist-packages"} & set(path.parts)
        if path.is_relative_to(root) and not (installed and not path.with_suffix("").is_relative_to(own)):
            files[f"{layout.MODEL_DIR}/{path.relative_to(root).as_posix()}"] = path
    return files


def model_sources(spec: str) -> dict[str, Path]:
    """Record path -> file of the module behind ``--model MODULE:CALLABLE`` (already imported by the run) and of
    the modules of the user's tree its import loaded (``import_model_module``)."""
    module_name = spec.partition(":")[0]
    module = sys.modules.get(module_name)
    origin = Path(getattr(module, "__file__", "") or "")
    if module is None or origin.suffix != ".py" or not origin.is_file():
        raise UserError(f"--model {spec}: the source of {module_name} cannot be found to record it "
                        "(the open division submits the model's source)")
    stem = module_name.replace(".", "/")
    closure = _IMPORTED.get(module_name, {})
    if origin.name != "__init__.py":
        found = {f"{layout.MODEL_DIR}/{stem}.py": origin}
    else:
        package = sorted(p for p in origin.parent.rglob("*.py") if p.is_file() and "__pycache__" not in p.parts)
        found = {f"{layout.MODEL_DIR}/{stem}/{p.relative_to(origin.parent).as_posix()}": p for p in package}
    found = {**closure, **found}
    if len(found) > MAX_MODEL_FILES or sum(p.stat().st_size for p in found.values()) > MAX_MODEL_BYTES:
        raise UserError(f"--model {spec}: its source and the modules it imports hold more than {MAX_MODEL_FILES} "
                        f"files or {MAX_MODEL_BYTES >> 20} MiB; point --model at a smaller module")
    return found


def environment() -> dict[str, Any]:
    """Every installed distribution with its version, and the Python, CUDA and driver under it."""
    from trainmark.harness.frameworks import pytorch_runtime

    dists: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            dists.setdefault(name, dist.version)
    driver = pytorch_runtime.driver_version()
    libraries = pytorch_runtime.library_versions()
    return {"python": sys.version, "python_implementation": platform.python_implementation(),
            "platform": platform.platform(), "torch": libraries["torch"], "cuda": libraries["cuda"],
            "cudnn": libraries["cudnn"], "cuda_driver": driver, "trainmark": __version__,
            "distributions": dict(sorted(dists.items(), key=lambda kv: kv[0].lower()))}


def _json(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"


def manifest_text(folder: Path) -> str:
    """``<sha256>  <path>`` for every file below ``folder`` but the manifest, sorted by path."""
    lines = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel != MANIFEST:
            lines.append(f"{sha256_file(path)}  {rel}\n")
    return "".join(lines)


def refuse_frozen(rules, rules_root: Path | None, division: str) -> None:
    """A one-line UserError for a closed run under a rules version whose released code is frozen: the code
    installed now is a later release's, so the result would fail ``CODE-007`` when checked."""
    note = frozen(rules.version, rules_root) if division == "closed" else None
    if note:
        from trainmark.rules import LATEST_VERSION

        raise UserError(f"rules {rules.version}: its reference code is frozen as released ({note}); a closed-division "
                        f"run now uses rules {LATEST_VERSION} (--rules-version {LATEST_VERSION})")


def write_record(submitter_root: Path, rules, system: str, division: str, model_spec: str | None,
                 options: dict[str, Any]) -> Path:
    """Write the implementation record of one run; returns its folder.

    In the closed division it also says, before any trial, when the installed reference code
    is not the released one (the checker would report ``CODE-007``).
    """
    refuse_frozen(rules, options.get("rules_dir"), division)
    dest = record_dir(submitter_root, rules.name, system)
    dest.parent.mkdir(parents=True, exist_ok=True)
    framework = options.get("framework") or "pytorch"
    code = reference_sources(rules, framework)
    differ = released_differences(rules, options.get("rules_dir"), code, framework) if division == "closed" else None
    if differ:
        print(f"trainmark run: warning: the installed reference code of {rules.name} differs from the released "
              f"reference of rules {rules.version} ({', '.join(differ[:3])}{', ...' if len(differ) > 3 else ''}); "
              "`trainmark check` will report CODE-007 for this closed-division result", file=sys.stderr)
    model = model_sources(model_spec) if model_spec else {}
    info = {"format": FORMAT, "benchmark": rules.name, "rules_version": rules.version, "division": division,
            "system": system, "reference": rules.reference_model["id"], "framework": framework, "model": model_spec,
            "trainmark_version": __version__, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "code_files": sorted(code), "model_files": sorted(model)}
    command = {"argv": list(getattr(sys, "orig_argv", sys.argv)), "options": options}
    tmp = Path(tempfile.mkdtemp(prefix=f".{system}.", suffix=".tmp", dir=dest.parent))
    try:
        for rel, src in {**code, **model}.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
        (tmp / layout.IMPLEMENTATION_JSON).write_text(_json(info), encoding="utf-8")
        (tmp / layout.ENVIRONMENT_JSON).write_text(_json(environment()), encoding="utf-8")
        (tmp / layout.COMMAND_JSON).write_text(_json(command), encoding="utf-8")
        (tmp / MANIFEST).write_text(manifest_text(tmp), encoding="utf-8")
        tmp.chmod(0o755)
        old = None
        if dest.exists():
            old = dest.with_name(f".{system}.old-{time.time_ns()}")
            dest.rename(old)
        tmp.rename(dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
