"""MLPerf's power-result rules for a benchmark folder with ``power/``, in our own code.

Specification: ``mlperf_logging.package_checker.power_checker.PowerChecker.check_power``:
each result file ``result_X.txt`` has ``power/result_X/``; its ``node_<i>`` and ``sw_<i>`` files
(every file whose name starts with ``node``/``sw``: real folders hold ``nodes_1_to_1.png`` beside
``node_1.txt``) carry numbers within 0..n-1 (repeats pass, as in MLPerf: v4.0's smc folders number
from 1 and pass only because the picture counts); every run has as many node files (and switch
files) as most runs have. A run breaking one of these counts as a non-compliant run (with the
compliance failures, against the one run, four for unet3d, olympic scoring accepts). A file
number that is not an integer stops MLPerf's checker (ValueError): here it is a finding.
"""
from __future__ import annotations

import posixpath

from trainmark.checker.read.evidence import file_names
from trainmark.checker.read.levels import BenchmarkFolder
from trainmark.checker.read.safefs import SafeTree

POWER_DIR = "power"
KINDS = ("node", "sw")


def _numbering_problem(names: list[str], kind: str) -> str:
    """Why the ``kind`` files are not numbered 0..n-1, or ''."""
    numbers = []
    for name in names:
        suffix = posixpath.splitext(name)[0].split("_")[-1]
        if not suffix.isdigit():
            return f"{kind} file {name!r} is not numbered ({kind}_<i>)"
        numbers.append(int(suffix))
    outside = [n for n in numbers if not 0 <= n < len(names)]
    if outside:
        return f"{kind} files are numbered {sorted(numbers)}: {outside[0]} is outside 0..{len(names) - 1}"
    return ""


def _most_common(counts: dict[str, int]) -> int | None:
    """The count most runs have (the first of equals, as MLPerf's ``max(counter, key=counter.get)``)."""
    tally: dict[int, int] = {}
    for count in counts.values():
        tally[count] = tally.get(count, 0) + 1
    return max(tally, key=tally.get) if tally else None


def power_problems(tree: SafeTree, folder: BenchmarkFolder, result_names: list[str]) -> dict[str, str]:
    """{result file name: why its power results break MLPerf's rules}; empty when the folder has no power/."""
    if not any(e.name == POWER_DIR and e.kind == "dir" for e in folder.entries):
        return {}
    base = f"{folder.rel}/{POWER_DIR}".lstrip("/")
    problems: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
    for name in result_names:
        stem = posixpath.splitext(name)[0]
        files = file_names(tree, f"{base}/{stem}")
        if files is None:
            problems[name] = f"no folder {POWER_DIR}/{stem}/ with its power readings"
            continue
        for kind in KINDS:
            of_kind = [f for f in files if f.startswith(kind)]
            counts[kind][name] = len(of_kind)
            if not problems.get(name):
                problems[name] = _numbering_problem(of_kind, kind)
    for kind in KINDS:
        usual = _most_common(counts[kind])
        for name, count in counts[kind].items():
            if count != usual and not problems.get(name):
                problems[name] = f"{count} {kind} power files; the other runs have {usual}"
    return {name: why for name, why in problems.items() if why}
