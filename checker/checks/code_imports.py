"""The modules an open-division model's recorded files import, read from their import statements (never run).

``trainmark run --model`` records the model's module and every module of the user's own tree its import loaded
(harness/code_record.py). A record from which a sibling module was deleted still imports it: this module lists
every ``import``/``from ... import`` of the recorded ``model/`` files (``ast``, no code executed) and returns those
that resolve to nothing the record or the environment provides: not in ``model/``, not the standard library, not
trainmark, not a distribution installed here or listed in the record's environment.json. Imports guarded by a
``try`` that handles ImportError (optional dependencies) are not required. Relative imports must resolve inside
``model/``.
"""
from __future__ import annotations

import ast
import functools
import posixpath
import re
import sys

from trainmark.format import layout

ALWAYS_THERE = {"__future__", "trainmark"}
_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@functools.lru_cache(maxsize=1)
def _installed() -> frozenset[str]:
    """Top-level module names of the distributions installed in the checker's environment (their metadata only)."""
    from importlib.metadata import packages_distributions

    return frozenset(packages_distributions())


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def missing_imports(files: dict[str, bytes], distributions: object) -> list[tuple[str, int, str]]:
    """(record path, line, module) of every required import of the recorded model files that resolves to nothing
    (see the module docstring); ``distributions``: environment.json's {name: version}."""
    modules = {p[len(layout.MODEL_DIR) + 1:] for p in files if p.startswith(f"{layout.MODEL_DIR}/")}
    provided = {_normal(str(d)) for d in distributions} if isinstance(distributions, dict) else set()
    missing = []
    for path in sorted(p for p in modules if p.endswith(".py")):
        for line, level, name in _imports(files[f"{layout.MODEL_DIR}/{path}"]):
            if level:
                if not _relative_found(path, level, name, modules):
                    missing.append((f"{layout.MODEL_DIR}/{path}", line, "." * level + name))
                continue
            top = name.partition(".")[0]
            if not (top in ALWAYS_THERE or top in sys.stdlib_module_names or f"{top}.py" in modules
                    or f"{top}/__init__.py" in modules or any(m.startswith(f"{top}/") for m in modules)
                    or _normal(top) in provided or top in _installed()):
                missing.append((f"{layout.MODEL_DIR}/{path}", line, name))
    return missing


def _imports(source: bytes) -> list[tuple[int, int, str]]:
    """(line, relative level, module) of every import statement not guarded by an ImportError handler; none for
    a file that does not parse (the run imported it, so an edited file is CODE-004's finding)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[tuple[int, int, str]] = []
    try:
        _visit(tree, False, found)
    except RecursionError:  # nested past Python's limit: what was found so far
        pass
    return found


def _visit(node: ast.AST, guarded: bool, found: list[tuple[int, int, str]]) -> None:
    if isinstance(node, ast.Import) and not guarded:
        found += [(node.lineno, 0, alias.name) for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and not guarded:
        found += [(node.lineno, node.level, node.module or "")]
    if isinstance(node, ast.Try) and any(_handles_import_error(h) for h in node.handlers):
        for child in node.body:
            _visit(child, True, found)
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            _visit(child, guarded, found)
        return
    for child in ast.iter_child_nodes(node):
        _visit(child, guarded, found)


def _handles_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(isinstance(k, ast.Name) and k.id in _GUARDS for k in kinds)


def _relative_found(path: str, level: int, name: str, modules: set[str]) -> bool:
    """Whether ``from <level dots><name> import ...`` in model/``path`` names a module or package of the record."""
    base = posixpath.dirname(path)
    for _ in range(level - 1):
        if not base:
            return False
        base = posixpath.dirname(base)
    target = posixpath.join(base, *name.split(".")) if name else base
    return (f"{target}.py" in modules or f"{target}/__init__.py" in modules
            or (not name and (base == "" or f"{base}/__init__.py" in modules)))
