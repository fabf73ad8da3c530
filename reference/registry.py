"""Benchmark registry: name -> reference implementation, found by scanning this package.

Adding a benchmark means adding a module here that decorates its class with ``@register``
(and a rule file under ``rules/<version>/`` with the same name).
"""
from __future__ import annotations

import importlib
import pkgutil

from trainmark.errors import UserError

_REGISTRY: dict[str, type] = {}
_SKIP = {"registry", "base"}


def register(cls: type) -> type:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise RuntimeError(f"benchmark {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    import trainmark.reference as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in _SKIP and not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")


def names() -> list[str]:
    _discover()
    return sorted(_REGISTRY)


def get(name: str):
    """A fresh instance of the reference named ``name``."""
    if name not in _REGISTRY:  # importing every reference (torchvision, torchaudio, ...) costs seconds per rank
        _discover()
    if name not in _REGISTRY:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(sorted(_REGISTRY)) or 'none'} "
                        "(`trainmark list` shows them)")
    return _REGISTRY[name]()
