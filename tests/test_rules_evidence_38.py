"""Issue 38: the data the checker derives a trial's work and peak from (rules/peaks.json, reference-work.json)."""
from __future__ import annotations

import json

from forge import PYTORCH_SYSTEM

from trainmark.cli import main
from trainmark.rules import LATEST_VERSION, peaks, reference_work

SUBMISSIONS_RESULT = f"submissions/closed/trainmark/results/{PYTORCH_SYSTEM}/resnet-mini/result_1.txt"


def test_peaks_json_is_the_harness_table_as_data(capsys):
    """rules/peaks.json is written from harness/measure/peaks.py; a table changed without `trainmark rules peaks`
    fails here."""
    assert main(["rules", "peaks", "--check"]) == 0, capsys.readouterr().err


def test_the_peak_of_a_described_device_and_of_a_cpu():
    table = peaks.load()
    h100 = table.device_peak("NVIDIA H100 80GB HBM3", "amp-bf16", 8)
    assert h100.tflops == 8 * 989.5 and "H100 SXM" in h100.source
    assert table.device_peak("FastChip 9000", "fp32", 1) is None
    cpu = table.cpu_peak(2, 2.445, "fp32")   # the described clock is not the turbo: the fastest boost is assumed
    assert abs(cpu.tflops - 2 * peaks.MAX_CPU_CLOCK_GHZ * 64 / 1000) < 1e-12   # AVX-512's 64 FLOP/cycle


def test_a_cpu_bound_counts_only_what_its_vendor_ships():
    """AMX (1024 bf16 FLOP/cycle) is Intel's: an AMD EPYC's bf16 bound is AVX512-BF16's 128, an Arm core's its
    own sets; a name the table cannot place keeps the loosest bound."""
    table = peaks.load()
    clock = 2 * peaks.MAX_CPU_CLOCK_GHZ / 1000
    assert table.cpu_peak(2, 2.6, "amp-bf16", "Intel(R) Xeon(R) Platinum 8480+").tflops == clock * 1024
    assert table.cpu_peak(2, 2.6, "amp-bf16", "").tflops == clock * 1024
    amd = table.cpu_peak(2, 2.6, "amp-bf16", "AMD EPYC 9R45")
    assert amd.tflops == clock * 128 and "AMD EPYC 9R45" in amd.source
    assert table.cpu_peak(2, 2.6, "fp32", "AMD EPYC").tflops == clock * 64     # AVX-512 is AMD's too
    assert table.cpu_peak(2, 2.6, "amp-bf16", "AWS Graviton4 (Neoverse V2)").tflops == clock * 64   # SVE + bf16
    assert table.cpu_peak(2, 2.6, "fp32", "Ampere Altra").tflops == clock * 32
    for absurd in (float("nan"), float("inf"), 99999.0):   # a described clock that would loosen the bound
        assert table.cpu_peak(2, absurd, "amp-bf16", "AMD EPYC").tflops == clock * 128


def test_reference_work_holds_what_a_reference_run_logged():
    """The FLOPs per sample the rules ship, times the batch, are the FLOPs per step the harness logged in the
    committed resnet-mini example (both are the project's FLOP counter)."""
    from pathlib import Path

    records = [json.loads(line[len(":::MLLOG "):]) for line in
               (Path(__file__).resolve().parents[1] / SUBMISSIONS_RESULT).read_text().splitlines()]
    logged = {r["key"]: r["value"] for r in records if r["key"] in ("trainmark_flops_per_step", "train_samples",
                                                                     "eval_samples", "global_batch_size")}
    for version in ("1.0", LATEST_VERSION):
        entry = reference_work.load(version)["resnet-mini"]
        assert entry["flops_per_sample"] * logged["global_batch_size"] == logged["trainmark_flops_per_step"]
        assert (entry["train_samples"], entry["eval_samples"]) == (logged["train_samples"], logged["eval_samples"])
