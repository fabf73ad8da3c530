"""Was a window slowed by something other than the run? The telemetry's interference evidence (issue 38).

Every time-based check compares windows that do the same work (WORK-003: an epoch against the trial's
median epoch; WORK-001: an evaluation against training). On a shared machine that comparison breaks
for an honest run: epochs that ran while other processes used the CPUs, while the accelerator was
throttled or while the CPU clock had dropped are slower, so the undisturbed epochs look "cut".

The telemetry file records exactly that, per row: ``other.cpu_pct`` and ``cpu.steal_pct`` (the share of
the CPUs other processes and the hypervisor used), ``<device>.throttle`` (NVML's throttle reasons) and
``cpu.freq_mhz``. A window is compared only with windows that were *no more disturbed* than it; a
difference that only the disturbed windows explain is WORK-008, a warning naming the cause.

What this cannot prove: the telemetry is the submitter's file too. A forger who writes other load into
the telemetry of the epochs they did not cut turns WORK-003 into WORK-008 (a warning a reviewer reads);
the load must then also agree with the run's own CPU use, and a consistent forgery of both is not
detectable from the folder.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from trainmark.checker.verdict.registry import WARNING, rule
from trainmark.format.telemetry import THROTTLE_MASK

# Windows within these margins of each other count as equally disturbed: other load measured over a
# window of a few seconds moves by a few points on a quiet machine (the examples: at most 10.9 %).
OTHER_MARGIN_PCT = 10.0
THROTTLE_MARGIN = 0.10       # share of the window's time with a throttle reason
FREQ_DROP = 0.90             # a mean clock below 90 % of the other window's

WORK_008 = rule(
    "WORK-008", WARNING, "a window was far faster than comparable ones, but the slower ones ran under interference "
    "(other processes on the CPUs, a throttled accelerator or a lower CPU clock): explained, not cut",
    why="An epoch more than twice as fast as the trial's median is WORK-003 (a cut time) unless the telemetry "
    "shows the slower epochs were disturbed: it is compared only with epochs no more disturbed than it, and its CPU "
    "time in the run's share (run.cpu_pct x seconds) with theirs (the same work costs the same CPU time however "
    "long others made it wait); the difference the interference explains is this warning, naming the cause. "
    "The telemetry is the submitter's file: a forger who writes load (or a higher run.cpu_pct) into the rows of "
    "the epochs they cut turns WORK-003 into this warning.",
    fix="rerun on a quiet machine (no other processes, no power cap, a fixed clock) for a score that ranks the "
    "system; the warning keeps the result valid",
    bad="epochs 10 s, 10 s, 25 s, 25 s, 25 s with other processes at 2 % of the CPUs in all five (WORK-003)",
    good="the same epochs with other processes at 55 % of the CPUs during epochs 3 to 5 (WORK-008, a warning)",
    module=__name__)


@dataclass(frozen=True)
class Interference:
    """What disturbed one window, from the telemetry rows that overlap it (None: not recorded)."""
    other_pct: float | None     # other processes' plus the hypervisor's share of the CPUs, time-weighted
    throttled: float | None     # share of the window's time with an accelerator throttle reason
    freq_mhz: float | None      # the mean CPU clock
    run_pct: float | None = None  # the run's own share of the CPUs (run.cpu_pct), time-weighted

    def no_more_than(self, other: "Interference") -> bool:
        """True when this window was at most as disturbed as ``other`` (within the margins); a measure
        either window lacks does not tell them apart."""
        if None not in (self.other_pct, other.other_pct) and self.other_pct > other.other_pct + OTHER_MARGIN_PCT:
            return False
        if None not in (self.throttled, other.throttled) and self.throttled > other.throttled + THROTTLE_MARGIN:
            return False
        return None in (self.freq_mhz, other.freq_mhz) or self.freq_mhz >= FREQ_DROP * other.freq_mhz

    def causes(self, quiet: "Interference") -> list[str]:
        """In words, how this window was more disturbed than ``quiet``."""
        out = []
        if None not in (self.other_pct, quiet.other_pct) and self.other_pct > quiet.other_pct + OTHER_MARGIN_PCT:
            out.append(f"other processes used {self.other_pct:.0f} % of the CPUs (against {quiet.other_pct:.0f} %)")
        if None not in (self.throttled, quiet.throttled) and self.throttled > quiet.throttled + THROTTLE_MARGIN:
            out.append(f"the accelerator was throttled {self.throttled:.0%} of the time "
                       f"(against {quiet.throttled:.0%})")
        if None not in (self.freq_mhz, quiet.freq_mhz) and self.freq_mhz < FREQ_DROP * quiet.freq_mhz:
            out.append(f"the CPU clock averaged {self.freq_mhz:.0f} MHz (against {quiet.freq_mhz:.0f} MHz)")
        return out


NONE = Interference(None, None, None)


def measure(series, intervals: list[tuple[float, float]]) -> Interference:
    """The interference over ``intervals`` (ms, sorted) from a telemetry ``Series`` (None: no telemetry)."""
    if series is None:
        return NONE
    other = None
    if len(series.busy_elsewhere) == 2:
        summed = [None if None in pair else pair[0] + pair[1] for pair in zip(*series.busy_elsewhere.values())]
        other = _mean(series, summed, intervals)
    throttled = None
    if series.throttle:
        bits = [None if None in row else float(any(int(v) & THROTTLE_MASK for v in row))
                for row in zip(*series.throttle.values())]
        throttled = _mean(series, bits, intervals)
    freq = _mean(series, series.freq_mhz, intervals) if series.freq_mhz is not None else None
    run = _mean(series, series.run_cpu, intervals) if series.run_cpu is not None else None
    return Interference(other, throttled, freq, run)


def _mean(series, values: list[float | None], intervals: list[tuple[float, float]]) -> float | None:
    mean, covered = series.mean(values, intervals)
    return mean if covered > 0 else None


def comparable_median(seconds: dict[int, float], disturbed: dict[int, Interference], epoch: int) -> float:
    """The median time of the epochs no more disturbed than ``epoch`` (itself included)."""
    mine = disturbed.get(epoch, NONE)
    return statistics.median(s for e, s in seconds.items() if disturbed.get(e, NONE).no_more_than(mine))


def cpu_work(seconds: dict[int, float], disturbed: dict[int, Interference]) -> dict[int, float] | None:
    """Each window's CPU time in the run's share (run.cpu_pct x seconds): the same work costs about the same
    CPU time however long others made it wait, while a window whose time was cut holds less. None unless
    every window has it."""
    work = {e: disturbed[e].run_pct * s for e, s in seconds.items()
            if e in disturbed and disturbed[e].run_pct is not None}
    return work if len(work) == len(seconds) and any(work.values()) else None


def share_cause(seconds: dict[int, float], disturbed: dict[int, Interference], epoch: int, slower_than: float
                ) -> str:
    """In words: the run got less of the CPUs in the slower windows, its CPU time per window agreeing."""
    slow = [e for e in seconds if seconds[e] > slower_than and disturbed[e].run_pct is not None]
    if not slow:
        return ""
    share = statistics.mean(disturbed[e].run_pct for e in slow)
    others = [disturbed[e].other_pct for e in slow if disturbed[e].other_pct is not None]
    busy = f" while other processes used {statistics.mean(others):.0f} %" if others else ""
    return (f"the run got {share:.1f} % of the CPUs in epoch(s) {', '.join(map(str, sorted(slow)))}{busy}, against "
            f"{disturbed[epoch].run_pct:.1f} % in epoch {epoch}: the same CPU time took longer")


def explain(seconds: dict[int, float], disturbed: dict[int, Interference], epoch: int, slower_than: float
            ) -> str:
    """Why the epochs slower than ``slower_than`` seconds were slow, in words ('' when nothing says)."""
    mine = disturbed.get(epoch, NONE)
    parts = []
    for e in sorted(seconds):
        if seconds[e] > slower_than and (causes := disturbed.get(e, NONE).causes(mine)):
            parts.append(f"epoch {e} ({seconds[e]:.2f} s): {'; '.join(causes)}")
    return ", ".join(parts)
