"""Canonical description of a model's structure and its SHA-256 fingerprint.

Closed-division conformity is checked by comparing fingerprints: the checker rebuilds
the reference model on the ``meta`` device (no memory, no data) and describes it the
same way. The description is plain JSON so that a reviewer can diff two of them.
It is written as ``trial_<k>/structure.json``; describing a model needs only the model, so this
module imports no torch (the checker reads descriptions without it).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

FORMAT = "trainmark-structure/1"


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _tensor_entries(named) -> list[dict[str, Any]]:
    return [{"name": n, "shape": list(t.shape), "dtype": _dtype_name(t.dtype)} for n, t in named]


def describe(model) -> dict[str, Any]:
    """Module tree, parameters and persistent buffers of ``model``, with its fingerprint."""
    modules = [
        {"name": name, "type": f"{type(m).__module__}.{type(m).__qualname__}", "config": m.extra_repr()}
        for name, m in model.named_modules()
    ]
    state = model.state_dict(keep_vars=True)
    param_names = {n for n, _ in model.named_parameters()}
    parameters = _tensor_entries((n, t) for n, t in state.items() if n in param_names)
    buffers = _tensor_entries((n, t) for n, t in state.items() if n not in param_names)
    body = {"modules": modules, "parameters": parameters, "buffers": buffers}
    return {
        "format": FORMAT,
        **body,
        "parameter_count": sum(p.numel() for p in model.parameters()),
        "fingerprint": fingerprint(body),
    }


def fingerprint(description: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the description's modules, parameters and buffers."""
    body = {k: description[k] for k in ("modules", "parameters", "buffers")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


TENSOR_KINDS = (("parameter", "parameters"), ("buffer", "buffers"))
ALL_KINDS = (("module", "modules"), *TENSOR_KINDS)


def same_tensors(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two descriptions hold the same parameters and buffers by name (shape, dtype), whatever
    their modules: how a model of another framework, mapped onto PyTorch's tensor names and layouts
    (reference/keras_twins/weights.py), is compared with the reference."""
    return all({e["name"]: e for e in a[key]} == {e["name"]: e for e in b[key]} for _, key in TENSOR_KINDS)


def diff(expected: dict[str, Any], actual: dict[str, Any], limit: int = 20, kinds=ALL_KINDS) -> list[str]:
    """Human-readable differences between two descriptions (modules, then tensors; ``kinds``: which)."""
    out: list[str] = []
    for kind, key in kinds:
        exp = {e["name"]: e for e in expected.get(key, [])}
        act = {e["name"]: e for e in actual.get(key, [])}
        for name in exp.keys() - act.keys():
            out.append(f"{kind} {name or '<root>'} missing (reference: {_short(exp[name])})")
        for name in act.keys() - exp.keys():
            out.append(f"{kind} {name or '<root>'} not in the reference ({_short(act[name])})")
        for name in exp.keys() & act.keys():
            if exp[name] != act[name]:
                out.append(f"{kind} {name or '<root>'}: reference {_short(exp[name])}, submitted {_short(act[name])}")
    out.sort()
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def _short(entry: dict[str, Any]) -> str:
    if "type" in entry:
        return f"{entry['type'].rsplit('.', 1)[-1]}({entry['config']})"
    return f"{entry['dtype']}{entry['shape']}"
