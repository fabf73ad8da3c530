"""The only compliance configs mlperf-logging's engine may run, and the values that pick them.

The engine executes the ``CODE``/``PRE``/``POST``/``CHECK`` strings of every config it loads,
and MLPerf's own configs choose the next config from a logged value:
``enqueue_config('training_4.0.0/{}_common.yaml'.format(v['value']))`` on ``submission_division``
(and on ``submission_benchmark``, ``opt_name``). A value such as ``../../x`` would make the
engine load ``x_common.yaml`` from a submitted folder and run its code. Two locks keep a
submission away from that:

1. ``choosing_value_problems``: before the engine sees a file, every value of a key that some
   shipped config passes to ``enqueue_config`` must be a known name (division, benchmark) or a
   plain token; otherwise the file is not run through the engine at all.
2. ``guarded``: while the engine runs, its ``enqueue_config`` and ``open`` accept only the files
   of a ``ConfigAllowlist``: MLPerf's configs shipped inside mlperf-logging, listed from the
   installed package, and the configs trainmark generated itself. Each is read once; anything
   else is refused and recorded, never opened.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import yaml
from mlperf_logging import benchmark_meta
from mlperf_logging.compliance_checker import mlp_compliance

from trainmark.checker.verdict.findings import Findings
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format import mllog
from trainmark.format.layout import DIVISIONS

SECURITY_001 = rule(
    "SECURITY-001", ERROR, "a logged value would make the compliance engine load a file that is not a shipped config "
    "(refused, never opened; the file is not run through the engine)",
    fix="log the division ('closed'/'open'), the benchmark and other names as plain names: a value never names a file",
    why="mlperf-logging's engine loads config files named by logged values (division, benchmark); a value naming "
    "another file would make it read or run that file, so the checker refuses before the engine starts and the file is "
    "not evaluated. It proves only the value is not a plain name.",
    bad="submission_division '../../../tmp/evil'",
    good="submission_division 'closed'", module=__name__)

MLPERF_CONFIG_DIR = os.path.dirname(os.path.abspath(mlp_compliance.__file__))  # as the engine joins paths
_MLPERF_CONFIG = re.compile(r"(?:training|hpc)_\d+\.\d+\.\d+(?:_warn)?/[A-Za-z0-9_]+\.yaml")
TOKEN = re.compile(r"[A-Za-z0-9_]{1,64}")
_ENQUEUE = re.compile(r"enqueue_config\(")


class ConfigAllowlist:
    """Exact files the engine may load: resolved path -> text, each read once."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._mlperf_listed = False
        self._resolved: dict[str, str] = {}  # a config's name or path, as asked for -> its real path, once allowed
        self.refused: list[str] = []   # what the engine asked for and did not get, in order

    def _list_mlperf(self) -> None:
        if self._mlperf_listed:
            return
        self._mlperf_listed = True
        for folder in os.scandir(MLPERF_CONFIG_DIR):
            if not folder.is_dir(follow_symlinks=False) or not folder.name.startswith(("training_", "hpc_")):
                continue
            for f in os.scandir(folder.path):
                rel = f"{folder.name}/{f.name}"
                if _MLPERF_CONFIG.fullmatch(rel) and f.is_file(follow_symlinks=False):
                    self._texts[os.path.realpath(f.path)] = Path(f.path).read_text(encoding="utf-8")

    def add_generated(self, path: Path, text: str) -> None:
        """Allow a config trainmark wrote itself (from its own rule files)."""
        self._texts[os.path.realpath(path)] = text

    def resolve(self, config: str) -> str | None:
        """The allowed file ``config`` names, as the engine would join it, or None."""
        if not isinstance(config, str) or "\x00" in config:
            return None
        if config in self._resolved:  # the engine asks for each of the few configs in use thousands of times
            return self._resolved[config]
        relative = not os.path.isabs(config)
        if relative:
            if not _MLPERF_CONFIG.fullmatch(config):
                return None
            self._list_mlperf()
        joined = os.path.join(MLPERF_CONFIG_DIR, config)
        if os.path.islink(joined):
            return None
        real = os.path.realpath(joined)
        if real not in self._texts:
            return None
        # Its text was read once and is what the engine gets: the path is not looked at again (a generated config
        # is trainmark's own file, an absolute path the engine joined; MLPerf's are in the installed package).
        self._resolved[config] = real
        return real

    def text(self, path: str) -> str | None:
        real = self.resolve(path)
        return None if real is None else self._texts[real]

    def shipped_texts(self, ruleset: str) -> list[str]:
        """The texts of MLPerf's configs for one training ruleset."""
        self._list_mlperf()
        folder = os.path.realpath(os.path.join(MLPERF_CONFIG_DIR, f"training_{ruleset}"))
        return [t for p, t in sorted(self._texts.items()) if os.path.dirname(p) == folder]


ALLOWLIST = ConfigAllowlist()   # MLPerf's shipped configs are listed once per process


@contextlib.contextmanager
def guarded(allowlist: ConfigAllowlist):
    """Run the engine with ``enqueue_config`` and ``open`` limited to ``allowlist``."""

    def enqueue_config(config):
        if allowlist.resolve(config) is None:
            allowlist.refused.append(str(config)[:300])
            return
        mlp_compliance.enqueued_configs.append(config)

    def open_config(path, *args, **kwargs):  # the engine opens nothing but configs
        text = allowlist.text(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
        if text is None:
            allowlist.refused.append(str(path)[:300])
            raise PermissionError(f"trainmark does not let the compliance engine open {str(path)[:300]!r}")
        return io.StringIO(text)

    real_enqueue = mlp_compliance.enqueue_config
    mlp_compliance.enqueue_config = enqueue_config
    mlp_compliance.open = open_config
    try:
        yield allowlist
    finally:
        mlp_compliance.enqueue_config = real_enqueue
        del mlp_compliance.open


_choosing_keys: dict[str, frozenset[str]] = {}


def choosing_keys(ruleset: str) -> frozenset[str]:
    """Keys whose logged value one of the ruleset's shipped configs passes to ``enqueue_config``."""
    if ruleset not in _choosing_keys:
        keys = set()
        for text in ALLOWLIST.shipped_texts(ruleset):
            for record in yaml.load(text, Loader=yaml.BaseLoader) or []:
                body = record.get("KEY") if isinstance(record, dict) else None
                if isinstance(body, dict) and any(_ENQUEUE.search(str(body.get(k, ""))) for k in ("PRE", "POST")):
                    keys.add(body.get("NAME"))
        _choosing_keys[ruleset] = frozenset(keys)
    return _choosing_keys[ruleset]


def mlperf_benchmarks() -> frozenset[str]:
    return frozenset(benchmark_meta.get_result_file_counts("training")) | {"maskrcnn"}


def choosing_value_problems(events, ruleset: str) -> list[tuple[object, str]]:
    """(event, why) for every logged value that would choose a config and is not a known name."""
    keys = choosing_keys(ruleset)
    problems = []
    for e in events:
        if e.key not in keys:
            continue
        v = e.value
        if e.key == mllog.SUBMISSION_DIVISION:
            ok, want = v in DIVISIONS, "'closed' or 'open'"
        elif e.key == mllog.SUBMISSION_BENCHMARK:
            ok, want = isinstance(v, str) and v in mlperf_benchmarks(), "an MLPerf Training benchmark name"
        else:
            ok, want = isinstance(v, str) and TOKEN.fullmatch(v) is not None, "a plain name [A-Za-z0-9_]"
        if not ok:
            problems.append((e, want))
    return problems


def refused_findings(result, rel: str, findings: Findings) -> None:
    """SECURITY-001 for every config the engine asked for and the allow-list refused (``result`` an
    ``engine.EngineResult``): a logged value tried to name a file."""
    for config in result.refused:
        findings.add(SECURITY_001, rel, f"the compliance engine asked for {config!r}, which is neither a config "
                     f"trainmark generated nor one mlperf-logging ships; refused, never opened",
                     expected="a shipped or generated config", seen=config)
