"""The compliance engine is fed the records the reader already parsed (issue 42: parse once)."""
from __future__ import annotations

from pathlib import Path

import pytest

from trainmark.checker.mlperf import engine
from trainmark.format.mllog_read import read_records

ROOT = Path(__file__).resolve().parent.parent
RESULT = next((ROOT / "submissions").rglob("result_1.txt"))


def _events():
    return read_records(RESULT.read_bytes(), strict=True)


@pytest.mark.parametrize("ruleset", ["3.1.0", "4.0.0", "5.0.0", engine.TRAINMARK_PARSER_RULESET])
def test_the_loglines_equal_the_engines_own_parse(ruleset):
    parser = engine._parser(ruleset)
    events = _events()
    own = [parser.string_to_logline(e.line, e.text.strip()) for e in events]
    assert engine._loglines(parser, events) == own


def test_the_engine_decodes_no_json(monkeypatch):
    parser = engine._parser(engine.TRAINMARK_PARSER_RULESET)

    def refuse(_text):
        raise AssertionError("the engine's line parser decoded a record again")

    monkeypatch.setattr(parser, "parse_line", refuse)
    loglines = engine._loglines(parser, _events())
    assert len(loglines) == len(_events()) > 10
    assert loglines[0].value == {"value": _events()[0].value, "metadata": _events()[0].metadata}
