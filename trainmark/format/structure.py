"""Canonical description of a model's structure and its SHA-256 fingerprint.

Closed-division conformity is checked by comparing fingerprints: the checker rebuilds
the reference model on the ``meta`` device (no memory, no data) and describes it the
same way. The description is plain JSON so that a reviewer can diff two of them.
It is written as ``trial_<k>/structure.json``; describing a model needs only the model, so this
module imports no torch (the checker reads descriptions without it).
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
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


# How a module prints its settings changes between PyTorch releases without the module changing: torch 2.14's
# BatchNorm prints ``bias=True`` (its new, default flag), torch 2.11's does not. Structures are compared with
# such release-dependent defaults removed, so one model described by two releases is one model.
RELEASE_DEFAULTS = ((re.compile(r"\.BatchNorm[123]d$|\.SyncBatchNorm$"), ", bias=True"),)


def comparable(description: dict[str, Any]) -> dict[str, Any]:
    """``description`` with each module's config free of the release-dependent defaults above."""
    def config(entry: dict[str, Any]) -> str:
        text = entry.get("config", "")
        for type_pattern, default in RELEASE_DEFAULTS:
            if isinstance(text, str) and type_pattern.search(str(entry.get("type", ""))):
                text = text.replace(default, "")
        return text
    return {**description, "modules": [{**m, "config": config(m)} for m in description.get("modules", [])]}


def same_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two descriptions are one model (modules, parameters and buffers), whichever PyTorch wrote them."""
    return fingerprint(comparable(a)) == fingerprint(comparable(b))


TENSOR_KINDS = (("parameter", "parameters"), ("buffer", "buffers"))
ALL_KINDS = (("module", "modules"), *TENSOR_KINDS)


def same_tensors(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two descriptions hold the same parameters and buffers by name (shape, dtype), whatever
    their modules: how a model of another framework, mapped onto PyTorch's tensor names and layouts
    (reference/keras_twins/weights.py), is compared with the reference."""
    return all({e["name"]: e for e in a[key]} == {e["name"]: e for e in b[key]} for _, key in TENSOR_KINDS)


# difflib's alignment is quadratic in the worst case (many equal signatures): aligned only while
# len(reference) x len(submitted) stays under this many cells, about 1 s at the worst (2.3 us a cell, 307 x 3,000
# modules, 2 vCPU Xeon, 2026-12-04; 5,000 x 5,000 took 375 s). The largest reference has 307 modules (inception-v3),
# so a submitted model of up to 1,600 is aligned; a larger (or hostile) description is compared by name.
MAX_ALIGNED_CELLS = 500_000


def diff(expected: dict[str, Any], actual: dict[str, Any], limit: int = 20, kinds=ALL_KINDS) -> list[str]:
    """Human-readable differences between two descriptions, modules first, in the model's order.

    Modules are aligned by their sequence of (type, config) in ``named_modules`` order, not by name: one
    layer inserted into an ``nn.Sequential`` renumbers every later layer, and is still one difference. A
    tensor is compared with the reference's tensor of the module its owner is aligned with; tensors of an
    inserted or missing module are that module's difference, not more."""
    expected, actual = comparable(expected), comparable(actual)
    out: list[str] = []
    renamed: dict[str, str] = {}   # submitted module path -> the reference module it is aligned with
    unmatched: set[str] = set()    # submitted modules inserted, reference modules missing
    if any(key == "modules" for _, key in kinds):
        renamed, unmatched, out = _align_modules(expected.get("modules", []), actual.get("modules", []))
    for kind, key in kinds:
        if key == "modules":
            continue
        exp = {e["name"]: e for e in expected.get(key, [])}
        act = {_aligned_name(e["name"], renamed): e for e in actual.get(key, [])}
        for name in exp:
            if name not in act and _owner(name) not in unmatched:
                out.append(f"{kind} {name} missing (reference: {_short(exp[name])})")
            elif name in act and exp[name] != {**act[name], "name": name}:
                out.append(f"{kind} {name}: reference {_short(exp[name])}, submitted {_short(act[name])}")
        for name, entry in act.items():
            if name not in exp and _owner(entry["name"]) not in unmatched:
                out.append(f"{kind} {entry['name']} not in the reference ({_short(entry)})")
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def _owner(tensor_name: str) -> str:
    return tensor_name.rsplit(".", 1)[0] if "." in tensor_name else ""


def _aligned_name(tensor_name: str, renamed: dict[str, str]) -> str:
    owner = _owner(tensor_name)
    if owner not in renamed:
        return tensor_name
    leaf = tensor_name[len(owner) + 1:] if owner else tensor_name
    return f"{renamed[owner]}.{leaf}" if renamed[owner] else leaf


def _align_modules(expected: list[dict], actual: list[dict]) -> tuple[dict[str, str], set[str], list[str]]:
    """(submitted path -> reference path, paths inserted or missing, the module differences)."""
    if len(expected) * len(actual) > MAX_ALIGNED_CELLS:
        return _modules_by_name(expected, actual)
    signature = [(e["type"], e["config"]) for e in expected]
    matcher = difflib.SequenceMatcher(None, signature, [(a["type"], a["config"]) for a in actual], autojunk=False)
    renamed: dict[str, str] = {}
    unmatched: set[str] = set()
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        paired = min(i2 - i1, j2 - j1) if tag in ("equal", "replace") else 0
        for i, j in zip(range(i1, i1 + paired), range(j1, j1 + paired)):
            exp, act = expected[i], actual[j]
            renamed[act["name"]] = exp["name"]
            if tag == "replace":
                where = _path(exp["name"]) + (f" (submitted as {_path(act['name'])})" if act["name"] != exp["name"]
                                              else "")
                out.append(f"module {where}: reference {_short(exp)}, submitted {_short(act)}")
        for exp in expected[i1 + paired:i2]:
            unmatched.add(exp["name"])
            out.append(f"module {_path(exp['name'])} missing (reference: {_short(exp)})")
        for act in actual[j1 + paired:j2]:
            unmatched.add(act["name"])
            out.append(f"module {_path(act['name'])} not in the reference ({_short(act)})")
    return renamed, unmatched, out


def _modules_by_name(expected: list[dict], actual: list[dict]) -> tuple[dict[str, str], set[str], list[str]]:
    exp = {e["name"]: e for e in expected}
    act = {a["name"]: a for a in actual}
    out = [f"module {_path(n)} missing (reference: {_short(e)})" for n, e in exp.items() if n not in act]
    out += [f"module {_path(n)} not in the reference ({_short(a)})" for n, a in act.items() if n not in exp]
    out += [f"module {_path(n)}: reference {_short(exp[n])}, submitted {_short(a)}"
            for n, a in act.items() if n in exp and exp[n] != a]
    return {n: n for n in act if n in exp}, (exp.keys() ^ act.keys()), out


def _path(name: str) -> str:
    return name or "<root>"


def _short(entry: dict[str, Any]) -> str:
    if "type" in entry:
        return f"{entry['type'].rsplit('.', 1)[-1]}({entry['config']})"
    return f"{entry['dtype']}{entry['shape']}"
