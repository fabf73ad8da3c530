"""Write synthetic, rule-abiding result folders as docs/result-format.md describes them.

Test-only code (and the checker's speed benchmark): the tests need clean folders of any size
without training anything, then break one thing at a time. Everything is written through the
result format's own writers (trainmark.format): the MLLOG with ``mllog.TrialLogWriter``, the
text log with ``epochlog.format_line``, the structure with ``structure.describe``, the names
from ``layout``; the weights with ``safetensors.torch.save_file``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmark.format import epochlog, layout, mllog, structure
from trainmark.format.labels import EnergyMethod, TrialStatus, run_stop_status

START_S = 1_790_000_000.0   # 2026-09-21, a fixed clock so that folders are reproducible
PEAK_TFLOPS = 0.1565        # trial.json's peak, as the harness derives it for the examples' 2-core AVX2 CPU


@dataclass
class TrialPlan:
    """What one synthetic trial logs: its seed and the metric after each epoch."""
    seed: int
    metrics: list[float]
    epoch_s: float = 30.0      # training window of each epoch
    eval_s: float = 3.0        # evaluation window of each epoch
    train_energy_j: float | None = 1500.0   # per epoch; None: not measured
    eval_energy_j: float | None = 120.0
    eval_every: int = 1        # evaluate after every k-th epoch and the last (the rules' evaluation cadence)
    framework: str | None = None  # logged as trainmark_framework when set (None: PyTorch, unlogged)


def two_point_rules(folder: Path) -> Path:
    """A rules folder whose latest version is rules 1.1's resnet-mini: convergence points at global batches 128
    and 256 (every seed in epoch 5), for the tests of judging between and outside calibrated batch sizes on values
    that stay put (rules 1.2's resnet-mini has both points too, since 2026-12-06). Returns the folder, for
    ``rules_root`` / ``--rules-dir``."""
    import yaml

    from trainmark.rules.ruleset import LATEST_VERSION, RULES_ROOT

    data = yaml.safe_load((RULES_ROOT / "1.1" / "resnet-mini.yaml").read_text(encoding="utf-8"))
    data["rules_version"] = LATEST_VERSION
    (folder / LATEST_VERSION).mkdir(parents=True, exist_ok=True)
    (folder / LATEST_VERSION / "resnet-mini.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    for name in ("reference-work.json", "reference-structures.json"):  # FLOPs per sample: the batch does not change it
        (folder / LATEST_VERSION / name).write_bytes((RULES_ROOT / LATEST_VERSION / name).read_bytes())
    return folder


def tiny_reference_model():
    """A small torchvision model standing in for a registry reference in tests."""
    import torch
    from torchvision.ops import MLP

    return MLP(16, [32, 10], norm_layer=torch.nn.BatchNorm1d)


def trained_weights(weights: dict, seed: int) -> dict:
    """Each floating tensor drawn afresh from the trial's seed at the model's scale, as a seeded initialisation
    is: distinct trials lie as far apart as real ones (WORK-004 compares tensors by value; weights moved a little
    from one model would be a clone) and no trained tensor is constant (WORK-005)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {k: v + (float(v.abs().mean()) + 0.1) * torch.randn(v.shape, generator=generator, dtype=v.dtype)
            if v.is_floating_point() else v for k, v in weights.items()}


def default_plans(rules, count: int | None = None) -> list[TrialPlan]:
    """``count`` trials (the rules' number by default) that each reach the target in the last epoch,
    through the middle of the rules' first reference band where they have one (no CURVE-001)."""
    count = count or int(rules.trials)
    target = rules.target
    sign = 1 if rules.higher_is_better else -1
    bands = (rules.data.get("curve_band") or {}).get("bands") or [{"epochs": []}]
    middle = {e: round((low + high) / 2, 6) for e, low, high in bands[0]["epochs"]}
    points = rules.convergence.get("points") or [{"epochs_to_target": [5]}]
    epochs = max(e for e in points[0]["epochs_to_target"] if e)  # as the reference's seeds (CONVERGE-001)
    plans = []
    for k in range(1, count + 1):
        metrics = [middle[e] if e in middle and not rules.reached(middle[e], target)
                   else round(target - sign * 0.05 * (epochs - e), 6) for e in range(1, epochs)]
        metrics[0] = round(metrics[0] - sign * 0.0001 * k, 6)  # each seed its own curve (WORK-004)
        metrics.append(round(target + sign * 0.0031, 6))
        plans.append(TrialPlan(seed=1000 + 17 * k, metrics=metrics, epoch_s=30.0 + 1.5 * k))  # CV 0.07
    return plans


def result_format(rules) -> int:
    """The result format a harness of these rules writes, as the checker derives it (checks/evidence_format.py):
    2 where the rules release their code hashes, else 1 (test rules: no record, no telemetry required)."""
    from trainmark.rules import reference_code

    return 2 if reference_code.hash_file(rules.version, rules.path.parent.parent).is_file() else 1


def telemetry_csv(result: Path) -> str:
    """A time-only telemetry.csv on the MLLOG's clock, as the sampler writes its rows: one as sampling starts
    (before run_start), one a second, one right before each epoch_stop and one right after run_stop."""
    records = mllog.read(result)
    start = next(e.time_ms for e in records if e.key == mllog.RUN_START)
    stop = next(e.time_ms for e in records if e.key == mllog.RUN_STOP)
    times = set(range(int(start) - 500, int(stop), 1000)) | {int(stop) + 200}
    times |= {int(e.time_ms) - 2 for e in records if e.key == mllog.EPOCH_STOP}
    return "time_ms\n" + "".join(f"{t}\n" for t in sorted(times))


def write_trial_log(path: Path, k: int, plan: TrialPlan, rules, *, division: str, submitter: str, system: str,
                    structure_desc: dict, start_ms: int) -> list[tuple[float, int, float]]:
    """Write result_<k>.txt; returns (eval_stop_ms, epoch, metric) per epoch for epochs.log."""
    log = mllog.TrialLogWriter(path, mode="w")
    t = start_ms
    measured = plan.train_energy_j is not None
    method = (EnergyMethod.MEASURED_COUNTER if measured else EnergyMethod.UNAVAILABLE).value
    try:
        log.header(t, benchmark=rules.name, division=division, org=submitter, platform=system,
                   rules_version=rules.version, trial=k)
        log.boundary(mllog.INIT_START, t, metered=False)
        log.settings([(mllog.SEED, plan.seed), *rules.defaults().items(),
                      (mllog.TRAIN_SAMPLES, 60000), (mllog.EVAL_SAMPLES, 10000), (mllog.PRECISION, "fp32"),
                      (mllog.MODEL_FINGERPRINT, structure_desc["fingerprint"]),
                      (mllog.PARAMETER_COUNT, structure_desc["parameter_count"]),
                      (mllog.FLOPS_PER_STEP, _flops_per_step(rules)), (mllog.ENERGY_METHOD, method),
                      *([(mllog.FRAMEWORK, plan.framework)] if plan.framework else []),
                      (mllog.FORMAT_VERSION, result_format(rules))], t)  # as trial.json's format_version
        t += 2000
        log.boundary(mllog.INIT_STOP, t, metered=False)
        t += 100
        run_start = t
        j = 0.0 if measured else None  # the meter's cumulative reading, as the harness logs it
        log.boundary(mllog.RUN_START, t, energy_j=j)
        evals = []
        for e, metric in enumerate(plan.metrics, start=1):
            log.boundary(mllog.EPOCH_START, t, epoch=e, energy_j=j)
            t += int(plan.epoch_s * 1000)
            j = j + plan.train_energy_j if measured else None
            log.boundary(mllog.EPOCH_STOP, t, epoch=e, energy_j=j,
                         fields={mllog.TRAIN_ENERGY_J: plan.train_energy_j, mllog.SAMPLES: 60000})
            if e % plan.eval_every and e != len(plan.metrics):
                continue
            log.boundary(mllog.EVAL_START, t, epoch=e, energy_j=j)
            t += int(plan.eval_s * 1000)
            log.eval_accuracy(t - 1, e, metric)
            j = j + (plan.eval_energy_j or 0.0) if measured else None
            log.boundary(mllog.EVAL_STOP, t, epoch=e, energy_j=j, fields={mllog.EVAL_ENERGY_J: plan.eval_energy_j})
            evals.append((t, e, metric))
        t += 5
        status = (TrialStatus.CONVERGED if rules.reached(plan.metrics[-1]) else TrialStatus.NOT_CONVERGED).value
        n = len(plan.metrics)
        train_energy = None if plan.train_energy_j is None else plan.train_energy_j * n
        eval_time = plan.eval_s * len(evals)
        summary = {
            "status": status, "epochs": n,
            "train_time_s": (t - run_start) / 1000 - eval_time, "total_time_s": (t - run_start) / 1000,
            "eval_time_s": eval_time, "init_time_s": 2.0, "train_energy_j": train_energy,
            "total_energy_j": None if train_energy is None else train_energy + (plan.eval_energy_j or 0.0) * len(evals),
            "energy_method": method, "energy_reason": "" if measured else "no energy counter",
            "train_samples_per_s": 60000 / plan.epoch_s, "achieved_tflops": None,
            "final_metric": plan.metrics[-1],
        }
        log.trial_result(t, summary)
        log.boundary(mllog.RUN_STOP, t, status=run_stop_status(status), energy_j=j)
        return evals
    finally:
        log.close()


def write_benchmark_folder(folder: Path, rules, model, *, division: str = "closed", submitter: str = "acme",
                           system: str = "sys1", plans: list[TrialPlan] | None = None,
                           start_s: float = START_S, structure_desc: dict | None = None) -> list[TrialPlan]:
    """One benchmark folder: epochs.log, result_<k>.txt and trial_<k>/ for every plan."""
    from safetensors.torch import save_file

    plans = plans if plans is not None else default_plans(rules)
    desc = structure_desc or structure.describe(model)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    lines = []
    start_ms = int(start_s * 1000)
    for k, plan in enumerate(plans, start=1):
        evals = write_trial_log(folder / layout.result_file(k), k, plan, rules, division=division, submitter=submitter,
                                system=system, structure_desc=desc, start_ms=start_ms)
        lines += [epochlog.format_line(stop_ms / 1000, k, e, metric) for stop_ms, e, metric in evals]
        trial_dir = folder / layout.trial_dir(k)
        trial_dir.mkdir(exist_ok=True)
        save_file(trained_weights(weights, plan.seed), str(trial_dir / layout.MODEL_FILE))
        (trial_dir / layout.STRUCTURE_FILE).write_text(json.dumps(desc, indent=1) + "\n", encoding="utf-8")
        summary = trial_summary(folder / layout.result_file(k), rules, k, plan, division, submitter, system)
        if summary["format_version"] >= 2:  # format 2: every trial records telemetry
            (trial_dir / layout.TELEMETRY_FILE).write_text(telemetry_csv(folder / layout.result_file(k)),
                                                           encoding="utf-8")
        (trial_dir / layout.TRIAL_JSON).write_text(json.dumps(summary) + "\n", encoding="utf-8")
        start_ms = evals[-1][0] + 600_000
    (folder / layout.EPOCHS_LOG).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return plans


def trial_summary(result: Path, rules, k: int, plan: TrialPlan, division: str, submitter: str,
                  system: str) -> dict[str, Any]:
    """trial.json as the harness writes it: the logged summary plus the run's settings."""
    logged = mllog.first_value(mllog.read(result), mllog.TRIAL_RESULT)
    version = result_format(rules)
    telemetry = {"telemetry": {"file": layout.TELEMETRY_FILE, "format": "trainmark-telemetry/2", "period_s": 1.0}} \
        if version >= 2 else {}
    return {"format_version": version, "benchmark": rules.name, "rules_version": rules.version, "division": division,
            "submitter": submitter, "system_name": system, "precision": "fp32", "precision_used": "fp32",
            "hparams": rules.defaults(), "trial": k, "seed": plan.seed, "peak_tflops": PEAK_TFLOPS,
            "flops_per_step": _flops_per_step(rules), **logged,
            "history": [{"epoch": e, "metric": m} for e, m in enumerate(plan.metrics, 1)], **telemetry}


def system_description(system: str, submitter: str, division: str) -> dict[str, Any]:
    return {"system_name": system, "submitter": submitter, "division": division, "status": "available",
            "number_of_nodes": 1, "host_processor_model_name": "synthetic CPU", "host_processor_core_count": 2,
            "host_memory_capacity": "24 GB", "accelerator_model_name": "none", "accelerators_per_node": 0,
            "framework": "PyTorch", "operating_system": "Linux", "trainmark_version": "0.1.0"}


def write_code_record(sub: Path, rules, system: str, division: str, framework: str) -> None:
    """The implementation record, as ``trainmark run`` writes it, where the rules ship code hashes (the checker
    then requires it, CODE-013); rules without them (test copies) get none, as folders of format 1 had none."""
    from trainmark.harness import code_record
    from trainmark.rules import reference_code

    if reference_code.hash_file(rules.version, rules.path.parent.parent).is_file() and \
            not reference_code.frozen(rules.version, rules.path.parent.parent):
        code_record.write_record(sub, rules, system, division, None, {"framework": framework,
                                                                       "rules_dir": rules.path.parent.parent})


def write_submission(root: Path, rules, model, *, division: str = "closed", submitter: str = "acme",
                     systems: tuple[str, ...] = ("sys1",), plans: list[TrialPlan] | None = None) -> Path:
    """``root/<division>/<submitter>/`` with one system description and benchmark folder per system."""
    sub = Path(root) / division / submitter
    (sub / layout.SYSTEMS_DIR).mkdir(parents=True, exist_ok=True)
    desc = structure.describe(model)
    for i, system in enumerate(systems):
        (sub / layout.SYSTEMS_DIR / layout.system_file(system)).write_text(
            json.dumps(system_description(system, submitter, division), indent=2) + "\n", encoding="utf-8")
        written = write_benchmark_folder(sub / layout.RESULTS_DIR / system / rules.name, rules, model,
                                         division=division, submitter=submitter, system=system, plans=plans,
                                         structure_desc=desc, start_s=START_S + 86400 * i)
        write_code_record(sub, rules, system, division, (written[0].framework if written else None) or "pytorch")
    return sub


# -- breaking a folder one thing at a time (tests) --------------------------------------
def mllog_lines_of(path: Path, key: str) -> list[int]:
    """1-based lines of ``path`` whose MLLOG record has ``key``."""
    return [r.line for r in mllog.read(path) if r.key == key]


def edit_mllog(path: Path, key: str, change, nth: int = 0) -> int:
    """Apply ``change(record)`` to the ``nth`` record with ``key`` (a ``None`` result deletes the
    line); returns the line's 1-based number."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    number = mllog_lines_of(path, key)[nth]
    record = json.loads(lines[number - 1][len(mllog.PREFIX):])
    new = change(record)
    if new is None:
        del lines[number - 1]
    else:
        lines[number - 1] = mllog.PREFIX + json.dumps(new)
    Path(path).write_text("\n".join(lines), encoding="utf-8")
    return number


def set_value(value):
    """A ``change`` for ``edit_mllog`` that sets the record's value."""
    def change(record):
        record["value"] = value
        return record
    return change


def _flops_per_step(rules) -> int:
    """What a real trial logs: the reference's FLOPs per sample (reference-work.json) x the rules' batch; the
    checker derives the same figure and calls any other copy WORK-006."""
    from trainmark.rules import reference_work
    return reference_work.flops_per_step(rules) or 123456789
