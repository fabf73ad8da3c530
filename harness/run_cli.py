"""``trainmark run``, ``trainmark list`` and ``trainmark calibrate``."""
from __future__ import annotations

import json
import signal
import tempfile
from pathlib import Path
from statistics import mean, pstdev

from rich.console import Console
from rich.table import Table

from trainmark.errors import UserError
from trainmark.harness.run import RunOptions, RunSummary, run_benchmark
from trainmark.rules import LATEST_VERSION


def _parse_hparam(text: str) -> tuple[str, object]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise UserError(f"--hparam {text!r}: expected KEY=VALUE, e.g. opt_base_learning_rate=0.4")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def _run_args(p) -> None:
    p.add_argument("benchmark", help="benchmark name (`trainmark list`)")
    p.add_argument("--trials", type=int, help="number of trials (default: the rules')")
    p.add_argument("--division", choices=["closed", "open"], default="closed")
    p.add_argument("--submitter", default="anonymous", help="organisation name ([A-Za-z0-9._-])")
    p.add_argument("--system", type=Path, dest="system_file", help="system description JSON merged over detection")
    p.add_argument("--system-name", help="system folder name (default: derived from the hardware)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:INDEX")
    p.add_argument("--precision", choices=["fp32", "amp"], default="fp32")
    p.add_argument("--batch-size", type=int, help="global batch size")
    p.add_argument("--seed", type=int, help="base seed; trial k uses seed + k - 1 (default: random, logged)")
    p.add_argument("--data-dir", type=Path, help="dataset folder (default: the rules' default location)")
    p.add_argument("--hparam", action="append", default=[], metavar="KEY=VALUE",
                   help="override a hyperparameter (closed division: within the rules' limits)")
    p.add_argument("--model", help="open division: MODULE:CALLABLE returning your nn.Module")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary table")
    p.add_argument("--rules-version", default=LATEST_VERSION)
    p.add_argument("--rules-dir", type=Path, help="rule files folder (default: the shipped rules)")
    p.add_argument("--energy-estimate-watts", type=float,
                   help="when no energy counter exists, report an estimate of W x time (labelled 'estimated')")


def register(sub) -> None:
    p = sub.add_parser("run", help="train a benchmark to its target over repeated trials")
    _run_args(p)
    p.add_argument("--out", type=Path, default=Path("submission"), help="submission root (default: %(default)s)")
    p.add_argument("--resume", action="store_true", help="continue after the last finished trial")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="benchmarks with their dataset, metric and target")
    p.add_argument("--rules-version", default=LATEST_VERSION)
    p.add_argument("--rules-dir", type=Path)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("calibrate", help="reference trials to a scratch folder; prints epochs-to-target")
    _run_args(p)
    p.set_defaults(func=cmd_calibrate, trials=None)


def options(args, out: Path, resume: bool = False) -> RunOptions:
    return RunOptions(
        benchmark=args.benchmark, out=out, trials=args.trials, division=args.division,
        submitter=args.submitter, system_file=args.system_file, system_name=args.system_name,
        device=args.device, precision=args.precision, batch_size=args.batch_size, seed=args.seed,
        data_dir=args.data_dir, hparams=dict(_parse_hparam(h) for h in args.hparam), model=args.model,
        resume=resume, quiet=args.quiet, rules_version=args.rules_version, rules_dir=args.rules_dir,
        energy_estimate_watts=args.energy_estimate_watts)


def summary_table(summary: RunSummary) -> Table:
    table = Table(title=str(summary.bench_dir))
    for col in ("trial", "status", "epochs", "metric", "train s", "total s", "train J", "samples/s", "TFLOPS", "util"):
        table.add_column(col, justify="right")
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for k, r in enumerate(summary.results, 1):
        table.add_row(str(k), r.status, str(r.epochs), fmt(r.final_metric, ".4f"), fmt(r.train_time_s, ".1f"),
                      fmt(r.total_time_s, ".1f"), fmt(r.train_energy_j, ".0f"), fmt(r.train_samples_per_s, ".0f"),
                      fmt(r.achieved_tflops, ".4f"), fmt(r.utilization, ".1%"))
    return table


def _sigterm_is_ctrl_c() -> None:
    """A scheduler's SIGTERM ends the running trial as 'aborted', as Ctrl-C does."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def cmd_run(args) -> int:
    _sigterm_is_ctrl_c()
    summary = run_benchmark(options(args, args.out, args.resume))
    if not args.quiet and summary.results:
        Console(stderr=True).print(summary_table(summary))
    return 0 if summary.ok else 1


def cmd_list(args) -> int:
    from trainmark.rules.cli import benchmarks_table

    Console().print(benchmarks_table(args.rules_version, args.rules_dir))
    return 0


def cmd_calibrate(args) -> int:
    with tempfile.TemporaryDirectory(prefix="trainmark-calibrate-") as tmp:
        summary = run_benchmark(options(args, Path(tmp)))
    Console(stderr=True).print(summary_table(summary))
    epochs = [r.epochs for r in summary.results if r.status == "converged"]
    times = [r.train_time_s for r in summary.results if r.status == "converged"]
    print(json.dumps({"benchmark": args.benchmark, "trials": len(summary.results), "converged": len(epochs),
                      "epochs_to_target": epochs, "mean_epochs": mean(epochs) if epochs else None,
                      "std_epochs": pstdev(epochs) if epochs else None,
                      "train_time_s": [round(t, 1) for t in times]}, indent=2))
    return 0 if len(epochs) == len(summary.results) else 1
