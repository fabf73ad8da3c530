"""Forgeries of a committed example submission, as a dishonest submitter would make them (issue 30).

``example()`` copies one committed example (its system description, code record and results) into a
scratch folder; the editors below change its files the way a forger would, keeping every summary the
forger can recompute consistent, so that what catches the forgery is evidence, not a stale summary.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

from trainmark.format import mllog

SUBMISSIONS = Path(__file__).resolve().parent.parent / "submissions"
SUBMITTER = SUBMISSIONS / "closed" / "trainmark"
PREFIX = mllog.PREFIX
PYTORCH_SYSTEM = "2xcpu-epyc-zen3"       # the Fashion minis and ds2-mini by the mini suite on Zen 3s (rules 1.2, fp32)
TENSORFLOW_SYSTEM = "2xcpu-epyc-zen3-tf"  # their Keras twins, on the same VMs after
# (the suite's two other PyTorch minis, both in amp, are in 2xcpu-epyc-zen5, their Keras twins in 2xcpu-epyc-zen5-tf)

PYTORCH_SYSTEM_OF = {benchmark: "2xcpu-epyc-zen5"   # the Zen 5 suite's minis whose rule file has not changed since
                     for benchmark in ("lstm-mini", "transformer-mini")}


def pytorch_system(benchmark: str) -> str:
    """The system folder that holds ``benchmark``'s PyTorch example."""
    return PYTORCH_SYSTEM_OF.get(benchmark, PYTORCH_SYSTEM)


def example(tmp_path: Path, benchmark: str = "resnet-mini", system: str | None = None) -> Path:
    """A copy of one committed example (by default ``benchmark``'s PyTorch one) as ``tmp_path/ex/closed/trainmark/...``;
    returns ``tmp_path/ex``."""
    system = system or pytorch_system(benchmark)
    root = tmp_path / "ex"
    dest = root / "closed" / "trainmark"
    (dest / "systems").mkdir(parents=True)
    shutil.copy(SUBMITTER / "systems" / f"{system}.json", dest / "systems")
    shutil.copytree(SUBMITTER / "benchmarks" / benchmark / "implementations" / system,
                    dest / "benchmarks" / benchmark / "implementations" / system)
    shutil.copytree(SUBMITTER / "results" / system / benchmark, dest / "results" / system / benchmark)
    return root


def bench_dir(root: Path, benchmark: str = "resnet-mini", system: str | None = None) -> Path:
    return root / "closed" / "trainmark" / "results" / (system or pytorch_system(benchmark)) / benchmark


def check(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    """``trainmark check ROOT --json``: the exit status and the report."""
    from trainmark.cli import main

    capsys.readouterr()
    rc = main(["check", str(root), "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def error_codes(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["severity"] == "error"}


def check_errors(root: Path, capsys, *extra: str) -> tuple[int, set[str], dict]:
    """``check`` and the report's error codes: (exit status, codes, report)."""
    rc, report = check(root, capsys, *extra)
    return rc, error_codes(report), report


def read_records(path: Path) -> list[dict]:
    """The MLLOG records of one result file, in order."""
    return [json.loads(line[len(PREFIX):]) for line in path.read_text().splitlines() if line.startswith(PREFIX)]


def write_records(path: Path, records: list[dict]) -> None:
    path.write_text("".join(PREFIX + json.dumps(r) + "\n" for r in records))


def edit_records(path: Path, edit: Callable[[list[dict]], list[dict] | None]) -> None:
    """Apply ``edit`` to the records of one result file (it may change them in place or return new ones)."""
    records = read_records(path)
    out = edit(records)
    write_records(path, records if out is None else out)


def edit_json(path: Path, edit: Callable[[dict], dict | None]) -> None:
    data = json.loads(path.read_text())
    out = edit(data)
    path.write_text(json.dumps(data if out is None else out, indent=2))


def record(records: list[dict], key: str, epoch: int | None = None) -> dict:
    """The first record with ``key`` (and ``epoch_num`` when given)."""
    for r in records:
        if r["key"] == key and (epoch is None or r.get("metadata", {}).get("epoch_num") == epoch):
            return r
    raise KeyError(key)


def resummarize(bench: Path, k: int) -> None:
    """Recompute trial k's time summaries (trainmark_trial_result, trial.json) from its edited MLLOG, as a
    careful forger would, so that only evidence can tell."""
    path = bench / f"result_{k}.txt"
    records = read_records(path)
    at = {(r["key"], r.get("metadata", {}).get("epoch_num")): r["time_ms"] for r in records}
    epochs = sorted(e for key, e in at if key == "epoch_stop")
    eval_ms = sum(at[("eval_stop", e)] - at[("eval_start", e)] for e in epochs if ("eval_stop", e) in at)
    total_ms = at[("run_stop", None)] - at[("run_start", None)]
    times = {"train_time_s": (total_ms - eval_ms) / 1000, "total_time_s": total_ms / 1000,
             "eval_time_s": eval_ms / 1000}
    record(records, "trainmark_trial_result")["value"].update(times)
    write_records(path, records)

    def trial_json(data: dict) -> None:
        data.update(times)
        for h in data.get("history", []):
            e = h["epoch"]
            h["train_s"] = (at[("epoch_stop", e)] - at[("epoch_start", e)]) / 1000
            if ("eval_stop", e) in at:
                h["eval_s"] = (at[("eval_stop", e)] - at[("eval_start", e)]) / 1000
        if data.get("train_samples") and data.get("train_time_s"):
            data["train_samples_per_s"] = data["train_samples"] / data["train_time_s"]
    edit_json(bench / f"trial_{k}" / "trial.json", trial_json)


def rewrite_epochs_log(bench: Path) -> None:
    """epochs.log rewritten from every trial's MLLOG (each evaluation's time and metric), as a forger who edited
    the MLLOG's times would keep it in agreement."""
    from trainmark.format import epochlog

    lines = []
    for k in sorted(int(p.stem.split("_")[1]) for p in bench.glob("result_*.txt")):
        records = read_records(bench / f"result_{k}.txt")
        lines += [epochlog.format_line(record(records, "eval_stop", r["metadata"]["epoch_num"])["time_ms"] / 1000,
                                       k, r["metadata"]["epoch_num"], r["value"])
                  for r in records if r["key"] == "eval_accuracy"]
    (bench / "epochs.log").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def speed_up(bench, k: int, divisor: float) -> None:
    """Every time of trial ``k`` after its run_start divided by ``divisor`` (and its summary rewritten): the
    forgery that makes a run look ``divisor`` times faster (``10 / 3``: every time scaled by 0.3)."""
    def scale(records):
        t0 = record(records, "run_start")["time_ms"]
        for r in records:
            if r["time_ms"] > t0:
                r["time_ms"] = t0 + int((r["time_ms"] - t0) // divisor)
    edit_records(bench / f"result_{k}.txt", scale)
    resummarize(bench, k)
