"""Benchmark registry: name -> reference implementation.

A rule file names its reference class (``reference_model.implementation``, e.g.
``trainmark.reference.resnet_mini:ResnetMini``): ``for_rules`` imports that one module only
when the benchmark runs or is checked, so listing benchmarks never imports torch. Adding a
benchmark means a module whose class is decorated with ``@register`` and a rule file under
``rules/<version>/`` that names it. Rule files are ours or the user's own (``--rules-dir``);
nothing from a submission ever names a module.
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


def for_rules(rules):
    """A fresh instance of the reference a rule file names (its implementation, else its id)."""
    spec = rules.reference_model.get("implementation")
    name = rules.reference_model["id"]
    if spec and name not in _REGISTRY:
        module, _, attr = spec.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UserError(f"{rules.path}: reference_model.implementation {spec!r} "
                            f"cannot be imported: {exc}") from None
        if _REGISTRY.get(name) is not cls:
            raise UserError(f"{rules.path}: {spec} is not registered as {name!r} (decorate it with @register and "
                            f"set name = {name!r})")
    return get(name)


def get(name: str):
    """A fresh instance of the reference named ``name``."""
    if name not in _REGISTRY:  # importing every reference (torchvision, torchaudio, ...) costs seconds per rank
        _discover()
    if name not in _REGISTRY:
        raise UserError(f"unknown benchmark {name!r}; known: {', '.join(sorted(_REGISTRY)) or 'none'} "
                        "(`trainmark list` shows them)")
    return _REGISTRY[name]()
