"""``trainmark rules peaks|flops``: the data the checker derives a trial's work and peak from (issue 38).

``peaks`` writes rules/peaks.json from the harness's sourced table (harness/measure/peaks.py), which the
checker may not import; ``flops`` writes rules/<version>/reference-work.json: each benchmark's dataset sizes
(from its data, where found; otherwise the file's earlier entry is kept, saying so) and its reference model's
FLOPs per sample (the harness's counter, on the meta device, at the rules' default batch size).
"""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from trainmark.cli.arguments import version_arguments
from trainmark.errors import UserError


def register(rsub) -> None:
    from trainmark.cli.parsing import command

    p = command(rsub, "peaks", help="write rules/peaks.json, the sourced peak table the checker reads",
                description="Write (or --check) rules/peaks.json from the harness's sourced peak table "
                            "(trainmark.harness.measure.peaks):\nWORK-002 judges an epoch against the peak of "
                            "the accelerator the system description names.",
                examples="  trainmark rules peaks\n  trainmark rules peaks --check\n")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is stale")
    p.set_defaults(func=cmd_peaks)
    p = command(rsub, "flops", help="write rules/<version>/reference-work.json: dataset sizes and the reference "
                "models' FLOPs per sample",
                description="Write rules/<version>/reference-work.json: each benchmark's dataset sizes (from its "
                            "data where found)\nand its reference model's FLOPs per sample (the FLOP counter, "
                            "meta device), which WORK-001/002 derive a trial's work from.",
                examples="  trainmark rules flops --rules-version 1.1\n"
                         "  trainmark rules flops --benchmark resnet-mini --benchmark vgg-mini\n")
    p.add_argument("--benchmark", action="append", default=None, metavar="NAME",
                   help="measure only this benchmark (repeatable); the file's other entries are kept")
    version_arguments(p)
    p.set_defaults(func=cmd_flops)


def cmd_peaks(args) -> int:
    from dataclasses import asdict

    from trainmark.harness.measure.peaks import CPU_FLOPS_PER_CYCLE, TABLE
    from trainmark.rules import peaks

    devices = [{k: v for k, v in asdict(d).items() if k in ("key", "name", "match", "tflops", "source", "kind")}
               for d in TABLE]
    cpu = {dtype: [[sorted(isa), fpc] for isa, fpc in rows] for dtype, rows in CPU_FLOPS_PER_CYCLE.items()}
    text = peaks.render(devices, cpu)
    return _write_or_check(peaks.PEAKS_FILE, text, args.check, "trainmark rules peaks")


def _write_or_check(path: Path, text: str, check: bool, command: str) -> int:
    from trainmark.files import write_text_atomic

    if check:
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        if current != text:
            print(f"{path} is stale: run `{command}`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}")
    return 0


def cmd_flops(args) -> int:
    import torch

    from trainmark.harness.measure.system import cpu_model
    from trainmark.rules import load_ruleset, reference_work

    earlier = reference_work.load(args.rules_version, args.rules_dir) or {}
    table = {}
    for name, rules in sorted(load_ruleset(args.rules_version, args.rules_dir).items()):
        if args.benchmark and name not in args.benchmark:
            if name in earlier:
                table[name] = earlier[name]
            continue
        table[name] = {**_sizes(rules, earlier.get(name, {})), **_flops(rules)}
        print(f"{name}: {table[name]}", file=sys.stderr)
    measured_on = (f"{cpu_model()}, {platform.system()}, torch {torch.__version__}; FLOPs on the meta device at "
                   "each benchmark's default global batch size")
    text = reference_work.render(args.rules_version, table, measured_on)
    return _write_or_check(reference_work.work_file(args.rules_version, args.rules_dir), text, False,
                           f"trainmark rules flops --rules-version {args.rules_version}")


def _sizes(rules, earlier: dict) -> dict:
    """Train and eval samples from the benchmark's data where it is found; else the earlier entry's, kept."""
    from trainmark.reference import registry

    data = rules.data["dataset"]
    folder = Path(os.environ.get(data.get("env_var") or "", "") or data.get("default_dir") or "")
    if str(folder) not in ("", ".") and folder.exists():
        try:
            ref = registry.for_rules(rules)
            loaded = ref.load_data(folder)
            return {"train_samples": int(ref.train_samples(loaded)), "eval_samples": int(ref.eval_samples(loaded)),
                    "samples_source": f"counted in {data['name']} as the reference loads it"}
        except Exception as exc:  # noqa: BLE001 - data that does not load is reported, the earlier entry kept
            print(f"{rules.name}: {folder}: {type(exc).__name__}: {exc}", file=sys.stderr)
    keys = ("train_samples", "eval_samples", "samples_source")
    return {k: earlier.get(k) for k in keys} if earlier.get("train_samples") else {
        "train_samples": None, "eval_samples": None, "samples_source": f"not measured: {data['name']} not found"}


def _flops(rules) -> dict:
    """FLOPs of one training step of the reference at the default global batch, per sample."""
    from trainmark.harness.frameworks import backend
    from trainmark.reference import registry

    hp = rules.defaults()
    batch = int(hp["global_batch_size"])
    try:
        ref = registry.for_rules(rules)
        count, why = backend.backend("pytorch", "cpu", "fp32").step_flops(ref, hp, batch)
        # The meta device cannot run every model (data-dependent ops): a mini is then counted on the CPU exactly as
        # a run counts it, at the default batch (a recurrent reference's synthetic batch is not linear in the batch
        # size). A full-size model takes too long on a CPU: its entry says why it has none.
        if not count and rules.data.get("size") == "mini":
            import torch

            from trainmark.harness.frameworks.pytorch_backend import count_step_flops
            count = count_step_flops(ref, ref.build_model(), hp, torch.device("cpu"))
    except Exception as exc:  # noqa: BLE001 - a reference the counter cannot build is reported, not guessed
        count, why = None, f"{type(exc).__name__}: {exc}"
    return {"flops_per_sample": count / batch if count else None, "flops_per_step": count,
            "at_global_batch_size": batch, **({"why_none": why} if not count else {})}
