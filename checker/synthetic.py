"""Write synthetic, rule-abiding result folders as docs/result-format.md describes them.

For the checker's tests and speed benchmark: they need clean folders of any size
without training anything, then break one thing at a time. The MLLOG files are written
with mlperf-logging's own ``MLLogger`` (one logger with one file handler per trial,
explicit ``time_ms``), the text log with ``epochlog.format_line``, the weights with
``safetensors.torch.save_file`` and the structure with ``structure.describe``.
"""
from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_S = 1_790_000_000.0   # 2026-09-21, a fixed clock so that folders are reproducible
_counter = itertools.count()


@dataclass
class TrialPlan:
    """What one synthetic trial logs: its seed and the metric after each epoch."""
    seed: int
    metrics: list[float]
    epoch_s: float = 30.0      # training window of each epoch
    eval_s: float = 3.0        # evaluation window of each epoch
    train_energy_j: float | None = 1500.0   # per epoch; None: not measured
    eval_energy_j: float | None = 120.0


def tiny_reference_model():
    """A small torchvision model standing in for a registry reference in tests."""
    import torch
    from torchvision.ops import MLP

    return MLP(16, [32, 10], norm_layer=torch.nn.BatchNorm1d)


def default_plans(rules, count: int | None = None) -> list[TrialPlan]:
    """``count`` trials (the rules' number by default) that each reach the target."""
    count = count or int(rules.trials)
    target = rules.target
    plans = []
    for k in range(1, count + 1):
        epochs = 5 + k % 2  # 6, 5, 6, 5, 6: as slow as resnet-mini's reference runs (CONVERGE-001)
        sign = 1 if rules.higher_is_better else -1
        metrics = [round(target - sign * 0.05 * (epochs - e), 6) for e in range(1, epochs)]
        metrics.append(round(target + sign * 0.0031, 6))
        plans.append(TrialPlan(seed=1000 + 17 * k, metrics=metrics, epoch_s=30.0 + 2.5 * k))
    return plans


def _mllogger(path: Path):
    from mlperf_logging.mllog.mllog import MLLogger

    logger = logging.getLogger(f"trainmark.synthetic.{next(_counter)}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return MLLogger(logger=logger), logger, handler


def write_trial_log(path: Path, k: int, plan: TrialPlan, rules, *, division: str, submitter: str, system: str,
                    structure_desc: dict, start_ms: int) -> list[tuple[float, int, float]]:
    """Write result_<k>.txt; returns (eval_stop_ms, epoch, metric) per epoch for epochs.log."""
    from mlperf_logging.mllog import constants as c

    ml, logger, handler = _mllogger(path)
    t = start_ms
    point = lambda key, value, meta=None: ml.event(key, value, metadata=meta, time_ms=t)  # noqa: E731
    try:
        for key, value in (("submission_benchmark", rules.name), ("submission_division", division),
                           ("submission_org", submitter), ("submission_platform", system),
                           ("submission_status", "onprem"), ("trainmark_rules_version", rules.version),
                           ("trainmark_trial", k), ("cache_clear", True)):
            point(key, value)
        ml.start(c.INIT_START, time_ms=t)
        point("seed", plan.seed)
        for key, value in rules.defaults().items():
            point(key, value)
        for key, value in (("train_samples", 60000), ("eval_samples", 10000), ("trainmark_precision", "fp32"),
                           ("trainmark_model_fingerprint", structure_desc["fingerprint"]),
                           ("trainmark_parameter_count", structure_desc["parameter_count"]),
                           ("trainmark_flops_per_step", 123456789),
                           ("trainmark_energy_method", "measured-counter" if plan.train_energy_j is not None
                            else "unavailable")):
            point(key, value)
        t += 2000
        ml.end(c.INIT_STOP, time_ms=t)
        t += 100
        run_start = t
        measured = plan.train_energy_j is not None
        j = 0.0 if measured else None  # the meter's cumulative reading, as the harness logs it
        ml.start(c.RUN_START, metadata={"trainmark_energy_j": j}, time_ms=t)
        evals = []
        for e, metric in enumerate(plan.metrics, start=1):
            ml.start(c.EPOCH_START, metadata={"epoch_num": e, "trainmark_energy_j": j}, time_ms=t)
            t += int(plan.epoch_s * 1000)
            j = j + plan.train_energy_j if measured else None
            ml.end(c.EPOCH_STOP, metadata={"epoch_num": e, "trainmark_energy_j": j,
                                           "trainmark_train_energy_j": plan.train_energy_j,
                                           "trainmark_samples": 60000}, time_ms=t)
            ml.start(c.EVAL_START, metadata={"epoch_num": e, "trainmark_energy_j": j}, time_ms=t)
            t += int(plan.eval_s * 1000)
            ml.event(c.EVAL_ACCURACY, metric, metadata={"epoch_num": e}, time_ms=t - 1)
            j = j + (plan.eval_energy_j or 0.0) if measured else None
            ml.end(c.EVAL_STOP, metadata={"epoch_num": e, "trainmark_energy_j": j,
                                          "trainmark_eval_energy_j": plan.eval_energy_j}, time_ms=t)
            evals.append((t, e, metric))
        t += 5
        converged = rules.reached(plan.metrics[-1])
        n = len(plan.metrics)
        train_energy = None if plan.train_energy_j is None else plan.train_energy_j * n
        eval_time = plan.eval_s * n
        summary = {
            "status": "converged" if converged else "not_converged", "epochs": n,
            "train_time_s": (t - run_start) / 1000 - eval_time, "total_time_s": (t - run_start) / 1000,
            "eval_time_s": eval_time, "init_time_s": 2.0, "train_energy_j": train_energy,
            "total_energy_j": None if train_energy is None else train_energy + (plan.eval_energy_j or 0.0) * n,
            "energy_method": "measured-counter" if plan.train_energy_j is not None else "unavailable",
            "energy_reason": "" if plan.train_energy_j is not None else "no energy counter",
            "train_samples_per_s": 60000 / plan.epoch_s, "achieved_tflops": None,
            "final_metric": plan.metrics[-1],
        }
        point("trainmark_trial_result", summary)
        ml.end(c.RUN_STOP, metadata={"status": "success" if converged else "aborted", "trainmark_energy_j": j},
               time_ms=t)
        return evals
    finally:
        logger.removeHandler(handler)
        handler.close()


def write_benchmark_folder(folder: Path, rules, model, *, division: str = "closed", submitter: str = "acme",
                           system: str = "sys1", plans: list[TrialPlan] | None = None,
                           start_s: float = START_S, structure_desc: dict | None = None) -> list[TrialPlan]:
    """One benchmark folder: epochs.log, result_<k>.txt and trial_<k>/ for every plan."""
    from safetensors.torch import save_file

    from trainmark.harness import epochlog, structure

    plans = plans if plans is not None else default_plans(rules)
    desc = structure_desc or structure.describe(model)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    lines = []
    start_ms = int(start_s * 1000)
    for k, plan in enumerate(plans, start=1):
        evals = write_trial_log(folder / f"result_{k}.txt", k, plan, rules, division=division, submitter=submitter,
                                system=system, structure_desc=desc, start_ms=start_ms)
        lines += [epochlog.format_line(stop_ms / 1000, k, e, metric) for stop_ms, e, metric in evals]
        trial_dir = folder / f"trial_{k}"
        trial_dir.mkdir(exist_ok=True)
        save_file(weights, str(trial_dir / "model.safetensors"))
        (trial_dir / "structure.json").write_text(json.dumps(desc, indent=1) + "\n", encoding="utf-8")
        (trial_dir / "trial.json").write_text(json.dumps(trial_summary(folder / f"result_{k}.txt", rules, k, plan,
                                                                       division, submitter, system)) + "\n",
                                              encoding="utf-8")
        start_ms = evals[-1][0] + 600_000
    (folder / "epochs.log").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return plans


def trial_summary(result: Path, rules, k: int, plan: TrialPlan, division: str, submitter: str,
                  system: str) -> dict[str, Any]:
    """trial.json as the harness writes it: the logged summary plus the run's settings."""
    logged = next(json.loads(line.split(":::MLLOG ", 1)[1])["value"] for line in
                  result.read_text(encoding="utf-8").splitlines() if '"key": "trainmark_trial_result"' in line)
    return {"format_version": 1, "benchmark": rules.name, "rules_version": rules.version, "division": division,
            "submitter": submitter, "system_name": system, "precision": "fp32", "precision_used": "fp32",
            "hparams": rules.defaults(), "trial": k, "seed": plan.seed, **logged,
            "history": [{"epoch": e, "metric": m} for e, m in enumerate(plan.metrics, 1)]}


def system_description(system: str, submitter: str, division: str) -> dict[str, Any]:
    return {"system_name": system, "submitter": submitter, "division": division, "status": "available",
            "number_of_nodes": 1, "host_processor_model_name": "synthetic CPU", "host_processor_core_count": 2,
            "host_memory_capacity": "24 GB", "accelerator_model_name": "none", "accelerators_per_node": 0,
            "framework": "PyTorch", "operating_system": "Linux", "trainmark_version": "0.1.0"}


def write_submission(root: Path, rules, model, *, division: str = "closed", submitter: str = "acme",
                     systems: tuple[str, ...] = ("sys1",), plans: list[TrialPlan] | None = None) -> Path:
    """``root/<division>/<submitter>/`` with one system description and benchmark folder per system."""
    from trainmark.harness import structure

    sub = Path(root) / division / submitter
    (sub / "systems").mkdir(parents=True, exist_ok=True)
    desc = structure.describe(model)
    for i, system in enumerate(systems):
        (sub / "systems" / f"{system}.json").write_text(
            json.dumps(system_description(system, submitter, division), indent=2) + "\n", encoding="utf-8")
        write_benchmark_folder(sub / "results" / system / rules.name, rules, model, division=division,
                               submitter=submitter, system=system, plans=plans, structure_desc=desc,
                               start_s=START_S + 86400 * i)
    return sub


# -- breaking a folder one thing at a time (tests) --------------------------------------
def mllog_lines_of(path: Path, key: str) -> list[int]:
    """1-based lines of ``path`` whose MLLOG record has ``key``."""
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), start=1):
        if line.startswith(":::MLLOG ") and json.loads(line[9:]).get("key") == key:
            out.append(number)
    return out


def edit_mllog(path: Path, key: str, change, nth: int = 0) -> int:
    """Apply ``change(record)`` to the ``nth`` record with ``key`` (a ``None`` result deletes the
    line); returns the line's 1-based number."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    number = mllog_lines_of(path, key)[nth]
    record = json.loads(lines[number - 1][9:])
    new = change(record)
    if new is None:
        del lines[number - 1]
    else:
        lines[number - 1] = ":::MLLOG " + json.dumps(new)
    Path(path).write_text("\n".join(lines), encoding="utf-8")
    return number


def set_value(value):
    """A ``change`` for ``edit_mllog`` that sets the record's value."""
    def change(record):
        record["value"] = value
        return record
    return change
