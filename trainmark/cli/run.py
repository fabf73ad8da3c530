"""``trainmark run``, ``trainmark list`` and ``trainmark calibrate``."""
from __future__ import annotations

import json
import signal
import sys
import tempfile
from pathlib import Path
from statistics import mean, pstdev, stdev
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from trainmark.errors import UserError
from trainmark.harness.frameworks.backend import BACKENDS  # stdlib only: keeps --help light
from trainmark.harness.measure.telemetry import parse_hz as telemetry_hz  # stdlib only: keeps --help light
from trainmark.outputs import table_console
from trainmark.rules import LATEST_VERSION

if TYPE_CHECKING:  # the harness imports torch: only the commands that train load it
    from trainmark.harness.run import RunOptions, RunSummary


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
    p.add_argument("--division", choices=["closed", "open"], default="closed",
                   help="closed: the reference recipe within the rules' limits; open: relaxed (default: closed)")
    p.add_argument("--submitter", default="anonymous", help="organisation name ([A-Za-z0-9._-])")
    p.add_argument("--system", type=Path, dest="system_file", help="system description JSON merged over detection")
    p.add_argument("--system-name", help="system folder name (default: derived from the hardware)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:INDEX")
    p.add_argument("--framework", choices=list(BACKENDS), default="pytorch",
                   help="the framework that trains the reference (default: %(default)s; tensorflow: "
                        "pip install -e '.[tensorflow]', docs/frameworks.md)")
    p.add_argument("--precision", choices=["fp32", "amp"], default="fp32",
                   help="fp32, or amp (bf16/fp16 autocast where the rules allow it) (default: fp32)")
    p.add_argument("--batch-size", type=int, help="global batch size")
    p.add_argument("--seed", type=int, help="base seed; trial k uses seed + k - 1 (default: random, logged)")
    p.add_argument("--data-dir", type=Path, help="dataset folder (default: the rules' default location)")
    p.add_argument("--hparam", action="append", default=[], metavar="KEY=VALUE",
                   help="override a hyperparameter (closed division: within the rules' limits)")
    p.add_argument("--model", help="open division: MODULE:CALLABLE returning your nn.Module")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary table")
    p.add_argument("--rules-version", default=LATEST_VERSION, help="rules version (default: %(default)s)")
    p.add_argument("--rules-dir", type=Path, help="rule files folder (default: the shipped rules)")
    p.add_argument("--energy-estimate-watts", type=float,
                   help="when no energy counter exists, report an estimate of W x time (labelled 'estimated')")
    p.add_argument("--ceilings", type=Path, metavar="OPS_JSON",
                   help="a `trainmark ops --json` report of this machine: its measured ceilings go into the "
                        "system description and utilization is reported against them too")
    p.add_argument("--telemetry-hz", type=telemetry_hz, default=1.0, metavar="HZ",
                   help="telemetry samples per second into trial_<k>/telemetry.csv, 1-100, 0: off (default: 1)")


def register(sub) -> None:
    p = sub.add_parser("run", help="train a benchmark to its target over repeated trials")
    _run_args(p)
    p.add_argument("--out", type=Path, default=Path("submission"), help="submission root (default: %(default)s)")
    p.add_argument("--resume", action="store_true", help="continue after the last finished trial")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="benchmarks with their dataset, metric and target")
    p.add_argument("--rules-version", default=LATEST_VERSION, help="rules version (default: %(default)s)")
    p.add_argument("--rules-dir", type=Path, help="read rule files from this folder instead of the shipped ones")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the list as JSON to FILE ('-' or no FILE: standard output)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("calibrate", help="reference trials to a scratch folder; prints epochs-to-target")
    _run_args(p)
    p.add_argument("--full-curves", action="store_true",
                   help="train every trial to the rules' max_epochs and derive epochs-to-target from the curves, "
                        "so that one calibration can also judge other targets (--what-if)")
    p.add_argument("--what-if", type=float, action="append", default=[], metavar="TARGET",
                   help="with --full-curves: also report epochs-to-target for this target (repeatable)")
    p.add_argument("--max-epochs", type=int,
                   help="with --full-curves: stop each trial after this many epochs (default: the rules' max_epochs)")
    p.set_defaults(func=cmd_calibrate, trials=None)


def options(args, out: Path, resume: bool = False) -> RunOptions:
    from trainmark.cli.arguments import run_args
    from trainmark.harness.run import RunOptions

    hparams = [_parse_hparam(h) for h in args.hparam]
    run_args(args, hparams)  # before anything runs or is written: one-line errors, never half a folder
    return RunOptions(
        benchmark=args.benchmark, out=out, trials=args.trials, division=args.division,
        submitter=args.submitter, system_file=args.system_file, system_name=args.system_name,
        device=args.device, precision=args.precision, batch_size=args.batch_size, seed=args.seed,
        data_dir=args.data_dir, hparams=dict(hparams), model=args.model,
        resume=resume, quiet=args.quiet, rules_version=args.rules_version, rules_dir=args.rules_dir,
        energy_estimate_watts=args.energy_estimate_watts, full_curves=getattr(args, "full_curves", False),
        max_epochs=getattr(args, "max_epochs", None), ceilings=args.ceilings, telemetry_hz=args.telemetry_hz,
        framework=args.framework)


def summary_table(summary: RunSummary) -> Table:
    table = Table(title=str(summary.bench_dir))
    for col in ("trial", "status", "epochs", "metric", "train s", "total s", "train J", "samples/s", "TFLOPS", "util"):
        table.add_column(col, justify="right", overflow="fold")  # never 'conv…' for converged
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for k, r in enumerate(summary.results, summary.first_trial):
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
    from trainmark.harness.run import run_benchmark

    summary = run_benchmark(options(args, args.out, args.resume))
    if not args.quiet and summary.results:
        table_console(stderr=True).print(summary_table(summary))
    for k, r in summary.crashed.items():  # a crash is never an allowed miss: say which, and fail the run
        print(f"trainmark run: trial {k} {r.status}" + (f": {r.error}" if r.error else ""), file=sys.stderr)
    return 0 if summary.ok else 1


def cmd_list(args) -> int:
    from trainmark.cli.rules import cmd_list as rules_list

    return rules_list(args)


def epochs_to_target(history, reached) -> int | None:
    """The first evaluated epoch whose metric meets the target, or None."""
    return next((e.epoch for e in history if e.metric is not None and reached(e.metric)), None)


def cmd_calibrate(args) -> int:
    from trainmark.rules.ruleset import get_rules

    rules = get_rules(args.benchmark, args.rules_version, args.rules_dir)
    with tempfile.TemporaryDirectory(prefix="trainmark-calibrate-") as tmp:
        from trainmark.harness.run import run_benchmark

        summary = run_benchmark(options(args, Path(tmp)))
        load = [_other_load(summary.bench_dir, k) for k in range(1, len(summary.results) + 1)]
    Console(stderr=True).print(summary_table(summary))
    if not args.full_curves:
        epochs = [r.epochs for r in summary.results if r.status == "converged"]
        times = [r.train_time_s for r in summary.results if r.status == "converged"]
        report = {"benchmark": args.benchmark, "target": rules.target, "trials": len(summary.results),
                  "converged": len(epochs), **_spread(epochs), "train_time_s": [round(t, 1) for t in times],
                  "train_time_cv": _cv(times), "other_cpu_load_pct": load}
        print(json.dumps(report, indent=2))
        return 0 if len(epochs) == len(summary.results) else 1
    report = {"benchmark": args.benchmark, "trials": len(summary.results),
              "seeds_from": args.seed, "curves": [[e.metric for e in r.history] for r in summary.results],
              "epoch_train_s": [[round(e.train_s, 1) for e in r.history] for r in summary.results],
              "other_cpu_load_pct": load, "targets": {}}
    ok = True
    for target in [rules.target, *args.what_if]:
        reached = lambda v, t=target: rules.reached(v, t)  # noqa: E731
        epochs = [epochs_to_target(r.history, reached) for r in summary.results]
        got = [e for e in epochs if e is not None]
        times = [sum(e.train_s for e in r.history[:k]) for r, k in zip(summary.results, epochs) if k is not None]
        report["targets"][str(target)] = {
            "converged": len(got), "epochs_to_target": epochs, **_spread(got),
            "epochs_range": [min(got), max(got)] if got else None,
            "train_time_s": [round(t, 1) for t in times], "train_time_cv": _cv(times)}
        ok = ok and (target != rules.target or len(got) == len(epochs))
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


def _cv(times: list[float]) -> float | None:
    """Coefficient of variation (sample std / mean) of train times, as the checker's score reports it."""
    return round(stdev(times) / mean(times), 4) if len(times) > 1 and mean(times) > 0 else None


def _other_load(bench_dir: Path, k: int) -> float | None:
    """The share of the CPUs other processes used during trial ``k`` (trial.json), or None."""
    try:
        from trainmark.format import layout

        path = bench_dir / layout.trial_dir(k) / layout.TRIAL_JSON
        return json.loads(path.read_text(encoding="utf-8")).get("other_cpu_load_pct")
    except (OSError, ValueError):
        return None


def _spread(epochs: list[int]) -> dict:
    return {"mean_epochs": mean(epochs) if epochs else None, "std_epochs": pstdev(epochs) if epochs else None}
