"""Argument checks for ``run``, ``calibrate``, ``sweep``, ``ops`` and the rules commands, before any work.

Each check raises ``UserError`` (one line, exit 2) for a value that used to be
silently wrong or to end in a traceback after minutes of measuring: ``--trials 0``,
``--energy-estimate-watts nan``, ``--submitter ..`` (a folder outside the division),
a NaN ``--hparam``, a missing ``--rules-dir``, an unwritable ``--json`` or ``--out``.
"""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

from trainmark.errors import UserError
from trainmark.format import layout
from trainmark.harness.frameworks import backend as framework
from trainmark.outputs import ensure_writable


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
    hparam_values(hparams)
    framework.available(args.framework)  # a framework that is not installed: one line, nothing written
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
    framework.available(args.framework)
    writable_folder(args.out, "--out")


def ops_args(args) -> None:
    if args.dtype is not None and not args.dtype.strip(", "):
        raise UserError("--dtype '': give comma-separated dtypes, e.g. fp32,bf16 (or leave the flag out)")
    ensure_writable(args.json_path, "--json")
