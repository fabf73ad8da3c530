"""Load, validate and query the versioned rule files under ``rules/<version>/``.

The harness, the checker and ``docs/rules.md`` read the numbers from here and only here.
A directory may be injected (``rules_dir``) so tests can judge with a modified copy.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

import yaml

from trainmark.errors import UserError
from trainmark.format import layout

RULES_ROOT = Path(__file__).resolve().parent
SCHEMA_PATH = RULES_ROOT / "schema" / "rules.schema.json"
LATEST_VERSION = "1.2"


class RulesError(UserError):
    """A rule file is missing, unreadable or breaks the schema."""


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same result, 10x faster


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    """One validator for every rule file: ``jsonschema.validate`` re-checks the schema itself on each
    call, which was most of ``trainmark list``'s time (benchmarks/cli_startup.py)."""
    import jsonschema  # only for a rule file that is not byte-identical to a released one

    return jsonschema.validators.validator_for(schema())(schema())  # the schema itself: tests/test_rules.py


def known_versions(rules_root: Path = RULES_ROOT) -> list[str]:
    return sorted(p.name for p in rules_root.iterdir() if p.is_dir() and p.name[0].isdigit())


class Dataset(TypedDict, total=False):
    """Where the data comes from and how it is verified (``dataset:``)."""
    name: str               # the dataset's name, as people know it
    source: str             # where to get it
    license: str
    default_dir: str        # where a run looks when no --data-dir is given
    env_var: str            # the environment variable that overrides default_dir
    files: dict[str, str]   # file name -> sha256 of every file the benchmark reads
    split: dict[str, str]   # what is trained on and what is evaluated, in words
    listing: dict[str, Any]   # full-size datasets: the listing that names every sample
    archives: dict[str, Any]  # full-size datasets: the archives holding the samples


class ReferenceModel(TypedDict, total=False):
    """The model a closed submission must train (``reference_model:``)."""
    id: str                 # the reference's name (a ``base.Reference.name``)
    description: str


class Metric(TypedDict):
    """The quality target (``metric:``)."""
    name: str               # the metric's name in the logs (top1_accuracy, wer, ...)
    direction: str          # "higher" or "lower": which way is better
    target: float           # the quality a trial must reach
    range: list[float | None]   # the metric's [low, high]; None where unbounded
    source: str             # where the target comes from


class Evaluation(TypedDict, total=False):
    """When and on what a trial is evaluated (``evaluation:``)."""
    every_epochs: int       # an evaluation after every this many epochs
    eval_set: str           # what is evaluated, in words
    max_eval_time_ratio: dict[str, Any]  # {ratio, source}: WORK-001's bound (eval_time_bound reads it)


class Scoring(TypedDict, total=False):
    """How trial times become a score (``scoring:``)."""
    drop_fastest_and_slowest: int   # trials dropped at each end before the mean
    max_not_converged: int          # trials allowed to miss the target
    max_train_time_cv: float        # SPREAD-001 above this coefficient of variation


class Hyperparameter(TypedDict, total=False):
    """One hyperparameter (``hyperparameters.<name>:``)."""
    default: Any            # the reference's value
    closed: Any             # "fixed", "free", {choices: [...]} or {min, max}: what the closed division allows
    doc: str


class Convergence(TypedDict, total=False):
    """The reference's convergence points, measured by calibration (``convergence:``)."""
    command: str            # the calibration command that measured them
    measured_on: str
    spread: dict[str, Any]  # how much time-to-target varied on one quiet machine
    points: list[dict[str, Any]]  # per implementation, batch size and precision: epochs to target


@dataclass(frozen=True)
class BenchmarkRules:
    """One benchmark's rules: ``data`` is the validated rule file, ``path`` where it came from.

    Every top-level field of the rule file (rules/schema/rules.schema.json) is a typed attribute, filled
    from ``data`` when the object is made; nested sections are typed dicts (their keys as the schema
    names them). A field the file leaves out (optional ones, or a test's partial rules) is None."""

    data: dict[str, Any]
    path: Path
    benchmark: str = field(init=False)          # the benchmark's name, equal to the file's stem
    rules_version: str = field(init=False)      # the rules version, equal to the file's folder
    task: str = field(init=False)               # what the benchmark trains, in words
    size: str | None = field(init=False)        # "mini" or "full"
    description: str | None = field(init=False)
    dataset: Dataset = field(init=False)
    reference_model: ReferenceModel = field(init=False)
    implementations: dict[str, str] = field(init=False)   # framework -> MODULE:CLASS (trusted: shipped rules)
    metric: Metric = field(init=False)
    evaluation: Evaluation = field(init=False)
    max_epochs: int = field(init=False)         # a trial stops after this many epochs
    trials: int = field(init=False)             # trials per benchmark
    scoring: Scoring = field(init=False)
    precisions: list[str] = field(init=False)   # the precisions the closed division allows (fp32, amp)
    max_init_seconds: dict[str, float] = field(init=False)  # division -> the longest init_start..run_start
    hyperparameters: dict[str, Hyperparameter] = field(init=False)
    open_division: dict[str, list[str]] = field(init=False)  # {relaxed, must_report}: what open may change
    reevaluation: dict[str, Any] | None = field(init=False)  # {tolerance, reason}: REEVAL-001 (read it
    # through ``reevaluation(rules)``, which supplies a default)
    curve_band: dict[str, Any] | None = field(init=False)    # {severity, tolerance, source, bands}: CURVE-*
    convergence: Convergence = field(init=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if not f.init:
                object.__setattr__(self, f.name, self.data.get(f.name))

    @property
    def name(self) -> str:
        return self.data["benchmark"]

    @property
    def version(self) -> str:
        return self.data["rules_version"]

    @property
    def target(self) -> float:
        return float(self.data["metric"]["target"])

    @property
    def higher_is_better(self) -> bool:
        return self.data["metric"]["direction"] == "higher"

    def reached(self, value: float, target: float | None = None) -> bool:
        """Whether a metric value meets the quality target, or ``target`` in its place (NaN never does)."""
        if not math.isfinite(value):
            return False
        target = self.target if target is None else target
        return value >= target if self.higher_is_better else value <= target

    def defaults(self) -> dict[str, Any]:
        """The reference hyperparameters."""
        return {k: v["default"] for k, v in self.data["hyperparameters"].items()}

    def violations(self, hparams: dict[str, Any], division: str) -> list[str]:
        """Why ``hparams`` are not allowed in ``division`` (empty: allowed).

        Open division: anything goes. Closed: unknown names are refused, ``fixed`` ones
        must equal the default, ranges and choice lists are enforced.
        """
        if division == "open":
            return []
        out = []
        specs = self.data["hyperparameters"]
        for key, value in sorted(hparams.items()):
            spec = specs.get(key)
            if spec is None:
                out.append(f"{key}: not a hyperparameter of {self.name} (allowed: {', '.join(sorted(specs))})")
                continue
            rule = spec["closed"]
            if rule == "free":
                continue
            if rule == "fixed":
                if not _same(value, spec["default"]):
                    out.append(f"{key}={value!r}: fixed at {spec['default']!r} in the closed division")
            elif "choices" in rule:
                if value not in rule["choices"]:
                    out.append(f"{key}={value!r}: must be one of {rule['choices']} in the closed division")
            elif not (isinstance(value, (int, float)) and not isinstance(value, bool)
                      and rule["min"] <= value <= rule["max"]):
                out.append(f"{key}={value!r}: must lie in [{rule['min']}, {rule['max']}] in the closed division")
        return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def validate(data: Any, path: Path, schema_checked: bool = False) -> None:
    """Raise ``RulesError`` naming the file and the field that breaks the schema (the schema is
    skipped when ``schema_checked``: a released file, validated by the tests before its release)."""
    if not schema_checked:
        import jsonschema

        error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "<top level>"
            raise RulesError(f"{path}: field '{where}': {error.message}") from None
    if data["benchmark"] != path.stem:
        raise RulesError(f"{path}: field 'benchmark': {data['benchmark']!r} must match the file name {path.stem!r}")
    if data["rules_version"] != path.parent.name:
        raise RulesError(f"{path}: field 'rules_version': {data['rules_version']!r} "
                         f"must match the folder {path.parent.name!r}")
    lo, hi = data["metric"]["range"]
    target = data["metric"]["target"]
    if (lo is not None and target < lo) or (hi is not None and target > hi):
        raise RulesError(f"{path}: field 'metric/target': {target} outside the metric's range {[lo, hi]}")


@lru_cache(maxsize=8)
def _released_sha256(version: str) -> frozenset[str]:
    """SHA-256 of every shipped rule file of ``version`` as released (reference-code.json, written by
    ``trainmark rules code-hashes``; a test fails when it is stale)."""
    try:
        released = json.loads((RULES_ROOT / version / layout.RELEASED_CODE_FILE).read_text(encoding="utf-8"))
        return frozenset(h for files in released["benchmarks"].values() for name, h in files.items()
                         if name.startswith(f"{layout.CODE_DIR}/rules/{version}/"))
    except (OSError, ValueError, KeyError, AttributeError):
        return frozenset()


def _is_released(path: Path, raw: bytes) -> bool:
    """A shipped rule file byte-identical to its release: its schema check already passed
    (tests/test_rules.py validates every shipped file), so ``trainmark list`` need not repeat it."""
    return (path.parent.parent == RULES_ROOT
            and hashlib.sha256(raw).hexdigest() in _released_sha256(path.parent.name))


def _read_yaml(path: Path, raw: bytes | None = None) -> Any:
    try:
        text = (raw if raw is not None else path.read_bytes()).decode("utf-8")
        return yaml.load(text, Loader=_YAML_LOADER)
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"{path}: cannot read rule file: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise RulesError(f"{path}:{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None


def merge(base: Any, override: Any) -> Any:
    """``override`` laid over ``base``: mappings merge key by key, a null value removes the key,
    anything else replaces."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    out = dict(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(base.get(key), value)
    return out


def load_file(path: Path) -> BenchmarkRules:
    """One rule file. ``include: <benchmark>`` starts from the shipped rule file of that benchmark
    and version (never a path) and overrides the keys this file gives: test rules stay short."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RulesError(f"{path}: cannot read rule file: {exc}") from None
    data = _read_yaml(path, raw)
    if isinstance(data, dict) and "include" in data:
        name = data.pop("include")
        ok = isinstance(name, str) and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name) is not None
        shipped = RULES_ROOT / path.parent.name / f"{name}.yaml"
        if not ok or not shipped.is_file():
            raise RulesError(f"{path}: field 'include': {name!r} is not a shipped benchmark of rules "
                             f"{path.parent.name}")
        data = merge(_read_yaml(shipped), data)
        raw = b""  # merged: never a released file
    validate(data, path, schema_checked=_is_released(path, raw))
    return BenchmarkRules(data, path)


def load_ruleset(version: str = LATEST_VERSION, rules_root: Path | None = None) -> dict[str, BenchmarkRules]:
    """All benchmarks of one rules version, by name."""
    root = Path(rules_root) if rules_root else RULES_ROOT
    folder = root / version
    if not folder.is_dir():
        raise RulesError(f"unknown rules version {version!r} (known: {', '.join(known_versions(root)) or 'none'})")
    return {p.stem: load_file(p) for p in sorted(folder.glob("*.yaml"))}


def benchmark_names(version: str = LATEST_VERSION, rules_root: Path | None = None) -> list[str]:
    """The benchmarks of one rules version, as ``load_ruleset`` names them (one per ``*.yaml``). The shipped folder's
    from the file names alone: its files are the package's own, each validated by tests/test_rules.py, and loading
    24 of them to learn their names was a twentieth of a second per check (rules 1.0's, migrated since their
    release, are not byte-identical to it and were parsed and schema-checked every time). A benchmark's rules are
    loaded, and a broken file fails, when a folder of that benchmark is checked. Any other folder: by loading it."""
    root = Path(rules_root) if rules_root else RULES_ROOT
    folder = root / version
    if folder.parent == RULES_ROOT and folder.is_dir():
        return [p.stem for p in sorted(folder.glob("*.yaml"))]
    return list(load_ruleset(version, rules_root))


def get_rules(benchmark: str, version: str = LATEST_VERSION, rules_root: Path | None = None) -> BenchmarkRules:
    """One benchmark's rules. Only its own file is read; an unknown name reads them all, to list them."""
    root = Path(rules_root) if rules_root else RULES_ROOT
    path = root / str(version) / f"{benchmark}.yaml"
    if re.fullmatch(r"\d+\.\d+", str(version)) and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", benchmark) and path.is_file():
        return load_file(path)
    ruleset = load_ruleset(version, rules_root)
    if benchmark not in ruleset:
        raise RulesError(f"no rules for benchmark {benchmark!r} in rules version {version} "
                         f"(known: {', '.join(ruleset) or 'none'}); `trainmark rules list` shows them")
    return ruleset[benchmark]


EXACT_REEVALUATION = {"tolerance": 0.0, "reason": "no reevaluation tolerance in the rules: the re-measured metric "
                      "must equal the logged one"}


def _latest_data(rules: BenchmarkRules) -> dict | None:
    """The latest shipped rule file's data for the same benchmark, for an older version's fields that predate
    it (rules 1.0 is frozen as released); None when ``rules`` is the latest or the benchmark has none."""
    latest = RULES_ROOT / LATEST_VERSION / f"{rules.name}.yaml"
    if rules.version != LATEST_VERSION and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", rules.name) and latest.is_file():
        return load_file(latest).data
    return None


def reevaluation(rules: BenchmarkRules) -> dict[str, Any]:
    """How far a re-measured metric may lie from the logged one (``trainmark check --reevaluate``): the rule
    file's ``reevaluation`` {tolerance, reason}; a file without one (rules 1.0, frozen before re-evaluation
    existed) takes the latest shipped rules' of the same benchmark, else an exact match. ``source`` says which."""
    if "reevaluation" in rules.data:
        return {**rules.data["reevaluation"], "source": f"rules {rules.version}"}
    shipped = (_latest_data(rules) or {}).get("reevaluation")
    if shipped is not None:
        return {**shipped, "source": f"rules {LATEST_VERSION} (rules {rules.version} predates the field)"}
    return {**EXACT_REEVALUATION, "source": "default"}


def eval_time_bound(rules: BenchmarkRules) -> dict[str, Any] | None:
    """The most an evaluated sample may take as a multiple of a trained one (WORK-001): the rule file's
    ``evaluation.max_eval_time_ratio`` {ratio, source}; a file without one takes the latest shipped rules' of
    the same benchmark (rules 1.0 predates the field); None when no rules measured it (full-size, no runs)."""
    bound = rules.evaluation.get("max_eval_time_ratio")
    if bound is None:
        bound = ((_latest_data(rules) or {}).get("evaluation") or {}).get("max_eval_time_ratio")
        if bound is not None:
            bound = {**bound, "source": f"rules {LATEST_VERSION} (rules {rules.version} predates the field): "
                                        f"{bound['source']}"}
    return bound
