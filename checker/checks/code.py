"""Check the implementation record: the code that ran is present, hashed, and (closed division) the released reference.

For each trainmark benchmark folder ``<submitter>/results/<system>/<benchmark>`` the record
is ``<submitter>/benchmarks/<benchmark>/implementations/<system>/``
(``trainmark.harness.code_record`` writes it; docs/result-format.md). What is checked:

- the record exists (``CODE-001``) when the results are of result format 2 or later
  (``format_version`` in ``trial_<k>/trial.json`` or ``trainmark_format_version`` in the MLLOG), and
  whatever format they claim when their rules version's release carries code hashes (``CODE-013``):
  the record cannot be declined by writing format 1 into trial.json; only folders of format 1 under
  a rules version without released hashes get a note saying their code is not verified;
- ``MANIFEST.sha256`` is well formed (``CODE-002``), every file it lists exists (``CODE-003``)
  with that SHA-256 (``CODE-004``), and every file of the record is listed (``CODE-005``);
- ``implementation.json``, ``environment.json`` and ``command.json`` are there and well formed
  (``CODE-006``) and name the benchmark, system, division and rules version of the results (``CODE-010``);
- closed division: the files under ``code/`` are exactly the released reference of the rules
  version, byte for byte, by the hashes shipped in ``rules/<version>/reference-code.json``
  (``CODE-007``; no hashes for that version: ``CODE-008``);
- open division with ``--model``: the model's source is there (``CODE-009``);
- the record's framework is one the release knows (``CODE-011``) and the one the MLLOG logs
  (``CODE-012``): another framework's code cannot stand in for the code that ran.

The record is read by ``read/record.py`` (through ``SafeTree``: no links followed, sizes capped), and what the
results claim about their code comes from the benchmark's evidence (``code_claims``); the files are only hashed
or parsed as JSON: nothing in a record is imported or run.
"""
from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmark.checker.checks.code_imports import missing_imports
from trainmark.checker.read.evidence import BenchmarkEvidence
from trainmark.checker.read.record import MISSING, REFUSED, RecordFolder
from trainmark.checker.verdict.codes import CHECKER_001
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.format import layout, mllog
from trainmark.rules.reference_code import released_key

CODE_001 = rule(
    "CODE-001", ERROR, "a benchmark of result format 2 has no implementation record (the code that ran)",
    fix="submit <submitter>/benchmarks/<benchmark>/implementations/<system>/ as trainmark run wrote it",
    why="From result format 2 on, the code that ran is part of the result; without it no one can verify what trained "
    "the model. It proves the record is absent, not that the code was wrong.",
    bad="format 2 results without benchmarks/resnet-mini/implementations/sys/",
    good="benchmarks/resnet-mini/implementations/sys/ as trainmark run wrote it", module=__name__)
CODE_002 = rule(
    "CODE-002", ERROR, "the implementation's MANIFEST.sha256 is missing or has a malformed line",
    fix="keep MANIFEST.sha256 as trainmark run wrote it: '<sha256>  <relative path>' per file",
    why="The manifest is the list of files and their hashes everything else is verified against; a missing or "
    "malformed one leaves the record unverifiable. It says nothing about the files themselves.",
    bad="MANIFEST.sha256 with a line 'abc  code/x.py' (not 64 hex digits)",
    good="'<64 hex digits>  code/x.py' per file", module=__name__)
CODE_003 = rule(
    "CODE-003", ERROR, "a file listed in MANIFEST.sha256 is missing",
    fix="submit every file of the implementation record",
    why="A file the manifest lists but the record lacks is code that ran but was not submitted. It proves the absence, "
    "not what the file held.",
    bad="MANIFEST lists code/model.py; the file is not there",
    good="every listed file present", module=__name__)
CODE_004 = rule(
    "CODE-004", ERROR, "a file's SHA-256 differs from MANIFEST.sha256",
    fix="do not edit the implementation record; rerun to record changed code",
    why="A hash that differs from the manifest means the file changed after the run recorded it. It cannot say whether "
    "the change matters for the result.",
    bad="code/train.py edited after the run",
    good="the files as the run hashed them", module=__name__)
CODE_005 = rule(
    "CODE-005", ERROR, "a file of the implementation record is not listed in MANIFEST.sha256",
    fix="remove files added after the run, or rerun",
    why="A file in the record but not in the manifest was added after the run; it did not run. It cannot tell a "
    "harmless note from a replaced module.",
    bad="code/extra.py not in MANIFEST.sha256",
    good="every file listed", module=__name__)
CODE_006 = rule(
    "CODE-006", ERROR, "implementation.json, environment.json or command.json is missing or malformed",
    fix="submit the implementation record trainmark run wrote, unchanged",
    why="implementation.json, environment.json and command.json say what ran, where and how; without them the record "
    "cannot be tied to its results. It proves only that they are missing or unreadable.",
    bad="implementation.json truncated",
    good="the three JSON files as trainmark run wrote them", module=__name__)
CODE_007 = rule(
    "CODE-007", ERROR, "closed division: the reference code differs from the released reference of the rules version",
    fix="run the released trainmark of that rules version unmodified (its hashes: rules/<version>/reference-code.json)",
    why="The closed division compares systems running the same code; its files must hash to the released reference of "
    "the rules version. It proves the code differs, not that the difference helps.",
    bad="code/ with a modified optimizer step",
    good="code/ equal to rules/<version>/reference-code.json's hashes", module=__name__)
CODE_008 = rule(
    "CODE-008", WARNING, "closed division: no released reference hashes for the rules version (code not compared)",
    fix="check with the rules that ship rules/<version>/reference-code.json (`trainmark rules code-hashes`)",
    why="Without released hashes for the rules version the reference code cannot be compared; a warning, since the "
    "rest of the record is still checked. It proves nothing about the code either way.",
    bad="closed results under rules with no reference-code.json",
    good="rules that ship reference-code.json", module=__name__)
CODE_009 = rule(
    "CODE-009", ERROR, "open division: the source of the model behind --model is missing",
    fix="submit the implementation record with its model/ folder, as trainmark run --model wrote it",
    why="An open-division model is the submitter's own code; its source must be submitted so others can read and rerun "
    "it. It proves the source is absent, not that the model was different.",
    bad="implementations/sys/ without model/ for a --model run",
    good="model/ with the module --model named", module=__name__)
CODE_010 = rule(
    "CODE-010", ERROR, "the implementation record names another benchmark, system, division or rules version than its "
    "results",
    fix="submit each system's record under benchmarks/<benchmark>/implementations/<system>/, unchanged",
    why="A record that names another benchmark, system, division or rules version belongs to other results; it cannot "
    "vouch for these. It proves the mismatch, not which side is right.",
    bad="implementation.json naming system 'box-a' under results/box-b/",
    good="the record naming the same system", module=__name__)
CODE_011 = rule(
    "CODE-011", ERROR, "the implementation record's framework is not one the rules version's released code knows",
    fix="run the released trainmark unmodified: implementation.json names the framework that ran (pytorch, tensorflow)",
    why="The released code knows the frameworks it ships (pytorch, tensorflow); another name means the record was "
    "edited or comes from other code. It cannot identify the code that did run.",
    bad="implementation.json framework 'jax'",
    good="framework 'pytorch'", module=__name__)
CODE_012 = rule(
    "CODE-012", ERROR, "the implementation record's framework differs from the framework the MLLOG logs",
    fix="submit the record the run of these results wrote: each system's results beside that system's own code",
    why="The MLLOG logs the framework that trained; a record naming another one belongs to another run. It proves the "
    "two disagree, not which is true.",
    bad="record says tensorflow, MLLOG says pytorch",
    good="both say pytorch", module=__name__)
CODE_013 = rule(
    "CODE-013", ERROR, "no implementation record under a rules version whose release carries code hashes (whatever "
    "format version trial.json claims)",
    fix="submit <submitter>/benchmarks/<benchmark>/implementations/<system>/ as trainmark run wrote it",
    why="Once a rules version's release carries code hashes, the record is required whatever trial.json claims, so "
    "writing format 1 into trial.json cannot decline it. It proves the record is absent.",
    bad="format_version 1 in trial.json, rules 1.1, no record",
    good="the record beside the results", module=__name__)
CODE_014 = rule(
    "CODE-014", ERROR, "closed division: the implementation record holds a file that is neither released code, the "
    "environment, the command nor the manifest",
    fix="submit the record trainmark run wrote, unchanged: a closed run has nothing else to record",
    why="A closed run records the released reference (code/), the environment, the command and the manifest; any "
    "other file (a patch, a kernel, a model/) is code the results may rely on that the closed division does not "
    "allow, even when the manifest lists it. It cannot tell whether the extra file was used.",
    bad="patches/fast_kernels.py beside code/, listed in MANIFEST.sha256",
    good="MANIFEST.sha256, implementation.json, environment.json, command.json and code/ only", module=__name__)
CODE_015 = rule(
    "CODE-015", ERROR, "open division: the record does not name the model its trials ran, or a recorded model file "
    "imports a module of the user's tree the record lacks",
    fix="submit the record trainmark run --model wrote, with every module it recorded under model/",
    why="An open result is reproducible only from the model's source and every module of the user's tree it imports; "
    "the checker reads the import statements of model/ (never runs them) and the trials' model names. It cannot see "
    "a module loaded another way (importlib with a computed name).",
    bad="model/mynet.py imports helper, model/helper.py deleted; or model/ deleted and implementation.json model null",
    good="model/mynet.py and model/helper.py, implementation.json naming mynet:build", module=__name__)

RECORD_FILES = {layout.MANIFEST, layout.IMPLEMENTATION_JSON, layout.ENVIRONMENT_JSON, layout.COMMAND_JSON}

IMPLEMENTATION_FORMAT = layout.IMPLEMENTATION_FORMAT
MANIFEST = layout.MANIFEST
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64}) [ *](.+)")


def record_rel(bench_rel: str, benchmark: str, system: str | None) -> str | None:
    """Where the record of ``.../results/<system>/<benchmark>`` lies, or None when outside the checked folder."""
    parts = bench_rel.split("/") if bench_rel else []
    if len(parts) < 3 or parts[-3] != layout.RESULTS_DIR or system is None:
        return None
    return "/".join([*parts[:-3], *layout.record_parts(benchmark, system)])


class _Released:
    """The shipped reference hashes per rules version (a trusted file: ours, or the reviewer's --rules-dir)."""

    def __init__(self, rules_root: Path):
        self.root = Path(rules_root)
        self._cache: dict[str, dict | str] = {}

    def get(self, version: str) -> dict | str:
        """The table, or a string saying why there is none."""
        if version not in self._cache:
            path = self.root / version / layout.RELEASED_CODE_FILE
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(table, dict) or not isinstance(table.get("benchmarks"), dict):
                    raise ValueError("no 'benchmarks' object")
                self._cache[version] = table
            except FileNotFoundError:
                self._cache[version] = f"{path} does not exist"
            except (OSError, ValueError) as exc:
                self._cache[version] = f"{path} is unreadable: {exc}"
        return self._cache[version]


def check_code(benchmarks: list, read_record: Callable[[str], RecordFolder], claims: dict[str, CodeClaims],
               rules_root: Path, findings: Findings, notes: list[str]) -> None:
    """Check the implementation record of every trainmark benchmark in ``benchmarks`` (BenchmarkResult), each
    record read by ``read_record`` (``read/record.py``; one at a time: a record may hold 256 MiB) and judged
    against what its benchmark's evidence claims (``claims`` by benchmark folder, ``code_claims``)."""
    released = _Released(rules_root)
    legacy, outside = [], []
    for result in benchmarks:
        if result.format != "trainmark":
            continue
        rel = record_rel(result.path, result.benchmark, result.system)
        if rel is None:
            outside.append(result.path or ".")
            continue
        try:
            _check_one(result, read_record(rel), released, claims.get(result.path, CodeClaims()), findings, legacy)
        except Exception as exc:  # noqa: BLE001 - a checker bug must not hide the other folders
            findings.add(CHECKER_001, rel, f"checking the implementation record failed: {type(exc).__name__}: {exc}",
                         expected="a complete check", seen=type(exc).__name__)
    if legacy:
        notes.append(f"code not verified for {len(legacy)} benchmark folder(s) of result format 1, written before "
                     f"submissions held their code ({', '.join(legacy[:3])}{', ...' if len(legacy) > 3 else ''}); "
                     "rerun with this trainmark to include the implementation record (docs/result-format.md)")
    if outside:
        notes.append("code not verified: the implementation record lies in <submitter>/benchmarks/, outside the "
                     "checked folder; check the submitter folder (or above) to verify it")


@dataclass(frozen=True)
class CodeClaims:
    """What a benchmark's results say about the code that made them (``code_claims`` of its evidence)."""
    frameworks: frozenset[str] = frozenset()  # logged by its MLLOG files (a file that logs none: pytorch)
    logged_format: int = 1                    # the highest trainmark_format_version its MLLOG files log
    trial_format: int = 1                     # the highest format_version its trials' trial.json claim
    models: frozenset[str] = frozenset()      # the --model specs (MODULE:CALLABLE) its trials' trial.json name


def code_claims(ev: BenchmarkEvidence) -> CodeClaims:
    """The claims of a benchmark folder's evidence, kept for ``check_code`` (which runs after every benchmark):
    every readable result file's first framework and format version, and every trial folder's trial.json
    (a trial without a result file too). The reference's model id has no colon, so it is not a --model spec."""
    frameworks, logged = set(), 1
    for events in ev.events_by_trial().values():
        framework = mllog.first_value(events, mllog.FRAMEWORK, "pytorch")  # absent: pytorch, the first one
        frameworks.add(framework if isinstance(framework, str) else repr(framework))
        version = mllog.first_value(events, mllog.FORMAT_VERSION)
        if type(version) is int and version > logged:
            logged = version
    claimed = [j.value for _, j in sorted(ev.trial_jsons.items()) if j.value is not None]
    trial_format = max([1, *(v for v in (c.get("format_version") for c in claimed) if type(v) is int)])
    models = frozenset(m for m in (c.get("model") for c in claimed) if isinstance(m, str) and ":" in m)
    return CodeClaims(frozenset(frameworks), logged, trial_format, models)


def _safe_path(path: str) -> bool:
    parts = path.split("/")
    return (not path.startswith("/") and "\\" not in path and path.isprintable()
            and all(p not in ("", ".", "..") for p in parts))


def parse_manifest(text: str, rel: str, findings: Findings) -> dict[str, str]:
    """``sha256sum`` lines -> {path: hex}; a malformed or duplicate line is CODE-002."""
    listed: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line:
            continue
        m = _MANIFEST_LINE.fullmatch(line)
        if not m or not _safe_path(m[2]):
            findings.add(CODE_002, rel, f"{rel}:{number}: not '<sha256>  <relative path>'", line=number,
                         expected="64 lowercase hex digits, two spaces, a relative path without '..'", seen=line)
        elif m[2] in listed:
            findings.add(CODE_002, rel, f"{rel}:{number}: {m[2]} is listed twice", line=number,
                         expected="each file once", seen=m[2])
        else:
            listed[m[2]] = m[1]
    return listed


def _load_json(files: dict[str, bytes], name: str, rel: str, required: dict[str, tuple], findings: Findings
               ) -> dict[str, Any] | None:
    where = posixpath.join(rel, name)
    if name not in files:
        findings.add(CODE_006, where, f"{where} is missing", expected=name, seen="missing")
        return None
    try:
        data = json.loads(files[name].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        findings.add(CODE_006, where, f"{where} is not UTF-8 JSON: {exc}", expected="a JSON object")
        return None
    if not isinstance(data, dict):
        findings.add(CODE_006, where, f"{where} is not a JSON object", expected="a JSON object",
                     seen=type(data).__name__)
        return None
    for key, types in required.items():
        if not isinstance(data.get(key), types) or isinstance(data.get(key), bool):
            findings.add(CODE_006, where, f"{where}: field {key!r} is missing or of the wrong type",
                         expected=" or ".join(t.__name__ for t in types), seen=data.get(key, "missing"))
            return None
    return data


def _check_one(result, record: RecordFolder, released: _Released, claims: CodeClaims, findings: Findings,
               legacy: list[str]) -> None:
    if not _record_present(result, record, released, claims, findings, legacy):
        return
    rel, files = record.rel, record.files
    record.problems.replay(findings)  # links, unreadable files, the caps: met while reading
    digests = {path: hashlib.sha256(data).hexdigest() for path, data in files.items()}
    _check_manifest(files, digests, rel, findings)
    info = _load_json(files, layout.IMPLEMENTATION_JSON, rel,
                      {"format": (str,), "benchmark": (str,), "rules_version": (str,), "division": (str,),
                       "system": (str,), "code_files": (list,)}, findings)
    _load_json(files, layout.ENVIRONMENT_JSON, rel, {"python": (str,), "distributions": (dict,)}, findings)
    _load_json(files, layout.COMMAND_JSON, rel, {"argv": (list,)}, findings)
    if info is not None:
        _check_implementation(result, rel, info, files, digests, released, claims, findings)


def _record_present(result, record: RecordFolder, released: _Released, claims: CodeClaims, findings: Findings,
                    legacy: list[str]) -> bool:
    """Whether the implementation record is there to check (CODE-001 when a format-2 folder lacks it, CODE-013
    when its rules version's release carries code hashes: a format-1 claim does not excuse it)."""
    rel = record.rel
    if record.state == MISSING:
        hashed = isinstance(released.get(result.rules_version), dict) if result.rules_version else False
        if max(claims.trial_format, claims.logged_format) >= 2:
            findings.add(CODE_001, rel, f"{rel} is missing: the results of {result.path} come without the code "
                         "that produced them", expected="the implementation record trainmark run writes",
                         seen="missing")
        elif hashed:
            findings.add(CODE_013, rel, f"{rel} is missing: rules {result.rules_version} ship the hashes of their "
                         f"released code, so its results must come with the code that produced them, whatever "
                         "format version trial.json claims", expected="the implementation record trainmark run "
                         "writes", seen="missing")
        else:
            legacy.append(result.path)
        return False
    if record.state == REFUSED:
        record.problems.replay(findings)
        return False
    return True


def _check_manifest(files: dict[str, bytes], digests: dict[str, str], rel: str, findings: Findings) -> None:
    """Every file of the record listed in its manifest with its SHA-256, and nothing else (CODE-002..005)."""
    manifest_rel = posixpath.join(rel, MANIFEST)
    if MANIFEST not in files:
        findings.add(CODE_002, manifest_rel, f"{manifest_rel} is missing: the record's files are not hashed",
                     expected=MANIFEST, seen="missing")
        listed = {}
    else:
        try:
            listed = parse_manifest(files[MANIFEST].decode("utf-8"), manifest_rel, findings)
        except UnicodeDecodeError:
            findings.add(CODE_002, manifest_rel, f"{manifest_rel} is not UTF-8", expected="UTF-8 text")
            listed = {}
        for path, digest in listed.items():
            if path not in files:
                findings.add(CODE_003, posixpath.join(rel, path), f"{path} is listed in {MANIFEST} but missing",
                             expected="the file", seen="missing")
            elif digests[path] != digest:
                findings.add(CODE_004, posixpath.join(rel, path), f"{path}: SHA-256 differs from {MANIFEST}",
                             expected=digest, seen=digests[path])
        for path in sorted(files):
            if path != MANIFEST and path not in listed and MANIFEST in files:
                findings.add(CODE_005, posixpath.join(rel, path), f"{path} is not listed in {MANIFEST}",
                             expected=f"a line '<sha256>  {path}'", seen="not listed")


def _check_implementation(result, rel: str, info: dict, files: dict[str, bytes], digests: dict[str, str],
                          released: _Released, claims: CodeClaims, findings: Findings) -> None:
    """The implementation record against the results and, closed, the released reference (CODE-006..010)."""
    info_rel = posixpath.join(rel, layout.IMPLEMENTATION_JSON)
    if info["format"] != IMPLEMENTATION_FORMAT:
        findings.add(CODE_006, info_rel, f"{info_rel}: format {info['format']!r} is not known",
                     expected=IMPLEMENTATION_FORMAT, seen=info["format"])
    for key, want in (("benchmark", result.benchmark), ("system", result.system), ("division", result.division),
                      ("rules_version", result.rules_version)):
        if want is not None and info[key] != want:
            findings.add(CODE_010, info_rel, f"{info_rel} names {key} {info[key]!r}, the results {want!r}",
                         expected=want, seen=info[key])
    division = result.division or info["division"]
    framework = _check_framework(result, info_rel, info.get("framework", "pytorch"), released, claims, findings)
    if division == "closed":
        _check_released(result, rel, digests, released, findings, framework)
        _check_closed_extras(rel, files, findings)
    model = info.get("model")
    if division == "open" and isinstance(model, str) and model:
        if not any(path.startswith(f"{layout.MODEL_DIR}/") and path.endswith(".py") for path in files):
            findings.add(CODE_009, posixpath.join(rel, layout.MODEL_DIR), f"open division with --model {model}: "
                         f"the model's source is not in {rel}/model/", expected="model/<module>.py", seen="missing")
    if division == "open":
        _check_open_model(rel, model, files, claims, findings)


def _check_closed_extras(rel: str, files: dict[str, bytes], findings: Findings) -> None:
    """CODE-014: a closed record holds code/ (released code, CODE-007) and its own four files, nothing else."""
    for path in sorted(p for p in files if p not in RECORD_FILES and not p.startswith(f"{layout.CODE_DIR}/")):
        findings.add(CODE_014, posixpath.join(rel, path), f"{path} is neither released code, the environment, the "
                     "command nor the manifest: a closed record holds nothing else",
                     expected=f"{layout.CODE_DIR}/ and the record's own files", seen=path)


def _check_open_model(rel: str, model: object, files: dict[str, bytes], claims: CodeClaims,
                      findings: Findings) -> None:
    """CODE-015: the model the trials name (trial.json's ``model`` MODULE:CALLABLE) is the record's, and every
    module the recorded model files import is there (checks/code_imports.py)."""
    info_rel = posixpath.join(rel, layout.IMPLEMENTATION_JSON)
    ran = sorted(claims.models - {model})
    if ran:
        findings.add(CODE_015, info_rel, f"the trials ran model {ran[0]!r}, {info_rel} names {model!r}: the record "
                     "does not name the model that ran", expected=ran[0], seen=repr(model))
    environment = _json_object(files.get(layout.ENVIRONMENT_JSON))
    for path, line, name in missing_imports(files, environment.get("distributions"))[:20]:
        findings.add(CODE_015, posixpath.join(rel, path), f"{path}:{line} imports {name}, which is neither in "
                     f"{layout.MODEL_DIR}/, the standard library nor an installed distribution: a module of the "
                     "user's tree the record lacks", line=line, expected=f"{layout.MODEL_DIR}/{name}.py",
                     seen="missing")


def _json_object(data: bytes | None) -> dict:
    try:
        value = json.loads(data) if data is not None else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _check_framework(result, info_rel: str, framework: object, released: _Released, claims: CodeClaims,
                     findings: Findings) -> object:
    """The record's framework against the release (CODE-011) and the MLLOG (CODE-012); returns the framework
    whose released code the record's code/ must be: the logged one where the record names an unknown one."""
    framework = framework if isinstance(framework, str) else repr(framework)  # a JSON list or object: unknown
    table = released.get(result.rules_version) if result.rules_version else None
    known = {"pytorch"} | {key.partition("@")[2] for key in table["benchmarks"] if "@" in key} \
        if isinstance(table, dict) else None
    if known is not None and framework not in known:
        findings.add(CODE_011, info_rel, f"{info_rel} names framework {framework!r}, which the released code of "
                     f"rules {result.rules_version} does not know", expected=" or ".join(sorted(known)),
                     seen=framework)
    if claims.frameworks and claims.frameworks != {framework}:
        findings.add(CODE_012, info_rel, f"{info_rel} names framework {framework!r}, the results' MLLOG "
                     f"{', '.join(sorted(claims.frameworks))}: the record is not the code that ran",
                     expected=" and ".join(sorted(claims.frameworks)), seen=framework)
    if known is not None and framework not in known and len(claims.frameworks) == 1:
        return next(iter(claims.frameworks))
    return framework


def _check_released(result, rel: str, digests: dict[str, str], released: _Released, findings: Findings,
                    framework: object) -> None:
    version = result.rules_version
    table = released.get(version) if version else "the results name no rules version"
    key = released_key(result.benchmark, framework) if isinstance(framework, str) else None
    expected = table.get("benchmarks", {}).get(key) if isinstance(table, dict) and key else None
    if not isinstance(expected, dict):
        why = table if isinstance(table, str) else f"it lists no benchmark {key or result.benchmark!r}"
        findings.add(CODE_008, posixpath.join(rel, layout.CODE_DIR), f"closed-division code not compared with the "
                     f"released reference of rules {version}: {why}", expected=f"{layout.RELEASED_CODE_FILE} with the "
                     "benchmark", seen=why)
        return
    code = {p: d for p, d in digests.items() if p.startswith(f"{layout.CODE_DIR}/")}
    for path, digest in sorted(expected.items()):
        where = posixpath.join(rel, path)
        if path not in code:
            findings.add(CODE_007, where, f"{path} of the released reference (rules {version}) is missing",
                         expected=digest, seen="missing")
        elif code[path] != digest:
            findings.add(CODE_007, where, f"{path} differs from the released reference of rules {version}",
                         expected=digest, seen=code[path])
    for path in sorted(set(code) - set(expected)):
        findings.add(CODE_007, posixpath.join(rel, path), f"{path} is not part of the released reference of "
                     f"rules {version}", expected="only the released reference's files under code/", seen=path)
