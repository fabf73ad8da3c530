"""One trial: a fresh model trained epoch by epoch until it reaches the quality target.

The loop reads top to bottom: initialise (untimed), then per epoch train, and evaluate when the
rules say so, until the target, the epoch cap or divergence. The Timeline (harness/timeline.py)
owns the clock, the energy windows and the MLLOG; the framework seam (harness/frameworks/backend.py) owns
the model and the training step; the reference owns the data and the recipe. Outcomes:
``converged`` (target reached), ``not_converged`` (epoch cap), ``diverged`` (non-finite loss or
metric), ``aborted`` (Ctrl-C), ``crashed`` (exception). No trial is dropped.
"""
from __future__ import annotations

import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from trainmark import RESULT_FORMAT_VERSION
from trainmark.format import epochlog, mllog
from trainmark.format.labels import TrialStatus, run_stop_status
from trainmark.harness.frameworks.backend import Backend, Trainer
from trainmark.harness.measure import flops, nodes
from trainmark.harness.measure.windows import Window
from trainmark.harness.progress import TrialProgress
from trainmark.harness.timeline import Timeline

CHECK_EVERY_STEPS = 20  # how often the loss is read for the progress bar and divergence check


@dataclass
class TrialConfig:
    benchmark: str
    trial: int                  # counted from 1
    seed: int
    division: str
    submitter: str
    system_name: str
    rules_version: str
    hparams: dict[str, Any]     # the device and precision belong to the backend (harness/frameworks/backend.py)
    max_epochs: int
    eval_every: int
    target_reached: Callable[[float], bool]
    metric_name: str
    peak_tflops: float | None = None    # the device's peak for this precision (datasheet or derived)
    ceiling_tflops: float | None = None  # the measured ceiling for this precision (`trainmark ops`)
    interrupted_attempts: list[dict] = field(default_factory=list)  # earlier attempts of this trial (--resume)
    recipe: Any = None  # the open division's OpenRecipe (harness/open_recipe.py): --optimizer, --lr-schedule, --augment


@dataclass
class EpochRecord:
    epoch: int
    train_s: float
    train_j: float | None
    samples: int
    eval_s: float | None = None
    eval_j: float | None = None
    metric: float | None = None
    eval_time_unix: float | None = None
    energy_domains_j: dict | None = None   # this epoch's training window, joules per energy domain
    telemetry: dict | None = None          # telemetry summary of the epoch's training window
    data_wait_s: float | None = None       # seconds of the window spent waiting for the next batch


@dataclass
class TrialResult:
    status: str = TrialStatus.CRASHED.value
    epochs: int = 0
    final_metric: float | None = None
    train_time_s: float | None = None
    total_time_s: float | None = None
    eval_time_s: float | None = None
    init_time_s: float | None = None
    train_energy_j: float | None = None
    total_energy_j: float | None = None
    energy_method: str = ""
    energy_reason: str | None = None
    energy_scope: str | None = None        # what the total covers: '+'-joined domains, 'node', or null
    energy_domains: dict | None = None     # per domain: kind, method, resolution, reason, train_j, total_j
    train_samples: int = 0
    train_samples_per_s: float | None = None
    steps: int = 0
    flops_per_step: int | None = None
    achieved_tflops: float | None = None
    peak_tflops: float | None = None
    utilization: float | None = None
    ceiling_tflops: float | None = None
    utilization_of_ceiling: float | None = None
    precision_used: str = "fp32"
    error: str | None = None
    telemetry: dict | None = None          # the telemetry file's record (trainmark.harness.measure.telemetry)
    data_wait_share: float | None = None   # share of the epochs' training windows spent waiting for batches
    history: list[EpochRecord] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The ``trainmark_trial_result`` MLLOG value (everything but the epoch history)."""
        d = asdict(self)
        d.pop("history")
        return d


def run_trial(cfg: TrialConfig, ref, data, backend: Backend, timeline: Timeline,
              write_epoch_line: Callable[[str], None] = lambda line: None,
              progress: TrialProgress | None = None,
              build_model: Callable[[], Any] | None = None) -> tuple[TrialResult, Trainer | None]:
    """Train one trial; every outcome is returned as a result, Ctrl-C re-raised after logging."""
    meter, dist, progress = timeline.meter, backend.dist, progress or TrialProgress(False)
    res = TrialResult(energy_method=meter.method, energy_reason=meter.reason,
                      energy_scope=meter.scope)
    outcome, trainer = _Outcome(res, dist), None
    with outcome:
        with timeline.window("init", header=_header(cfg)) as init:
            trainer = backend.trainer(ref, build_model or ref.build_model, cfg.hparams, data, cfg.seed,
                                      **({"recipe": cfg.recipe} if cfg.recipe is not None else {}))
            res.precision_used, res.flops_per_step = trainer.precision_used, trainer.flops_per_step
            timeline.settings(nodes.rank_events(dist, trainer.local_batch), at=init.start.s)
            timeline.settings(_settings(cfg, ref, data, trainer, res, meter, backend.name), at=init.start.s)
        res.init_time_s = init.window.seconds
    if outcome.failed:
        return outcome.finish(trainer)

    eval_windows: list[Window] = []
    with timeline.window("run") as run:
        res.status = TrialStatus.NOT_CONVERGED.value
        with outcome:
            for epoch in range(1, cfg.max_epochs + 1):
                last = res.history[-1].metric if res.history else None
                progress.epoch(cfg.trial, epoch, cfg.max_epochs, trainer.steps_per_epoch,
                               f"{cfg.metric_name} {last:.4f}" if last is not None else "")
                record = _train_epoch(epoch, trainer, timeline, progress, res)
                if trainer.diverged():
                    res.status, res.error = TrialStatus.DIVERGED.value, f"non-finite training loss in epoch {epoch}"
                    break
                if epoch % cfg.eval_every and epoch != cfg.max_epochs:
                    continue
                metric = _evaluate(epoch, trainer, timeline, record, eval_windows)
                if not math.isfinite(metric):  # both logs hold numbers only; the status tells the rest
                    res.status = TrialStatus.DIVERGED.value
                    res.error = f"{cfg.metric_name} is {metric} after epoch {epoch}"
                    break
                res.final_metric = metric
                if dist.is_main:
                    write_epoch_line(epochlog.format_line(record.eval_time_unix, cfg.trial, epoch, metric))
                progress.metric(f"{cfg.metric_name} {metric:.4f}")
                if cfg.target_reached(metric):
                    res.status = TrialStatus.CONVERGED.value
                    break
        _summarize(res, run.close(), eval_windows, cfg, timeline)
        timeline.event(mllog.TRIAL_RESULT, res.summary(), at=run.window.end_s)
        run.status = run_stop_status(res.status)
    return outcome.finish(trainer)


def _train_epoch(epoch: int, trainer: Trainer, timeline: Timeline, progress: TrialProgress,
                 res: TrialResult) -> EpochRecord:
    """One epoch's training window (samples counted over every rank), recorded in ``res``."""
    wait = _DataWait()
    with timeline.window("epoch", epoch) as ep:
        samples = steps = 0
        for steps, batch in enumerate(wait.batches(trainer.epoch_batches(epoch)), start=1):
            trainer.step(batch)
            samples += trainer.samples_per_step
            if steps % CHECK_EVERY_STEPS == 0:
                progress.step(CHECK_EVERY_STEPS, trainer.loss_value())
                if trainer.diverged():
                    break
        if timeline.telemetry is not None:  # one row at every epoch's end instant, however short the epoch
            timeline.telemetry.sample_closing(ep.close)
        ep.fields[mllog.SAMPLES] = samples
    w = ep.window
    record = EpochRecord(epoch, w.seconds, w.joules, samples, energy_domains_j=w.domain_joules(),
                         data_wait_s=wait.seconds)
    res.history.append(record)
    res.steps += steps
    res.epochs, res.train_samples = epoch, res.train_samples + samples
    if timeline.telemetry is not None:
        record.telemetry = timeline.telemetry.summarize(w.start_s, w.end_s)
        timeline.event(mllog.TELEMETRY, record.telemetry, at=w.end_s, epoch_num=epoch)
    return record


class _DataWait:
    """The time an epoch's loop spends waiting for its next batch (the data path and its conversion to the
    device): two clock reads a step, so every run says whether it was input-bound (issue 37)."""

    def __init__(self):
        self.seconds = 0.0

    def batches(self, source):
        it = iter(source)
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                self.seconds += time.perf_counter() - t0
                return
            self.seconds += time.perf_counter() - t0
            yield batch


def _evaluate(epoch: int, trainer: Trainer, timeline: Timeline, record: EpochRecord,
              eval_windows: list[Window]) -> float:
    """The evaluation window after ``epoch``; a non-finite metric is returned, never logged."""
    with timeline.window("eval", epoch) as ev:
        metric = trainer.evaluate()
        end = ev.close()
        if math.isfinite(metric):
            timeline.eval_accuracy(metric, epoch, at=end.end_s)
    eval_windows.append(ev.window)
    record.eval_s, record.eval_j = ev.window.seconds, ev.window.joules
    record.metric = metric if math.isfinite(metric) else None  # JSON holds numbers only
    record.eval_time_unix = timeline.wall_s(ev.window.end_s)
    return metric


def _summarize(res: TrialResult, run: Window, eval_windows: list[Window], cfg: TrialConfig,
               timeline: Timeline) -> None:
    """Time and energy with and without evaluation, throughput and utilization, from the windows."""
    res.total_time_s = run.seconds
    res.eval_time_s = sum(w.seconds for w in eval_windows)
    res.train_time_s = res.total_time_s - res.eval_time_s
    res.total_energy_j = run.joules
    eval_j = [w.joules for w in eval_windows]
    res.train_energy_j = None if None in eval_j or run.joules is None else run.joules - sum(eval_j)
    res.energy_domains = domain_energies(timeline.meter, run, eval_windows)
    res.energy_reason = timeline.meter.reason  # a domain that failed mid-run says so here
    if timeline.telemetry is not None:
        res.telemetry = timeline.telemetry.stop()
    epoch_s = sum(h.train_s for h in res.history)
    if epoch_s > 0 and all(h.data_wait_s is not None for h in res.history):
        res.data_wait_share = sum(h.data_wait_s for h in res.history) / epoch_s
    if res.train_time_s > 0:
        res.train_samples_per_s = res.train_samples / res.train_time_s
        res.achieved_tflops = flops.achieved_tflops(res.flops_per_step, res.steps, res.train_time_s)
        res.peak_tflops = cfg.peak_tflops
        res.utilization = flops.utilization(res.achieved_tflops, cfg.peak_tflops)
        res.ceiling_tflops = cfg.ceiling_tflops
        res.utilization_of_ceiling = flops.utilization(res.achieved_tflops, cfg.ceiling_tflops)


def domain_energies(meter, run: Window, eval_windows: list[Window]) -> dict | None:
    """Per domain: how it is measured, and joules of the run with and without evaluation (None: not measured)."""
    total = run.domain_joules()
    if total is None:
        return None
    described = meter.describe()
    evals = [w.domain_joules() or {} for w in eval_windows]
    out = {}
    for name, joules in total.items():
        parts = [e.get(name) for e in evals]
        train = None if joules is None or None in parts else joules - sum(parts)
        out[name] = {**described.get(name, {}), "train_j": train, "total_j": joules}
    return out


def _header(cfg: TrialConfig) -> dict[str, Any]:
    return {"benchmark": cfg.benchmark, "division": cfg.division, "org": cfg.submitter,
            "platform": cfg.system_name, "rules_version": cfg.rules_version, "trial": cfg.trial}


def _settings(cfg: TrialConfig, ref, data, trainer: Trainer, res: TrialResult, meter,
              framework: str) -> list[tuple[str, Any]]:
    """The trial's settings, logged once during init (MLPerf's keys where MLPerf has them)."""
    hp = cfg.hparams
    # gradient_accumulation_steps: MLPerf's closed rules require it; the harness never accumulates
    accumulation = () if "gradient_accumulation_steps" in hp else ((mllog.GRADIENT_ACCUMULATION_STEPS, 1),)
    return [(mllog.SEED, cfg.seed), *hp.items(), *accumulation,
            (mllog.TRAIN_SAMPLES, ref.train_samples(data)), (mllog.EVAL_SAMPLES, ref.eval_samples(data)),
            (mllog.FRAMEWORK, framework), (mllog.FORMAT_VERSION, RESULT_FORMAT_VERSION),
            *([(mllog.INTERRUPTED_ATTEMPTS, cfg.interrupted_attempts)] if cfg.interrupted_attempts else []),
            (mllog.PRECISION, res.precision_used), *getattr(trainer, "open_settings", ()),
            (mllog.MODEL_FINGERPRINT, trainer.structure["fingerprint"]),
            (mllog.PARAMETER_COUNT, trainer.structure["parameter_count"]),
            (mllog.FLOPS_PER_STEP, res.flops_per_step), (mllog.ENERGY_METHOD, res.energy_method),
            (mllog.ENERGY_SCOPE, res.energy_scope), (mllog.ENERGY_DOMAINS, meter.describe())]


class _Outcome:
    """Records Ctrl-C and crashes in the result (a trial is never dropped); ``finish`` re-raises Ctrl-C."""

    def __init__(self, res: TrialResult, dist):
        self.res, self.dist, self.failed, self.interrupted = res, dist, False, None

    def __enter__(self) -> "_Outcome":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None:
            return False
        if issubclass(kind, KeyboardInterrupt) and not self._peer_died():
            self.res.status, self.res.error = TrialStatus.ABORTED.value, "interrupted by the user (Ctrl-C)"
            self.interrupted = exc
        elif issubclass(kind, (Exception, KeyboardInterrupt)):  # noqa: BLE001 - a crashed trial is recorded
            self.res.status = TrialStatus.CRASHED.value
            self.res.error = (f"{nodes.dead_ranks_note(self.dist)}{kind.__name__}: {exc}\n"
                              + "".join(traceback.format_exception(kind, exc, tb, limit=8)))
        else:
            return False
        self.failed = True
        return True

    def _peer_died(self) -> bool:
        """torchrun's SIGTERM (raised here as KeyboardInterrupt) after another rank on this host died: that rank
        crashed the trial. Under load the signal can arrive before the collective fails (tests/test_rank_death.py).
        torchrun has already seen the process exit, so no grace: a Ctrl-C is not delayed."""
        return self.dist.world > 1 and bool(nodes.dead_ranks(self.dist, grace_s=0)[0])

    def finish(self, trainer: Trainer | None) -> tuple[TrialResult, Trainer | None]:
        if self.interrupted is not None:
            raise TrialInterrupted(self.res, trainer) from self.interrupted
        return self.res, trainer


class TrialInterrupted(KeyboardInterrupt):
    """Ctrl-C during a trial, carrying what was recorded so the runner can save it."""

    def __init__(self, result: TrialResult, trainer: Trainer | None):
        super().__init__("trial interrupted")
        self.result, self.trainer = result, trainer
