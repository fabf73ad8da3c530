"""Time to train at N accelerators: the global batch, samples to converge at it, throughput and minutes.

Throughput alone does not plan a cluster: larger global batches need more epochs to converge, and past
the largest batch anyone has shown to converge there is nothing to project. The convergence points
come from the rules (``convergence.points``: epochs to target per global batch) or from MLPerf's
reference convergence points (the RCP files mlperf-logging ships, read as data), and are interpolated
as MLPerf's RCP checker does (``trainmark.rules.convergence``: olympic mean and spread per batch,
points slower than their neighbours' interpolation pruned, linear in between). Outside the covered
range there is no projection, and the row says why. docs/scale.md holds the equations.
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from trainmark.harness.scale import projection as scale_model
from trainmark.rules import convergence as rcp

MODES = ("weak", "strong", "best")
# MLPerf benchmarks whose RCPs count samples (or tokens) to converge, not epochs
RCP_SAMPLE_UNITS = {"bert", "stable_diffusion", "llama2_70b_lora", "llama31_405b", "llama31_8b", "gpt3", "flux1",
                    "unet3d"}
RCP_FILE_CAP = 1 << 20
INTERVAL_STDS = 2.0    # the convergence interval: mean -/+ 2 standard deviations of the reference runs


@dataclass(frozen=True)
class Convergence:
    """Reference convergence per global batch: olympic mean and std of ``unit`` to target, and where from."""

    points: tuple[rcp.RefPoint, ...]
    unit: str                 # "epochs" or "samples"
    source: str

    @property
    def covered(self) -> tuple[int, int]:
        return self.points[0].batch_size, self.points[-1].batch_size

    def at(self, batch: int) -> rcp.RefPoint | None:
        return rcp.reference_at(list(self.points), batch)


def _convergence(raw_points: list[dict], unit: str, source: str) -> Convergence | None:
    points = rcp.ref_points(raw_points)
    return Convergence(tuple(points), unit, source) if points else None


def from_rules(rules, implementation: str | None = None) -> Convergence | None:
    """The rules' convergence points of one implementation (None: the PyTorch reference's), in epochs."""
    spec = (rules.data.get("convergence") or {})
    raw = [p for p in spec.get("points", []) if p.get("implementation") == implementation]
    return _convergence(raw, "epochs", f"rules {rules.version}/{rules.name}.yaml convergence.points")


def rcp_dir() -> Path | None:
    """mlperf-logging's RCP folder, found without importing the package."""
    spec = importlib.util.find_spec("mlperf_logging")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "rcp_checker"


def rcp_versions(benchmark: str) -> list[str]:
    """The training rulesets ("5.0.0", ...) whose RCP files hold ``benchmark``, oldest first."""
    root = rcp_dir()
    if root is None:
        return []
    found = [p.parent.name.split("_", 1)[1] for p in root.glob(f"training_*/rcps_{benchmark}.json")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()))


def from_mlperf(benchmark: str, version: str | None = None) -> Convergence | None:
    """MLPerf's reference convergence points of ``benchmark`` (the ruleset ``version``, else the newest)."""
    versions = rcp_versions(benchmark)
    if version is not None and version not in versions:
        older = [v for v in versions if _vkey(v) <= _vkey(version)]
        version = older[-1] if older else None
    version = version or (versions[-1] if versions else None)
    if version is None:
        return None
    path = rcp_dir() / f"training_{version}" / f"rcps_{benchmark}.json"
    with open(path, "rb") as fh:
        data = json.loads(fh.read(RCP_FILE_CAP))
    unit = "samples" if benchmark in RCP_SAMPLE_UNITS else "epochs"
    raw = []
    for record in data.values():
        values = record.get("Epochs to converge") or record.get("samples to converge") or []
        if isinstance(record.get("BS"), int) and values:
            raw.append({"global_batch_size": record["BS"], "epochs_to_target": [float(v) for v in values]})
    return _convergence(raw, unit, f"MLPerf RCPs training_{version}/rcps_{benchmark}.json (mlperf-logging)")


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def plan_batch(n: int, mode: str, local_batch: int, global_batch: int, conv: Convergence) -> dict:
    """The global batch at ``n`` accelerators: weak keeps ``local_batch`` per rank, strong keeps
    ``global_batch``; either is capped to the largest batch the convergence points cover (a multiple
    of ``n``). ``batch`` is None when no batch at ``n`` is covered, with ``reason``."""
    if mode not in MODES:
        raise ValueError(f"scaling {mode!r}: use one of {', '.join(MODES)}")
    wanted = n * local_batch if mode in ("weak", "best") else global_batch
    low, high = conv.covered
    batch = min(wanted, high) // n * n
    out = {"batch": batch, "wanted_batch": wanted, "capped": batch != wanted, "reason": None, "note": None}
    if batch < n and wanted < n:
        out.update(batch=None, reason=f"{mode} scaling keeps a global batch of {wanted}: less than one sample "
                                      f"per accelerator at {n}")
    elif batch < n:
        out.update(batch=None, reason=f"{n} accelerators need a global batch of at least {n}, beyond the "
                                      f"largest covered by the convergence points ({high})")
    elif batch < low:
        out.update(batch=None, reason=f"global batch {batch} lies below the smallest covered by the convergence "
                                      f"points ({low}): epochs to converge unknown there")
    elif batch != wanted:
        out["note"] = (f"capped from {wanted} to {batch}: the convergence points cover global batches "
                       f"{low}..{high}" if wanted > high else f"{wanted} rounded down to a multiple of {n}")
    return out


def candidate_batches(n: int, local_batch: int, global_batch: int, conv: Convergence) -> list[int]:
    """Scaling "best": the covered global batches, multiples of ``n``, from the strong-scaling batch (or the
    smallest covered) up to the weak-scaling batch (capped): about 40 of them, geometrically spaced."""
    low, high = conv.covered
    top = min(n * local_batch, high) // n
    bottom = -(-max(min(global_batch, n * local_batch), low, n) // n)
    if top < bottom and bottom * n <= high:
        return [bottom * n]   # the local batch raised to reach the smallest covered batch
    if top < bottom:
        return []
    ks = {bottom, top, *(k // n for k in (p.batch_size for p in conv.points) if bottom <= k // n <= top)}
    ratio = (top / bottom) ** (1 / 40) if top > bottom else 1
    k = float(bottom)
    while k < top:
        ks.add(int(k))
        k = max(k * ratio, k + 1)
    return sorted(k * n for k in ks if bottom <= k <= top)


def converge_at(conv: Convergence, batch: int, samples_per_epoch: int | None) -> dict:
    """Samples (and epochs) to converge at ``batch``, with the interval mean -/+ 2 std, >= 0."""
    ref = conv.at(batch)
    if ref is None:
        return {"reason": f"no convergence point at or around global batch {batch} ({conv.source})"}
    low, high = max(0.0, ref.mean - INTERVAL_STDS * ref.std), ref.mean + INTERVAL_STDS * ref.std
    per_unit = 1 if conv.unit == "samples" else samples_per_epoch
    out = {"unit": conv.unit, "to_converge": ref.mean, "to_converge_interval": [low, high],
           "interpolated_between": list(ref.between) if ref.between else None, "reason": None}
    if per_unit:
        out["samples"] = ref.mean * per_unit
        out["samples_interval"] = [low * per_unit, high * per_unit]
        out["epochs"] = ref.mean * per_unit / samples_per_epoch if samples_per_epoch else None
    else:
        out["samples"] = None
        out["reason"] = "epochs to converge known, samples per epoch not: pass --train-samples"
    return out


def project_time_to_train(profile: scale_model.ComputeProfile, link: scale_model.Link, sizes: list[int], *,
                          mode: str, global_batch: int, conv: Convergence, samples_per_epoch: int | None,
                          throughput_spread: float = 0.0) -> list[dict]:
    """One row per N: global batch (capped, and said so), to converge, samples/s, minutes with an interval.

    ``mode`` "best" tries the covered batches between strong and weak scaling and keeps the fastest to
    train. The interval combines the convergence interval with the measured throughput spread
    (``throughput_spread``: the relative step-time spread of the base measurement).
    """
    rows = []
    for n in sizes:
        plan = plan_batch(n, mode, profile.local_batch, global_batch, conv)
        if mode == "best" and (plan["batch"] is not None or n * profile.local_batch < conv.covered[0]):
            tries = [_time_row(n, plan, b, profile, link, conv, samples_per_epoch, throughput_spread)
                     for b in candidate_batches(n, profile.local_batch, global_batch, conv)]
            timed = [r for r in tries if r["status"] == "projected"]
            row = min(timed, key=lambda r: r["minutes"]) if timed else (tries or [None])[0]
            if row is not None:
                row["batch_note"] = (f"the fastest to train of {len(tries)} covered global batches from "
                                     f"{tries[0]['global_batch']} to {tries[-1]['global_batch']}"
                                     + ("; local batch raised to reach the smallest covered batch"
                                        if row["global_batch"] > n * profile.local_batch else ""))
                rows.append(row)
                continue
        rows.append(_time_row(n, plan, plan["batch"], profile, link, conv, samples_per_epoch, throughput_spread))
    return rows


def _time_row(n: int, plan: dict, batch: int | None, profile: scale_model.ComputeProfile, link: scale_model.Link,
              conv: Convergence, samples_per_epoch: int | None, throughput_spread: float) -> dict:
    row = {"n": n, "global_batch": batch, "wanted_global_batch": plan["wanted_batch"],
           "batch_capped": batch is not None and batch != plan["wanted_batch"], "batch_note": plan["note"],
           "status": "projected"}
    if batch is None:
        return {**row, "status": "no projection", "reason": plan["reason"]}
    step, compute, exposed = scale_model.step_seconds(n, batch / n, profile, link)
    thr = batch / step
    row.update(local_batch=batch / n, step_s=step, compute_s=compute, exposed_comm_s=exposed,
               samples_per_s=thr, convergence=converge_at(conv, batch, samples_per_epoch))
    samples = row["convergence"].get("samples")
    if samples is None:
        return {**row, "status": "no projection", "reason": row["convergence"]["reason"]}
    low, high = row["convergence"]["samples_interval"]
    spread = min(max(throughput_spread, 0.0), 0.9)
    row.update(minutes=samples / thr / 60, minutes_interval=[low / (thr * (1 + spread)) / 60,
                                                             high / (thr * (1 - spread)) / 60])
    return row


def samples_per_epoch(rules) -> tuple[int | None, str]:
    """Training samples per epoch from the rules: the listing's train file count, else the first count
    of 100 or more in ``dataset.split.train``'s text; (None, why) when neither says."""
    dataset = rules.data.get("dataset") or {}
    train = ((dataset.get("listing") or {}).get("splits") or {}).get("train") or {}
    if isinstance(train.get("files"), int) and train["files"] > 0:
        return train["files"], "rules: dataset.listing.splits.train.files"
    text = str((dataset.get("split") or {}).get("train", ""))
    counts = [int(m.replace(",", "")) for m in re.findall(r"\d[\d,]*\d|\d", text)]
    counts = [c for c in counts if c >= 100]
    if counts:
        return counts[0], f"rules: dataset.split.train ({text[:60]!r}...)"
    return None, "the rules state no training set size: pass --train-samples"


def is_finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0
