"""Arguments that several commands share, and the checks of ``run``, ``calibrate``, ``sweep``, ``ops`` and
the rules commands before any work.

Each check raises ``UserError`` (one line, exit 2) for a value that used to be
silently wrong or to end in a traceback after minutes of measuring: ``--trials 0``,
``--energy-estimate-watts nan``, ``--submitter ..`` (a folder outside the division),
a NaN ``--hparam``, a missing ``--rules-dir``, an unwritable ``--json`` or ``--out``.
"""
from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from trainmark.errors import UserError
from trainmark.format import layout
from trainmark.harness.frameworks import backend
from trainmark.harness.measure.telemetry import parse_hz as telemetry_hz  # stdlib only: keeps --help light
from trainmark.outputs import ensure_writable
from trainmark.rules import LATEST_VERSION

if TYPE_CHECKING:  # the harness imports torch: only the commands that train load it
    from trainmark.harness.run import RunOptions


def folder_name(value: str | None, flag: str) -> None:
    if value is None:
        return
    if layout.name_refusal(value, max_len=layout.CLI_NAME_MAX, dots=False):  # the checker's LAYOUT-005 rule, and more
        raise UserError(f"{flag} {value!r}: use 1-128 of [A-Za-z0-9._-], not '.' or '..' (it names a folder)")


def positive_int(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise UserError(f"{flag} {value}: must be at least 1")


def finite(value: float | None, flag: str, *, minimum: float = 0.0, strict: bool = True) -> None:
    """A finite number above ``minimum`` (or at least it, when not ``strict``)."""
    if value is None:
        return
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        bound = f"above {minimum:g}" if strict else f"at least {minimum:g}"
        raise UserError(f"{flag} {value}: must be a finite number {bound}")


def rules_dir(path: Path | None) -> None:
    if path is None:
        return
    if not path.exists():
        raise UserError(f"--rules-dir {path}: no such folder")
    if not path.is_dir():
        raise UserError(f"--rules-dir {path}: not a folder (it holds <version>/<benchmark>.yaml)")


def hparam_values(pairs: list[tuple[str, object]]) -> None:
    for key, value in pairs:
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"--hparam {key}={value}: must be a finite number")


def writable_folder(path: Path, flag: str) -> None:
    """``path`` is a folder that exists and is writable, or can be created below one that is."""
    probe = Path(path)
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    try:
        if probe.exists() and not probe.is_dir():
            raise UserError(f"{flag} {path}: cannot write results there ({probe} is a file, not a folder)")
        with tempfile.TemporaryFile(dir=probe):  # access() says yes to root even on /proc: try it
            pass
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write results there ({probe}: {exc.strerror or exc})") from None


def run_args(args, hparams: list[tuple[str, object]]) -> None:
    """``run`` and ``calibrate``: every check that needs no dataset and no model."""
    positive_int(getattr(args, "trials", None), "--trials")
    positive_int(args.batch_size, "--batch-size")
    positive_int(getattr(args, "max_epochs", None), "--max-epochs")
    finite(args.energy_estimate_watts, "--energy-estimate-watts")
    folder_name(args.submitter, "--submitter")
    folder_name(args.system_name, "--system-name")
    rules_dir(args.rules_dir)
    known_benchmark(args.benchmark, args.rules_version, args.rules_dir)
    hparam_values(hparams)
    backend.available(args.framework)  # a framework that is not installed: one line, nothing written
    if args.seed is not None and not 0 <= args.seed < 2 ** 63:
        raise UserError(f"--seed {args.seed}: must be in 0..2**63-1")
    if getattr(args, "out", None) is not None:
        writable_folder(args.out, "--out")


def sweep_args(args) -> None:
    if args.batch_sizes is not None and not args.batch_sizes.strip(", "):
        raise UserError("--batch-sizes '': give comma-separated sizes, e.g. 32,64,128 (or leave the flag out)")
    finite(args.min_seconds, "--min-seconds", strict=False)
    finite(args.energy_estimate_watts, "--energy-estimate-watts")
    finite(args.memory_limit_gb, "--memory-limit-gb")
    positive_int(args.steps, "--steps")
    positive_int(args.max_batch, "--max-batch")
    if args.warmup_steps is not None and args.warmup_steps < 0:
        raise UserError(f"--warmup-steps {args.warmup_steps}: must be at least 0")
    rules_dir(args.rules_dir)
    backend.available(args.framework)
    writable_folder(args.out, "--out")


def ops_args(args) -> None:
    if args.dtype is not None and not args.dtype.strip(", "):
        raise UserError("--dtype '': give comma-separated dtypes, e.g. fp32,bf16 (or leave the flag out)")
    ensure_writable(args.json_path, "--json")


# ---------------------------------------------------------------- arguments several commands share

def version_arguments(p) -> None:
    """--rules-version and --rules-dir of the rules and data commands."""
    from trainmark.cli.parsing import add_rules_dir, add_rules_version

    add_rules_version(p, LATEST_VERSION)
    add_rules_dir(p)


def judge_arguments(parser) -> None:
    """--rules-dir and --mlperf-ruleset of ``report``, ``compare`` and ``table`` (they check folders)."""
    from trainmark.cli.parsing import add_mlperf_ruleset, add_rules_dir

    group = parser.add_argument_group("rules")
    add_rules_dir(group)
    add_mlperf_ruleset(group)


def judge_options(args):
    """The checker's options from ``judge_arguments``."""
    from trainmark.checker.check import CheckOptions

    return CheckOptions(rules_root=args.rules_dir, mlperf_ruleset=args.mlperf_ruleset)


def csv_items(text: str) -> list[str]:
    """The non-empty items of a comma-separated value, stripped."""
    return [t.strip() for t in text.split(",") if t.strip()]


def positive_ints(text: str, flag: str, example: str, refusal: str) -> list[int]:
    """A comma-separated list of positive integers (``example`` shows one; ``refusal`` says why a value is not)."""
    try:
        values = [int(t) for t in csv_items(text)]
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected comma-separated integers, e.g. {example}") from None
    if not values or min(values) < 1:
        raise UserError(f"{flag} {text!r}: {refusal}")
    return values


DEVICE_HELP = ("auto (the accelerator PyTorch sees, else the CPU), cpu, or TYPE[:INDEX] as PyTorch names it "
               "(cuda:1, xpu, hpu, ...) (default: auto)")


def device_of(text: str):
    """--device as the harness checks it: auto, cpu, or TYPE[:INDEX] of a device present here."""
    from trainmark.harness.run import check_device
    return check_device(text)


def parse_hparam(text: str) -> tuple[str, object]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise UserError(f"--hparam {text!r}: expected KEY=VALUE, e.g. opt_base_learning_rate=0.4")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def run_arguments(p) -> None:
    """The options of ``run`` and ``calibrate``, grouped as their help shows them."""
    from trainmark.cli.parsing import add_rules_group

    p.add_argument("benchmark", help="benchmark name ('trainmark list')")
    sub = p.add_argument_group("submission")
    sub.add_argument("--trials", type=int, help="number of trials (default: the rules'; fewer is an incomplete "
                                                "result for 'trainmark check')")
    sub.add_argument("--division", choices=["closed", "open"], default="closed",
                     help="closed: the reference recipe within the rules' limits; open: relaxed (default: closed)")
    sub.add_argument("--submitter", default="anonymous", help="organisation name ([A-Za-z0-9._-])")
    sub.add_argument("--system", type=Path, dest="system_file", help="system description JSON merged over detection")
    sub.add_argument("--system-name", help="system folder name (default: derived from the hardware)")
    train = p.add_argument_group("training")
    train.add_argument("--device", default="auto", help=DEVICE_HELP)
    train.add_argument("--framework", choices=list(backend.BACKENDS), default="pytorch",
                       help="the framework that trains the reference (default: %(default)s; tensorflow: "
                            "pip install -e '.[tensorflow]', docs/frameworks.md)")
    train.add_argument("--precision", choices=["fp32", "amp", "auto"], default="fp32",
                       help="fp32, amp (bf16/fp16 autocast where the rules allow it), or auto: amp where the rules "
                            "calibrate this reference in amp-bf16 and the device computes bf16 in its own units "
                            "(AVX512-BF16, AMX, a GPU's tensor cores), else fp32; the banner says which and why "
                            "(default: fp32)")
    train.add_argument("--batch-size", type=int, help="global batch size")
    train.add_argument("--seed", type=int, help="base seed; trial k uses seed + k - 1 (default: random, logged)")
    train.add_argument("--data-dir", type=Path, help="dataset folder (default: the rules' default location)")
    train.add_argument("--verbose", action="store_true",
                       help="show the framework's start-up log (TensorFlow's absl, oneDNN and CUDA lines), hidden "
                            "by default")
    train.add_argument("--hparam", action="append", default=[], metavar="KEY=VALUE",
                       help="override a hyperparameter (closed division: within the rules' limits)")
    measure = p.add_argument_group("measurement")
    measure.add_argument("--energy-estimate-watts", type=float,
                         help="when no energy counter exists, report an estimate of W x time (labelled 'estimated')")
    measure.add_argument("--ceilings", type=Path, metavar="OPS_JSON",
                         help="a 'trainmark ops --json' report of this machine: its measured ceilings go into the "
                              "system description and utilization is reported against them too")
    measure.add_argument("--telemetry-hz", type=telemetry_hz, default=1.0, metavar="HZ",
                         help="telemetry samples per second into trial_<k>/telemetry.csv, 1-100, 0: off (default: 1)")
    open_arguments(p)
    add_rules_group(p, LATEST_VERSION)


def open_arguments(p) -> None:
    """The open division's relaxations of the reference recipe (docs/open-division.md); the closed division
    refuses them."""
    group = p.add_argument_group("open division (with --division open; docs/open-division.md)")
    group.add_argument("--model", metavar="MODULE:CALLABLE",
                       help="your model: a zero-argument function returning an nn.Module, imported from the current "
                            "folder (e.g. mymodels:build for ./mymodels.py); it takes the reference's inputs and "
                            "returns what its loss reads (PyTorch only)")
    group.add_argument("--optimizer", metavar="NAME",
                       help="an optimizer class of torch.optim by name (Adam, AdamW, RMSprop, ...; TensorFlow: "
                            "keras.optimizers), on the reference's parameter groups and peak rates")
    group.add_argument("--optimizer-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="an argument of --optimizer (repeatable), e.g. betas=[0.9,0.99] or lr=0.001")
    group.add_argument("--lr-schedule", metavar="NAME",
                       help="a class of torch.optim.lr_scheduler by name (CosineAnnealingLR, OneCycleLR, ...), "
                            "stepped once per training step, in place of the reference's schedule")
    group.add_argument("--lr-schedule-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="an argument of --lr-schedule (repeatable), e.g. T_max=1170")
    group.add_argument("--augment", metavar="NAME[,NAME]",
                       help="torchvision.transforms.v2 classes by name, with their defaults, applied to each "
                            "training image after the reference's own augmentation (e.g. RandomErasing)")


def open_recipe(args):
    """The open-division options as the harness's OpenRecipe (None when none was given)."""
    from trainmark.harness.open_recipe import OpenRecipe, key_values, names

    recipe = OpenRecipe(getattr(args, "optimizer", None), key_values(getattr(args, "optimizer_arg", []),
                                                                     "--optimizer-arg"),
                        getattr(args, "lr_schedule", None), key_values(getattr(args, "lr_schedule_arg", []),
                                                                       "--lr-schedule-arg"),
                        names(getattr(args, "augment", None)))
    return recipe if recipe.flags() else None


def known_benchmark(name: str, version: str | None, root: Path | None) -> None:
    """A mistyped benchmark name: one line with the closest known name (exit 2), before any work."""
    from trainmark.cli.parsing import suggestion
    from trainmark.rules.ruleset import RULES_ROOT

    folder = Path(root or RULES_ROOT) / str(version or LATEST_VERSION)
    if not folder.is_dir() or (folder / f"{name}.yaml").is_file():
        return  # an unknown version or folder: get_rules says so in its own words
    names = sorted(p.stem for p in folder.glob("*.yaml"))
    if name not in names:
        raise UserError(f"no rules for benchmark {name!r} in rules version {folder.name}{suggestion(name, names)}; "
                        "'trainmark list' shows them")


def run_options(args, out: Path, resume: bool = False) -> RunOptions:
    """``run``'s and ``calibrate``'s arguments as the harness's options, every argument checked first."""
    from trainmark.harness.run import RunOptions

    hparams = [parse_hparam(h) for h in args.hparam]
    if getattr(args, "verbose", False):  # read where a framework is imported (harness/frameworks/quiet_import.py)
        import os

        os.environ["TRAINMARK_VERBOSE"] = "1"
    run_args(args, hparams)  # before anything runs or is written: one-line errors, never half a folder
    return RunOptions(
        benchmark=args.benchmark, out=out, trials=args.trials, division=args.division,
        submitter=args.submitter, system_file=args.system_file, system_name=args.system_name,
        device=args.device, precision=args.precision, batch_size=args.batch_size, seed=args.seed,
        data_dir=args.data_dir, hparams=dict(hparams), model=args.model,
        resume=resume, quiet=args.quiet, rules_version=args.rules_version, rules_dir=args.rules_dir,
        energy_estimate_watts=args.energy_estimate_watts, full_curves=getattr(args, "full_curves", False),
        max_epochs=getattr(args, "max_epochs", None), ceilings=args.ceilings, telemetry_hz=args.telemetry_hz,
        framework=args.framework, recipe=open_recipe(args))
