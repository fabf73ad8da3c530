"""Is the submitted model the reference model? (closed: must be; open: report how not)

The reference is rebuilt on the ``meta`` device (no memory, no data, nothing from the
submission) and described with ``trainmark.format.structure``; the trial's
``structure.json`` must match it, describe itself truthfully (its fingerprint is
recomputed), and agree with the weights' safetensors header and the MLLOG.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

from trainmark.checker.read.evidence import StructureFile, WeightsFile
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, INFO, rule
from trainmark.format import mllog
from trainmark.rules.ruleset import BenchmarkRules

CONFORM_001 = rule(
    "CONFORM-001", ERROR, "structure.json is malformed or its fingerprint does not match its content",
    fix="copy the structure.json the harness wrote (trainmark.format.structure.describe)",
    why="structure.json describes the model and carries a fingerprint of that description; a malformed file or a "
    "fingerprint that does not match was edited. It proves tampering with the file, not the model.",
    bad="structure.json with a layer removed and the old fingerprint",
    good="the structure.json the harness wrote", module=__name__)
CONFORM_002 = rule(
    "CONFORM-002", ERROR, "the model structure differs from the reference (closed division)",
    fix="train the reference model unchanged, or submit to the open division",
    why="The closed division compares systems training the same model; a structure that differs from the reference "
    "(rebuilt on the meta device, nothing from the submission) is another model. It compares structure, not weights.",
    bad="resnet-mini with one extra block",
    good="the reference model unchanged", module=__name__)
CONFORM_003 = rule(
    "CONFORM-003", INFO, "the model differs from the reference (open division: reported)",
    fix="none needed in the open division",
    why="Open-division models may differ from the reference; the note says how, so readers can compare like with like. "
    "It judges nothing.",
    bad="an open model with wider layers",
    good="(any open model: reported)", module=__name__)
CONFORM_005 = rule(
    "CONFORM-005", ERROR, "the weights' names, dtypes or shapes disagree with structure.json",
    fix="save the weights of the model structure.json describes",
    why="The weights file must hold the tensors structure.json describes (names, dtypes, shapes); others mean the "
    "weights come from another model. Only the header is read, not the values.",
    bad="fc.weight of shape [10, 256] where structure.json says [10, 128]",
    good="the weights of the described model", module=__name__)
CONFORM_006 = rule(
    "CONFORM-006", ERROR, "the MLLOG's fingerprint or parameter count disagrees with structure.json",
    fix="log trainmark_model_fingerprint and trainmark_parameter_count of the model trained",
    why="The MLLOG logs the trained model's fingerprint and parameter count; disagreeing with structure.json means the "
    "files come from different runs. It proves the mismatch, not which is right.",
    bad="trainmark_parameter_count 308538, structure.json 412000",
    good="the same fingerprint and count", module=__name__)

SHOWN_DIFFERENCES, SHOWN_CHARS = 20, 1500  # in a finding's message; the count says how many there are in all
ReferenceBuilder = Callable[[BenchmarkRules], Any]  # returns an nn.Module


class ReferenceStructures:
    """Reference structure descriptions by benchmark: the released ones shipped beside the rule
    files (``rules/<version>/reference-structures.json``: no torch import), else built once on
    the meta device. A custom ``builder`` (tests) is always used."""

    def __init__(self, builder: ReferenceBuilder | None = None):
        self.builder = builder  # None: the reference's own build_model, through trainmark.reference.registry
        self.use_shipped = builder is None
        self._cache: dict[tuple[str, str], tuple[dict | None, str]] = {}

    def describe(self, rules: BenchmarkRules) -> tuple[dict | None, str]:
        """The description, or ``None`` and why there is none."""
        key = (rules.name, rules.version)
        if key not in self._cache:
            from trainmark.rules.reference_structures import shipped

            released = shipped(rules) if self.use_shipped else None
            self._cache[key] = (released, "") if released is not None else self._build(rules)
        return self._cache[key]

    def _build(self, rules: BenchmarkRules) -> tuple[dict | None, str]:
        try:
            from trainmark.reference import registry  # the references' torch, imported only now

            described = registry.reference_structure(rules, self.builder)
        except ModuleNotFoundError as exc:
            return None, f"reference models are not available ({exc}): conformity to the reference not checked"
        except Exception as exc:  # noqa: BLE001 - a broken reference must not stop the check
            return None, (f"reference model {rules.reference_model['id']!r} could not be built "
                          f"({type(exc).__name__}: {exc}): conformity to the reference not checked")
        return described, ""


_ENTRY_FIELDS = {"modules": ("name", "type", "config"), "parameters": ("name", "shape", "dtype"),
                 "buffers": ("name", "shape", "dtype")}


def check_structure(read: StructureFile, findings: Findings) -> tuple[dict | None, str]:
    """A validated ``structure.json`` and its text, or ``None`` after a finding."""
    from trainmark.format import structure
    read.problems.replay(findings, content=CONFORM_001)
    if not read.readable:
        return None, ""
    rel, text, desc = read.rel, read.text, read.value
    problem = _shape_problem(desc)
    if problem:
        findings.add(CONFORM_001, rel, f"{problem}", expected=f"format {structure.FORMAT}", seen=problem)
        return None, text
    recomputed = structure.fingerprint(desc)
    if recomputed != desc["fingerprint"]:
        findings.add(CONFORM_001, rel, "the fingerprint does not match the described structure (edited?)",
                     line=_line_of(text, "fingerprint", desc["fingerprint"]), expected=recomputed,
                     seen=desc["fingerprint"])
    count = sum(math.prod(p["shape"]) for p in desc["parameters"])
    if count != desc["parameter_count"]:
        findings.add(CONFORM_001, rel, f"parameter_count {desc['parameter_count']} but the parameters "
                     f"add up to {count}", line=_line_of(text, "parameter_count"), expected=count,
                     seen=desc["parameter_count"])
    return desc, text


def _shape_problem(desc: Any) -> str:
    from trainmark.format import structure
    if not isinstance(desc, dict):
        return "not a JSON object"
    if desc.get("format") != structure.FORMAT:
        return f"format is {desc.get('format')!r}, expected {structure.FORMAT!r}"
    for key, fields in _ENTRY_FIELDS.items():
        entries = desc.get(key)
        if not isinstance(entries, list):
            return f"{key!r} is not a list"
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or set(entry) != set(fields):
                return f"{key}[{i}] must have exactly the fields {', '.join(fields)}"
            if not isinstance(entry["name"], str):
                return f"{key}[{i}].name is not a string"
            if key == "modules" and not (isinstance(entry["type"], str) and isinstance(entry["config"], str)):
                return f"{key}[{i}] type and config must be strings"
            if key != "modules" and not (isinstance(entry["dtype"], str) and isinstance(entry["shape"], list)
                                         and all(type(d) is int and d >= 0 for d in entry["shape"])):
                return f"{key}[{i}] needs a dtype string and a shape of non-negative integers"
    if type(desc.get("parameter_count")) is not int:
        return "parameter_count is not an integer"
    if not isinstance(desc.get("fingerprint"), str):
        return "fingerprint is not a string"
    return ""


def check_weights(weights: WeightsFile, desc: dict | None, findings: Findings, limit: int = 20) -> None:
    """The safetensors header against the structure's parameters and buffers."""
    weights.problems.replay(findings)
    rel, table = weights.rel, weights.table
    if table is None or desc is None:
        return
    expected = {e["name"]: {"dtype": e["dtype"], "shape": e["shape"]} for e in desc["parameters"] + desc["buffers"]}
    problems = []
    for name in sorted(expected.keys() - table.keys()):
        problems.append((f"tensor {name!r} of structure.json is not in the weights", expected[name], "missing"))
    for name in sorted(table.keys() - expected.keys()):
        problems.append((f"tensor {name!r} in the weights is not in structure.json", "absent", table[name]))
    for name in sorted(expected.keys() & table.keys()):
        if expected[name] != table[name]:
            problems.append((f"tensor {name!r}: structure.json says {_tensor(expected[name])}, the weights hold "
                             f"{_tensor(table[name])}", _tensor(expected[name]), _tensor(table[name])))
    for message, want, got in problems[:limit]:
        findings.add(CONFORM_005, rel, f"{message}", expected=want, seen=got)
    if len(problems) > limit:
        findings.add(CONFORM_005, rel, f"and {len(problems) - limit} more tensor differences",
                     expected="tensors as in structure.json", seen=f"{len(problems)} differences")


def _tensor(entry: dict) -> str:
    return f"{entry['dtype']}{list(entry['shape'])}"


def check_reference(desc: dict, text: str, reference: dict, division: str, rel: str, record: TrialRecord | None,
                    findings: Findings, rules=None) -> None:
    """Closed: the structure must be the reference's. Open: report how it differs."""
    from trainmark.format import structure
    framework = record.value(mllog.FRAMEWORK) if record is not None and mllog.FRAMEWORK in record.points else None
    # another framework's layers are not PyTorch modules: its tensors, mapped onto the reference's names
    # and layouts, are what is compared (an unknown framework name gets the full PyTorch comparison)
    tensors_only = framework == "tensorflow"
    kinds = structure.TENSOR_KINDS if tensors_only else structure.ALL_KINDS
    if (structure.same_tensors(desc, reference) if tensors_only
            else structure.same_model(desc, reference)):
        return
    differences = structure.diff(reference, desc, limit=10**6, kinds=kinds)
    if division == "closed":
        findings.add(CONFORM_002, rel, "the model is not the reference model: " + _listed(differences),
                     line=_first_difference_line(text, reference, desc, kinds), expected=reference["fingerprint"],
                     seen=desc["fingerprint"])
        return
    findings.add(CONFORM_003, _folder_of(rel), f"open-division model {desc['fingerprint'][:12]}: "
                 + open_model_words(desc, reference, record, rules) + "; " + _listed(differences),
                 expected=f"{reference['parameter_count']} parameters", seen=f"{desc['parameter_count']} parameters")


def _folder_of(rel: str) -> str:
    """The benchmark folder of ``<folder>/trial_<k>/structure.json``: an open model is named once per folder (every
    trial of one model gives the same finding, which Findings keeps once), not once per trial."""
    parts = rel.rsplit("/", 2)
    return parts[0] if len(parts) == 3 else rel


def open_model_words(desc: dict, reference: dict, record: TrialRecord | None, rules) -> str:
    """``1,234 parameters, 0.12 GFLOP per step; the reference resnet-mini: 308,538 parameters, 5.32 GFLOP per
    step``: the model's logged FLOPs beside the reference's shipped count at the logged batch size."""
    from trainmark.format.model_size import beside_reference
    from trainmark.rules.reference_work import flops_per_step

    flops = record.value(mllog.FLOPS_PER_STEP) if record is not None else None
    batch = record.value("global_batch_size") if record is not None else None
    ref_flops = flops_per_step(rules, batch) if rules is not None else None
    name = rules.reference_model["id"] if rules is not None else "model"
    return beside_reference(desc.get("parameter_count"), flops, name, reference.get("parameter_count"), ref_flops)


def _listed(differences: list[str]) -> str:
    """The count, then the differences in model order up to ``SHOWN_DIFFERENCES`` (fewer when they are long:
    a finding's message is bounded), then how many more."""
    shown: list[str] = []
    for d in differences[:SHOWN_DIFFERENCES]:
        if sum(len(x) + 2 for x in shown) + len(d) > SHOWN_CHARS:
            break
        shown.append(d)
    count = f"{len(differences)} structural difference{'s' if len(differences) != 1 else ''}"
    more = len(differences) - len(shown)
    if more > 0:
        return f"{count} (the first {len(shown)} here): {'; '.join(shown)}; ... and {more} more"
    return f"{count}: {'; '.join(shown)}"


def _first_difference_line(text: str, reference: dict, desc: dict, kinds) -> int | None:
    for _, key in kinds:
        ref = {e["name"]: e for e in reference[key]}
        for entry in desc[key]:
            if ref.get(entry["name"]) != entry:
                return _line_of(text, "name", entry["name"])
    return None


def _line_of(text: str, field: str, value: Any = None) -> int | None:
    pattern = re.escape(json.dumps(field)) + r"\s*:\s*" + (re.escape(json.dumps(value)) if value is not None else "")
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def check_logged_model(record: TrialRecord, desc: dict, structure_rel: str, findings: Findings) -> None:
    """The MLLOG's fingerprint and parameter count against ``structure.json``."""
    for key, want in ((mllog.MODEL_FINGERPRINT, desc["fingerprint"]),
                      (mllog.PARAMETER_COUNT, desc["parameter_count"])):
        if key in record.points and record.value(key) != want:
            findings.add(CONFORM_006, record.rel, f"{key} is {record.value(key)!r}, {structure_rel} says {want!r}",
                         line=record.line_of(key), expected=want, seen=record.value(key))
