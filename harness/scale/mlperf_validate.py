"""``trainmark scale validate``: the time-to-train projection checked against the public MLPerf record.

Every pair of results by the same submitter on the same accelerator for the same benchmark at two
sizes (closed division, one round) is a test: the larger is projected from the smaller using only what
the smaller run shows (global batch, minutes, how far it trained to converge), the published system
descriptions (accelerator count, node size, the interconnects they name, turned into link figures by
``LINK_FIGURES``) and MLPerf's reference convergence points, then compared with the larger's actual
minutes. Beside it two baselines: linear scaling (minutes x n_small / n_large) and the flat ring without
convergence (``mlperf_throughput.flat_ring_samples_per_s``: one link for every hop, samples to converge
unchanged, the large run's own batch). Model-parallel LLMs are refused, not projected. docs/scale.md.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from trainmark.format import artifacts, layout
from trainmark.harness.scale import mlperf_throughput as runs_io
from trainmark.harness.scale import projection as scale_model
from trainmark.harness.scale import time_to_train as ttt

# Trainable parameters whose gradients are all-reduced (data-parallel part), from the reference models
GRADIENT_PARAMS = {
    "resnet": 25_557_032, "bert": 335_141_888, "ssd": 37_968_366, "retinanet": 37_968_366,
    "maskrcnn": 44_401_393, "rnnt": 48_964_224, "unet3d": 9_030_400, "stable_diffusion": 865_910_724,
    "gnn": 5_400_000, "rgat": 5_400_000,
}
GRADIENT_BYTES_PER_PARAM = 2    # bf16/fp16 all-reduce, as the NVIDIA reference implementations do
MODEL_PARALLEL_PREFIXES = ("gpt", "llama")
NOT_PROJECTED = ("model-parallel LLM: its step needs tensor, pipeline and context-parallel terms this "
                 "data-parallel model does not have")
HYBRID_PARALLEL = {"dlrm_dcnv2": "hybrid-parallel: its embedding tables are sharded across the accelerators and "
                                 "exchanged all-to-all every step, a term this data-parallel model does not have"}
BUS_EFFICIENCY = 0.8            # NCCL's bus bandwidth reaches about 80 % of a link's rate
INTRA_LATENCY_S, INTER_LATENCY_S = 3e-6, 10e-6
# Per-direction bandwidth of one accelerator's intra-node link, GB/s, by what the description names
LINK_FIGURES = (
    (r"nvlink\s*gen\s*5|5th\s*gen\s*nvlink|b200|gb200", 900.0, "NVLink 5 (1800 GB/s both ways)"),
    (r"nvlink\s*gen\s*4|4th\s*gen\s*nvlink|h100-sxm|h200-sxm", 450.0, "NVLink 4 (900 GB/s both ways)"),
    (r"xgmi|infinity\s*fabric|mi3\d\dx", 448.0, "AMD Infinity Fabric (7 x 128 GB/s both ways)"),
    (r"nvlink", 112.0, "NVLink bridge"),
    # Google's Cloud TPU v5p page: 1,200 GB/s bidirectional ICI per chip; a slice is one ICI torus
    (r"tpu-?v5p", 600.0, "TPU v5p ICI (1200 GB/s both ways per chip)"),
    (r"pcie\s*(gen\s*)?5|pcie\s*5", 64.0, "PCIe 5.0 x16"),
)
DEFAULT_INTRA = (32.0, "PCIe 4.0 x16 (nothing better named)")
DEFAULT_NIC_GBITS = 400.0       # one 400 Gb/s NIC per accelerator, the usual configuration, when none is named
# Accelerators in one domain of the intra link: GB200 NVL72, 72 across 18 trays; a TPU v5p slice, up to 6,144
# chips on one ICI torus (Google's v5p page: the largest single slice)
NVLINK_DOMAIN = {"gb200": 72, "tpu-v5p": 6144}


@dataclass(frozen=True)
class SystemResult:
    """One system's converged runs of one benchmark, scored as MLPerf scores them."""

    round: str
    desc: runs_io.SystemDesc
    benchmark: str
    runs: tuple[runs_io.MLPerfRun, ...]

    @property
    def batch(self) -> int:
        return statistics.mode(r.global_batch for r in self.runs)

    @property
    def minutes(self) -> float:
        return runs_io.olympic_mean([r.minutes for r in self.runs])

    @property
    def to_converge(self) -> float:
        return runs_io.olympic_mean([r.to_converge for r in self.runs])


def intra_link(desc: runs_io.SystemDesc) -> tuple[scale_model.Link, int]:
    """The intra-node (NVLink-domain) link and the domain's size in accelerators."""
    text = f"{desc.interconnect} {desc.accelerator}".lower()
    gbs, name = next(((f, n) for pattern, f, n in LINK_FIGURES if re.search(pattern, text)), DEFAULT_INTRA)
    domain = next((size for key, size in NVLINK_DOMAIN.items() if key in text), desc.per_node)
    return scale_model.Link(INTRA_LATENCY_S, gbs * 1e9 * BUS_EFFICIENCY, f"{name} x {BUS_EFFICIENCY}"), domain


def inter_link(desc: runs_io.SystemDesc) -> scale_model.Link:
    """Each accelerator's share of the node's compute NICs (``host_networking``), else one 400 Gb/s NIC."""
    text = desc.networking
    if "compute:" in text.lower():
        text = re.split(r"(?i)compute:", text, maxsplit=1)[1].split(",")[0]
    m = re.search(r"(\d+)\s*x\s*[^,;+]*?(\d+)\s*Gb/?s", text, flags=re.IGNORECASE)
    if m:
        gbits = int(m[1]) * int(m[2]) / max(1, desc.per_node)
        source = f"{m[0].strip()} per {desc.per_node} accelerators"
    else:
        gbits, source = DEFAULT_NIC_GBITS, f"one {DEFAULT_NIC_GBITS:g} Gb/s NIC per accelerator (assumed)"
    return scale_model.Link(INTER_LATENCY_S, gbits / 8 * 1e9 * BUS_EFFICIENCY, f"{source} x {BUS_EFFICIENCY}")


def two_level(desc: runs_io.SystemDesc) -> scale_model.TwoLevelLink:
    intra, domain = intra_link(desc)
    return scale_model.TwoLevelLink(intra, inter_link(desc), domain)


def refusal(benchmark: str) -> str | None:
    """Why a benchmark is not projected, or None."""
    if benchmark.startswith(MODEL_PARALLEL_PREFIXES):
        return NOT_PROJECTED
    if benchmark in HYBRID_PARALLEL:
        return HYBRID_PARALLEL[benchmark]
    if benchmark not in GRADIENT_PARAMS:
        return f"no gradient size known for {benchmark}"
    return None


def _samples_per_unit(result: SystemResult) -> float | None:
    run = result.runs[0]
    return run.samples / run.to_converge if run.samples and run.to_converge else None


def _why_not(small: SystemResult, conv: ttt.Convergence | None) -> str | None:
    why = refusal(small.benchmark)
    if why is None and conv is None:
        why = f"MLPerf ships no reference convergence points for {small.benchmark}"
    if why is None and conv.at(small.batch) is None:
        why = f"the small run's global batch {small.batch} lies outside the RCPs' {conv.covered}"
    if why is None and _samples_per_unit(small) is None:
        why = "epochs to converge, but no dataset size known to count samples"
    return why


def small_profile(small: SystemResult, overlap: float = 0.0,
                  fixed_fraction: float = 0.0) -> scale_model.ComputeProfile | None:
    """The small run's step split into compute and exposed all-reduce (None: the link alone is slower)."""
    n1 = small.desc.accelerators
    grad = GRADIENT_PARAMS[small.benchmark] * GRADIENT_BYTES_PER_PARAM
    step1 = small.batch / (small.to_converge * _samples_per_unit(small) / (small.minutes * 60))
    comm1 = scale_model.two_level_allreduce_seconds(n1, grad, two_level(small.desc))
    # solve step1 = c + max(0, comm1 - overlap c) for the compute c
    compute1 = step1 if comm1 <= overlap * step1 else (step1 - comm1) / (1 - overlap)
    if compute1 <= 0:
        return None
    return scale_model.ComputeProfile(compute1, small.batch / n1, grad, overlap, fixed_fraction)


def project_pair(small: SystemResult, large: runs_io.SystemDesc, conv: ttt.Convergence | None, *,
                 scaling: str, overlap: float = 0.0, fixed_fraction: float = 0.0) -> dict:
    """Minutes to train on ``large`` from ``small``: {"minutes", "interval", "batch", ...} or {"reason"}."""
    why = _why_not(small, conv)
    if why:
        return {"reason": why}
    n2 = large.accelerators
    local1 = max(1, small.batch // small.desc.accelerators)
    plan = ttt.plan_batch(n2, scaling, local1, small.batch, conv)
    batches = ttt.candidate_batches(n2, local1, small.batch, conv) if scaling == "best" else []
    if not batches and plan["batch"] is None:
        return {"reason": plan["reason"]}
    profile = small_profile(small, overlap, fixed_fraction)
    if profile is None:
        return {"reason": "the modelled all-reduce alone is slower than the small run's step"}
    batches = batches or [plan["batch"]]
    options = [_time_at(small, large, conv, profile, b) for b in batches]
    best = min(options, key=lambda o: o["minutes"])
    best.update(batch_capped=best["batch"] != plan["wanted_batch"], batch_note=plan["note"])
    return best


def _time_at(small: SystemResult, large: runs_io.SystemDesc, conv: ttt.Convergence,
             profile: scale_model.ComputeProfile, batch: int) -> dict:
    n2 = large.accelerators
    ref1, ref2 = conv.at(small.batch), conv.at(batch)
    to_converge = small.to_converge * ref2.mean / ref1.mean
    compute2 = profile.compute_at(batch / n2)
    comm2 = scale_model.two_level_allreduce_seconds(n2, profile.gradient_bytes, two_level(large))
    step2 = compute2 + max(0.0, comm2 - profile.overlap * compute2)
    seconds_per_unit = _samples_per_unit(small) * step2 / batch
    spread = [max(0.0, ref2.mean - ttt.INTERVAL_STDS * ref2.std), ref2.mean + ttt.INTERVAL_STDS * ref2.std]
    return {"minutes": to_converge * seconds_per_unit / 60,
            "interval": [small.to_converge * x / ref1.mean * seconds_per_unit / 60 for x in spread],
            "batch": batch, "to_converge": to_converge, "step_s": step2, "comm_s": comm2,
            "rcp_ratio": ref2.mean / ref1.mean}


def baselines(small: SystemResult, large: SystemResult) -> dict:
    """Linear scaling, and the flat ring without convergence at the large run's own batch."""
    n1, n2 = small.desc.accelerators, large.desc.accelerators
    out = {"linear": {"minutes": small.minutes * n1 / n2}}
    grad, per_unit = GRADIENT_PARAMS.get(small.benchmark), _samples_per_unit(small)
    if grad is None or per_unit is None or refusal(small.benchmark):
        return {**out, "flat_ring": {"minutes": None}}
    intra, domain = intra_link(large.desc)
    link = intra if n2 <= domain else inter_link(large.desc)
    samples = small.to_converge * per_unit
    try:
        rate = runs_io.flat_ring_samples_per_s(n1, small.batch, samples / (small.minutes * 60), n2, large.batch,
                                               link, grad * GRADIENT_BYTES_PER_PARAM)
        out["flat_ring"] = {"minutes": samples / rate / 60}
    except ValueError:
        out["flat_ring"] = {"minutes": None}
    return out


def pair_record(small: SystemResult, large: SystemResult, conv: ttt.Convergence | None, scaling: str,
                **model) -> dict:
    proj = project_pair(small, large.desc, conv, scaling=scaling, **model)
    actual = large.minutes
    record = {"benchmark": small.benchmark, "submitter": small.desc.submitter, "accelerator": small.desc.accelerator,
              "n_small": small.desc.accelerators, "n_large": large.desc.accelerators, "actual_minutes": actual,
              "projected_minutes": proj.get("minutes"),
              "error": proj["minutes"] / actual - 1 if proj.get("minutes") else None,
              "round": small.round, "system_small": small.desc.system, "system_large": large.desc.system,
              "small_minutes": small.minutes, "batch_small": small.batch, "batch_large_actual": large.batch,
              "batch_projected": proj.get("batch"), "batch_capped": proj.get("batch_capped"),
              "unit": small.runs[0].unit, "to_converge_small": small.to_converge,
              "to_converge_projected": proj.get("to_converge"), "to_converge_large_actual": large.to_converge,
              "projected_interval": proj.get("interval"), "reason": proj.get("reason"),
              "unit_check": small.runs[0].unit_check, "baselines": {}}
    for name, b in baselines(small, large).items():
        record["baselines"][name] = {"minutes": b["minutes"],
                                     "error": b["minutes"] / actual - 1 if b["minutes"] else None}
    return record


# ---------------------------------------------------------------- reading rounds

def submitter_dirs(root: Path) -> list[Path]:
    """``root`` itself when it is a submitter folder, else its submitter folders."""
    def is_submitter(d: Path) -> bool:
        return (d / layout.RESULTS_DIR).is_dir() and (d / layout.SYSTEMS_DIR).is_dir()
    if is_submitter(root):
        return [root]
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink() and is_submitter(d))


def round_version(root: Path) -> str | None:
    """The training ruleset of a round folder's name (training_results_v5.0 -> 5.0.0)."""
    for part in reversed(root.resolve().parts):
        m = re.search(r"v(\d+)\.(\d+)", part)
        if m:
            return f"{m[1]}.{m[2]}.0"
    return None


def read_round(root: Path, problems: list[str]) -> list[SystemResult]:
    """Every closed-division system result of a round with at least one converged run."""
    out = []
    for sub in submitter_dirs(root):
        for bench_dir in sorted((sub / layout.RESULTS_DIR).glob("*/*")):
            system, benchmark = bench_dir.parent.name, bench_dir.name
            try:
                desc = runs_io.read_system(sub, system)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                problems.append(f"{sub.name}/{system}: system description: {exc}")
                continue
            if desc.division != "closed":
                continue
            runs = []
            for path in sorted(bench_dir.glob(layout.RESULT_GLOB)):
                try:
                    runs.append(runs_io.read_run(path, benchmark))
                except (OSError, ValueError) as exc:
                    problems.append(str(exc)[:200])
            if runs:
                out.append(SystemResult(root.name, desc, runs[0].benchmark or benchmark, tuple(runs)))
    return out


def pairs(results: list[SystemResult]) -> list[tuple[SystemResult, SystemResult]]:
    """Same round, submitter, accelerator and benchmark; two sizes; smaller first."""
    def key(r):
        return (r.round, r.desc.submitter, r.desc.accelerator, r.benchmark)
    out = []
    for a in results:
        for b in results:
            if key(a) == key(b) and a.desc.accelerators < b.desc.accelerators:
                out.append((a, b))
    return sorted(out, key=lambda p: (p[0].benchmark, p[0].desc.submitter, p[0].desc.accelerators,
                                      p[1].desc.accelerators))


BUCKETS = (("<=8 -> >=64", 8, 64), ("<=8 -> >=512", 8, 512), ("all pairs", math.inf, 0))


def bucket_medians(records: list[dict]) -> list[dict]:
    """Median |error| per size bucket, of the model and of each baseline, over the pairs projected."""
    out = []
    for name, small_max, large_min in BUCKETS:
        chosen = [r for r in records if r["n_small"] <= small_max and r["n_large"] >= large_min
                  and r["error"] is not None]
        row = {"bucket": name, "pairs": len(chosen),
               "refused": sum(1 for r in records if r["n_small"] <= small_max and r["n_large"] >= large_min
                              and r["error"] is None),
               "model": _median_abs([r["error"] for r in chosen]),
               "too_optimistic": sum(1 for r in chosen if r["error"] < 0),
               "within_interval": sum(1 for r in chosen if _within(r["actual_minutes"], r["projected_interval"]))}
        for base in ("linear", "flat_ring"):
            row[base] = _median_abs([r["baselines"][base]["error"] for r in chosen])
        out.append(row)
    return out


def _within(value: float, interval: list[float]) -> bool:
    return interval[0] <= value <= interval[1]


def _median_abs(errors: list) -> float | None:
    values = [abs(e) for e in errors if e is not None]
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class Round:
    folder: str
    rcp_version: str | None
    results: list[SystemResult]


def read_rounds(roots: list[Path], problems: list[str], progress=None) -> list[Round]:
    """Every round's system results, read once (benchmarks/scale_validation_fit.py projects them many times)."""
    rounds = []
    for root in roots:
        rounds.append(Round(str(root), round_version(Path(root)), read_round(Path(root), problems)))
        if progress:
            progress(f"{root}: {len(rounds[-1].results)} system results")
    return rounds


def validate_rounds(roots: list[Path], *, scaling: str = "weak", overlap: float = 0.0, fixed_fraction: float = 0.0,
                    progress=None) -> dict:
    """Records for every pair in ``roots`` and the medians by bucket (``artifacts.SCALE_VALIDATION_FORMAT``)."""
    problems: list[str] = []
    result = validate_read(read_rounds(roots, problems, progress), scaling=scaling, overlap=overlap,
                           fixed_fraction=fixed_fraction)
    return {**result, "unreadable_runs": len(problems), "problems": problems[:50]}


def validate_read(read: list[Round], *, scaling: str, overlap: float, fixed_fraction: float) -> dict:
    """``validate_rounds`` on rounds already read."""
    records, rounds, cache, seen = [], [], {}, set()
    for rnd in read:
        rounds.append({"folder": rnd.folder, "rcp_version": rnd.rcp_version, "system_results": len(rnd.results),
                       "pairs_repeated_from_earlier_rounds": 0})
        for small, large in pairs(rnd.results):
            # a round's repository may carry an earlier round's result folders: one pair counts once
            same = (small.benchmark, small.desc.submitter, small.desc.system, large.desc.system, small.minutes,
                    large.minutes)
            if same in seen:
                rounds[-1]["pairs_repeated_from_earlier_rounds"] += 1
                continue
            seen.add(same)
            key = (small.benchmark, rnd.rcp_version)
            if key not in cache:
                cache[key] = ttt.from_mlperf(small.benchmark, rnd.rcp_version)
            records.append(pair_record(small, large, cache[key], scaling, overlap=overlap,
                                       fixed_fraction=fixed_fraction))
    return {"format": artifacts.SCALE_VALIDATION_FORMAT, "scaling": scaling, "overlap": overlap,
            "fixed_fraction": fixed_fraction, "rounds": rounds,
            "records": records, "buckets": bucket_medians(records),
            "model": "time = samples to converge (small run x RCP(batch_large) / RCP(batch_small)) / samples/s, "
                     "samples/s from the small run's step: compute linear in the local batch plus a two-level "
                     "all-reduce (docs/scale.md)"}


def format_summary(result: dict) -> str:
    lines = [f"{len(result['records'])} pairs ({result['scaling']} scaling), "
             f"{result['unreadable_runs']} runs unreadable or not converged",
             f"{'bucket':<14} {'pairs':>5} {'refused':>7} {'model':>7} {'linear':>7} {'flat ring':>9} "
             f"{'optimistic':>10} {'in interval':>11}"]
    def pct(x):
        return "-" if x is None else f"{x:.0%}"
    for b in result["buckets"]:
        lines.append(f"{b['bucket']:<14} {b['pairs']:>5} {b['refused']:>7} {pct(b['model']):>7} "
                     f"{pct(b['linear']):>7} {pct(b['flat_ring']):>9} {b['too_optimistic']:>10} "
                     f"{b['within_interval']:>11}")
    refused = sorted({(r["benchmark"], r["reason"]) for r in result["records"] if r["reason"]})
    lines += [f"not projected: {b}: {why}" for b, why in refused]
    return "\n".join(lines)
