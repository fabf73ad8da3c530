"""Does `trainmark ops` measure the hardware, not its own overhead?

Prints, for the CPU matmul shapes of `trainmark ops` (fp32 and bf16, forward), our reported
TFLOP/s beside a bare ``torch.matmul`` loop and a bare NumPy ``a @ b`` loop (fp32 only) on the
same shapes, and checks that ours is within ``--tolerance`` (5 %) of the best of them.

"Ours" is ``trainmark.harness.throughput.ops.run_ops`` (what ``trainmark ops`` calls) on one shape: the best
row it reports (its torch kernel, or on fp32 its NumPy reference row). The contenders are
interleaved finely, shape by shape in rotating order over ``--rounds`` rounds, so a busy moment
on a shared machine falls on all of them alike; each keeps its best round. Between NumPy and
torch work the script sleeps 0.3 s: OpenBLAS's and OpenMP's idle threads spin for a while and
would steal the 2 cores from the next contender. The environment (OPENBLAS_CORETYPE included)
is used as it is.

    python benchmarks/ops_ceiling.py            # about a minute on 2 idle cores
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

CALIBRATING = Path("/tmp/trainmark-calibrating")   # the lead's "timing in progress" flag
DEFAULT_SHAPES = ["square.2048", "transformer.attn_qkv", "transformer.ffn1", "transformer.ffn2", "gnmt.lstm_gates"]
SETTLE_S = 0.3


def bare(kind: str, dims: dict, dtype: str, repeats: int, target_s: float, statistic: str) -> float:
    """The plainest loop, ``torch.matmul(a, b)`` or ``a @ b``: TFLOP/s at the median (or fastest) of \
``repeats`` loops."""
    import numpy as np
    import torch

    m, n, k = dims["m"], dims["n"], dims["k"]
    if kind == "torch":
        td = torch.float32 if dtype == "fp32" else torch.bfloat16
        a, b = torch.randn(m, k, dtype=td), torch.randn(k, n, dtype=td)
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        fn = lambda: a @ b  # noqa: E731
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    inner = max(1, round(target_s / max(time.perf_counter() - t0, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return 2 * m * n * k / (statistics.median(samples) if statistic == "median" else min(samples)) / 1e12


def ours(shape, dtype: str, repeats: int, statistic: str) -> float:
    """The best TFLOP/s `trainmark ops` reports for this shape and dtype (its default CPU settings)."""
    from trainmark.harness.throughput import ops

    report = ops.run_ops("cpu", [dtype], ops=["matmul"], passes=["fwd"], shapes=[shape],
                         numpy_backend=dtype == "fp32", repeats=repeats, peak=None)
    return max(row["tflops" if statistic == "median" else "tflops_best"] for row in report["results"])


def wait_for_quiet_machine() -> None:
    while CALIBRATING.exists():
        print(f"{CALIBRATING} exists (timing in progress): waiting...", flush=True)
        time.sleep(10)


def blas_info() -> str:
    import ctypes

    import numpy as np
    import torch

    core = "?"
    libs = Path(np.__file__).parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("*openblas*")) if libs.is_dir() else []:
        try:
            dll = ctypes.CDLL(str(lib))
            for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
                if hasattr(dll, name):
                    fn = getattr(dll, name)
                    fn.restype = ctypes.c_char_p
                    core = fn().decode()
                    break
        except OSError:
            pass
    torch_blas = "MKL" if torch.backends.mkl.is_available() else "other"
    return (f"torch {torch.__version__} ({torch_blas} fp32 GEMM, oneDNN bf16), {torch.get_num_threads()} threads; "
            f"numpy {np.__version__} (OpenBLAS core {core}); OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help="`trainmark ops` CPU matmul shape names")
    ap.add_argument("--repeats", type=int, default=5, help="timed loops per figure (as `trainmark ops`)")
    ap.add_argument("--target-s", type=float, default=0.05, help="seconds per timed loop (as `trainmark ops` on CPU)")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--statistic", choices=["median", "best"], default="median",
                    help="median: the figure `trainmark ops` headlines; best: the fastest timed loop of each "
                         "figure, for a shared machine whose neighbours slow some loops down")
    args = ap.parse_args()

    from trainmark.harness.throughput import ops

    by_name = {s.name: s for s in ops.default_shapes("cpu") if s.op == "matmul"}
    names = [n.strip() for n in args.shapes.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        print(f"unknown shapes {unknown}; known: {sorted(by_name)}", file=sys.stderr)
        return 2
    wait_for_quiet_machine()
    print(blas_info(), flush=True)
    best: dict[tuple[str, str, str], float] = {}
    started = time.perf_counter()
    load = ops.OtherLoad()
    for r in range(args.rounds):
        for name in names:
            shape = by_name[name]
            for dtype in ("fp32", "bf16"):
                kinds = ["ours", "torch", "numpy"] if dtype == "fp32" else ["ours", "torch"]
                kinds = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
                for kind in kinds:
                    time.sleep(SETTLE_S)
                    value = (ours(shape, dtype, args.repeats, args.statistic) if kind == "ours"
                             else bare(kind, shape.dims, dtype, args.repeats, args.target_s, args.statistic))
                    key = (name, dtype, kind)
                    best[key] = max(best.get(key, 0.0), value)
        print(f"round {r + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s)", flush=True)

    print()
    print(f"{'shape':<22} {'dtype':<5} {'ours':>8} {'torch':>8} {'numpy':>8}  {'ours/best':>9}  "
          f"(GFLOP/s, {args.statistic} of each figure's timed loops, best of {args.rounds} rounds)")
    failures = []
    fmt = lambda v: "       -" if v is None else f"{1000 * v:8.1f}"  # noqa: E731
    for dtype in ("fp32", "bf16"):
        for name in names:
            o, t, n = (best.get((name, dtype, k)) for k in ("ours", "torch", "numpy"))
            top = max(v for v in (t, n) if v is not None)
            ratio = o / top
            ok = ratio >= 1 - args.tolerance
            failures += [] if ok else [f"{name} {dtype}"]
            print(f"{name:<22} {dtype:<5} {fmt(o)} {fmt(t)} {fmt(n)}  {ratio:9.3f}  {'ok' if ok else 'BELOW'}")
    for dtype in ("fp32", "bf16"):
        o = max(v for (_, d, k), v in best.items() if d == dtype and k == "ours")
        other = max(v for (_, d, k), v in best.items() if d == dtype and k != "ours")
        print(f"{'ceiling':<22} {dtype:<5} ours {1000 * o:.1f}, best bare loop {1000 * other:.1f} GFLOP/s: "
              f"ratio {o / other:.3f}")
    busy = load.percent()
    print(f"other processes used {busy} % of the CPUs during the run"
          + (": a busy neighbour makes per-shape ratios noisy; rerun on an idle machine" if busy and busy > 10 else ""))
    if failures:
        print(f"FAIL: ours below {100 * (1 - args.tolerance):.0f} % of the best bare loop on {', '.join(failures)}")
        return 1
    print(f"PASS: ours within {100 * args.tolerance:.0f} % of the best bare loop on every shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
