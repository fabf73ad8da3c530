"""``trainmark scale``: the distributed saturation curve, one torchrun launch per world size.

Each world size runs ``trainmark.harness.scale.worker`` under ``torch.distributed.run``
(torchrun: the launcher PyTorch ships; we add none of our own). The global batch is fixed and
split over the ranks, as ``trainmark run`` splits it (strong scaling), so a world size that does not
divide it is refused before anything is launched. Per world size: samples/s, the step split into
compute and exposed communication, and the scaling efficiency throughput_N / (N x throughput_1);
over all sizes the saturation point (``scale_model.saturation_point``) and a projection to
N = 8 ... 4096 validated against the measured points (``scale_model``; docs/scale.md).
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from trainmark.errors import UserError
from trainmark.files import read_json_report, write_atomic, write_json_atomic
from trainmark.format import artifacts
from trainmark.harness.scale import projection as scale_model
from trainmark.harness.scale import time_to_train as ttt

FORMAT = artifacts.SCALE_FORMAT
WORKER = ["-m", "trainmark.harness.scale.worker"]
# -P and PYTHONSAFEPATH (Python 3.11+): the current folder is never on the import path of the launcher or of the
# ranks it starts (a torch.py or trainmark/ in the folder the user runs from never runs)
SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []
SAFE_ENV = {"PYTHONSAFEPATH": "1"}
# Message sizes for the link fit: 64 KiB .. 4 MiB, large enough that bandwidth shows, small enough for CI.
ALLREDUCE_SIZES = [1 << 16, 1 << 18, 1 << 20, 1 << 22]
POINT_FIELDS = artifacts.SCALE_POINT_FIELDS


@dataclass
class ScaleSettings:
    benchmark: str
    nprocs: list[int]                     # processes per node, one launch each
    global_batch: int
    nnodes: int = 1
    node_rank: int = 0
    rdzv_endpoint: str | None = None      # HOST:PORT of node 0 when nnodes > 1
    device: str = "cpu"
    precision: str = "fp32"
    data: str = "synthetic"
    data_dir: Path | None = None
    steps: int = 5
    warmup_steps: int = 2
    repeats: int = 3
    min_gain: float = 0.05                # saturation: the next size adds less than this fraction
    rules_version: str | None = None
    rules_dir: Path | None = None
    timeout_s: float = 600.0
    link: scale_model.Link | None = None  # from flags; else fitted from the largest launch's all-reduces
    overlap: float | None = None          # None: measured (the largest launch's hidden all-reduce)
    fixed_fraction: float = 0.0           # compute per step that does not shrink with the local batch
    compute_curve: tuple = ()             # (local batch, step seconds) from a trainmark sweep (--sweep)
    inter_link: scale_model.Link | None = None   # between nodes, per accelerator; with node_size: two levels
    node_size: int | None = None
    project_sizes: list[int] = field(default_factory=lambda: list(scale_model.DEFAULT_SIZES))
    scaling: str = "best"                 # weak (each rank keeps its batch), strong, or best (fastest to train)
    convergence: ttt.Convergence | None = None   # epochs or samples to converge per global batch
    samples_per_epoch: int | None = None
    samples_per_epoch_source: str = ""
    max_spread: float = 0.25              # a point whose step time varies more than this is suspect


EFFICIENCY_TOLERANCE = 0.05  # efficiency above 1 + this: a measurement artefact, never super-linear scaling
# The one-rank point's compute per step may exceed the sweep's quiet step at the same batch by this much (the
# same bound as a point's step-time spread): more, and the point every projection starts from was measured
# on a busier machine than the sweep.
QUIET_TOLERANCE = 0.25


def nearest_divisors(n: int, world: int, count: int = 2) -> list[int]:
    """The world sizes that divide ``n``, up to ``count`` below and above ``world``, nearest first."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    near = [d for d in divisors if d < world][-count:] + [d for d in divisors if d > world][:count]
    return sorted(near, key=lambda d: (abs(d - world), d))


def check_world_sizes(global_batch: int, nprocs: list[int], nnodes: int) -> None:
    """Refuse, before any launch, a world size that does not divide the global batch."""
    for nproc in nprocs:
        world = nproc * nnodes
        if global_batch % world:
            near = ", ".join(map(str, nearest_divisors(global_batch, world)))
            raise UserError(f"--nproc {nproc}: world size {world} ({nnodes} node(s) x {nproc}) does not divide the "
                            f"global batch {global_batch}; the nearest that do: {near} "
                            "(or change --batch-size)")


def torchrun_command(s: ScaleSettings, nproc: int, result: Path, entry: list[str]) -> list[str]:
    cmd = [sys.executable, *SAFE_PATH, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    if s.nnodes == 1:
        cmd += ["--standalone", "--nnodes", "1"]
    else:
        cmd += ["--nnodes", str(s.nnodes), "--node-rank", str(s.node_rank), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", s.rdzv_endpoint, "--rdzv-id", f"trainmark-scale-{nproc * s.nnodes}"]
    cmd += [*entry, "--benchmark", s.benchmark, "--result", str(result), "--global-batch", str(s.global_batch),
            "--device", s.device, "--precision", s.precision, "--data", s.data, "--steps", str(s.steps),
            "--warmup-steps", str(s.warmup_steps), "--repeats", str(s.repeats),
            "--allreduce-sizes", ",".join(map(str, ALLREDUCE_SIZES))]
    for flag, value in (("--data-dir", s.data_dir), ("--rules-version", s.rules_version),
                        ("--rules-dir", s.rules_dir)):
        if value is not None:
            cmd += [flag, str(value)]
    return cmd


def failed_rank(stderr: str) -> str | None:
    """The rank torchrun names as the first failure (its 'Root Cause' block), if it names one."""
    tail = stderr.split("Root Cause", 1)[-1]
    m = re.search(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)", tail)
    return f"rank {m[1]} (local rank {m[2]})" if m else None


def worker_error(stderr: str) -> str:
    """The last exception line a rank printed (not torchrun's own ChildFailedError), or the last line. A rank
    killed by a C++ exception (gloo, NCCL) prints ``terminate called ...`` and ``what(): ...`` before torchrun
    reports only its signal: those two lines are the error then."""
    lines = [re.sub(r"^\[rank\d+\]:\s*", "", ln.strip()) for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("=", "-"))]
    aborts = [i for i, ln in enumerate(lines) if ln.startswith("terminate called")]
    if aborts:
        i = aborts[-1]
        what = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("what()") else ""
        return f"{lines[i]} {what}".strip()
    errors = [ln for ln in lines if (re.match(r"^[\w.]*(Error|Exception|Interrupt)\b", ln) or ": error: " in ln)
              and "ChildFailedError" not in ln]
    return (errors or lines or ["(no output)"])[-1]


def measure_world(s: ScaleSettings, nproc: int, entry: list[str], workdir: Path) -> dict:
    """One torchrun launch; a failure is a point with status 'failed' and the rank that died."""
    world = nproc * s.nnodes
    result = workdir / artifacts.scale_point_file(world)
    point = dict.fromkeys(POINT_FIELDS)
    point.update(world_size=world, nnodes=s.nnodes, nproc_per_node=nproc)
    try:
        proc = subprocess.run(torchrun_command(s, nproc, result, entry), capture_output=True, text=True,
                              timeout=s.timeout_s, env={**os.environ, "PYTHONUNBUFFERED": "1", **SAFE_ENV})
    except subprocess.TimeoutExpired:
        point.update(status="failed", error=f"world size {world}: no result within {s.timeout_s:g} s")
        return point
    if proc.returncode != 0:
        who = failed_rank(proc.stderr)
        point.update(status="failed", error=f"world size {world}: torchrun exited {proc.returncode}"
                     + (f"; {who} failed first" if who else "") + f": {worker_error(proc.stderr)[:300]}")
        return point
    if not result.exists():  # another node held global rank 0 and wrote the figures there
        point.update(status="elsewhere", error="global rank 0 ran on another node, which holds the figures")
        return point
    data = json.loads(result.read_text(encoding="utf-8"))
    point.update({k: data.get(k) for k in artifacts.SCALE_POINT_MEASURED}, status="ok")
    point["_raw"] = data
    return point


def flag_suspects(ok: list[dict], s: ScaleSettings) -> None:
    """Mark points no projection should rest on: efficiency above 1, steps that vary too much, or a single
    rank slower than the machine's quiet rate (the ``--sweep`` curve, measured alone, at the same batch)."""
    for p in ok:
        why = []
        if p.get("efficiency") is not None and p["efficiency"] > 1 + EFFICIENCY_TOLERANCE:
            why.append(f"efficiency {p['efficiency']:.2f} > 1: more than linear scaling is a measurement artefact "
                       "(the one-rank point was slowed by other load, or ranks share cores)")
        if p.get("step_spread") is not None and p["step_spread"] > s.max_spread:
            why.append(f"step time spread {p['step_spread']:.0%} > {s.max_spread:.0%} (slowest / fastest repeat "
                       "or rank): the machine was not quiet")
        slower = _slower_than_quiet(p, s)
        if slower:
            why.append(slower)
        p["suspect"] = "; ".join(why) or None


def _slower_than_quiet(p: dict, s: ScaleSettings) -> str | None:
    """Why the one-rank point's compute is slower than the sweep measured at its batch, or None."""
    compute = p.get("compute_s") or p.get("step_s")
    if p.get("world_size") != 1 or not s.compute_curve or not isinstance(compute, (int, float)) or compute <= 0:
        return None
    quiet = scale_model.curve_seconds(tuple(map(tuple, s.compute_curve)), s.global_batch)
    if compute <= quiet * (1 + QUIET_TOLERANCE):
        return None
    return (f"one rank computed a step in {compute * 1000:.4g} ms, {compute / quiet:.2f}x the sweep's quiet "
            f"{quiet * 1000:.4g} ms at batch {s.global_batch} (at most {1 + QUIET_TOLERANCE:g}x): the machine was "
            "busier than when swept")


def analyse(points: list[dict], s: ScaleSettings) -> dict:
    """Efficiency against one rank, suspects, the saturation point, the link, the projection and its error."""
    ok = sorted((p for p in points if p["status"] == "ok"), key=lambda p: p["world_size"])
    one = next((p for p in ok if p["world_size"] == 1), None)
    for p in ok:
        p["efficiency"] = p["samples_per_s"] / (p["world_size"] * one["samples_per_s"]) if one else None
    flag_suspects(ok, s)
    saturation = scale_model.saturation_point(
        [{"n": p["world_size"], "samples_per_s": p["samples_per_s"]} for p in ok], s.min_gain)
    out = {"saturation_world_size": saturation, "saturation_rule": (
        f"the smallest world size after which the next one measured adds less than {s.min_gain:.0%} throughput; "
        "null: still growing by at least that much at the largest size measured"),
        "suspect_points": [p["world_size"] for p in ok if p.get("suspect")]}
    link, why = _link(ok, s)
    if link is not None and s.inter_link is not None:
        link = scale_model.TwoLevelLink(link, s.inter_link, s.node_size)
    out["link"] = asdict(link) if link else None
    out["projection"] = None
    if link is None or one is None:
        out["projection_reason"] = why or "no one-rank point was measured: the projection starts from it"
        return out
    overlap, out["overlap_source"] = measured_overlap(ok) if s.overlap is None else (s.overlap, "--overlap")
    profile = scale_model.ComputeProfile(one["compute_s"], one["global_batch"], one["_raw"]["gradient_bytes"],
                                         overlap, s.fixed_fraction, tuple(map(tuple, s.compute_curve)))
    out["projection"] = _projection(ok, one, profile, link, s)
    return out


def measured_overlap(ok: list[dict]) -> tuple[float, str]:
    """The overlap the largest launch showed: the all-reduce time backward hid, over its compute time."""
    multi = [p for p in ok if p["world_size"] > 1 and p.get("compute_s") and p.get("comm_s") is not None]
    if not multi:
        return 0.0, "no launch of 2 ranks or more: nothing hidden assumed"
    p = multi[-1]
    hidden = max(0.0, p["comm_s"] - (p["exposed_comm_s"] or 0.0))
    return min(1.0, hidden / p["compute_s"]), (f"measured at world size {p['world_size']}: (all-reduce "
                                              f"{p['comm_s']:.3g} s - exposed {p['exposed_comm_s']:.3g} s) / "
                                              f"compute {p['compute_s']:.3g} s")


def _link(ok: list[dict], s: ScaleSettings) -> tuple[scale_model.Link | None, str | None]:
    """The link given, else fitted from the largest launch's all-reduces; (None, why) when neither."""
    if s.link is not None:
        return s.link, None
    biggest = next((p for p in reversed(ok) if p["_raw"].get("allreduce")), None)
    if biggest is None:
        return None, ("no world size of 2 or more was measured, so no all-reduce: pass --link-from, or "
                      "--link-bandwidth-gbs and --link-latency-us")
    try:
        return scale_model.fit_link(biggest["world_size"], [(r["bytes"], r["seconds"])
                                                            for r in biggest["_raw"]["allreduce"]],
                                    f"fitted from all-reduce timings at world size {biggest['world_size']} "
                                    f"(sizes {ALLREDUCE_SIZES[0]}..{ALLREDUCE_SIZES[-1]} bytes)"), None
    except ValueError as exc:
        return None, str(exc)


def _validation(ok: list[dict], profile: scale_model.ComputeProfile, link: scale_model.Link,
                s: ScaleSettings) -> list[dict]:
    """The model against every measured size (strong scaling, as measured)."""
    validation = []
    for p in ok:
        pred = scale_model.project(profile, link, [p["world_size"]], mode="strong", global_batch=s.global_batch)
        if not pred:
            continue
        p["predicted_samples_per_s"] = pred[0]["samples_per_s"]
        p["prediction_error"] = pred[0]["samples_per_s"] / p["samples_per_s"] - 1
        # the communication model alone: this size's measured compute plus the modelled exposed all-reduce
        t_ar = scale_model.allreduce_seconds(p["world_size"], profile.gradient_bytes, link)
        comm_only = p["global_batch"] / (p["compute_s"] + max(0.0, t_ar - profile.overlap * p["compute_s"]))
        validation.append({"world_size": p["world_size"], "measured": p["samples_per_s"],
                           "predicted": p["predicted_samples_per_s"], "error": p["prediction_error"],
                           "predicted_from_measured_compute": comm_only,
                           "error_from_measured_compute": comm_only / p["samples_per_s"] - 1,
                           "allreduce_measured_s": p["comm_s"], "allreduce_model_s": t_ar,
                           "suspect": p.get("suspect")})
    return validation


def _projection(ok: list[dict], one: dict, profile: scale_model.ComputeProfile, link: scale_model.Link,
                s: ScaleSettings) -> dict:
    """Throughput rows and time-to-train rows at ``project_sizes``, under the chosen scaling."""
    if s.scaling != "strong":
        mode = (f"{s.scaling} scaling; samples/s at weak scaling: every rank keeps the local batch "
                f"{one['global_batch']} of the one-rank point")
        rows = scale_model.project(profile, link, s.project_sizes, mode="weak")
    else:
        mode = f"strong scaling: the global batch {s.global_batch} split over the ranks"
        rows = scale_model.project(profile, link, s.project_sizes, mode="strong", global_batch=s.global_batch)
    out = {"model": "t_step = t_c(b) + max(0, t_ar - overlap * t_c(b)); t_ar = 2(N-1) alpha + 2(N-1)/N S/B "
                    "(docs/scale.md)",
           "scaling": s.scaling, "mode": mode, "compute_s_one_rank": one["compute_s"],
           "gradient_bytes": profile.gradient_bytes, "overlap": profile.overlap,
           "compute_model": (f"the shape of a trainmark sweep's step times at local batches "
                             f"{[b for b, _ in profile.curve]}, scaled to the one-rank point" if profile.curve else
                             f"linear in the local batch with a fixed part of {s.fixed_fraction:g}"),
           "validation": _validation(ok, profile, link, s), "rows": rows,
           "saturation_world_size": scale_model.saturation_point(rows, s.min_gain),
           "suspect": one.get("suspect") and f"the one-rank point it starts from is suspect: {one['suspect']}"}
    out.update(_time_to_train(one, profile, link, s))
    return out


def _time_to_train(one: dict, profile: scale_model.ComputeProfile, link: scale_model.Link,
                   s: ScaleSettings) -> dict:
    conv = s.convergence
    if conv is None:
        return {"time_to_train": None, "time_to_train_reason": (
            "no convergence points for this benchmark (rules convergence.points, or --rcp BENCHMARK for "
            "MLPerf's reference convergence points): samples/s only")}
    rows = ttt.project_time_to_train(profile, link, s.project_sizes, mode=s.scaling, global_batch=s.global_batch,
                                     conv=conv, samples_per_epoch=s.samples_per_epoch,
                                     throughput_spread=one.get("step_spread") or 0.0)
    return {"time_to_train": rows, "convergence": {
        "source": conv.source, "unit": conv.unit, "covered_global_batches": list(conv.covered),
        "points": [{"global_batch": p.batch_size, "mean": p.mean, "std": p.std, "n": p.n} for p in conv.points],
        "samples_per_epoch": s.samples_per_epoch, "samples_per_epoch_source": s.samples_per_epoch_source,
        "interval": f"convergence mean -/+ {ttt.INTERVAL_STDS:g} std of the reference runs, throughput -/+ "
                    "the one-rank point's step-time spread"}}


def run_scale(s: ScaleSettings, entry: list[str] | None = None, progress=None) -> dict:
    """Launch every world size in turn; returns the result (schema ``FORMAT``)."""
    check_world_sizes(s.global_batch, s.nprocs, s.nnodes)
    if s.nnodes > 1 and not s.rdzv_endpoint:
        raise UserError("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (node 0's address, the same on every node)")
    points = []
    with tempfile.TemporaryDirectory(prefix="trainmark-scale-") as tmp:
        for nproc in sorted(set(s.nprocs)):
            point = measure_world(s, nproc, entry or WORKER, Path(tmp))
            points.append(point)
            if progress:
                progress(point)
    analysis = analyse(points, s)
    raw = next((p["_raw"] for p in points if p.get("_raw")), {})
    for p in points:
        p.pop("_raw", None)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(s).items()
                if k not in ("link", "convergence", "inter_link")}
    return {"format": FORMAT, "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "benchmark": s.benchmark, "settings": settings,
            "scaling": "measured: strong (the global batch is split over the ranks); projected: "
                       + s.scaling,
            "parameter_count": raw.get("parameter_count"), "gradient_bytes": raw.get("gradient_bytes"),
            "cpu_count": os.cpu_count(), "points": points, **analysis}


# ---------------------------------------------------------------- outputs

def write_csv(result: dict, path: Path) -> None:
    def write(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=POINT_FIELDS, lineterminator="\n", extrasaction="ignore")
            w.writeheader()
            for p in result["points"]:
                w.writerow({k: ("" if p.get(k) is None else p[k]) for k in POINT_FIELDS})
    write_atomic(path, write)


def plot(result: dict, path: Path) -> str | None:
    """Measured samples/s against world size, the ideal line, and the projection when there is one."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    ok = [p for p in result["points"] if p["status"] == "ok"]
    if not ok:
        return None
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    ns = [p["world_size"] for p in ok]
    ax.plot(ns, [p["samples_per_s"] for p in ok], marker="o", label="measured")
    one = next((p for p in ok if p["world_size"] == 1), None)
    if one:
        ax.plot(ns, [n * one["samples_per_s"] for n in ns], ls="--", color="grey", label="linear")
    if any(p.get("predicted_samples_per_s") for p in ok):
        ax.plot(ns, [p["predicted_samples_per_s"] for p in ok], marker="x", ls=":", label="model")
    if result.get("saturation_world_size"):
        ax.axvline(result["saturation_world_size"], color="red", alpha=0.4, label="saturation")
    ax.set_xlabel("world size (ranks)")
    ax.set_ylabel("samples / s")
    ax.set_title(f"{result['benchmark']}: measured")
    ax.legend()
    ax.grid(True, alpha=0.3)
    proj = result.get("projection")
    if proj:
        rows = proj["rows"]
        ax2.plot([r["n"] for r in rows], [r["efficiency"] for r in rows], marker="o")
        ax2.set_xscale("log", base=2)
        ax2.set_ylim(0, 1.05)
        ax2.set_xlabel("accelerators (projected, weak scaling)")
        ax2.set_ylabel("scaling efficiency")
        ax2.set_title("projection (docs/scale.md)")
        ax2.grid(True, alpha=0.3)
    else:
        ax2.text(0.5, 0.5, "no projection:\n" + (result.get("projection_reason") or ""), ha="center",
                 va="center", wrap=True, fontsize=8)
        ax2.set_axis_off()
    fig.tight_layout()
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return str(path)


def write_outputs(result: dict, out_dir: Path, plots: bool = True) -> dict:
    """scale.json, scale.csv and scale.png in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": str(out_dir / artifacts.SCALE_CSV)}
    write_csv(result, out_dir / artifacts.SCALE_CSV)
    if plots:
        paths["plot"] = result["plot"] = plot(result, out_dir / artifacts.SCALE_PLOT)
    write_json_atomic(out_dir / artifacts.SCALE_JSON, _finite(result))
    paths["json"] = str(out_dir / artifacts.SCALE_JSON)
    return paths


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def format_summary(result: dict) -> str:
    def f(x, spec):
        return "-" if x is None else format(x, spec)
    lines = [f"{'ranks':>5} {'status':<8} {'samples/s':>10} {'step ms':>8} {'compute':>8} {'exposed':>8} "
             f"{'allred.':>8} {'eff.':>5} {'model':>10} {'err':>6}"]
    for p in result["points"]:
        ms = (lambda v: None if v is None else 1000 * v)
        lines.append(f"{p['world_size']:>5} {p['status']:<8} {f(p['samples_per_s'], '.4g'):>10} "
                     f"{f(ms(p['step_s']), '.3g'):>8} {f(ms(p['compute_s']), '.3g'):>8} "
                     f"{f(ms(p['exposed_comm_s']), '.3g'):>8} {f(ms(p['comm_s']), '.3g'):>8} "
                     f"{f(p['efficiency'], '.2f'):>5} {f(p['predicted_samples_per_s'], '.4g'):>10} "
                     f"{f(p['prediction_error'], '+.0%'):>6}")
        if p["error"]:
            lines.append(f"      {p['error']}")
        if p.get("suspect"):
            lines.append(f"      SUSPECT: {p['suspect']}")
    lines.append(f"saturation: {result['saturation_world_size'] or 'not reached'} ({result['saturation_rule']})")
    proj = result.get("projection")
    if proj:
        lines.append(_link_line(result["link"]))
        lines.append(f"overlap: {proj['overlap']:.2g} ({result.get('overlap_source')}); compute: "
                     f"{proj['compute_model']}")
        lines.append("validation (model / measured - 1): " + ", ".join(
            f"N={v['world_size']} {v['error']:+.0%} (with measured compute {v['error_from_measured_compute']:+.0%}; "
            f"all-reduce {1000 * v['allreduce_model_s']:.3g} vs {1000 * v['allreduce_measured_s']:.3g} ms)"
            for v in proj["validation"]))
        lines.append(f"projection ({proj['mode']}): "
                     + ", ".join(f"N={r['n']} eff {r['efficiency']:.2f}" for r in proj["rows"]))
        if proj.get("suspect"):
            lines.append(f"SUSPECT projection: {proj['suspect']}")
        lines += format_time_to_train(proj)
    else:
        lines.append(f"projection: none ({result.get('projection_reason')})")
    return "\n".join(lines)


def _link_line(link: dict) -> str:
    def one(x):
        return f"{x['bandwidth_bps'] / 1e9:.3g} GB/s, {x['latency_s'] * 1e6:.3g} us ({x['source']})"
    if "intra" in link:
        return (f"link: inside a node of {link['per_node']}: {one(link['intra'])}; between nodes: "
                f"{one(link['inter'])}")
    return f"link: {one(link)}"


def format_time_to_train(proj: dict) -> list[str]:
    """The time-to-train table: global batch (capped?), to converge, samples/s, minutes and interval."""
    rows = proj.get("time_to_train")
    if rows is None:
        return [f"time to train: none ({proj.get('time_to_train_reason')})"]
    conv = proj["convergence"]
    lines = [f"time to train ({proj['scaling']} scaling; convergence: {conv['source']}, global batches "
             f"{conv['covered_global_batches'][0]}..{conv['covered_global_batches'][1]} covered):",
             f"{'N':>6} {'batch':>7} {'to converge':>14} {'samples/s':>10} {'minutes':>9} {'interval':>19}"]
    for r in rows:
        if r["status"] != "projected":
            lines.append(f"{r['n']:>6} {'-':>7} no projection: {r['reason']}")
            continue
        c = r["convergence"]
        lo, hi = r["minutes_interval"]
        lines.append(f"{r['n']:>6} {r['global_batch']:>7} {c['to_converge']:>8.4g} {c['unit'][:6]:<5} "
                     f"{r['samples_per_s']:>10.4g} {r['minutes']:>9.3g} {f'{lo:.3g} .. {hi:.3g}':>19}"
                     + _batch_remark(r, proj["scaling"], conv["covered_global_batches"][1]))
    return lines


def _batch_remark(row: dict, scaling: str, largest_covered: int) -> str:
    if not row["batch_capped"]:
        return ""
    if row["global_batch"] > row["wanted_global_batch"]:
        return f"  (batch raised from {row['wanted_global_batch']} to the smallest covered)"
    if scaling == "best" and row["global_batch"] < largest_covered // row["n"] * row["n"]:
        return f"  (fastest to train; weak scaling: {row['wanted_global_batch']})"
    return f"  (batch capped from {row['wanted_global_batch']} to the largest covered)"


# ---------------------------------------------------------------- trainmark ops --op allreduce

ALLREDUCE_FORMAT = artifacts.ALLREDUCE_FORMAT
REPORT_CAP = 1 << 20  # an all-reduce report is a few KB


def measure_allreduce(nproc: int, device: str = "cpu", sizes: list[int] | None = None, steps: int = 5,
                      repeats: int = 3, timeout_s: float = 600.0, entry: list[str] | None = None) -> dict:
    """All-reduce time per message size on ``nproc`` ranks of this node, and the ring link fitted to it."""
    if nproc < 2:
        raise UserError(f"--nproc {nproc}: an all-reduce needs at least 2 ranks")
    sizes = sizes or ALLREDUCE_SIZES
    with tempfile.TemporaryDirectory(prefix="trainmark-allreduce-") as tmp:
        out = Path(tmp) / artifacts.ALLREDUCE_FILE
        cmd = [sys.executable, *SAFE_PATH, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
               "--standalone", "--nnodes", "1", *(entry or WORKER), "--only-allreduce", "--result", str(out),
               "--device", device, "--steps", str(steps), "--repeats", str(repeats),
               "--allreduce-sizes", ",".join(map(str, sizes))]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env={**os.environ, **SAFE_ENV})
        if proc.returncode != 0 or not out.exists():
            who = failed_rank(proc.stderr)
            raise UserError(f"all-reduce measurement on {nproc} ranks failed (torchrun exit {proc.returncode}"
                            + (f", {who} failed first" if who else "") + f"): {proc.stderr.strip()[-300:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    rows = data["allreduce"]
    link = scale_model.fit_link(nproc, [(r["bytes"], r["seconds"]) for r in rows],
                                f"trainmark ops --op allreduce: {nproc} ranks, {data.get('backend')}, {device}")
    return {"format": ALLREDUCE_FORMAT,
            "created_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "world_size": nproc, "backend": data.get("backend"), "device": device, "steps": steps,
            "repeats": repeats, "rows": rows, "link": asdict(link),
            "model": "t = 2(N-1) alpha + 2(N-1)/N bytes/B, least squares over the sizes (docs/scale.md)"}


def read_link(path: Path) -> scale_model.Link:
    """The link of a ``trainmark ops --op allreduce --json`` report (bounded read, checked fields)."""
    report, _ = read_json_report(path, "--link-from", REPORT_CAP)
    if (not isinstance(report, dict) or report.get("format") != ALLREDUCE_FORMAT
            or not isinstance(report.get("link"), dict)):
        raise UserError(f"--link-from {path}: not a {ALLREDUCE_FORMAT} report (write one with "
                        "`trainmark ops --op allreduce --json FILE`)")
    link = report["link"]
    try:
        return scale_model.Link(float(link["latency_s"]), float(link["bandwidth_bps"]), f"{path}: {link.get('source')}")
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"--link-from {path}: field 'link': {exc}") from None


def read_sweep_curve(path: Path, precision: str) -> tuple[tuple[float, float], ...]:
    """(batch size, step seconds) of a ``trainmark sweep --json`` report's ok points at ``precision``."""
    report, _ = read_json_report(path, "--sweep", REPORT_CAP * 16)
    if not isinstance(report, dict) or report.get("format") != artifacts.SWEEP_FORMAT \
            or not isinstance(report.get("points"), list):
        raise UserError(f"--sweep {path}: not a {artifacts.SWEEP_FORMAT} report (write one with `trainmark sweep`)")
    curve = {}
    for p in report["points"]:
        if not isinstance(p, dict) or p.get("status") != "ok" or p.get("precision") != precision:
            continue
        batch, step_ms = p.get("batch_size"), p.get("step_ms")
        if isinstance(batch, int) and batch > 0 and isinstance(step_ms, (int, float)) and 0 < step_ms < math.inf:
            curve[batch] = step_ms / 1000
    if not curve:
        raise UserError(f"--sweep {path}: no measured point at precision {precision}")
    return tuple(sorted(curve.items()))


def format_allreduce(report: dict) -> str:
    lines = [f"all-reduce on {report['world_size']} ranks ({report['backend']}, {report['device']})",
             f"{'bytes':>10} {'ms':>9} {'GB/s (bus)':>11}"]
    n = report["world_size"]
    for r in report["rows"]:
        bus = 2 * (n - 1) / n * r["bytes"] / r["seconds"] / 1e9
        lines.append(f"{r['bytes']:>10} {1000 * r['seconds']:>9.3f} {bus:>11.3g}")
    link = report["link"]
    lines.append(f"ring link: {link['bandwidth_bps'] / 1e9:.3g} GB/s, latency {link['latency_s'] * 1e6:.3g} us")
    return "\n".join(lines)
