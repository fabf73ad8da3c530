"""Energy needs its evidence: what a domain claims is checked against what the harness derives (issue 38).

The MLLOG's ``trainmark_energy_domains`` says, per domain, its kind, how it was measured and whether the
total includes it. Each of those is a claim the submitter writes, and each switched off a check:

- ENERGY-007: a domain measured by a meter has its ``<domain>.power_w`` column in the trial's telemetry (the
  sampler writes one for every domain measured from the start), the evidence ENERGY-006 integrates. Renamed
  or deleted, the energy would stand on the logs alone.
- ENERGY-008: ``in_total`` follows from the domains' kinds, as the harness's CompositeMeter decides it: the node
  domains when one is measured, else every measured domain but the platform ones (RAPL's psys contains the
  packages). A domain declared out of the total escapes the sum ENERGY-002 checks.
- ENERGY-009: a domain (or the total) whose method says measured, with every reading null and no reason, is
  a label without a measurement.

What this cannot prove: power columns, readings and kinds rewritten together and consistently.
"""
from __future__ import annotations

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.telemetry import POWER_SUFFIX

NODE, PLATFORM = "node", "platform"   # harness/measure/energy.py's domain kinds the scope depends on
MEASURED = ("measured-counter", "measured-power")

ENERGY_007 = rule(
    "ENERGY-007", ERROR, "a domain claimed measured has no power column in the trial's telemetry",
    why="The sampler writes <domain>.power_w for every domain measured from the start; that column is what "
    "ENERGY-006 integrates against the logged energy. Without it the energy rests on the logs alone.",
    fix="submit the telemetry.csv the harness wrote with the trial, unedited",
    bad="package-0 measured-counter in the MLLOG, telemetry.csv's package-0.power_w renamed or deleted",
    good="package-0.power_w in the telemetry of every trial that measured package-0",
    module=__name__)
ENERGY_008 = rule(
    "ENERGY-008", ERROR, "a domain's in_total disagrees with what its kind gives",
    why="Whether the total includes a domain is not the submitter's choice: the harness takes the node domains "
    "when one is measured, else every measured domain but the platform ones. A domain declared out of the total "
    "escapes ENERGY-002's sum.",
    fix="log trainmark_energy_domains as the harness wrote it",
    bad='a measured cpu-package domain logged with "in_total": false',
    good='"in_total": true for it (no node domain measured)',
    module=__name__)
ENERGY_009 = rule(
    "ENERGY-009", ERROR, "an energy method says measured, yet every reading is null and no reason is given",
    why="A meter that measured gives readings; one that failed gives a reason (the harness records both). "
    "A measured label over null readings without a reason is a label without a measurement.",
    fix="log the method the readings support (unavailable, with its reason) or the readings themselves",
    bad="trainmark_energy_method measured-counter, every trainmark_energy_j null",
    good="measured-counter with readings, or unavailable with a reason",
    module=__name__)


def check_trial(events: list[Event], series, rel: str, telemetry_rel: str, findings: Findings) -> None:
    """ENERGY-007/008/009 for one trial; ``series`` is its telemetry Series (None: no readable file)."""
    described = next((e for e in events if e.key == mllog.ENERGY_DOMAINS), None)
    domains = described.value if described is not None and isinstance(described.value, dict) else {}
    domains = {n: d for n, d in domains.items() if isinstance(n, str) and isinstance(d, dict)}
    _in_total(domains, described, rel, findings)
    _null_readings(events, domains, rel, findings)
    if series is not None:
        measured = [n for n, d in domains.items() if d.get("method") in MEASURED and not d.get("reason")]
        missing = [n for n in measured if n not in series.power]
        if missing:
            findings.add(ENERGY_007, telemetry_rel, f"domain(s) {', '.join(missing)} measured by a meter (line "
                         f"{described.line} of {rel}) have no {POWER_SUFFIX} column here",
                         expected=", ".join(f"{n}{POWER_SUFFIX}" for n in missing), seen="no such column")


def _in_total(domains: dict[str, dict], described: Event | None, rel: str, findings: Findings) -> None:
    measured = {n: d for n, d in domains.items() if d.get("method") not in (None, "unavailable")}
    nodes = [n for n, d in measured.items() if d.get("kind") == NODE]
    derived = set(nodes or [n for n, d in measured.items() if d.get("kind") != PLATFORM])
    for name, d in sorted(domains.items()):
        claimed = d.get("in_total")
        if isinstance(claimed, bool) and claimed != (name in derived):
            findings.add(ENERGY_008, rel, f"domain {name} (kind {d.get('kind')!r}, method {d.get('method')!r}) is "
                         f"logged with in_total {str(claimed).lower()}; its kind gives "
                         f"{str(name in derived).lower()}", line=described.line,
                         expected=name in derived, seen=claimed)


def _null_readings(events: list[Event], domains: dict[str, dict], rel: str, findings: Findings) -> None:
    readings = [e for e in events if mllog.ENERGY_J in e.metadata]
    if not readings:
        return
    method = next((e for e in events if e.key == mllog.ENERGY_METHOD), None)
    if method is not None and method.value in MEASURED and all(e.metadata[mllog.ENERGY_J] is None for e in readings):
        if not any(d.get("reason") for d in domains.values()):
            findings.add(ENERGY_009, rel, f"trainmark_energy_method is {method.value!r}, yet every "
                         f"{mllog.ENERGY_J} reading is null and no domain gives a reason", line=method.line,
                         expected="readings, or method unavailable with a reason", seen="all null")
    for name, d in sorted(domains.items()):
        if d.get("method") not in MEASURED or d.get("reason"):
            continue
        values = [e.metadata.get(mllog.DOMAINS_J) for e in readings]
        if all(not isinstance(v, dict) or v.get(name) is None for v in values):
            findings.add(ENERGY_009, rel, f"domain {name} says {d.get('method')!r}, yet every reading of it is null "
                         "and it gives no reason", line=readings[0].line,
                         expected="readings, or a reason", seen="all null")
