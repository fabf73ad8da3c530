"""Run mlperf-logging's compliance engine on validated events and structure its messages.

The engine (``mlp_compliance``) is reused as it is, with three precautions learnt from
its source: a fresh checker per file (an instance keeps the previous file's messages),
the module-global ``enqueued_configs`` queue emptied before and after each run, and
only pre-validated lines fed to it (see ``mllog_read``). It keeps one message per key;
the checker wants every failing line, so the messages are recorded as they are put.
The engine re-reads and re-parses its rule file for every log file with the pure-Python
YAML parser (about 85 % of its time here); while it runs, its ``yaml`` is a stand-in
that parses each rule file's text once. Each rule file is handed only the lines of the keys it names (the
engine skips every other line, after a caught ``KeyError``), in order: the same checks, a fraction of the loop.

The engine executes the code inside every config it loads, so it runs only under
``compliance_configs.guarded``: it can load MLPerf's shipped configs and the ones trainmark
generated, nothing else; what it asked for and was refused comes back in ``refused``.
"""
from __future__ import annotations

import builtins
import contextlib
import copy
import importlib
import re
import signal
import threading
from dataclasses import dataclass

import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from trainmark.checker.mlperf.compliance_configs import ALLOWLIST, guarded
from trainmark.format.mllog_read import TOKEN, Event, collector_paused
from trainmark.interrupts import SIGNALS

TRAINMARK_PARSER_RULESET = "6.1.0"  # only picks mlperf-logging's line parser
_PARSER_MODULE = re.compile(r"\d{1,2}\.\d{1,2}\.\d{1,2}")

_TAG = re.compile(r"#\s*([A-Z]+-\d{3})\b")
_CHECK_FAILED = re.compile(r"CHECK for '(?P<key>.*?)' failed in line (?P<line>\d+):\n.*?\nfailed test: (?P<test>.*?)\n"
                           r"current context", re.S)
_CHECK_CRASHED = re.compile(r"Failed executing CHECK code:\n(?P<test>.*?)\ntriggered by line:\n(?P<text>.*?)\n"
                            r"current context", re.S)
_CODE_CRASHED = re.compile(r"Failed executing code (?P<what>\w+) code triggered by line :\n(?P<text>.*)", re.S)
_REQUIRED = re.compile(r"Required (?P<req>[A-Z_()0-9]+) occurrence of '(?P<key>.*?)' but found (?P<n>\d+)")
_REQUIRED_ALTERNATIVES = re.compile(r"Required AT_LEAST_ONE occurrence of (?P<keys>.*)")
_AT_LEAST_ONE_CHECK = re.compile(r"Failed checks for (?P<key>.*?) : (?P<test>.*)", re.S)
_END_FAILED = re.compile(r"failed test: (?P<test>.*?)\ncurrent context", re.S)


@dataclass(frozen=True)
class EngineMessage:
    rule: str | None      # the tag of the failed test (e.g. TARGET-001), else None
    kind: str             # "check", "required", "other"
    key: str | None
    line: int | None      # 1-based file line
    test: str             # the failed test, its tag removed
    text: str             # the engine's message, first line


@dataclass(frozen=True)
class EngineResult:
    messages: list[EngineMessage]
    crashed: str | None   # the exception that stopped the engine, if any
    refused: tuple[str, ...] = ()   # configs the engine asked for that are not ours nor MLPerf's shipped ones

    @property
    def valid(self) -> bool:
        return not self.messages and self.crashed is None and not self.refused


class _ParseOnce:
    """Stands in for the ``yaml`` module inside ``mlp_compliance``: same loader, parsed once per text."""

    BaseLoader = yaml.BaseLoader

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, type], object] = {}

    def load(self, stream, Loader):
        return _copied(self.parsed(stream.read(), Loader))

    def parsed(self, text: str, Loader=yaml.BaseLoader):
        """The rule file's parse, shared: never hand it to the engine uncopied."""
        key = (text, Loader)
        if key not in self._parsed:
            self._parsed[key] = yaml.load(text, Loader=Loader)
        return self._parsed[key]


def _copied(value):
    """A deep copy of a BaseLoader parse (dicts, lists and strings only: strings are immutable, shared); any other
    type goes through ``copy.deepcopy``. The engine gets a fresh copy per log file, so it is made without
    ``copy.deepcopy``'s memo bookkeeping (a BaseLoader parse shares no containers)."""
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) for v in value]
    return value if type(value) is str else copy.deepcopy(value)


_YAML_ONCE = _ParseOnce()


@contextlib.contextmanager
def _rule_files_parsed_once():
    real = mlp_compliance.yaml
    mlp_compliance.yaml = _YAML_ONCE
    try:
        yield
    finally:
        mlp_compliance.yaml = real


_COMPILED: dict[str, dict[str, object]] = {"eval": {}, "exec": {}}   # mode -> source -> code
_COMPILED_EVAL, _COMPILED_EXEC = _COMPILED["eval"], _COMPILED["exec"]
_MAX_COMPILED = 4096  # the CHECK/PRE/POST strings of the rule files in use: a few hundred


def _compiled(source: str, mode: str):
    codes = _COMPILED[mode]
    code = codes.get(source)
    if code is None:
        if len(codes) >= _MAX_COMPILED:
            codes.clear()
        code = codes[source] = compile(source, "<mlperf-logging rule>", mode)
    return code


def _eval_once(source, globals=None, locals=None):  # noqa: A002 - eval's own parameter names
    # the cache looked up here first: one call less for each of ~200,000 lines (the engine passes strings only)
    return builtins.eval(_COMPILED_EVAL.get(source) or _compiled(source, "eval"), globals, locals)


def _exec_once(source, globals=None, locals=None):  # noqa: A002
    return builtins.exec(_COMPILED_EXEC.get(source) or _compiled(source, "exec"), globals, locals)


@contextlib.contextmanager
def _code_compiled_once():
    """The engine ``eval``s and ``exec``s its rule files' CHECK/PRE/POST strings for every line, compiling each
    string again every time (about half its time on a large folder). While it runs, its module's ``eval`` and
    ``exec`` compile each string once: the same code objects, run with the same namespaces, the same results."""
    mlp_compliance.eval, mlp_compliance.exec = _eval_once, _exec_once
    try:
        yield
    finally:
        del mlp_compliance.eval, mlp_compliance.exec


def _parser(ruleset: str):
    if not _PARSER_MODULE.fullmatch(ruleset):  # callers pass known rulesets; never import a crafted name
        raise ValueError(f"not a ruleset version: {ruleset[:40]!r}")
    return importlib.import_module(
        f"mlperf_logging.compliance_checker.mlp_parser.ruleset_{ruleset.replace('.', '')}")


@contextlib.contextmanager
def _interrupts_held():
    """Ctrl-C, and the signals ``trainmark.interrupts`` turns into one (SIGTERM, SIGHUP), held while the engine runs and
    raised as soon as it returns. The engine catches everything with bare ``except:``: an interrupt that landed
    inside a rule's code became a "Failed executing CHECK code" message, a compliance failure, and the check went on
    to exit 1 instead of stopping with 130. A signal whose handler is not Python's (default, ignored) is left as it
    is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    numbers = [getattr(signal, n) for n in SIGNALS if hasattr(signal, n)]
    previous = {s: signal.signal(s, lambda signum, _frame: held.append(signum))
                for s in numbers if callable(signal.getsignal(s))}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if held:
            previous[held[0]](held[0], None)  # the handler it would have met: raises KeyboardInterrupt or SystemExit


@collector_paused()  # the LogLines: as many small containers as the records
def run_engine(events: list[Event], config: str, ruleset: str = TRAINMARK_PARSER_RULESET,
               werror: bool = True) -> EngineResult:
    """Check ``events`` against the rule file ``config``: one trainmark generated
    (``ALLOWLIST.add_generated``) or one MLPerf ships (relative to the engine's folder). ``werror``: the
    engine's warnings (an EXACTLY_ONE key logged several times with one value) fail too, as they do for
    trainmark's own logs; MLPerf's package checker runs without ``--werror``, so its folders pass False."""
    parser = _parser(ruleset)
    loglines = _loglines(parser, events)
    if isinstance(loglines, str):
        return EngineResult([], loglines)
    checker = mlp_compliance.make_checker(usage="training", ruleset=ruleset, quiet=True, werror=werror)
    recorded: list[tuple[str, str | None]] = []
    _record_messages(checker, recorded)
    _hand_each_config_its_keys(checker)
    del mlp_compliance.enqueued_configs[:]
    del ALLOWLIST.refused[:]
    crashed = None
    try:
        with _interrupts_held(), _rule_files_parsed_once(), _code_compiled_once(), guarded(ALLOWLIST):
            checker.check_loglines(loglines, config)
    except Exception as exc:  # noqa: BLE001 - unguarded evals and asserts inside the engine
        crashed = f"{type(exc).__name__}: {exc}"
    finally:
        del mlp_compliance.enqueued_configs[:]
    refused = tuple(ALLOWLIST.refused)
    del ALLOWLIST.refused[:]
    return EngineResult(_messages(recorded, events), crashed, refused)


def _messages(recorded: list[tuple[str, str | None]], events: list[Event]) -> list[EngineMessage]:
    """The engine's messages structured, each with its line (the maps are built only when there is a message)."""
    if not recorded:
        return []
    line_of_text = {}
    for e in events:
        line_of_text.setdefault(e.text.strip(), e.line)
    lines_of_key: dict[str, list[int]] = {}
    for e in events:
        lines_of_key.setdefault(e.key, []).append(e.line)
    return [_structure(msg, key, line_of_text, lines_of_key) for msg, key in recorded]


def _config_keys(text: str | None) -> frozenset[str] | None:
    """The keys a rule file checks, as ``configured_checks`` collects them (``KEY: NAME``); None when the lines
    must go to the engine unfiltered: a file not allowed (the engine's ``open`` refuses it), one that does not parse
    the engine's way, or one whose code names ``loglines`` (a BEGIN block runs with the engine's locals)."""
    if text is None or "loglines" in text:
        return None
    try:
        return frozenset(k["KEY"]["NAME"] for k in _YAML_ONCE.parsed(text) if list(k)[0] == "KEY")
    except Exception:  # noqa: BLE001 - whatever the engine does with such a file, it does it unfiltered
        return None


def _hand_each_config_its_keys(checker) -> None:
    """Each rule file is run on the lines of the keys it names, in order: the engine skips every other line
    (``reported_values[line.key]`` raises, ``continue``) after a raised and caught ``KeyError`` per line and rule
    file, which was a third of its time on MLPerf folders (most lines are keys the division's and benchmark's
    files do not name). The same lines reach the same checks in the same order; the counts it verifies are of
    these keys only; ``check_loglines``'s "no log lines" test sees the unfiltered list."""
    configured_checks = checker.configured_checks

    def configured(loglines, config_file):
        keys = _config_keys(ALLOWLIST.text(config_file))
        configured_checks(loglines if keys is None else [ll for ll in loglines if ll.key in keys], config_file)

    checker.configured_checks = configured


def _loglines(parser, events: list[Event]) -> list | str:
    """The engine's ``LogLine`` of every event, built from the records the reader parsed (``check_loglines``
    takes parsed lines): a record is JSON-decoded once, not again by the engine's line parser. The reader
    hands over each record from ':::MLLOG ' on, so the parser's ``strip_and_dedup`` (a regex per line,
    quadratic in its length) is skipped too. Every parser from ruleset 0.7.0 on builds its ``LogLine``
    exactly so (full string, float time_ms, key, {value, metadata}, line); 0.6.0's regex parser is called
    as it is. A string: why a validated line could not be parsed."""
    loglines = []
    decoded = not hasattr(parser, "LINE_REGEX")
    token, logline = parser.TOKEN, getattr(parser, "LogLine", None)  # looked up once, not twice per line
    if decoded and token == TOKEN:  # the reader's invariant: every event's text starts with the token
        return [logline(e.text.strip(), e.time_ms, e.key, {"value": e.value, "metadata": e.metadata}, e.line)
                for e in events]
    for e in events:
        text = e.text.strip()
        if not text.startswith(token):
            text = token + text.split(token, 1)[-1]
        if decoded:
            loglines.append(logline(text, e.time_ms, e.key, {"value": e.value, "metadata": e.metadata}, e.line))
            continue
        try:
            loglines.append(parser.string_to_logline(e.line, text))
        except (ValueError, KeyError, TypeError):  # cannot happen for validated events; never pass silently
            return f"mlperf-logging could not parse validated line {e.line}"
    return loglines


def _record_messages(checker, recorded: list) -> None:
    """Keep every message, minus those a later rule file overrides (as the engine does)."""
    put_message, overwrite = checker.put_message, checker.overwrite_messages

    def put(msg, key=None):
        recorded.append((msg, key))
        put_message(msg, key)

    def overwrite_messages(keys):
        keys = set(keys)
        recorded[:] = [(m, k) for m, k in recorded if k is None or k not in keys]
        overwrite(keys)

    checker.put_message = put
    checker.overwrite_messages = overwrite_messages


def _split_tag(test: str) -> tuple[str | None, str]:
    m = _TAG.search(test)
    if m is None:
        return None, test.strip()
    return m.group(1), test[: m.start()].strip()


def _structure(msg: str, key: str | None, line_of_text: dict, lines_of_key: dict) -> EngineMessage:
    first = msg.split("\n", 1)[0]
    if m := _CHECK_FAILED.match(msg):
        rule, test = _split_tag(m["test"])
        return EngineMessage(rule, "check", m["key"], int(m["line"]), test, first)
    if m := _CHECK_CRASHED.match(msg):
        rule, test = _split_tag(m["test"])
        return EngineMessage(rule, "check", key, line_of_text.get(m["text"].strip()), test, first)
    if m := _CODE_CRASHED.match(msg):
        return EngineMessage(None, "check", key, line_of_text.get(m["text"].strip()), f"{m['what']} code", first)
    if m := _REQUIRED.match(msg):
        lines = lines_of_key.get(m["key"], [])
        line = lines[1] if len(lines) > 1 else None
        return EngineMessage(None, "required", m["key"], line, f"{m['req']} occurrence", msg.strip())
    if m := _REQUIRED_ALTERNATIVES.match(msg):
        return EngineMessage(None, "required", None, None, "AT_LEAST_ONE occurrence", msg.strip())
    if m := _AT_LEAST_ONE_CHECK.match(msg):
        rule, test = _split_tag(m["test"])
        return EngineMessage(rule, "check", m["key"], None, test, first)
    if m := _END_FAILED.match(msg):
        rule, test = _split_tag(m["test"])
        return EngineMessage(rule, "check", None, None, test, first)
    return EngineMessage(None, "other", key, None, "", msg.strip()[:400])
