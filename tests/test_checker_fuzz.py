"""Property tests: mutated logs and headers give findings, never exceptions."""
from __future__ import annotations

import io
import json
import shutil

import pytest
import synthetic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks.epochs import check_epochs_log
from trainmark.checker.checks.mllog import check_summary, check_time_order, engine_findings
from trainmark.checker.mlperf import compliance_rules as compliance
from trainmark.checker.mlperf.engine import run_engine
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.read.safetensors_header import HeaderError, parse_header
from trainmark.checker.read.trial_record import extract_trial
from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import load_all
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
RULE_IDS = load_all()
BENCH = "closed/acme/results/sys1/resnet-mini"


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    synthetic.write_submission(root, RULES, synthetic.tiny_reference_model())
    config = compliance.write_compliance_file(RULES, "closed", tmp_path_factory.mktemp("rules"))
    bench = root / BENCH
    return {"root": root, "config": str(config), "mllog": (bench / "result_2.txt").read_bytes(),
            "epochs": (bench / "epochs.log").read_bytes(),
            "header": (bench / "trial_1" / "model.safetensors").read_bytes()}


@st.composite
def mutated(draw, original: bytes):
    """``original`` with a few byte-, line- and JSON-level edits."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "dup_line", "swap_lines", "truncate", "token"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=40))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 200))]
        elif kind in ("dup_line", "swap_lines"):
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "dup_line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif kind == "truncate":
            del data[pos:]
        else:
            token = draw(st.sampled_from([b"NaN", b"null", b"-1", b"[]", b"{}", b'"x"', b"1e999", b"true",
                                         b"\xe2\x80\x93", b"\xff", b"\r", b"9" * 30]))
            data[pos:pos] = token
    return bytes(data)


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(data=st.data())
def test_mllog_pipeline_never_raises(clean, data):
    blob = data.draw(mutated(clean["mllog"]))
    strict = data.draw(st.booleans())
    findings = Findings()
    events = read_events(blob, "r.txt", findings, strict=strict)
    # strict: '\n' ends a line; otherwise lines are cut as mlperf-logging's open() cuts them (universal newlines:
    # a lone '\r' ends one too), so a line number can count CRs
    lines = blob.count(b"\n") + 1 if strict else len(io.TextIOWrapper(io.BytesIO(blob), encoding="latin-1").readlines())
    assert all(1 <= e.line <= max(lines, 1) for e in events)
    assert {f.rule for f in findings} <= {"MLLOG-001", "MLLOG-010", "MLLOG-011", "MLLOG-012", "NUMBER-001",
                                          "LIMIT-001", "LIMIT-002"}
    engine_findings(run_engine(events, clean["config"]), events, "r.txt", compliance.key_rules(RULES, "closed"),
                    findings)
    check_time_order(events, "r.txt", findings)
    record = extract_trial(events, 2, "r.txt", RULES)
    check_summary(record, None, findings)  # the judgement: check_summary reads the record alone
    assert {f.rule for f in findings} <= set(RULE_IDS)
    assert record.train_time_s is None or record.total_time_s is not None


@FAST
@given(data=st.data())
def test_epochs_log_never_raises(clean, data):
    blob = data.draw(mutated(clean["epochs"]))
    findings = Findings()
    lines = check_epochs_log(blob, "epochs.log", RULES, findings)
    assert all(f.rule.startswith("EPOCHLOG-") for f in findings)
    assert len(lines) <= blob.count(b"\n") + 1
    if blob != clean["epochs"] and not lines:
        assert len(findings) > 0


@FAST
@given(raw=st.binary(max_size=300), size=st.integers(0, 10_000))
def test_safetensors_header_parser_raises_only_header_errors(raw, size):
    try:
        table = parse_header(raw, size)
    except HeaderError as exc:
        assert exc.rule == "CONFORM-004"
    else:
        assert all(set(entry) == {"dtype", "shape"} for entry in table.values())


@FAST
@given(data=st.data())
def test_mutated_safetensors_header(clean, data):
    """A mutated header is refused as CONFORM-004 naming the file, or read as exactly the tensors its JSON
    names, each with a dtype and shape; the unmutated header reads as the trained model's tensors."""
    length = int.from_bytes(clean["header"][:8], "little")
    original, data_size = clean["header"][8:8 + length], len(clean["header"]) - 8 - length
    assert set(parse_header(original, data_size)) == set(json.loads(original)) - {"__metadata__"} != set()
    blob = data.draw(mutated(original))
    try:
        table = parse_header(blob, data_size)
    except HeaderError as exc:
        assert exc.rule == "CONFORM-004" and exc.message.startswith("model.safetensors")
    else:
        named = json.loads(blob.decode("utf-8"))
        assert set(table) == set(named) - {"__metadata__"}
        assert all(set(e) == {"dtype", "shape"} and all(d >= 0 for d in e["shape"]) for e in table.values())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whole_check_on_mutated_folder(clean, tmp_path_factory, data):
    root = tmp_path_factory.mktemp("mut")
    shutil.copytree(clean["root"], root, dirs_exist_ok=True)
    bench = root / BENCH
    targets = [bench / "epochs.log", bench / "result_1.txt", bench / "trial_3" / "structure.json",
               bench / "trial_2" / "model.safetensors", root / "closed/acme/systems/sys1.json"]
    for path in data.draw(st.lists(st.sampled_from(targets), min_size=1, max_size=3, unique=True)):
        path.write_bytes(data.draw(mutated(path.read_bytes()[:4000])))
    report = check_path(root, CheckOptions(reference_builder=lambda r: synthetic.tiny_reference_model()))
    assert report.exit_code in (0, 1)
    assert {f.rule for f in report.findings} <= set(RULE_IDS) - {"CHECKER-001"}
    report.to_dict()
