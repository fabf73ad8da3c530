"""The hardened MLLOG reader (trainmark/format/mllog_read.py): events out, every bad line a Problem in."""
from __future__ import annotations

import ast
import gc
import json
from pathlib import Path

from trainmark.checker.read.mllog_read import RULE_OF_KIND, read_events
from trainmark.checker.verdict.findings import Findings
from trainmark.format import mllog, mllog_read
from trainmark.format.mllog_read import Problem, read_records

ROOT = Path(__file__).resolve().parents[1]


def _line(key: str = "seed", value=1, **extra) -> str:
    record = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": key, "value": value,
              "metadata": {}, **extra}
    return mllog.PREFIX + json.dumps(record)


def test_every_bad_line_is_one_problem_with_its_line_and_kind():
    lines = [_line(), "shell output", _line() + " " + _line(), mllog.PREFIX + "{not json",
             mllog.PREFIX + '{"time_ms": 1, "key": "k", "value": 1, "metadata": {}, "time_ms": 2}',
             _line(value=2 ** 70), _line(time_ms="soon"), _line(value="x" * mllog_read.DEFAULT_KEY_LIMIT),
             mllog.PREFIX + "x" * (mllog_read.MAX_LINE + 1), "", _line("epoch_start")]
    data = ("\n".join(lines[:-1]) + "\r\n" + lines[-1]).encode() + b"\n\xff\xfe"
    problems: list[Problem] = []
    events = read_records(data, strict=True, problem=problems.append)
    assert [(e.line, e.key) for e in events] == [(1, "seed"), (11, "epoch_start")]
    assert [(p.line, p.kind) for p in problems] == [
        (2, mllog_read.NOT_A_RECORD), (3, mllog_read.MARKER_TWICE), (4, mllog_read.INVALID_JSON),
        (5, mllog_read.DUPLICATE_KEY), (6, mllog_read.BAD_NUMBER), (7, mllog_read.BAD_FIELD),
        (8, mllog_read.RECORD_TOO_LONG), (9, mllog_read.LINE_TOO_LONG), (12, mllog_read.NOT_UTF8),
        (10, mllog_read.CRLF)]
    assert all(p.message.startswith(f"line {p.line}") for p in problems if p.kind != mllog_read.CRLF)
    assert read_records(data, strict=True) == events  # without a sink the problems are dropped


def test_the_record_count_is_bounded(monkeypatch):
    monkeypatch.setattr(mllog_read, "MAX_EVENTS", 3)
    problems: list[Problem] = []
    events = read_records("\n".join([_line()] * 5).encode(), strict=False, problem=problems.append)
    assert len(events) == 3 and [(p.line, p.kind) for p in problems] == [(4, mllog_read.OVER_BUDGET)]


def test_mlperf_files_are_read_from_the_last_marker_of_lines_that_have_one():
    data = ("noise\n" + "prefix " + _line("run_start") + "\n").encode("latin-1")
    problems: list[Problem] = []
    (event,) = read_records(data, strict=False, problem=problems.append)
    assert (event.line, event.key, problems) == (2, "run_start", [])


def test_the_checker_turns_every_kind_into_its_finding():
    assert set(RULE_OF_KIND) == set(mllog_read.KINDS)
    findings = Findings()
    read_events(b"shell output\n" + _line(value=2 ** 70).encode(), "r.txt", findings, strict=True)
    assert [(f.rule, f.line, f.file) for f in findings] == [("MLLOG-001", 1, "r.txt"), ("NUMBER-001", 2, "r.txt")]


def test_the_marker_is_spelled_once():
    """Only trainmark/format/mllog.py holds the ':::MLLOG ' marker as a string of its own."""
    spelled = []
    for folder in ("trainmark", "harness", "checker", "rules", "reference", "report"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(n, ast.Constant) and n.value == mllog.PREFIX for n in ast.walk(tree)):
                spelled.append(str(path.relative_to(ROOT)))
    assert spelled == ["trainmark/format/mllog.py"]


# Issue 42: a record is decoded with raw_decode when that is what decode would do; every verdict stays decode's.
PAYLOADS = [
    '{"time_ms": 1, "key": "k", "value": 1, "metadata": {}}',
    '{"time_ms": 1, "key": "k", "value": 1, "metadata": {}, "key": "j"}',                 # a repeated key
    '{"time_ms": 1, "key": "k", "value": {"a": 1, "a": 2}, "metadata": {}}',              # repeated deeper
    '{"time_ms": 1, "key": "k", "value": 18446744073709551617, "metadata": {}}',          # 2**64 + 1
    '{"time_ms": 1, "key": "k", "value": -9999999999999999999, "metadata": {}}',          # 19 digits: kept
    '{"time_ms": 1, "key": "k", "value": 18446744073709551616, "metadata": {}}',          # 2**64: kept
    '{"time_ms": 1, "key": "k", "value": ' + "9" * 5000 + ', "metadata": {}}',             # past int max_str_digits
    '{"time_ms": 1, "key": "k", "value": 1, "metadata": {}} {"time_ms": 2}',              # extra data
    '{"time_ms": 1, "key": "k", "value": 1, "metadata": {}}  ',                           # trailing blanks
    '  {"time_ms": 1, "key": "k", "value": 1, "metadata": {}}',                           # leading blanks
    '{"time_ms": 1, "key": "k", "value": [' * 3 + "]" * 3, "[1, 2]", "", "{", '"text"', "nan", "NaN",
    '{"a": 1, "a": 1e999999, "b": ' + "9" * 30 + "}",                                     # duplicate before big int
    "[" * 5000 + "]" * 5000,                                                               # deeper than recursion
]


def test_the_quick_decode_gives_decodes_verdict_on_every_payload():
    for payload in PAYLOADS:
        assert mllog_read._decode(payload) == mllog_read._decode_strictly(payload), payload


def test_a_repeated_key_and_a_huge_integer_are_still_refused():
    assert mllog_read._decode(PAYLOADS[1])[2] == mllog_read._decode(PAYLOADS[2])[2] == mllog_read.DUPLICATE_KEY
    assert mllog_read._decode(PAYLOADS[3])[2] == mllog_read._decode(PAYLOADS[6])[2] == mllog_read.BAD_NUMBER
    assert mllog_read._decode(PAYLOADS[4])[0]["value"] == -9999999999999999999
    assert mllog_read._decode(PAYLOADS[7])[2] == mllog_read.INVALID_JSON
    assert mllog_read._decode(PAYLOADS[8])[0] == mllog_read._decode(PAYLOADS[9])[0] == json.loads(PAYLOADS[0])


def test_the_collector_is_paused_while_reading_and_left_as_it_was():
    seen = []
    read_records((_line() + "\n" + "shell\n").encode(), strict=True, problem=lambda p: seen.append(gc.isenabled()))
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        read_records(_line().encode(), strict=True)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
    try:
        with mllog_read.collector_paused():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_mlperf_lines_are_cut_as_open_reads_them(tmp_path):
    """Universal newlines: '\\r\\n' and a lone '\\r' end a line, line numbers as open() counts them."""
    data = (b"x :::MLLOG {\"a\": 1}\r\nshell\r:::MLLOG {\"b\": 2}  \n\n\x85 :::MLLOG {\"c\"}\x0c\r\r\n"
            b"tail :::MLLOG one :::MLLOG {\"d\": 4}")
    path = tmp_path / "result_0.txt"
    path.write_bytes(data)
    with open(path, encoding="latin-1") as f:
        expected = [(n, line[line.rfind(mllog.PREFIX):].strip()) for n, line in enumerate(f, start=1)
                    if mllog.PREFIX in line]
    assert list(mllog_read._mlperf_lines(data)) == expected
    assert [n for n, _ in expected] == [1, 3, 5, 7]


def test_the_short_path_accepts_only_what_parse_accepts():
    """``_well_formed`` returns a record exactly when ``_parse`` does, the same one; else ``_parse`` words it."""
    good = {"time_ms": 1.5e12, "key": "seed", "value": {"a": [1]}, "metadata": {"file": "x.py"},
            "event_type": "POINT_IN_TIME"}
    variants = [good, {**good, "time_ms": True}, {**good, "time_ms": float("nan")}, {**good, "time_ms": 1e16},
                {**good, "time_ms": -1}, {**good, "time_ms": 7}, {**good, "key": ""}, {**good, "key": 3},
                {**good, "metadata": []}, {**good, "event_type": "LATER"}, {**good, "value": "v" * 3000},
                {k: v for k, v in good.items() if k != "value"}, {**good, "value": [[[[[[[[[1]]]]]]]]] * 5},
                {**good, "value": 2 ** 65}]
    payloads = [json.dumps(v) for v in variants] + [
        json.dumps(good) + " ", " " + json.dumps(good), "[1]", "{}", "{bad", '{"time_ms": 1, "time_ms": 2}',
        json.dumps({**good, "value": json.loads("[" * 40 + "]" * 40)}), json.dumps(good).replace("1.5", "NaN"),
        # a repeated key at each level, alone and beside a colon or a brace inside a string
        json.dumps(good).replace('"key": "seed"', '"key": "seed", "key": "seed"'),
        json.dumps(good).replace('{"file": "x.py"}', '{"file": "x.py", "file": "y.py"}'),
        json.dumps(good).replace('{"a": [1]}', '{"a": [1], "a": [2]}'),
        json.dumps(good).replace('{"a": [1]}', '{"a": [1], "b": {"c": 1, "c": 2}}'),
        json.dumps(good).replace('{"a": [1]}', '{"a": [{"c": 1, "c": 2}]}'),
        json.dumps(good).replace('"x.py"', '"x:y.py"'),
        json.dumps(good).replace('"x.py"', '"x:y.py", "file": "z"'),
        json.dumps(good).replace('"x.py"', '"x\\u003ay.py", "file": "z"'),
        json.dumps(good).replace('"x.py"', '"{x.py"'), json.dumps(good).replace('"x.py"', '"{x.py", "file": "z"'),
        json.dumps({**good, "value": "a:b"}), json.dumps({**good, "value": ["{", ":"]})]
    for strict in (True, False):
        for payload in payloads:
            record, _, _ = mllog_read._parse(payload, strict)
            assert mllog_read._well_formed(payload, strict) in (None, record)
            if mllog_read._well_formed(payload, strict) is None and payload == json.dumps(good):
                raise AssertionError("the common record must take the short path")


def test_the_readers_events_are_the_dataclass_ones():
    """``_event`` builds what ``Event(...)`` builds: equal, same hash and repr, and still frozen."""
    import dataclasses

    import pytest
    fields = (3, ":::MLLOG {}", 1.0, "seed", 7, {"file": "x"}, None)
    built, made = mllog_read._event(*fields), mllog_read.Event(*fields)
    assert built == made and repr(built) == repr(made) and dataclasses.astuple(built) == dataclasses.astuple(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.key = "other"
