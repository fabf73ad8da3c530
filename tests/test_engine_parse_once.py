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


# Each rule file is handed only the lines of the keys it names (issue 42): the engine's verdicts must not move.
FIXTURE = ROOT.parent / "shared" / "fixtures" / "mlperf-training-v4.0"
RESNET = FIXTURE / "Dell" / "results" / "XE8640x4H100-SXM-80GB" / "resnet" / "result_0.txt"


def _mutated(how: str) -> bytes:
    lines = RESNET.read_bytes().split(b"\n")
    first = {k: next(i for i, line in enumerate(lines) if f'"key": "{k}"'.encode() in line)
             for k in ("run_stop", "block_start", "submission_division", "init_stop", "opt_name")}
    if how == "no run_stop":
        del lines[first["run_stop"]]
    elif how == "a block before init_stop":
        lines.insert(first["init_stop"], lines[first["block_start"]])
    elif how == "two divisions":
        lines.insert(first["init_stop"], lines[first["submission_division"]].replace(b'"closed"', b'"open"'))
    elif how == "unknown keys everywhere":
        lines = [x for line in lines for x in (line, line.replace(b'"key": "', b'"key": "zz_'))]
    elif how == "optimizer renamed":
        lines[first["opt_name"]] = lines[first["opt_name"]].replace(b'"lars"', b'"adam"')
    return b"\n".join(lines)


@pytest.mark.skipif(not RESNET.is_file(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
@pytest.mark.parametrize("how", ["as submitted", "no run_stop", "a block before init_stop", "two divisions",
                                 "unknown keys everywhere", "optimizer renamed"])
def test_each_rule_file_sees_only_its_keys_and_judges_the_same(how, monkeypatch):
    events = read_records(_mutated(how), strict=False)
    filtered = engine.run_engine(events, "training_4.0.0/common.yaml", "4.0.0", werror=False)
    monkeypatch.setattr(engine, "_config_keys", lambda _text: None)  # every line to every rule file, as the engine
    unfiltered = engine.run_engine(events, "training_4.0.0/common.yaml", "4.0.0", werror=False)
    assert filtered == unfiltered
    assert filtered.valid == (how in ("as submitted", "unknown keys everywhere"))


def test_a_rule_file_whose_code_names_loglines_gets_every_line():
    common = (Path(engine.mlp_compliance.__file__).parent / "training_4.0.0" / "common.yaml").read_text()
    keys = engine._config_keys(common)
    assert {"run_start", "run_stop", "submission_division"} <= keys and "weights_initialization" not in keys
    assert engine._config_keys(common + "\n- BEGIN:\n    CODE: \" s['n'] = len(loglines) \"\n") is None
    assert engine._config_keys(None) is None and engine._config_keys("- KEY:\n    REQ: EXACTLY_ONE\n") is None


@pytest.mark.skipif(not RESNET.is_file(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_an_interrupt_inside_the_engine_stops_the_check(signame, monkeypatch):
    """The engine's bare ``except:`` turned a Ctrl-C (or the command line's SIGTERM, raised as one) inside a rule's
    code into a compliance failure and went on; it is held while the engine runs and raised when it returns."""
    import os
    import signal

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(getattr(signal, signame), interrupt)
    real, sent = engine._eval_once, []

    def once(source, *namespaces):
        if not sent:
            sent.append(os.kill(os.getpid(), getattr(signal, signame)))
        return real(source, *namespaces)

    monkeypatch.setattr(engine, "_eval_once", once)
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.run_engine(read_records(RESNET.read_bytes(), strict=False), "training_4.0.0/common.yaml", "4.0.0",
                              werror=False)
    finally:
        signal.signal(getattr(signal, signame), previous)
    assert sent and signal.getsignal(getattr(signal, signame)) is previous
    monkeypatch.undo()
    assert engine.run_engine(read_records(RESNET.read_bytes(), strict=False), "training_4.0.0/common.yaml", "4.0.0",
                             werror=False).valid  # and nothing is held after it
