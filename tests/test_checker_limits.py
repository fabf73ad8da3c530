"""Issue 18: hostile sizes and numbers are answered fast, as bounded findings, never as a crash.

Each test builds the hostile input the issue reproduced on a clean synthetic submission.
"""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import synthetic

from trainmark.checker import benchmark as benchmark_check
from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safetensors_header import MAX_HEADER, sniff_pickle
from trainmark.checker.verdict.findings import MAX_PER_RULE_AND_FILE, MAX_PER_RULE_AND_FOLDER, Findings, printable
from trainmark.format import mllog_read

BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())
FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.fixture
def root(submission_copy):
    return submission_copy  # conftest: a private copy of the clean synthetic submission


def rules_at(report, file):
    return [f.rule for f in report.findings if f.file == file]


def no_crash(report):
    assert not [f for f in report.findings if f.rule == "CHECKER-001"], [f.message for f in report.findings]


# -- bounded findings ---------------------------------------------------------------------------
def test_findings_are_capped_per_rule_and_file_with_a_count_of_the_rest():
    findings = Findings()
    for i in range(5000):
        findings.add("EPOCHLOG-001", "a/epochs.log", f"line {i} is malformed", line=i + 1)
    findings.add("EPOCHLOG-005", "a/epochs.log", "another rule is still listed", line=1)
    listed = [f for f in findings if f.rule == "EPOCHLOG-001"]
    assert len(listed) == MAX_PER_RULE_AND_FILE
    (more,) = [f for f in findings if f.rule == "LIMIT-001"]
    assert f"and {5000 - MAX_PER_RULE_AND_FILE} more EPOCHLOG-001" in more.message and more.file == "a/epochs.log"
    assert [f.rule for f in findings][MAX_PER_RULE_AND_FILE] == "LIMIT-001"  # where the first dropped one was
    assert any(f.rule == "EPOCHLOG-005" for f in findings)
    assert findings.has_errors() and findings.hidden() == 5000 - MAX_PER_RULE_AND_FILE


def test_findings_are_capped_across_the_files_of_one_folder():
    findings = Findings()
    for k in range(1, 1001):
        findings.add("TRIAL-001", f"b/result_{k}.txt", f"trial {k} is missing")
    assert sum(f.rule == "TRIAL-001" for f in findings) == MAX_PER_RULE_AND_FOLDER
    (more,) = [f for f in findings if f.rule == "LIMIT-001"]
    assert more.file == "b" and f"{1000 - MAX_PER_RULE_AND_FOLDER} more TRIAL-001" in more.message


def test_renamed_result_999999_gives_bounded_findings(root):
    bench = root / BENCH
    (bench / "result_5.txt").rename(bench / "result_999999.txt")
    report = check_path(root, TINY)
    no_crash(report)
    assert report.exit_code == 1
    assert len(report.findings) < 1000  # was 999,994 TRIAL-001 findings (171 s, 1.9 GB)
    assert any(f.rule == "LIMIT-001" and "TRIAL-001" in f.message for f in report.findings)


def test_junk_epochs_log_of_200000_lines_is_bounded(root):
    (root / BENCH / "epochs.log").write_bytes(b"junk\n" * 200_000)
    report = check_path(root, TINY)
    no_crash(report)
    epochlog = rules_at(report, f"{BENCH}/epochs.log")
    assert epochlog.count("EPOCHLOG-001") == MAX_PER_RULE_AND_FILE and "LIMIT-001" in epochlog


# -- what reaches mlperf-logging's engine ----------------------------------------------------------
@pytest.fixture
def engine_inputs(monkeypatch):
    """The texts of every record the compliance engine is given."""
    seen: list[str] = []
    real = benchmark_check.run_engine

    def spy(events, *args, **kwargs):
        seen.extend(e.text for e in events)
        return real(events, *args, **kwargs)
    monkeypatch.setattr(benchmark_check, "run_engine", spy)
    return seen


def test_a_300kb_value_never_reaches_the_quadratic_engine(root, engine_inputs):
    line = synthetic.edit_mllog(root / BENCH / "result_2.txt", "seed", synthetic.set_value("7" * 10 + "x" * 300_000))
    report = check_path(root, TINY)
    no_crash(report)
    assert "MLLOG-010" in rules_at(report, f"{BENCH}/result_2.txt")
    assert any(f.rule == "MLLOG-010" and f.line == line for f in report.findings)
    assert engine_inputs and max(map(len, engine_inputs)) <= mllog_read.MAX_LINE


def test_per_key_limit_is_tight_but_fits_real_records():
    small = ':::MLLOG {"time_ms": 1, "key": "seed", "metadata": {}, "value": "%s"}'
    findings = Findings()
    events = read_events((small % ("x" * 100) + "\n" + small % ("x" * mllog_read.DEFAULT_KEY_LIMIT)).encode(),
                         "r.txt", findings, strict=False)
    assert [e.line for e in events] == [1]
    assert [(f.rule, f.line) for f in findings] == [("MLLOG-010", 2)]


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_every_real_mlperf_record_is_within_the_limits():
    for path in sorted(FIXTURE.rglob("result_*.txt")):
        findings = Findings()
        read_events(path.read_bytes(), path.name, findings, strict=False)
        assert not len(findings), (path, [f.message for f in findings])


def test_many_long_records_exceed_the_engine_budget():
    record = ':::MLLOG {"time_ms": 1, "key": "seed", "metadata": {}, "value": "%s"}' % ("x" * 1900)
    findings = Findings()
    events = read_events("\n".join([record] * 700).encode(), "r.txt", findings, strict=False)
    assert sum(len(e.text) ** 2 for e in events) <= mllog_read.ENGINE_BUDGET
    (limit,) = [f for f in findings if f.rule == "LIMIT-002"]
    assert limit.line == len(events) + 1


def test_too_many_records_exceed_the_engine_budget(monkeypatch):
    monkeypatch.setattr(mllog_read, "MAX_EVENTS", 50)
    record = ':::MLLOG {"time_ms": 1, "key": "seed", "metadata": {}, "value": 1}'
    findings = Findings()
    events = read_events("\n".join([record] * 80).encode(), "r.txt", findings, strict=False)
    assert len(events) == 50 and [f.rule for f in findings] == ["LIMIT-002"]


def test_mllog_011_duplicate_json_key(root):
    path = root / BENCH / "result_2.txt"
    lines = path.read_text(encoding="utf-8").split("\n")
    number = synthetic.mllog_lines_of(path, "eval_accuracy")[0]
    lines[number - 1] = lines[number - 1].replace('"value": ', '"value": 0.99, "value": ', 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    report = check_path(root, TINY)
    assert any(f.rule == "MLLOG-011" and f.line == number and "'value'" in f.message for f in report.findings)


def test_mllog_012_crlf_lines_are_reported_once(root):
    path = root / BENCH / "result_3.txt"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    report = check_path(root, TINY)
    crlf = [f for f in report.findings if f.rule == "MLLOG-012"]
    assert len(crlf) == 1 and crlf[0].file == f"{BENCH}/result_3.txt" and crlf[0].line == 1


# -- numbers out of range -------------------------------------------------------------------------
@pytest.mark.parametrize("key,change", [
    ("eval_accuracy", synthetic.set_value(10 ** 309)),       # OverflowError in float() before
    ("seed", synthetic.set_value(int("9" * 4001))),          # a 4,001-digit seed was accepted
    ("run_stop", lambda r: {**r, "time_ms": 1.7e308}),        # statistics raised on the sum
    ("run_start", lambda r: {**r, "time_ms": -1.7e308}),
    ("run_stop", lambda r: {**r, "time_ms": 10 ** 400}),
])
def test_number_001_out_of_range_is_one_finding_not_a_crash(root, key, change):
    line = synthetic.edit_mllog(root / BENCH / "result_2.txt", key, change)
    report = check_path(root, TINY)
    no_crash(report)
    assert [(f.rule, f.line) for f in report.findings if f.rule == "NUMBER-001"] == [("NUMBER-001", line)]
    assert report.exit_code == 1


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_mlperf_run_stop_beyond_float_is_a_dropped_run(tmp_path):
    import shutil
    root = tmp_path / "training_results_v4.0"
    shutil.copytree(FIXTURE / "Dell", root / "Dell")
    path = next((root / "Dell/results").rglob("resnet/result_1.txt"))
    text = path.read_text(encoding="latin-1")
    at = text.index('"key": "run_stop"')
    start = text.rindex('"time_ms": ', 0, at) + len('"time_ms": ')
    end = text.index(",", start)
    path.write_text(text[:start] + "1" + "0" * 400 + text[end:], encoding="latin-1")
    report = check_path(root)
    no_crash(report)
    assert any(f.rule == "MLPERF-001" and f.file == str(path.relative_to(root))
               and ("outside" in f.message or "beyond 64 bits" in f.message)
               for f in report.findings), [(f.rule, f.file, f.message) for f in report.findings]
    assert any(b["benchmark"] == "resnet" and b["score"]["score_minutes"] is not None
               for b in report.to_dict()["benchmarks"])


# -- safetensors headers -------------------------------------------------------------------------
REFERENCE_NAMES = ("resnet50", "vgg16", "inception-v3", "ds2", "transformer", "lstm",
                   "resnet-mini", "vgg-mini", "inception-mini", "ds2-mini", "transformer-mini", "lstm-mini")


SAFETENSORS_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32",
                      "bool": "BOOL", "float64": "F64", "uint8": "U8", "int8": "I8"}


def reference_header_bytes(name: str) -> int:
    """The safetensors header the harness writes for a reference's weights (8 length bytes and the JSON
    table of its state_dict: dtype, shape, data offsets), built on the meta device."""
    import torch

    from trainmark.reference import registry
    from trainmark.rules import get_rules

    with torch.device("meta"):
        model = registry.for_rules(get_rules(name)).build_model()
    table, offset = {}, 0
    for key, t in model.state_dict().items():
        nbytes = t.numel() * t.element_size()
        dtype = str(t.dtype).removeprefix("torch.")
        table[key] = {"dtype": SAFETENSORS_DTYPES.get(dtype, dtype), "shape": list(t.shape),
                      "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    return 8 + len(json.dumps(table, separators=(",", ":")))


def test_header_cap_fits_every_reference_with_room():
    """MAX_HEADER against the headers of every reference of the latest rules, computed from their models."""
    sizes = {name: reference_header_bytes(name) for name in REFERENCE_NAMES}
    assert min(sizes.values()) > 500 and sizes["inception-v3"] > 50_000  # the tables were built (the largest)
    assert MAX_HEADER >= 10 * max(sizes.values()), sizes


@pytest.mark.parametrize("obj", [{"w": [1.0, 2.0]}, [1, 2, 3]])
@pytest.mark.parametrize("protocol", [0, 1])
def test_old_protocol_pickle_is_named_a_pickle(root, obj, protocol, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("never unpickle")
    monkeypatch.setattr(pickle, "loads", refuse)
    weights = root / BENCH / "trial_1" / "model.safetensors"
    weights.write_bytes(pickle.dumps(obj, protocol=protocol))
    report = check_path(root, TINY)
    assert "HOSTILE-004" in rules_at(report, f"{BENCH}/trial_1/model.safetensors")
    assert sniff_pickle(b'{"__metadata__"') is None


def test_oversized_header_is_refused_without_reading_it(root):
    weights = root / BENCH / "trial_1" / "model.safetensors"
    weights.write_bytes((MAX_HEADER + 1).to_bytes(8, "little") + b"{" + b" " * (MAX_HEADER + 1))
    report = check_path(root, TINY)
    assert any(f.rule == "CONFORM-004" and f"at most {MAX_HEADER}" in f.message for f in report.findings)


# -- names that would act on a terminal -----------------------------------------------------------
def test_printable_escapes_control_sequences_and_surrogates():
    hostile = "ok\x1b[2J\x1b]8;;http://x\x07\nPASS\udcff"
    shown = printable(hostile)
    assert shown.isprintable() and "\x1b" not in shown and "\\x1b[2J" in shown and "\\n" in shown
    assert "\\udcff" in shown
    assert printable("plain/name.txt") == "plain/name.txt"


def test_finding_file_names_are_escaped():
    findings = Findings()
    findings.add("LAYOUT-004", "a/\x1b[32mPASS\x1b[0m\n", "unexpected entry")
    (f,) = list(findings)
    assert f.file.isprintable() and "\\x1b[32m" in f.file
    assert json.loads(json.dumps(f.to_dict()))["file"] == f.file


def test_a_record_hidden_inside_a_value_is_refused(root):
    """mlperf-logging parses from the last ':::MLLOG ' of a line: the engine and the checker must read the same."""
    forged = ':::MLLOG {"time_ms": 1, "key": "seed", "value": 1, "metadata": {}}'
    line = synthetic.edit_mllog(root / BENCH / "result_2.txt", "seed", synthetic.set_value("x " + forged))
    report = check_path(root, TINY)
    assert any(f.rule == "MLLOG-001" and f.line == line and "twice" in f.message for f in report.findings)


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_mlperf_scaling_factor_beyond_float_is_a_finding(tmp_path):
    import shutil
    root = tmp_path / "training_results_v4.0"
    shutil.copytree(FIXTURE / "Dell", root / "Dell")
    folder = root / "Dell/results/XE8640x4H100-SXM-80GB/resnet"
    (folder / "scaling.json").write_text('{"scaling_factor": 1' + "0" * 400 + "}")
    report = check_path(root)
    no_crash(report)
    assert any(f.rule == "MLPERF-005" and f.file.endswith("resnet/scaling.json") for f in report.findings)
