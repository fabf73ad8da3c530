"""One trial: a fresh model trained epoch by epoch until it reaches the quality target.

The loop owns the clock, the energy windows and both logs; the reference owns the model,
the data and the recipe. Outcomes: ``converged`` (target reached), ``not_converged``
(epoch cap), ``diverged`` (non-finite loss), ``aborted`` (Ctrl-C), ``crashed`` (exception).
"""
from __future__ import annotations

import contextlib
import math
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from trainmark.harness import epochlog, flops, scale_nodes
from trainmark.harness.distributed import Dist
from trainmark.harness.mllogger import ABORTED, SUCCESS, TrialLog
from trainmark.harness.monitor import Monitor
from trainmark.harness.progress import TrialProgress
from trainmark.harness.structure import describe

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
    device: torch.device
    precision: str              # fp32 | amp
    hparams: dict[str, Any]
    max_epochs: int
    eval_every: int
    target_reached: Callable[[float], bool]
    metric_name: str
    peak_tflops: float | None = None    # the device's peak for this precision (datasheet or derived)
    ceiling_tflops: float | None = None  # the measured ceiling for this precision (`trainmark ops`)


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


@dataclass
class TrialResult:
    status: str = "crashed"
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
    telemetry: dict | None = None          # the telemetry file's record (trainmark.harness.telemetry)
    history: list[EpochRecord] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The ``trainmark_trial_result`` MLLOG value (everything but the epoch history)."""
        d = asdict(self)
        d.pop("history")
        return d


def autocast_for(device: torch.device, precision: str):
    """(context factory, GradScaler or None, label) for the requested precision."""
    if precision == "fp32":
        return contextlib.nullcontext, None, "fp32"
    if device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    else:
        dtype = torch.bfloat16
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
    label = "amp-bf16" if dtype == torch.bfloat16 else "amp-fp16"
    return (lambda: torch.autocast(device.type, dtype=dtype)), scaler, label


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _domains_j(readings: dict | None) -> dict:
    """MLLOG metadata with each energy domain's cumulative joules, where the meter has domains."""
    return {} if readings is None else {"trainmark_energy_domains_j": readings}


def domain_energies(meter, run, eval_windows) -> dict | None:
    """Per domain: how it is measured, and joules of the run with and without evaluation (None: not measured)."""
    total = run.domain_joules()
    if total is None:
        return None
    described = meter.describe() if hasattr(meter, "describe") else {}
    evals = [w.domain_joules() or {} for w in eval_windows]
    out = {}
    for name, joules in total.items():
        parts = [e.get(name) for e in evals]
        train = None if joules is None or None in parts else joules - sum(parts)
        out[name] = {**described.get(name, {}), "train_j": train, "total_j": joules}
    return out


def run_trial(ref, data, cfg: TrialConfig, monitor: Monitor, log: TrialLog,
              write_epoch_line: Callable[[str], None], progress: TrialProgress, dist: Dist,
              build_model: Callable[[], nn.Module]) -> tuple[TrialResult, nn.Module | None]:
    """Train one trial; every outcome is returned as a result, Ctrl-C re-raised after logging."""
    res = TrialResult(energy_method=monitor.meter.method, energy_reason=monitor.meter.reason,
                      energy_scope=getattr(monitor.meter, "scope", None))
    hp, device = cfg.hparams, cfg.device
    ms = monitor.wall_ms
    model = None
    eval_windows = []
    interrupted = None
    run_open = False
    try:
        init_start = monitor.begin_window("init")
        for key, value in (("submission_benchmark", cfg.benchmark), ("submission_division", cfg.division),
                           ("submission_org", cfg.submitter), ("submission_platform", cfg.system_name),
                           ("submission_status", "onprem"), ("trainmark_rules_version", cfg.rules_version),
                           ("trainmark_trial", cfg.trial), ("cache_clear", True)):
            log.event(key, value, ms(init_start.s))
        log.start("init_start", ms(init_start.s))
        torch.manual_seed(cfg.seed)
        generator = torch.Generator().manual_seed(cfg.seed)
        model = build_model().to(device)
        if getattr(ref, "channels_last", False):
            model = model.to(memory_format=torch.channels_last)
        structure = describe(model)
        train_model = model
        if dist.world > 1:
            train_model = nn.parallel.DistributedDataParallel(
                model, device_ids=[device.index] if device.type == "cuda" else None)
        local_batch = hp["global_batch_size"] // dist.world
        steps_per_epoch = (ref.train_samples(data) // dist.world) // local_batch
        optimizer, scheduler = ref.make_optimizer(train_model, hp, steps_per_epoch)
        autocast, scaler, res.precision_used = autocast_for(device, cfg.precision)
        res.flops_per_step = count_step_flops(ref, model, hp, device)
        for key, value in scale_nodes.rank_events(dist, local_batch):  # world size, local batch, nodes (RANK-*)
            log.event(key, value, ms(init_start.s))
        # gradient_accumulation_steps: MLPerf's closed rules require it; the harness never accumulates
        accumulation = () if "gradient_accumulation_steps" in hp else (("gradient_accumulation_steps", 1),)
        for key, value in (("seed", cfg.seed), *hp.items(), *accumulation, ("train_samples", ref.train_samples(data)),
                           ("eval_samples", ref.eval_samples(data)), ("trainmark_precision", res.precision_used),
                           ("trainmark_model_fingerprint", structure["fingerprint"]),
                           ("trainmark_parameter_count", structure["parameter_count"]),
                           ("trainmark_flops_per_step", res.flops_per_step),
                           ("trainmark_energy_method", res.energy_method),
                           ("trainmark_energy_scope", res.energy_scope),
                           ("trainmark_energy_domains", getattr(monitor.meter, "describe", dict)())):
            log.event(key, value, ms(init_start.s))
        init = monitor.end_window("init")
        res.init_time_s = init.seconds
        log.end("init_stop", ms(init.end_s))

        run_start = monitor.begin_window("run")
        run_open = True
        log.start("run_start", ms(run_start.s), trainmark_energy_j=run_start.j, **_domains_j(run_start.domains_j),
                  **scale_nodes.node_fields(monitor.meter))
        res.status = "not_converged"
        for epoch in range(1, cfg.max_epochs + 1):
            last = res.history[-1].metric if res.history else None
            progress.epoch(cfg.trial, epoch, cfg.max_epochs, steps_per_epoch,
                           f"{cfg.metric_name} {last:.4f}" if last is not None else "")
            epoch_start = monitor.begin_window("epoch")
            log.start("epoch_start", ms(epoch_start.s), epoch_num=epoch, trainmark_energy_j=epoch_start.j,
                      **_domains_j(epoch_start.domains_j))
            train_model.train()
            nonfinite = torch.zeros((), dtype=torch.bool, device=device)
            samples = step = 0
            for step, batch in enumerate(ref.train_batches(data, epoch, local_batch, generator,
                                                           dist.rank, dist.world), start=1):
                batch = ref.to_device(batch, device, train=True)
                with autocast():
                    loss = ref.loss(train_model, batch, hp)
                optimizer.zero_grad(set_to_none=True)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
                scheduler.step()
                nonfinite |= ~torch.isfinite(loss.detach())
                samples += local_batch * dist.world
                if step % CHECK_EVERY_STEPS == 0:
                    progress.step(CHECK_EVERY_STEPS, loss.item())
                    if dist.any(bool(nonfinite), device):
                        break
            res.steps += step
            ep = monitor.end_window("epoch")
            record = EpochRecord(epoch, ep.seconds, ep.joules, samples, energy_domains_j=ep.domain_joules())
            res.history.append(record)
            res.epochs, res.train_samples = epoch, res.train_samples + samples
            log.end("epoch_stop", ms(ep.end_s), epoch_num=epoch, trainmark_energy_j=ep.end_j, trainmark_train_energy_j=ep.joules,
                    trainmark_samples=samples, **_domains_j(ep.end_domains_j))
            if monitor.telemetry is not None:
                record.telemetry = monitor.telemetry.summarize(ep.start_s, ep.end_s)
                log.event("trainmark_telemetry", record.telemetry, ms(ep.end_s), epoch_num=epoch)
            if dist.any(bool(nonfinite), device):
                res.status = "diverged"
                res.error = f"non-finite training loss in epoch {epoch}"
                break
            if epoch % cfg.eval_every and epoch != cfg.max_epochs:
                continue
            eval_start = monitor.begin_window("eval")
            log.start("eval_start", ms(eval_start.s), epoch_num=epoch, trainmark_energy_j=eval_start.j,
                      **_domains_j(eval_start.domains_j))
            train_model.eval()
            with autocast():
                sums = dist.sum(list(ref.evaluate(model, data, device, dist.rank, dist.world)), device)
            metric = ref.finalize_metric(*sums)
            ev = monitor.end_window("eval")
            eval_windows.append(ev)
            finite = math.isfinite(metric)
            record.eval_s, record.eval_j = ev.seconds, ev.joules
            record.metric = metric if finite else None  # JSON holds numbers only; the status tells the rest
            record.eval_time_unix = monitor.wall_s(ev.end_s)
            if finite:  # both logs hold numbers only; a non-finite metric is told by the status
                res.final_metric = metric
                log.event("eval_accuracy", metric, ms(ev.end_s), epoch_num=epoch)
            log.end("eval_stop", ms(ev.end_s), epoch_num=epoch, trainmark_energy_j=ev.end_j,
                    trainmark_eval_energy_j=ev.joules, **_domains_j(ev.end_domains_j))
            if not finite:
                res.status, res.error = "diverged", f"{cfg.metric_name} is {metric} after epoch {epoch}"
                break
            if dist.is_main:
                write_epoch_line(epochlog.format_line(record.eval_time_unix, cfg.trial, epoch, metric))
            progress.metric(f"{cfg.metric_name} {metric:.4f}")
            if cfg.target_reached(metric):
                res.status = "converged"
                break
    except KeyboardInterrupt as exc:
        res.status, res.error, interrupted = "aborted", "interrupted by the user (Ctrl-C)", exc
    except Exception as exc:  # noqa: BLE001 - a crashed trial is recorded, never dropped
        res.status = "crashed"
        res.error = f"{scale_nodes.dead_ranks_note(dist)}{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    if run_open:
        run = monitor.end_window("run")
        res.total_time_s = run.seconds
        res.eval_time_s = sum(w.seconds for w in eval_windows)
        res.train_time_s = res.total_time_s - res.eval_time_s
        res.total_energy_j = run.joules
        eval_j = [w.joules for w in eval_windows]
        res.train_energy_j = None if None in eval_j else _minus(run.joules, sum(eval_j))
        res.energy_domains = domain_energies(monitor.meter, run, eval_windows)
        res.energy_reason = monitor.meter.reason  # a domain that failed mid-run says so here
        if monitor.telemetry is not None:
            res.telemetry = monitor.telemetry.stop()
        if res.train_time_s > 0:
            res.train_samples_per_s = res.train_samples / res.train_time_s
            res.achieved_tflops = flops.achieved_tflops(res.flops_per_step, res.steps, res.train_time_s)
            res.peak_tflops = cfg.peak_tflops
            res.utilization = flops.utilization(res.achieved_tflops, cfg.peak_tflops)
            res.ceiling_tflops = cfg.ceiling_tflops
            res.utilization_of_ceiling = flops.utilization(res.achieved_tflops, cfg.ceiling_tflops)
        log.event("trainmark_trial_result", res.summary(), ms(run.end_s))
        log.end("run_stop", ms(run.end_s), status=SUCCESS if res.status == "converged" else ABORTED,
                trainmark_energy_j=run.end_j, **_domains_j(run.end_domains_j),
                **scale_nodes.node_fields(monitor.meter))
    if interrupted is not None:
        raise TrialInterrupted(res, model) from interrupted
    return res, model


class TrialInterrupted(KeyboardInterrupt):
    """Ctrl-C during a trial, carrying what was recorded so the runner can save it."""

    def __init__(self, result: TrialResult, model: nn.Module | None):
        super().__init__("trial interrupted")
        self.result, self.model = result, model


def count_step_flops(ref, model: nn.Module, hp: dict[str, Any], device: torch.device) -> int | None:
    """Model FLOPs of one training step at the global batch size (None where uncountable)."""
    batch = ref.to_device(ref.synthetic_batch(hp["global_batch_size"], "cpu"), device, train=True)
    inputs, targets = ref.split_batch(batch)
    count = flops.training_flops_per_step(model, inputs, lambda out, t: ref.criterion(out, t, hp), targets=targets)
    return count.total
