"""A benchmark's code, as its rule file names it: ``implementations: {pytorch: MODULE:CLASS, ...}``.

The rule file is the only place a benchmark names its code, one ``MODULE:CLASS`` per framework
(``pytorch`` always; ``tensorflow`` for a benchmark with a Keras twin). This module imports exactly
the class a rule file names, and only when the benchmark runs or is checked: listing benchmarks
reads the rule files and never imports torch. Rule files are ours or the user's own
(``--rules-dir``); nothing from a submission ever names a module.
"""
from __future__ import annotations

import importlib

from trainmark.errors import UserError


def implementation(rules, framework: str = "pytorch") -> type:
    """The class a rule file names for ``framework`` (imported here); a one-line UserError when it cannot be."""
    spec = rules.implementations.get(framework)
    if spec is None:
        raise UserError(f"{rules.path}: names no {framework} implementation of {rules.name}")
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"{rules.path}: implementations.{framework} {spec!r} cannot be imported: {exc}") from None


def for_rules(rules):
    """A fresh instance of the reference a rule file names; it keeps its rules (``ref.rules``), where the
    other frameworks' implementations of the benchmark (``twin``) are named."""
    cls = implementation(rules)
    name = rules.reference_model["id"]
    if getattr(cls, "name", None) != name:
        raise UserError(f"{rules.path}: implementations.pytorch {rules.implementations['pytorch']} is named "
                        f"{getattr(cls, 'name', None)!r}, not the reference_model id {name!r} (set name = {name!r})")
    ref = cls()
    ref.rules = rules
    return ref


def twin(ref, framework: str) -> type:
    """The class that implements ``ref``'s benchmark under ``framework`` (a Keras twin), as its rules name it."""
    return implementation(ref.rules, framework)


def get(name: str):
    """A fresh instance of the shipped benchmark ``name``'s reference (the latest rules' rule file)."""
    from trainmark.rules import get_rules

    return for_rules(get_rules(name))


def reference_structure(rules, build=None) -> dict:
    """The structure description (``trainmark.format.structure``) of the reference model a rule file names,
    built on the meta device: no memory, no data, nothing from a submission. ``build(rules)`` replaces the
    reference's own ``build_model`` (the tests' tiny model)."""
    import torch

    from trainmark.format import structure

    with torch.device("meta"):
        model = build(rules) if build is not None else for_rules(rules).build_model()  # as the harness does
    return structure.describe(model)
