"""Issue 38, "no number on the submitter's word": the result format version, the telemetry period and the peak
are derived (from the rules version the logs declare, the periods the harness samples at, the sourced peak table),
so editing or deleting trial.json's copy switches no check off. Each forgery is made on a copy of the committed
resnet-mini example (rules 1.0, whose logs carry no format version) by tests/forge.py."""
from __future__ import annotations

from pathlib import Path

import forge
import pytest

from trainmark.checker.checks import evidence_format
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"
DERIVED = {"TRIALJSON-004", "TELEMETRY-004", "TELEMETRY-008", "WORK-010"}


def _check(root, capsys):
    return forge.check_errors(root, capsys, "--no-reevaluate")


def _trial_dirs(root) -> list[Path]:
    return sorted(p for p in forge.bench_dir(root).glob("trial_*") if p.is_dir())


def _drop(key: str):
    """An edit of trial.json that deletes ``key`` (forge.edit_json writes what an edit returns, when not None)."""
    def edit(data: dict) -> None:
        del data[key]
    return edit


def _files(report, code: str) -> list[str]:
    return [f["file"] for f in report["findings"] if f["rule"] == code]


def test_released_rules_imply_result_format_2_and_rules_without_a_release_format_1():
    assert evidence_format.expected_format(get_rules("resnet-mini", "1.0")) == 2
    assert evidence_format.expected_format(get_rules("resnet-mini", "1.1")) == 2
    assert evidence_format.expected_format(get_rules("tiny-test", rules_root=TEST_RULES)) == 1


def test_the_untouched_example_has_no_finding_of_the_derived_figures(ex, capsys):
    rc, errors, report = _check(ex, capsys)
    assert rc == 0 and not errors
    assert not {f["rule"] for f in report["findings"]} & DERIVED


@pytest.mark.parametrize("claim", [1, 2.0])
def test_a_format_claimed_below_the_rules_or_not_an_integer_with_every_telemetry_csv_deleted_fails(ex, capsys,
                                                                                                   claim):
    """format_version 1 (or 2.0) in every trial.json and every telemetry.csv deleted: rules 1.0's logs carry no
    format version, so before issue 38 the claim decided that no telemetry was required."""
    for trial in _trial_dirs(ex):
        forge.edit_json(trial / "trial.json", lambda d: d.update(format_version=claim))
        (trial / "telemetry.csv").unlink()
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and {"TRIALJSON-004", "TELEMETRY-004"} <= errors
    assert len(_files(report, "TELEMETRY-004")) == len(_trial_dirs(ex))
    assert all(f.endswith("/trial.json") for f in _files(report, "TRIALJSON-004"))


def test_the_telemetry_record_deleted_from_trial_json_is_telemetry_008(ex, capsys):
    forge.edit_json(forge.bench_dir(ex) / "trial_2" / "trial.json", _drop("telemetry"))
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "TELEMETRY-008" in errors
    files = _files(report, "TELEMETRY-008")
    assert len(files) == 1 and files[0].endswith("resnet-mini/trial_2/trial.json")


@pytest.mark.parametrize("period", [5.0, 0.001, "1"])
def test_a_period_the_harness_never_samples_at_is_telemetry_008(ex, capsys, period):
    forge.edit_json(forge.bench_dir(ex) / "trial_4" / "trial.json", lambda d: d["telemetry"].update(period_s=period))
    rc, errors, _ = _check(ex, capsys)
    assert rc == 1 and "TELEMETRY-008" in errors


def test_times_scaled_by_0_3_with_the_peak_kept_are_work_002(ex, capsys):
    """The trial's 0.052 TFLOPS become 0.17, above the 0.157 the harness derived from /proc/cpuinfo."""
    forge.speed_up(forge.bench_dir(ex), 3, 10 / 3)
    rc, errors, _ = _check(ex, capsys)
    assert rc == 1 and "WORK-002" in errors


@pytest.mark.parametrize("edit", [_drop("peak_tflops"), lambda d: d.update(peak_tflops=None)],
                         ids=["deleted", "null"])
def test_times_scaled_by_0_3_with_the_peak_deleted_or_null_are_work_010(ex, capsys, edit):
    """Without trial.json's peak WORK-002 has only the loosest sourced bound for the described CPU (2 cores at
    6.2 GHz x 64 FLOP/cycle, 0.79 TFLOPS), which 0.17 TFLOPS stays under: the missing peak is itself the finding."""
    bench = forge.bench_dir(ex)
    forge.speed_up(bench, 3, 10 / 3)
    forge.edit_json(bench / "trial_3" / "trial.json", edit)
    rc, errors, report = _check(ex, capsys)
    assert rc == 1 and "WORK-010" in errors
    assert all(f.endswith("resnet-mini/result_3.txt") for f in _files(report, "WORK-010"))


def test_the_peak_deleted_from_an_honest_trial_is_work_010(ex, capsys):
    forge.edit_json(forge.bench_dir(ex) / "trial_1" / "trial.json", _drop("peak_tflops"))
    rc, errors, _ = _check(ex, capsys)
    assert rc == 1 and errors == {"WORK-010"}


def test_rules_1_1_results_logging_format_1_without_telemetry_are_trialjson_004_on_both_files(tmp_path, capsys):
    """Rules 1.1 log the format version too: a forger who writes 1 in the MLLOG and trial.json alike (they agree,
    so TRIALJSON-003 is silent) and deletes telemetry.csv is caught by the version the rules imply."""
    import synthetic

    from trainmark.format import mllog

    synthetic.write_submission(tmp_path, get_rules("resnet-mini", "1.1"), synthetic.tiny_reference_model())
    bench = tmp_path / "closed" / "acme" / "results" / "sys1" / "resnet-mini"
    rc, before = forge.check(tmp_path, capsys, "--no-reevaluate")
    assert not {f["rule"] for f in before["findings"]} & DERIVED  # format 2 as the harness writes it

    def claim_1(records):
        forge.record(records, mllog.FORMAT_VERSION)["value"] = 1
    forge.edit_records(bench / "result_2.txt", claim_1)
    forge.edit_json(bench / "trial_2" / "trial.json", lambda d: d.update(format_version=1))
    (bench / "trial_2" / "telemetry.csv").unlink()
    rc, report = forge.check(tmp_path, capsys, "--no-reevaluate")
    assert rc == 1 and {"TRIALJSON-004", "TELEMETRY-004"} <= forge.error_codes(report)
    assert sorted(f.rsplit("/", 1)[1] for f in _files(report, "TRIALJSON-004")) == ["result_2.txt", "trial.json"]
    assert "TRIALJSON-003" not in forge.error_codes(report)
