"""Do the logged windows agree with the work logged in them? WORK-001, WORK-002, WORK-003.

The score excludes evaluation, so the one cheap forgery of a self-reported log is to move training
time into evaluation windows. Each window is compared with the work the MLLOG says it did:

- WORK-001: an evaluation does a forward pass per evaluated sample, training a forward and a backward
  pass per trained sample. Per sample an evaluation is therefore cheaper than training for a classifier,
  and a benchmark whose evaluation decodes (BLEU, WER) is slower by a factor its calibration measured.
  The rules state that factor's bound per benchmark (``evaluation.max_eval_time_ratio``, with the
  measurement it comes from; rules 1.0, frozen before the field, take the latest rules' bound); an
  evaluation slower than the bound held training time. The training
  reference is the trial's median epoch, so one odd epoch cannot move it.
- WORK-002: an epoch's FLOPs (``trainmark_flops_per_step`` x whole steps of ``train_samples``) over its
  time above the peak the harness recorded for the system (trial.json ``peak_tflops``, the figure its
  utilization is computed against) is not physically possible.
- WORK-003: an epoch more than ``FAST_EPOCH_FACTOR`` times as fast as the trial's median epoch: every
  epoch does the same work, and real runs on a noisy VM stay within 1.6x (the twelve examples).

Both judge only differences above ``NOISE_SECONDS``: a tiny test epoch of milliseconds proves nothing.

What this cannot prove: a forger who scales every window consistently and stays under the peak (then
telemetry coverage and ``--reevaluate`` are the evidence), or a forged FLOP count or peak.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from trainmark.checker.checks import evidence_interference as interference
from trainmark.checker.checks.evidence_interference import WORK_008
from trainmark.checker.read.trial_record import TrialRecord
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.mllog_read import Event
from trainmark.format.timeline_read import Replay
from trainmark.rules.ruleset import BenchmarkRules, eval_time_bound

WORK_001 = rule(
    "WORK-001", ERROR, "an evaluation window took far longer per evaluated sample than training took per trained "
    "sample: the window logged as evaluation held training time",
    fix="log eval_start/eval_stop around the evaluation only (the harness does); the bound is the rules' "
    "evaluation.max_eval_time_ratio",
    why="The score excludes evaluation, so moving training time into evaluation windows would shorten it; per sample "
    "an evaluation costs a bounded multiple of training, and a window beyond that bound held training. It cannot catch "
    "a forger who scales every window consistently.",
    bad="eval windows of 60 s for 1,000 samples beside 10 s epochs of 50,000",
    good="eval windows within the rules' ratio", module=__name__)
WORK_002 = rule(
    "WORK-002", ERROR, "an epoch's logged work (FLOPs per step x steps) over its logged time exceeds the system's "
    "peak: the time is not physically possible",
    fix="log the real epoch times; if the peak is wrong, declare the right one in the system description",
    why="An epoch's FLOPs over its time cannot exceed the system's peak; faster is physically impossible. It relies on "
    "the FLOPs per step and the peak, and cannot catch a forged FLOP count or peak.",
    bad="a 5 GFLOP/step epoch of 200 steps logged in 0.001 s on a 2 TFLOP/s CPU",
    good="epoch times above work / peak", module=__name__)
WORK_003 = rule(
    "WORK-003", ERROR, "an epoch trained more than twice as fast as the trial's median epoch",
    fix="log the real epoch windows (an epoch whose time was cut is not a measured epoch)",
    why="Every epoch does the same work, so none runs twice as fast as the trial's median (real runs stay within "
    "1.6x); an epoch that did had its window cut. Differences under the noise floor are not judged.",
    bad="epochs of 30 s with one of 9 s",
    good="epochs of 28 to 34 s", module=__name__)

FAST_EPOCH_FACTOR = 2.0
# Differences under this many seconds are clock and scheduler noise, not hidden work: the MLLOG clock
# counts milliseconds, and on a loaded 2-vCPU CI machine a 0.02 s test epoch once measured 0.00 s (issue
# 30's refused stop). The shortest epoch of the twelve examples took 10.6 s (transformer-mini), so a
# forgery worth making moves far more than this.
NOISE_SECONDS = 0.5


@dataclass(frozen=True)
class Window:
    epoch: int
    seconds: float
    stop_line: int
    start_ms: float = 0.0
    stop_ms: float = 0.0


def windows(events: list[Event], name: str) -> dict[int, Window]:
    """The first closed window of kind ``name`` (epoch, eval) of each epoch, by ``epoch_num``."""
    return {epoch: Window(epoch, s.seconds, s.stop.line, s.start.time_ms, s.stop.time_ms)
            for epoch, s in Replay(events).first_per_epoch(name).items()}


def _positive(x: Any) -> float | None:
    return float(x) if type(x) in (int, float) and x > 0 else None


def check_trial(events: list[Event], record: TrialRecord, summary: dict | None, rules: BenchmarkRules,
                findings: Findings, telemetry=None, derived=None) -> None:
    """``telemetry``: the trial's telemetry ``Series`` (checks/telemetry.py), whose interference evidence
    turns a difference the disturbed windows explain into WORK-008 (a warning) instead of an error;
    ``derived``: the sizes, FLOPs and peak derived from the rules and the system description
    (checks/evidence_work.py), used instead of the logged copies and trial.json's peak."""
    epochs = {e: w for e, w in windows(events, "epoch").items() if w.seconds > 0}
    if not epochs:
        return  # no timed epoch: MLLOG-* and TIME-* say why
    median = statistics.median(w.seconds for w in epochs.values())
    _fast_epochs(record, epochs, median, findings, telemetry)
    _slow_evaluations(events, record, median, rules, findings, telemetry, epochs, derived)
    if derived is not None and derived.peak is not None:
        _over_peak(record, epochs, derived, findings)


def _fast(seconds: float, median: float) -> bool:
    return seconds * FAST_EPOCH_FACTOR < median and median / FAST_EPOCH_FACTOR - seconds > NOISE_SECONDS


def _fast_epochs(record: TrialRecord, epochs: dict[int, Window], median: float, findings: Findings,
                 telemetry=None) -> None:
    seconds = {e: w.seconds for e, w in epochs.items()}
    disturbed = {e: interference.measure(telemetry, [(w.start_ms, w.stop_ms)]) for e, w in epochs.items()}
    for w in epochs.values():
        if not _fast(w.seconds, median):
            continue
        comparable = interference.comparable_median(seconds, disturbed, w.epoch)
        work = interference.cpu_work(seconds, disturbed)
        by_share = work is not None and work[w.epoch] * FAST_EPOCH_FACTOR >= statistics.median(work.values())
        if not _fast(w.seconds, comparable) or by_share:
            cause = interference.explain(seconds, disturbed, w.epoch, FAST_EPOCH_FACTOR * w.seconds) or \
                interference.share_cause(seconds, disturbed, w.epoch, FAST_EPOCH_FACTOR * w.seconds)
            findings.add(WORK_008, record.rel, f"trial {record.trial}: epoch {w.epoch} trained in {w.seconds:.2f} s, "
                         f"less than 1/{FAST_EPOCH_FACTOR:g} of the trial's median epoch ({median:.2f} s), but the "
                         f"slower epochs ran under interference ({cause})", line=w.stop_line,
                         expected=f">= {median / FAST_EPOCH_FACTOR:.2f} s on a quiet machine",
                         seen=f"{w.seconds:.2f} s")
            continue
        which = "the trial's median epoch" if comparable == median else \
            "the median epoch of those no more disturbed by other load"
        findings.add(WORK_003, record.rel, f"trial {record.trial}: epoch {w.epoch} trained in {w.seconds:.2f} s, "
                     f"less than 1/{FAST_EPOCH_FACTOR:g} of {which} ({comparable:.2f} s) for the same work",
                     line=w.stop_line, expected=f">= {comparable / FAST_EPOCH_FACTOR:.2f} s", seen=f"{w.seconds:.2f} s")


def _slow_evaluations(events: list[Event], record: TrialRecord, median: float, rules: BenchmarkRules,
                      findings: Findings, telemetry=None, epochs: dict[int, Window] | None = None,
                      derived=None) -> None:
    bound = eval_time_bound(rules)
    train_samples = derived.train_samples if derived else _positive(record.value(mllog.TRAIN_SAMPLES))
    eval_samples = derived.eval_samples if derived else _positive(record.value(mllog.EVAL_SAMPLES))
    if not bound or train_samples is None or eval_samples is None:
        return
    per_trained = median / train_samples
    ratio_bound = float(bound["ratio"])
    training = interference.measure(telemetry, sorted((w.start_ms, w.stop_ms) for w in (epochs or {}).values()))
    for w in windows(events, "eval").values():
        ratio = (w.seconds / eval_samples) / per_trained
        allowed = ratio_bound * per_trained * eval_samples
        if not (ratio > ratio_bound and w.seconds - allowed > NOISE_SECONDS):
            continue
        disturbed = interference.measure(telemetry, [(w.start_ms, w.stop_ms)])
        if not disturbed.no_more_than(training):
            findings.add(WORK_008, record.rel, f"trial {record.trial}: the evaluation after epoch {w.epoch} took "
                         f"{w.seconds:.2f} s, {ratio:.2f}x the time per sample of training (the rules allow "
                         f"{ratio_bound:g}x), but it ran under interference: {'; '.join(disturbed.causes(training))}",
                         line=w.stop_line, expected=f"<= {ratio_bound:g}x on a quiet machine", seen=f"{ratio:.2f}x")
        else:
            findings.add(WORK_001, record.rel, f"trial {record.trial}: the evaluation after epoch {w.epoch} took "
                         f"{w.seconds:.2f} s for {eval_samples:.0f} samples, {ratio:.2f}x the time per sample of a "
                         f"median training epoch ({median:.2f} s for {train_samples:.0f}); the rules allow "
                         f"{ratio_bound:g}x ({bound['source']})", line=w.stop_line,
                         expected=f"<= {ratio_bound:g}x", seen=f"{ratio:.2f}x")


def _over_peak(record: TrialRecord, epochs: dict[int, Window], derived, findings: Findings) -> None:
    """WORK-002 against the derived peak, with the derived FLOPs per step and training samples."""
    peak = derived.peak.tflops
    flops, samples = derived.flops_per_step, derived.train_samples
    batch = _positive(record.value("global_batch_size"))
    if flops is None or samples is None or batch is None:
        return
    steps = max(int(samples // batch), 1)  # whole steps: the least work an epoch of these samples did
    for w in epochs.values():
        tflops = flops * steps / w.seconds / 1e12
        if tflops > peak:
            findings.add(WORK_002, record.rel, f"trial {record.trial}: epoch {w.epoch} did {steps} steps of "
                         f"{flops:.3g} FLOPs in {w.seconds:.2f} s, {tflops:.3g} TFLOPS, above the described "
                         f"system's peak of {peak:.3g} TFLOPS ({derived.peak.source})", line=w.stop_line,
                         expected=f"<= {peak:.3g} TFLOPS", seen=f"{tflops:.3g} TFLOPS")
