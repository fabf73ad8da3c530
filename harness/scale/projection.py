"""The data-parallel projection: step time, throughput, efficiency and saturation past this machine.

A data-parallel step on N ranks is the per-rank compute (forward, backward, optimizer) plus the
part of the gradient all-reduce that backward does not hide. The all-reduce is a ring
(Patarasuk and Yuan 2009; what NCCL and gloo use for large buffers):

    t_ar(N, S) = 2 (N - 1) * alpha + 2 (N - 1) / N * S / B

with S the gradient bytes, alpha the per-hop latency and B the per-link bandwidth. With an
overlap fraction phi (0 = nothing hidden, 1 = as much as one compute time hidden):

    t_step(N) = t_c(b) + max(0, t_ar(N, S) - phi * t_c(b))

where t_c(b) is the measured one-rank compute time scaled to the local batch b
(``t_c1 * b / b1``: compute grows linearly with the batch, the usual assumption for batches that
fill the device). Throughput = global batch / t_step; efficiency = throughput_N / (N * throughput_1).
The equations and their limits are in docs/scale.md.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = ["Link", "ComputeProfile", "allreduce_seconds", "step_seconds", "project", "saturation_point",
           "fit_link", "DEFAULT_SIZES", "TwoLevelLink", "two_level_allreduce_seconds"]

DEFAULT_SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


@dataclass(frozen=True)
class Link:
    """One ring hop: latency in seconds and bandwidth in bytes/s, with where the figures come from."""

    latency_s: float
    bandwidth_bps: float
    source: str

    def __post_init__(self):
        if not (self.latency_s >= 0 and math.isfinite(self.latency_s)):
            raise ValueError(f"link latency must be a finite number >= 0, got {self.latency_s!r}")
        if not (self.bandwidth_bps > 0 and math.isfinite(self.bandwidth_bps)):
            raise ValueError(f"link bandwidth must be a finite number > 0, got {self.bandwidth_bps!r}")


@dataclass(frozen=True)
class ComputeProfile:
    """The measured one-rank step: compute seconds at ``local_batch`` and the gradient bytes."""

    compute_s: float
    local_batch: int
    gradient_bytes: int
    overlap: float = 0.0   # phi in the module docstring
    fixed_fraction: float = 0.0   # the part of compute_s that does not shrink with the local batch
    # measured one-device step seconds per batch size (trainmark sweep): the shape of compute over the batch
    curve: tuple[tuple[float, float], ...] = ()

    def compute_at(self, local_batch: float) -> float:
        """Compute at ``local_batch``: the measured curve's shape, scaled to ``compute_s`` at ``self.local_batch``;
        without a curve a fixed part per step (optimizer, launches) plus a part linear in the batch."""
        if self.curve:
            return self.compute_s * curve_seconds(self.curve, local_batch) / curve_seconds(self.curve,
                                                                                            self.local_batch)
        f = self.fixed_fraction
        return self.compute_s * (f + (1 - f) * local_batch / self.local_batch)


def curve_seconds(curve: tuple[tuple[float, float], ...], batch: float) -> float:
    """Step seconds at ``batch`` from measured (batch, seconds) points: linear between them, and beyond them
    along the line through the two nearest (one point: through the origin), never below a tenth of the
    smallest measured step."""
    pts = sorted(curve)
    if len(pts) == 1:
        (b0, t0), = pts
        return t0 * batch / b0
    if batch <= pts[0][0]:
        (b0, t0), (b1, t1) = pts[0], pts[1]
    elif batch >= pts[-1][0]:
        (b0, t0), (b1, t1) = pts[-2], pts[-1]
    else:
        (b0, t0), (b1, t1) = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= batch <= b[0])
    t = t0 + (t1 - t0) * (batch - b0) / (b1 - b0)
    return max(t, 0.1 * min(x for _, x in pts))


@dataclass(frozen=True)
class TwoLevelLink:
    """Links inside a node (or NVLink domain) of ``per_node`` accelerators and between nodes (per accelerator)."""

    intra: Link
    inter: Link
    per_node: int


def allreduce_seconds(n: int, nbytes: float, link: Link | TwoLevelLink) -> float:
    """Ring all-reduce time of ``nbytes`` over ``n`` ranks (0 for one rank); two-level for a TwoLevelLink."""
    if isinstance(link, TwoLevelLink):
        return two_level_allreduce_seconds(n, nbytes, link)
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * link.latency_s + 2 * (n - 1) / n * nbytes / link.bandwidth_bps


def two_level_allreduce_seconds(n: int, nbytes: float, links: TwoLevelLink) -> float:
    """Hierarchical all-reduce: reduce-scatter and all-gather inside the node (ring), and each accelerator's
    1/g shard all-reduced across the m nodes over its own NIC, by ring or by tree (2 log2 m hops, the
    same bandwidth term), whichever is faster, as NCCL chooses by size and scale."""
    if n <= 1:
        return 0.0
    g = min(n, links.per_node)
    m = math.ceil(n / g)
    t = allreduce_seconds(g, nbytes, links.intra)
    if m > 1:
        shard = nbytes / g
        ring = allreduce_seconds(m, shard, links.inter)
        tree = 2 * math.ceil(math.log2(m)) * links.inter.latency_s + 2 * shard / links.inter.bandwidth_bps
        t += min(ring, tree)
    return t


def step_seconds(n: int, local_batch: float, profile: ComputeProfile, link: Link) -> tuple[float, float, float]:
    """(step, compute, exposed communication) seconds of one step on ``n`` ranks."""
    compute = profile.compute_at(local_batch)
    comm = allreduce_seconds(n, profile.gradient_bytes, link)
    exposed = max(0.0, comm - profile.overlap * compute)
    return compute + exposed, compute, exposed


def project(profile: ComputeProfile, link: Link, sizes: list[int], *, mode: str = "weak",
            global_batch: int | None = None) -> list[dict]:
    """One row per N: step time split, samples/s, efficiency against N = 1.

    ``mode="weak"``: every rank keeps ``profile.local_batch`` (the global batch grows with N, as
    large MLPerf systems run). ``mode="strong"``: ``global_batch`` is split over N ranks (as
    ``trainmark run`` and ``trainmark scale`` do); sizes that do not divide it are skipped.
    """
    if mode not in ("weak", "strong"):
        raise ValueError(f"mode {mode!r}: use weak or strong")
    if mode == "strong" and not global_batch:
        raise ValueError("strong scaling needs the global batch")
    g1 = profile.local_batch if mode == "weak" else global_batch
    thr1 = g1 / step_seconds(1, g1, profile, link)[0]
    rows = []
    for n in sizes:
        if mode == "strong" and global_batch % n:
            continue
        local = profile.local_batch if mode == "weak" else global_batch / n
        step, compute, exposed = step_seconds(n, local, profile, link)
        thr = local * n / step
        rows.append({"n": n, "local_batch": local, "global_batch": local * n, "step_s": step,
                     "compute_s": compute, "comm_s": allreduce_seconds(n, profile.gradient_bytes, link),
                     "exposed_comm_s": exposed, "samples_per_s": thr, "efficiency": thr / (n * thr1)})
    return rows


def saturation_point(rows: list[dict], min_gain: float) -> int | None:
    """The smallest N after which the next size listed adds less than ``min_gain`` throughput.

    ``rows`` in increasing N with ``n`` and ``samples_per_s``; None while throughput still grows
    by at least ``min_gain`` (e.g. 0.05 = 5 %) at every step of the list.
    """
    ordered = sorted(rows, key=lambda r: r["n"])
    for here, nxt in zip(ordered, ordered[1:]):
        if nxt["samples_per_s"] < (1 + min_gain) * here["samples_per_s"]:
            return here["n"]
    return None


def fit_link(n: int, points: list[tuple[int, float]], source: str) -> Link:
    """Latency and bandwidth from all-reduce timings at ``n`` ranks: least squares of t = A + K * bytes.

    From the ring equation, A = 2 (N - 1) alpha and K = 2 (N - 1) / (N B).
    """
    if n < 2:
        raise ValueError("an all-reduce fit needs at least 2 ranks")
    if len({b for b, _ in points}) < 2:
        raise ValueError("an all-reduce fit needs timings at two message sizes or more")
    xs, ys = [float(b) for b, _ in points], [float(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - k * mx
    if k <= 0:
        raise ValueError("all-reduce time does not grow with the message size: timings too noisy to fit "
                         "(more repeats or larger sizes)")
    return Link(latency_s=max(a, 0.0) / (2 * (n - 1)), bandwidth_bps=2 * (n - 1) / (n * k), source=source)


def link_dict(link: Link) -> dict:
    return asdict(link)
