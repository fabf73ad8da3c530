"""One reading of a trainmark benchmark folder into typed evidence: the only code that opens its files.

``read_benchmark`` reads every file the format defines once, with the caps of ``SafeTree``: the result
files (parsed into MLLOG events), ``epochs.log``, the ``interrupted/`` attempts, and in each trial folder
its listing, ``trial.json``, ``structure.json``, the weights' header and a sample of their values, and the
telemetry file. Checks receive this evidence, never a path to open.

What goes wrong while reading (a missing file, a link, a file that is not JSON) is kept with the file it
concerns (``Recorded``) and reported by the check that owns that file, when it runs: the folder is read
up front, and the findings still come in the order the checks run. Where the same reading serves several
formats' rules, the rule for bad content is the owning check's (``CONTENT``, given when it replays them).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trainmark.checker.read.json_file import LAYOUT_003, read_json_object
from trainmark.checker.read.levels import BenchmarkFolder, safe_entries
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safefs import HOSTILE_007, JSON_CAP, LOG_CAP, Entry, Missing, SafeTree, UnsafeEntry
from trainmark.checker.read.safetensors_header import HeaderError, read_header
from trainmark.checker.read.weights import Weights, sample_weights
from trainmark.format import layout
from trainmark.format.layout import RESULT_FILE, TRIAL_DIR
from trainmark.format.mllog_read import Event, read_records
from trainmark.format.telemetry import FILE_NAME as TELEMETRY_FILE

ATTEMPT_NAME = re.compile(r"trial_(\d+)-")  # interrupted/trial_<k>-<when>/
MAX_ORPHAN_TRIALS = 20  # trial folders without a result file whose trial.json is read (for their claims): a folder
#                         of 10,000 such folders would otherwise make the checker read 10,000 x JSON_CAP
CONTENT = "<content>"  # stands for the owning check's rule of bad content until it replays the problems


class Recorded:
    """Findings met while reading one file, in order, until the check that owns the file reports them
    (``replay``); the same ``add`` as ``Findings``, so a reader writes to either."""

    def __init__(self) -> None:
        self._calls: list[tuple[str, str, str, dict[str, Any]]] = []

    def add(self, rule_id: str, file: str, message: str, **fields: Any) -> None:
        self._calls.append((rule_id, file, message, fields))

    def replay(self, findings, content: str | None = None) -> None:
        """Each recorded finding added to ``findings``, ``CONTENT`` taken as ``content``."""
        for rule_id, file, message, fields in self._calls:
            findings.add(content if rule_id == CONTENT and content else rule_id, file, message, **fields)

    def __len__(self) -> int:
        return len(self._calls)


@dataclass
class Listing:
    """The benchmark folder's entries sorted by what the format makes of them."""
    results: dict[int, str] = field(default_factory=dict)      # trial -> result_<k>.txt (k >= 1)
    trial_dirs: dict[int, str] = field(default_factory=dict)   # trial -> trial_<k>/ (k >= 1)
    has_epochs_log: bool = False
    unexpected: list[Entry] = field(default_factory=list)      # in listing order: result_0.txt (trials count
    #                                                            from 1) and anything the format does not define


@dataclass
class ResultFile:
    """``result_<k>.txt``: its valid MLLOG events (None when the file could not be read)."""
    trial: int
    rel: str
    events: list[Event] | None
    problems: Recorded   # unreadable, or the lines that are not valid MLLOG records


@dataclass
class TextFile:
    """A text file read whole (``epochs.log``); ``data`` None when it could not be read."""
    rel: str
    data: bytes | None
    problems: Recorded


@dataclass
class JsonFile:
    """A small JSON object (``trial.json``); ``value`` None when missing, unreadable or not an object."""
    rel: str
    value: dict | None
    problems: Recorded   # bad content as CONTENT


@dataclass
class StructureFile:
    """``structure.json`` as text and parsed JSON (not yet validated: conformity judges its shape)."""
    rel: str
    text: str
    value: Any
    readable: bool       # False: missing, unreadable or not JSON (``problems`` says which)
    problems: Recorded   # bad content as CONTENT


@dataclass
class WeightsFile:
    """``model.safetensors``: its tensor table (None when the header is refused) and a sample of its values."""
    rel: str
    table: dict[str, dict] | None
    sample: Weights | None
    problems: Recorded


@dataclass
class RawFile:
    """A file as bytes for the check that parses it (``telemetry.csv``, ``systems/<system>.json``); ``missing``
    when there is none, ``data`` None also when it was refused (``problems`` says why)."""
    rel: str
    data: bytes | None
    missing: bool
    problems: Recorded
    why: str = ""        # what stopped the reading (a missing file's or a refused one's message); "" when read


TelemetryFile = RawFile


@dataclass(frozen=True)
class Attempt:
    """A folder of ``interrupted/`` (an attempt ``--resume`` archived)."""
    holds_entries: bool   # a file or folder in it (links never count)
    logged: bool          # named trial_<k>-..., it holds result_<k>.txt with at least one MLLOG record


@dataclass
class TrialFolder:
    """``trial_<k>/`` and the files the format puts in it."""
    trial: int
    rel: str
    entries: list[Entry]   # its regular files and folders (links and special files are in ``problems``)
    problems: Recorded
    trial_json: JsonFile
    structure: StructureFile
    weights: WeightsFile
    telemetry: TelemetryFile


@dataclass
class BenchmarkEvidence:
    """Everything the checks of one benchmark folder judge."""
    folder: BenchmarkFolder
    listing: Listing
    results: dict[int, ResultFile]           # every result_<k>.txt of the listing, by trial
    epochs_log: TextFile | None              # None when the folder has none
    interrupted: dict[str, Attempt]          # the folders of interrupted/, by name
    trials: dict[int, TrialFolder]           # the trial folders of trials with a result file
    trial_jsons: dict[int, JsonFile] = field(default_factory=dict)  # trial.json of every trial_<k>/ (k >= 1),
    #                                          a trial without a result file too (the code check reads their claims)

    def events_by_trial(self) -> dict[int, list[Event]]:
        """The events of every readable result file, by trial."""
        return {k: r.events for k, r in sorted(self.results.items()) if r.events is not None}


def join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def read_benchmark(folder: BenchmarkFolder, tree: SafeTree) -> BenchmarkEvidence:
    listing = classify(folder)
    results = {k: _result_file(tree, k, join(folder.rel, name)) for k, name in sorted(listing.results.items())}
    epochs_log = None
    if listing.has_epochs_log:
        rel = join(folder.rel, layout.EPOCHS_LOG)
        problems = Recorded()
        epochs_log = TextFile(rel, _read(tree, rel, LOG_CAP, problems), problems)
    orphans = sorted(k for k in listing.trial_dirs if k not in listing.results)[:MAX_ORPHAN_TRIALS]
    trial_jsons = {k: read_trial_json(tree, join(folder.rel, name)) for k, name in sorted(listing.trial_dirs.items())
                   if k in listing.results or k in orphans}
    trials = {k: read_trial_folder(tree, k, join(folder.rel, listing.trial_dirs[k]), trial_jsons[k])
              for k in sorted(listing.results) if k in listing.trial_dirs}
    return BenchmarkEvidence(folder, listing, results, epochs_log, _interrupted(tree, folder.rel), trials,
                             trial_jsons)


def classify(folder: BenchmarkFolder) -> Listing:
    listing = Listing()
    for e in folder.entries:
        if e.kind == "file" and e.name == layout.EPOCHS_LOG:
            listing.has_epochs_log = True
        elif e.kind == "file" and e.name == layout.PROFILE_JSON:
            continue  # `trainmark profile`'s table: the report shows it, no score or check reads it
        elif e.kind == "file" and (m := RESULT_FILE.fullmatch(e.name)):
            if m[1] == "0":
                listing.unexpected.append(e)
            else:
                listing.results[int(m[1])] = e.name
        elif e.kind == "dir" and (m := TRIAL_DIR.fullmatch(e.name)) and m[1] != "0":
            listing.trial_dirs[int(m[1])] = e.name
        elif e.kind == "dir" and e.name == layout.INTERRUPTED_DIR:
            pass  # attempts --resume archived: part of the format (``_interrupted``, TRIAL-004)
        else:
            listing.unexpected.append(e)
    return listing


def _read(tree: SafeTree, rel: str, cap: int, problems: Recorded, expected: str | None = None) -> bytes | None:
    """``rel``'s bytes, or None with why in ``problems`` (a missing file is LAYOUT-003)."""
    file = read_raw(tree, rel, cap)
    if file.missing:
        problems.add(LAYOUT_003, rel, f"{rel} is missing", seen="missing",
                     **({"expected": expected} if expected else {}))
    file.problems.replay(problems)
    return file.data


def _result_file(tree: SafeTree, k: int, rel: str) -> ResultFile:
    problems = Recorded()
    data = _read(tree, rel, LOG_CAP, problems)
    events = read_events(data, rel, problems, strict=True) if data is not None else None
    return ResultFile(k, rel, events, problems)


def _interrupted(tree: SafeTree, bench_rel: str) -> dict[str, Attempt]:
    """Each attempt folder under ``interrupted/``."""
    where = join(bench_rel, layout.INTERRUPTED_DIR)
    try:
        folders = [e.name for e in tree.list_dir(where) if e.kind == "dir"]
    except (Missing, UnsafeEntry):
        return {}
    return {name: _attempt(tree, join(where, name)) for name in folders}


def _attempt(tree: SafeTree, rel: str) -> Attempt:
    try:
        holds = any(c.kind in ("file", "dir") for c in tree.list_dir(rel))
    except (Missing, UnsafeEntry):
        return Attempt(False, False)
    m = ATTEMPT_NAME.match(rel.rpartition("/")[2])
    if not holds or m is None:
        return Attempt(holds, False)
    try:  # every attempt logs its start before anything else, so the runs a resume archived always do
        logged = bool(read_records(tree.read_bytes(join(rel, layout.result_file(int(m[1]))), LOG_CAP), strict=False))
    except (Missing, UnsafeEntry):
        logged = False
    return Attempt(holds, logged)


def read_trial_json(tree: SafeTree, trial_rel: str) -> JsonFile:
    trial_json = JsonFile(join(trial_rel, layout.TRIAL_JSON), None, Recorded())
    trial_json.value = read_json_object(tree, trial_json.rel, trial_json.problems, CONTENT)
    return trial_json


def read_trial_folder(tree: SafeTree, k: int, rel: str, trial_json: JsonFile | None = None) -> TrialFolder:
    """``trial_<k>/`` (its ``trial.json`` already read when given)."""
    problems = Recorded()
    try:
        entries = safe_entries(rel, tree.list_dir(rel), problems)
    except (UnsafeEntry, Missing) as exc:
        problems.add(getattr(exc, "rule", HOSTILE_007), rel, getattr(exc, "message", str(exc)))
        entries = []
    trial_json = trial_json or read_trial_json(tree, rel)
    return TrialFolder(k, rel, entries, problems, trial_json, _structure(tree, join(rel, layout.STRUCTURE_FILE)),
                       _weights(tree, join(rel, layout.MODEL_FILE)), read_telemetry(tree, join(rel, TELEMETRY_FILE)))


def _structure(tree: SafeTree, rel: str) -> StructureFile:
    problems = Recorded()
    unread = StructureFile(rel, "", None, False, problems)
    raw = _read(tree, rel, JSON_CAP, problems, expected=layout.STRUCTURE_FILE)
    if raw is None:
        return unread
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except RecursionError:
        problems.add(CONTENT, rel, "JSON nested too deeply", expected="structure JSON")
        return unread
    except (UnicodeDecodeError, ValueError) as exc:
        problems.add(CONTENT, rel, f"{rel} is not UTF-8 JSON: {exc}", line=getattr(exc, "lineno", None),
                     expected="structure JSON", seen=raw[:80])
        return unread
    return StructureFile(rel, text, value, True, problems)


def _weights(tree: SafeTree, rel: str) -> WeightsFile:
    problems = Recorded()
    try:
        header = read_header(tree, rel)
    except Missing:
        problems.add(LAYOUT_003, rel, f"{rel} is missing", expected=layout.MODEL_FILE, seen="missing")
    except UnsafeEntry as exc:
        problems.add(exc.rule, rel, exc.message, seen=exc.seen)
    except HeaderError as exc:
        problems.add(exc.rule, rel, exc.message, expected="a safetensors file", seen=exc.seen)
    else:
        return WeightsFile(rel, header.table, sample_weights(tree, rel, header), problems)
    return WeightsFile(rel, None, None, problems)


def read_raw(tree: SafeTree, rel: str, cap: int, missing_rule: str | None = None) -> RawFile:
    """``rel`` read whole within ``cap``; a missing file is a problem only under ``missing_rule``."""
    problems = Recorded()
    try:
        return RawFile(rel, tree.read_bytes(rel, cap), False, problems)
    except Missing as exc:
        if missing_rule is not None:
            problems.add(missing_rule, rel, str(exc), seen="")
        return RawFile(rel, None, True, problems, str(exc))
    except UnsafeEntry as exc:
        problems.add(exc.rule, rel, exc.message, seen=exc.seen)
        return RawFile(rel, None, False, problems, exc.message)


def file_names(tree: SafeTree, rel: str) -> list[str] | None:
    """The regular files in folder ``rel`` (links and special files left out), None when it is missing or
    refused."""
    try:
        return [e.name for e in tree.list_dir(rel) if e.kind == "file"]
    except (Missing, UnsafeEntry):
        return None


def read_telemetry(tree: SafeTree, rel: str) -> TelemetryFile:
    return read_raw(tree, rel, LOG_CAP)
