"""Issue 38, "no number on the submitter's word": each class of forgery rebuilt from a copy of a committed example
(tests/forge.py; the MLPerf v4.0 fixture for MLPerf) exits 1 with its own finding."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import check_path

MLPERF_FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
FP32_BENCH = "inception-mini"   # an fp32 example (Zen 3), beside the amp-bf16 ones (Zen 5)
AMP_BENCH = "lstm-mini"         # the Zen 5 suite trained it in amp-bf16, whose CPU bound is far higher


@pytest.mark.skipif(not MLPERF_FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_an_mlperf_run_logging_open_under_a_closed_system_is_mlperf_018(tmp_path):
    root = tmp_path / "v4.0"
    shutil.copytree(MLPERF_FIXTURE, root)
    path = root / "Dell" / "results" / "R760xax4L40S" / "resnet" / "result_0.txt"
    text = path.read_text(encoding="latin-1")
    path.write_text(text.replace('"key": "submission_division", "value": "closed"',
                                 '"key": "submission_division", "value": "open"'), encoding="latin-1")
    report = check_path(root)
    found = [f for f in report.findings if f.rule == "MLPERF-018"]
    assert report.exit_code == 1 and found and found[0].file.endswith("resnet/result_0.txt")
    assert "'open'" in found[0].message and found[0].severity == "error"


def _check(root, capsys):
    import forge

    return forge.check_errors(root, capsys, "--no-reevaluate")


def test_the_untouched_example_has_no_issue_38_finding(ex, capsys):
    rc, errors, report = _check(ex, capsys)
    assert rc == 0 and not errors
    assert not {f["rule"] for f in report["findings"]} & {"TELEMETRY-007", "WORK-008", "ENERGY-007", "ENERGY-008",
                                                          "ENERGY-009", "WORK-006", "WORK-007", "WORK-009"}


def test_run_start_moved_into_the_training_with_the_epochs_squeezed_is_telemetry_007(ex, capsys):
    """init_stop and run_start moved 43 % into the real training, every logged window squeezed into the rest
    (summaries and epochs.log recomputed), telemetry untouched: 0.57 of the honest trial's train time."""
    import json

    import forge

    bench = forge.bench_dir(ex)
    honest = [json.loads((bench / f"trial_{k}" / "trial.json").read_text())["train_time_s"] for k in range(1, 6)]
    for k in range(1, 6):
        def squeeze(records):
            start = forge.record(records, "run_start")["time_ms"]
            stop = forge.record(records, "run_stop")["time_ms"]
            moved = start + round((stop - start) * 0.43)
            for r in records:
                if r["key"] in ("init_stop", "run_start") or r["time_ms"] > start:
                    r["time_ms"] = moved + round((max(r["time_ms"], start) - start) * 0.57)
        forge.edit_records(bench / f"result_{k}.txt", squeeze)
        forge.resummarize(bench, k)
    forge.rewrite_epochs_log(bench)
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "TELEMETRY-007" in errors
    bench_result = report["benchmarks"][0]
    assert bench_result["score"]["mean_train_time_s"] is None  # withheld beside an error
    times = [t["train_time_s"] for t in bench_result["trials"]]
    assert sum(times) / len(times) < 0.6 * sum(honest) / len(honest)   # what the forgery would have scored


def test_another_trials_telemetry_shifted_onto_this_trial_is_telemetry_007(ex, capsys):
    import forge

    bench = forge.bench_dir(ex)
    own = forge.read_records(bench / "result_1.txt")[0]["time_ms"]
    other = forge.read_records(bench / "result_2.txt")[0]["time_ms"]
    lines = (bench / "trial_2" / "telemetry.csv").read_text().splitlines()
    shifted = [lines[0]]
    for line in lines[1:]:  # the time moved, every other column kept
        t, _, rest = line.partition(",")
        shifted.append(f"{int(t) - other + own}," + rest if rest else f"{int(t) - other + own}")
    (bench / "trial_1" / "telemetry.csv").write_text("\n".join(shifted) + "\n")
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "TELEMETRY-007" in errors
    assert all("trial_1/" in f["file"] for f in report["findings"] if f["rule"] == "TELEMETRY-007")


def _measured(tmp_path):
    from test_evidence_energy_telemetry import measured

    return measured(tmp_path)


def test_a_measured_domains_power_column_renamed_is_energy_007(tmp_path, capsys):
    import forge
    from test_evidence_energy_telemetry import BENCH

    root, bench = _measured(tmp_path)
    path = bench / "trial_3" / "telemetry.csv"
    path.write_text(path.read_text().replace("package-0.power_w", "package-0.watts_w", 1))
    rc, errors, report = _check(root, capsys)
    assert rc == 1 and "ENERGY-007" in errors
    assert [f["file"] for f in report["findings"] if f["rule"] == "ENERGY-007"] == [
        f"closed/trainmark/results/{forge.pytorch_system(BENCH)}/{BENCH}/trial_3/telemetry.csv"]


def test_a_measured_domain_declared_out_of_the_total_is_energy_008(tmp_path, capsys):
    import forge

    root, bench = _measured(tmp_path)
    forge.edit_records(bench / "result_2.txt",
                       lambda records: forge.record(records, "trainmark_energy_domains")["value"]["package-0"].update(
                           in_total=False))
    rc, errors, _ = _check(root, capsys)
    assert rc == 1 and "ENERGY-008" in errors


def test_every_reading_null_under_a_measured_method_is_energy_009(ex, capsys):
    import forge

    bench = forge.bench_dir(ex)

    def claim(records):
        forge.record(records, "trainmark_energy_method")["value"] = "measured-counter"
        for d in forge.record(records, "trainmark_energy_domains")["value"].values():
            d.update(method="measured-counter", reason=None)
    forge.edit_records(bench / "result_4.txt", claim)
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "ENERGY-009" in errors


def _set_value(path, key: str, value) -> None:
    import forge

    def edit(records):
        forge.record(records, key)["value"] = value
    forge.edit_records(path, edit)


def test_eval_samples_raised_beside_the_rules_size_is_work_006(ex, capsys):
    import forge

    _set_value(forge.bench_dir(ex) / "result_1.txt", "eval_samples", 60000)
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "WORK-006" in errors
    assert any("eval_samples" in f["message"] for f in report["findings"] if f["rule"] == "WORK-006")


def test_flops_per_step_lowered_is_work_006(ex, capsys):
    import forge

    _set_value(forge.bench_dir(ex) / "result_2.txt", "trainmark_flops_per_step", 1000)
    rc, errors, _ = _check(ex, capsys)
    assert rc == 1 and "WORK-006" in errors


def test_a_peak_raised_in_trial_json_is_work_006(tmp_path, capsys):
    import forge

    ex = forge.example(tmp_path, FP32_BENCH)   # an fp32 trial: its bound is the fp32 peak
    forge.edit_json(forge.bench_dir(ex, FP32_BENCH) / "trial_1" / "trial.json", lambda d: d.update(peak_tflops=10.0))
    rc, errors, _ = _check(ex, capsys)
    assert rc == 1 and "WORK-006" in errors


def test_an_amd_bf16_trials_peak_raised_below_amxs_bound_is_work_006(tmp_path, capsys):
    """10 TFLOPS is under 2 cores' AMX bound (12.7) but an EPYC has no AMX: its bound is AVX512-BF16's 1.59."""
    import forge

    ex = forge.example(tmp_path, AMP_BENCH)
    bench = forge.bench_dir(ex, AMP_BENCH)   # trained in amp-bf16 on the described AMD EPYC (Zen 5)
    assert '"value": "amp-bf16"' in (bench / "result_1.txt").read_text()
    forge.edit_json(bench / "trial_1" / "trial.json", lambda d: d.update(peak_tflops=10.0))
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "WORK-006" in errors
    assert any("'AMD EPYC''s vendor" in f["message"] for f in report["findings"] if f["rule"] == "WORK-006")


def test_times_scaled_by_a_fiftieth_with_the_peak_deleted_are_work_002_against_the_sourced_peak(tmp_path, capsys):
    """The peak is the described CPU's fp32 bound from rules/peaks.json (2 cores x 6.2 GHz x 64 FLOP/cycle, 0.79
    TFLOPS; the fp32 trial did about 0.023 on its Zen 3, 1.1 at fifty times the speed), so deleting trial.json's
    peak_tflops no longer switches WORK-002 off."""
    import forge

    ex = forge.example(tmp_path, FP32_BENCH)
    bench = forge.bench_dir(ex, FP32_BENCH)
    forge.speed_up(bench, 3, 50)
    forge.edit_json(bench / "trial_3" / "trial.json", lambda d: d.pop("peak_tflops") and None)  # key deleted
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and {"WORK-002", "WORK-010"} <= errors
    assert any("peaks.json" in f["message"] or "FLOP/cycle" in f["message"]
               for f in report["findings"] if f["rule"] == "WORK-002")


def _describe(ex, **fields) -> None:
    import forge

    system = ex / "closed" / "trainmark" / "systems" / f"{forge.PYTORCH_SYSTEM}.json"
    forge.edit_json(system, lambda d: d.update(fields))


def test_an_h100_described_for_a_cpu_run_is_work_009(ex, capsys):
    _describe(ex, accelerators_per_node="1", accelerator_model_name="NVIDIA H100 80GB HBM3")
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "WORK-009" in errors
    assert any("a CPU run" in f["message"] for f in report["findings"] if f["rule"] == "WORK-009")


def test_an_accelerator_the_peak_table_lacks_is_work_007_never_a_silent_pass(ex, capsys):
    _describe(ex, accelerators_per_node="1", accelerator_model_name="FastChip 9000")
    _, _, report = _check(ex, capsys)
    assert any(f["rule"] == "WORK-007" and "not judged" in f["message"] for f in report["findings"])


def test_a_telemetry_period_claimed_shorter_than_the_rows_is_telemetry_006(ex, capsys):
    """trial.json's telemetry.period_s set to 0.5 (the row count would then admit twice the rows): the rows of
    telemetry.csv are one a second."""
    import forge

    forge.edit_json(forge.bench_dir(ex) / "trial_2" / "trial.json", lambda d: d["telemetry"].update(period_s=0.5))
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "TELEMETRY-006" in errors
    assert any("sampled every" in f["message"] for f in report["findings"] if f["rule"] == "TELEMETRY-006")


@pytest.mark.parametrize("benchmark", ["lstm-mini", "transformer-mini", "ds2-mini"])
def test_a_sequence_minis_sizes_come_from_the_rules_too(tmp_path, capsys, benchmark):
    """rules/<version>/reference-work.json now counts the KJV, KJV->WEB and FSDD minis' sets as their references
    load them (`trainmark rules flops`, data prepared from the Debian packages and FSDD): the committed example
    logs those sizes, and one raised in its MLLOG is judged against them, as the Fashion-MNIST minis' are."""
    import forge

    from trainmark.rules import reference_work

    system = forge.pytorch_system(benchmark)
    root = forge.example(tmp_path, benchmark, system)
    result = forge.bench_dir(root, benchmark, system) / "result_1.txt"
    logged = {r["key"]: r["value"] for r in forge.read_records(result) if r["key"] in ("train_samples", "eval_samples")}
    rules_version = forge.record(forge.read_records(result), "trainmark_rules_version")["value"]
    entry = reference_work.load(rules_version)[benchmark]
    assert (entry["train_samples"], entry["eval_samples"]) == (logged["train_samples"], logged["eval_samples"])
    _set_value(result, "eval_samples", logged["eval_samples"] * 6)
    rc, errors, report = _check(root, capsys)
    assert rc == 1 and "WORK-006" in errors
    assert any("eval_samples" in f["message"] for f in report["findings"] if f["rule"] == "WORK-006")


def _coverage_findings(epoch_stop_ms: int, rows_ms: list[int], exact: bool) -> set[str]:
    from trainmark.checker.checks import evidence_timeline
    from trainmark.checker.checks.telemetry import Series
    from trainmark.checker.verdict.findings import Findings
    from trainmark.format.mllog_read import Event

    def event(line, key, t, **meta):
        return Event(line, "", t, key, None, meta, "INTERVAL_END")
    events = [event(1, "run_start", 0), event(2, "epoch_stop", epoch_stop_ms, epoch_num=1),
              event(3, "run_stop", 20_000)]
    series = Series()
    series.times = [float(t) for t in rows_ms]
    findings = Findings()
    evidence_timeline.check_coverage(events, series, "t.csv", findings, exact_epoch_rows=exact)
    return {f.rule for f in findings}


def test_result_format_3_wants_the_epoch_row_at_the_epoch_stops_millisecond():
    """A cut epoch's epoch_stop, moved back onto a time 100 ms after a periodic row: format 2's 500 ms slack lets
    that row stand in for the epoch's (at 1 Hz, about half of all moves), format 3's exact stamp does not."""
    periodic = list(range(-100, 20_000, 1000)) + [20_100]
    assert _coverage_findings(10_000, periodic, exact=False) == set()
    assert _coverage_findings(10_000, periodic, exact=True) == {"TELEMETRY-007"}
    assert _coverage_findings(10_000, sorted(periodic + [10_000]), exact=True) == set()
    assert _coverage_findings(10_001, sorted(periodic + [10_000]), exact=True) == {"TELEMETRY-007"}
