"""Which level of a result tree PATH is, and the benchmark folders and systems below it.

``trainmark check`` accepts a submission root (``closed/``, ``open/``), a division, a
submitter, a system or one benchmark folder, in trainmark's layout or MLPerf Training's
(``<submitter>/systems``, ``<submitter>/results/<system>/<benchmark>``). The folders
above PATH only give names (division, submitter, system); nothing outside PATH is read.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from trainmark.checker.read.safefs import (
    HOSTILE_001,
    HOSTILE_003,
    Entry,
    Missing,
    SafeTree,
    UnsafeEntry,
    link_finding_message,
    special_file_message,
)
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, WARNING, rule
from trainmark.errors import UserError
from trainmark.format.layout import BENCHMARKS_DIR, DIVISIONS, EPOCHS_LOG, NAME, RESULTS_DIR, SYSTEMS_DIR, system_of
from trainmark.format.layout import is_result_name as _is_result_name

LAYOUT_001 = rule(
    "LAYOUT-001", ERROR, "a required folder is missing or empty",
    fix="create <submitter>/systems/ and <submitter>/results/ as docs/result-format.md describes",
    why="The folder names carry the division, submitter and system a result belongs to; without systems/ and results/ "
    "no result can be attributed. It proves only the structure is incomplete, not that any result is wrong.",
    bad="acme/ with results/ but no systems/",
    good="acme/systems/ and acme/results/, both non-empty", module=__name__)
LAYOUT_002 = rule(
    "LAYOUT-002", ERROR, "a system in results/ has no systems/<system>.json",
    fix="add the system description the harness wrote, or remove the results of the unknown system",
    why="A result is scored for a system, and the system description says what that system is (accelerators, peak, "
    "power); results of an undescribed system cannot be compared. It does not check that the description is true.",
    bad="results/big-box/ without systems/big-box.json",
    good="results/big-box/ beside systems/big-box.json", module=__name__)
LAYOUT_004 = rule(
    "LAYOUT-004", WARNING, "an entry the format does not define (ignored)",
    fix="remove it: the checker reads only the files docs/result-format.md defines",
    why="The checker reads only the files the format defines, so an extra entry is never evidence for anything; the "
    "warning says it was ignored. It cannot tell a harmless leftover from an attempt to smuggle a claim past the "
    "reviewer.",
    bad="results/sys/resnet-mini/notes.txt",
    good="only epochs.log, result_<k>.txt and trial_<k>/", module=__name__)
LAYOUT_005 = rule(
    "LAYOUT-005", ERROR, "a folder name the format does not allow",
    fix="divisions are 'closed' or 'open'; system and benchmark names use only [A-Za-z0-9._-]",
    why="Names become paths and table cells; a name outside [A-Za-z0-9._-] (or a division other than closed/open) "
    "could escape a path or a table. It judges the spelling only, not whether the name is the right one.",
    bad="a system folder named 'my box;rm -rf'",
    good="a system folder named my-box_2x.cpu", module=__name__)


@dataclass
class BenchmarkFolder:
    rel: str                 # relative to the checked root ('' when PATH is the benchmark folder)
    benchmark: str
    system: str | None
    submitter: str | None
    division: str | None     # from the folder names; None when PATH is below the division
    entries: list[Entry]


@dataclass
class SystemFile:
    rel: str
    system: str
    submitter: str | None
    division: str | None


@dataclass
class Layout:
    level: str
    benchmarks: list[BenchmarkFolder] = field(default_factory=list)
    systems: list[SystemFile] = field(default_factory=list)


def detect_level(path: Path, tree: SafeTree) -> str:
    """The level of ``path``; ``UserError`` (exit 2) when it is none of them."""
    try:
        entries = tree.list_dir("")
    except (UnsafeEntry, Missing) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    dirs = {e.name for e in entries if e.kind == "dir"}
    files = {e.name for e in entries if e.kind == "file"}
    if dirs & set(DIVISIONS):
        return "submission"
    if path.name in DIVISIONS:
        return "division"
    if dirs & {RESULTS_DIR, SYSTEMS_DIR}:
        return "submitter"
    if path.parent.name == RESULTS_DIR:
        return "system"
    if any(_is_submitter(tree, d) for d in sorted(dirs)[:1000]):
        return "submission"  # MLPerf's layout: a folder of submitter folders
    if path.parent.parent.name == RESULTS_DIR or EPOCHS_LOG in files or any(_is_result_name(f) for f in files):
        return "benchmark"
    raise UserError(
        f"{path} is not a result folder: expected a submission root (closed/, open/), a division, "
        "a submitter (systems/, results/), results/<system> or a benchmark folder (result_<k>.txt)"
    )


def _is_submitter(tree: SafeTree, rel: str) -> bool:
    try:
        return any(e.kind == "dir" and e.name in (RESULTS_DIR, SYSTEMS_DIR) for e in tree.list_dir(rel))
    except (UnsafeEntry, Missing):
        return False


def walk(path: Path, tree: SafeTree, findings: Findings) -> Layout:
    """Every benchmark folder and system description below ``path``, with layout findings."""
    level = detect_level(path, tree)
    layout = Layout(level)
    walker = _Walker(tree, findings, layout)
    if level == "submission":
        walker.submission()
    elif level == "division":
        walker.division("", path.name)
    elif level == "submitter":
        walker.submitter("", path.name, _division_of(path.parent))
    elif level == "system":
        submitter_dir = path.parent.parent
        walker.system("", path.name, submitter_dir.name, _division_of(submitter_dir.parent))
    else:
        system_dir = path.parent
        known = system_dir.parent.name == RESULTS_DIR
        walker.benchmark("", path.name, system_dir.name if known else None,
                         system_dir.parent.parent.name if known else None,
                         _division_of(system_dir.parent.parent.parent) if known else None)
    return layout


def safe_entries(rel: str, entries: list[Entry], findings: Findings) -> list[Entry]:
    """The folders and regular files of a listing; links and special files become findings."""
    safe = []
    for e in entries:
        child = posixpath.join(rel, e.name)
        if e.kind == "symlink":
            findings.add(HOSTILE_001, child, link_finding_message(child, e.link_target),
                         seen=f"link -> {e.link_target}")
        elif e.kind == "other":
            findings.add(HOSTILE_003, child, special_file_message(child, e.link_target), seen=e.link_target)
        else:
            safe.append(e)
    return safe


def _division_of(path: Path) -> str | None:
    return path.name if path.name in DIVISIONS else None


class _Walker:
    def __init__(self, tree: SafeTree, findings: Findings, layout: Layout):
        self.tree, self.findings, self.layout = tree, findings, layout

    def listing(self, rel: str) -> list[Entry] | None:
        """Safe entries of a folder; links and special files become findings."""
        try:
            entries = self.tree.list_dir(rel)
        except Missing:
            self.findings.add(LAYOUT_001, rel, f"folder {rel} is missing")
            return None
        except UnsafeEntry as exc:
            self.findings.add(exc.rule, rel, exc.message, seen=exc.seen)
            return None
        return safe_entries(rel, entries, self.findings)

    def unexpected(self, rel: str, e: Entry, what: str) -> None:
        self.findings.add(LAYOUT_004, posixpath.join(rel, e.name),
                          f"{posixpath.join(rel, e.name)} is not part of the format ({what}); ignored",
                          expected=what, seen=e.name)

    def submission(self) -> None:
        entries = self.listing("") or []
        if not any(e.kind == "dir" and e.name in DIVISIONS for e in entries):  # MLPerf: submitter folders
            for e in entries:
                if e.kind == "dir" and _is_submitter(self.tree, e.name):
                    self.submitter(e.name, e.name, None)
            return
        for e in entries:
            if e.kind == "dir" and e.name in DIVISIONS:
                self.division(e.name, e.name)
            elif e.kind == "dir":
                self.findings.add(LAYOUT_005, e.name, f"division folder {e.name!r} is neither closed nor open",
                                  expected="closed or open", seen=e.name)
            else:
                self.unexpected("", e, "a submission root holds closed/ and open/")

    def division(self, rel: str, division: str) -> None:
        for e in self.listing(rel) or []:
            if e.kind == "dir":
                self.submitter(posixpath.join(rel, e.name), e.name, division)
            else:
                self.unexpected(rel, e, "a division holds one folder per submitter")

    def submitter(self, rel: str, submitter: str, division: str | None) -> None:
        entries = self.listing(rel)
        if entries is None:
            return
        names = {e.name: e for e in entries}
        for e in entries:
            if e.name not in (SYSTEMS_DIR, RESULTS_DIR, BENCHMARKS_DIR) and division is not None:  # benchmarks/: code
                self.unexpected(rel, e, "a submitter folder holds systems/, results/ and benchmarks/")
        system_files: set[str] | None = None
        systems_rel = posixpath.join(rel, SYSTEMS_DIR)
        if SYSTEMS_DIR not in names or names[SYSTEMS_DIR].kind != "dir":
            self.findings.add(LAYOUT_001, systems_rel, f"folder {systems_rel} is missing",
                              expected="systems/<system>.json for every system")
        else:
            system_files = set()
            for e in self.listing(systems_rel) or []:
                if e.kind == "file" and (system_name := system_of(e.name)) is not None:
                    system_files.add(system_name)
                    self.layout.systems.append(SystemFile(posixpath.join(systems_rel, e.name), system_name,
                                                          submitter, division))
                elif division is not None:
                    self.unexpected(systems_rel, e, "systems/ holds <system>.json files")
        results_rel = posixpath.join(rel, RESULTS_DIR)
        if RESULTS_DIR not in names or names[RESULTS_DIR].kind != "dir":
            self.findings.add(LAYOUT_001, results_rel, f"folder {results_rel} is missing",
                              expected="results/<system>/<benchmark>/")
            return
        systems = [e for e in self.listing(results_rel) or [] if e.kind == "dir"]
        if not systems:
            self.findings.add(LAYOUT_001, results_rel, f"folder {results_rel} holds no system folder",
                              expected="results/<system>/<benchmark>/")
        for e in systems:
            system_rel = posixpath.join(results_rel, e.name)
            if system_files is not None and e.name not in system_files:
                self.findings.add(LAYOUT_002, system_rel,
                                  f"system {e.name!r} has results but no {systems_rel}/{e.name}.json",
                                  expected=f"{systems_rel}/{e.name}.json", seen="missing")
            self.system(system_rel, e.name, submitter, division)

    def system(self, rel: str, system: str, submitter: str | None, division: str | None) -> None:
        self._check_name(rel, system, "system")
        entries = self.listing(rel)
        if entries is None:
            return
        for e in entries:
            if e.kind == "dir":
                self.benchmark(posixpath.join(rel, e.name), e.name, system, submitter, division)
            elif division is not None:
                self.unexpected(rel, e, "a system folder holds one folder per benchmark")

    def benchmark(self, rel: str, benchmark: str, system: str | None, submitter: str | None,
                  division: str | None) -> None:
        self._check_name(rel, benchmark, "benchmark")
        entries = self.listing(rel)
        if entries is not None:
            self.layout.benchmarks.append(BenchmarkFolder(rel, benchmark, system, submitter, division, entries))

    def _check_name(self, rel: str, name: str, what: str) -> None:
        if not NAME.fullmatch(name):
            self.findings.add(LAYOUT_005, rel, f"{what} name {name!r} uses characters outside [A-Za-z0-9._-]",
                              expected="[A-Za-z0-9._-]+", seen=name)
