"""``trainmark run``: N trials of one benchmark into a result folder a stranger can check.

Layout (docs/result-format.md): ``<out>/<division>/<submitter>/systems/<system>.json`` and
``results/<system>/<benchmark>/{epochs.log, result_<k>.txt, trial_<k>/}``. A finished trial
is one whose ``trial.json`` exists (written last, atomically); ``--resume`` archives an
unfinished or interrupted trial under ``interrupted/`` and carries on after the last finished one.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from trainmark import RESULT_FORMAT_VERSION
from trainmark.errors import UserError
from trainmark.files import append_line, write_atomic, write_json_atomic, write_text_atomic
from trainmark.format import epochlog, layout, mllog
from trainmark.format.labels import MISSED, UNFINISHED, TrialStatus
from trainmark.harness import code_record as implementation
from trainmark.harness import precision_choice
from trainmark.harness.frameworks import backend as framework
from trainmark.harness.frameworks import distributed
from trainmark.harness.frameworks import pytorch_runtime as runtime
from trainmark.harness.measure import energy, peaks, system
from trainmark.harness.measure import nodes as scale_nodes
from trainmark.harness.measure.other_load import OtherLoad
from trainmark.harness.measure.telemetry import open_for_trial as open_telemetry
from trainmark.harness.measure.windows import Monitor
from trainmark.harness.open_recipe import OpenRecipe
from trainmark.harness.progress import TrialProgress, banner, say, trial_line
from trainmark.harness.timeline import Timeline
from trainmark.harness.trial import TrialConfig, TrialInterrupted, TrialResult, run_trial
from trainmark.reference import registry
from trainmark.rules import LATEST_VERSION, admissible, convergence, get_rules
from trainmark.rules.datasets import resolve_data_dir, verify_for


@dataclass
class RunOptions:
    benchmark: str
    out: Path = Path("submission")
    trials: int | None = None
    division: str = "closed"
    submitter: str = "anonymous"
    system_file: Path | None = None
    system_name: str | None = None
    device: str = "cpu"
    precision: str = "fp32"
    batch_size: int | None = None
    seed: int | None = None
    data_dir: Path | None = None
    hparams: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    resume: bool = False
    quiet: bool = False
    rules_version: str = LATEST_VERSION
    rules_dir: Path | None = None
    energy_estimate_watts: float | None = None
    full_curves: bool = False  # calibration only: ignore the target, train every trial to max_epochs
    max_epochs: int | None = None  # calibration only: fewer epochs than the rules' max_epochs
    ceilings: Path | None = None  # a `trainmark ops --json` report of this machine: its measured ceilings
    telemetry_hz: float = 1.0  # telemetry samples per second into trial_<k>/telemetry.csv (0: none)
    framework: str = "pytorch"  # harness/frameworks/backend.py's BACKENDS
    recipe: OpenRecipe | None = None  # open division: --optimizer, --lr-schedule, --augment (harness/open_recipe.py)
    submission: bool = True  # False: calibration's scratch trials, never checked (no warning about the count)


@dataclass
class RunSummary:
    bench_dir: Path
    results: list[TrialResult]
    allowed_not_converged: int
    first_trial: int = 1   # results[0] is this trial (after --resume, not 1)
    earlier: list[TrialResult] = field(default_factory=list)  # trials 1..first_trial-1, finished before --resume

    @property
    def all_results(self) -> list[TrialResult]:
        """Every finished trial of the folder, trial 1 first (after --resume too)."""
        return [*self.earlier, *self.results]

    @property
    def crashed(self) -> dict[int, TrialResult]:
        """Trials that crashed or were interrupted, by trial number: never an allowed miss."""
        return {k: r for k, r in enumerate(self.results, self.first_trial) if r.status in UNFINISHED}

    @property
    def missed(self) -> int:
        return sum(r.status in MISSED for r in self.all_results)

    @property
    def ok(self) -> bool:
        return not self.crashed and self.missed <= self.allowed_not_converged

    def verdict(self) -> str:
        """One line: why the run exits 1, or that its trials count."""
        done = self.all_results
        converged = sum(r.status == TrialStatus.CONVERGED.value for r in done)
        if self.crashed:
            return "failed: " + "; ".join(f"trial {k} {r.status}" for k, r in self.crashed.items())
        if self.missed > self.allowed_not_converged:
            return (f"failed: {self.missed} of {len(done)} trials missed the target, the rules allow "
                    f"{self.allowed_not_converged}")
        allowed = f" ({self.missed} missed the target, the rules allow {self.allowed_not_converged})" \
            if self.missed else ""
        return f"ok: {converged} of {len(done)} trials converged{allowed}"


def finished_results(bench_dir: Path, trials: list[int]) -> list[TrialResult]:
    """The results of finished trials as their trial.json holds them (the table after --resume)."""
    names = {f.name for f in fields(TrialResult)} - {"history"}
    found = []
    for k in trials:
        saved = read_trial_json(bench_dir, k) or {}
        found.append(TrialResult(**{key: value for key, value in saved.items() if key in names}))
    return found


check_device = runtime.check_device  # --device: auto, cpu or TYPE[:INDEX], as a device (a UserError otherwise)


def load_custom_model(spec: str) -> Callable[[], Any]:
    """``MODULE:CALLABLE`` for the open division; the user's own code, run on the user's machine."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UserError(f"--model {spec!r}: expected MODULE:CALLABLE, e.g. mymodels.small:build")
    sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(implementation.import_model_module(module_name), attr)
    except ImportError as exc:
        raise UserError(f"--model {spec}: cannot load: {exc}; {model_import_hint(module_name)}") from None
    except AttributeError as exc:
        raise UserError(f"--model {spec}: cannot load: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the module's own error on import: one line, nothing written yet
        raise UserError(f"--model {spec}: importing it failed: {type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise UserError(f"--model {spec}: {attr} is not callable")
    return fn


def model_import_hint(module_name: str) -> str:
    """Where ``--model`` looks for its module, in words (docs/open-division.md)."""
    top = module_name.split(".")[0]
    return (f"--model imports from the current folder ({os.getcwd()}): run trainmark where {top}.py (or the package "
            f"{top}/ with __init__.py) lies, its sibling modules beside it, and no module of that name shadows it "
            "(docs/open-division.md)")


def _kind(value: Any) -> str:
    """The kind of value a hyperparameter holds: a flag, a number or a name (anything else: other)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "other"


def wrong_kinds(hp: dict[str, Any], defaults: dict[str, Any]) -> list[str]:
    """Hyperparameters whose value is not of the kind of the rules' default: a learning rate 'abc' is refused
    here, in one line, in either division, not as a traceback in the first trial."""
    return [f"{key}={value!r}: must be {_kind(defaults[key])} (the default is {defaults[key]!r})"
            for key, value in sorted(hp.items())
            if key in defaults and _kind(defaults[key]) != "other" and _kind(value) != _kind(defaults[key])]


def resolve_hparams(rules, opts: RunOptions) -> dict[str, Any]:
    hp = rules.defaults()
    hp.update(opts.hparams)
    if opts.batch_size is not None:
        hp["global_batch_size"] = opts.batch_size
    problems = wrong_kinds(hp, rules.defaults())
    if problems:
        raise UserError(f"hyperparameters not allowed by rules {rules.version} ({rules.path.name}): "
                        + "; ".join(problems))
    if not isinstance(hp["global_batch_size"], int) or hp["global_batch_size"] < 1:
        raise UserError(f"global batch size must be a positive integer, got {hp['global_batch_size']!r}")
    refuse_inadmissible(rules, opts, hp)
    return hp


def refuse_inadmissible(rules, opts: RunOptions, hp: dict[str, Any]) -> None:
    """Settings 'trainmark check' would reject are refused here, before anything is written, by the function the
    checker judges with (rules/admissible.py). Calibration measures new batch sizes: its batch is never refused."""
    found = admissible.refusals(rules, hp, division=opts.division, precision=opts.precision,
                                framework=opts.framework, given=list(opts.hparams))
    if not opts.submission:
        found = [r for r in found if r.kind != admissible.BATCH]
    if found:
        raise admissible.NotAdmissible(rules, found)


OPEN_RECIPE_BUILDERS = {"pytorch": "trainmark.harness.frameworks.pytorch_open",
                        "tensorflow": "trainmark.harness.frameworks.tensorflow_open"}


def check_open_recipe(opts: RunOptions, ref, hp: dict[str, Any]) -> dict[str, Any]:
    """The open division's --optimizer, --lr-schedule and --augment, built by the framework on a stand-in model
    before anything is written; ``opt_name`` then logs the optimizer that runs, never the reference's."""
    if opts.recipe is None:
        return hp
    opts.recipe.refuse_in_closed(opts.division)
    from trainmark.harness.frameworks.quiet_import import import_quietly

    name = import_quietly(OPEN_RECIPE_BUILDERS[opts.framework]).check(opts.recipe, ref, hp)
    return hp if name is None else {**hp, "opt_name": name}


def has_results(bench_dir: Path) -> bool:
    return bench_dir.is_dir() and any(
        p.name == layout.EPOCHS_LOG or p.name.startswith((layout.RESULT_PREFIX, layout.TRIAL_PREFIX))
        for p in bench_dir.iterdir())


def read_trial_json(bench_dir: Path, k: int) -> dict[str, Any] | None:
    path = bench_dir / layout.trial_dir(k) / layout.TRIAL_JSON
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def finished_trials(bench_dir: Path) -> list[int]:
    """Trials 1..m in a row whose trial.json exists and which were not interrupted."""
    done = []
    k = 1
    while (t := read_trial_json(bench_dir, k)) is not None and t.get("status") != TrialStatus.ABORTED.value:
        done.append(k)
        k += 1
    return done


def resume_settings(opts: RunOptions, rules, hp: dict[str, Any]) -> dict[str, Any]:
    """What a resumed run must share with the finished trials: only the seed may differ."""
    return {"rules_version": rules.version, "division": opts.division, "precision": opts.precision,
            "hparams": hp, "model": opts.model or rules.reference_model["id"]}


def refuse_changed_settings(finished: dict[str, Any] | None, now: dict[str, Any], source: Path) -> None:
    """``--resume`` with other settings would mix two experiments in one result: refuse, naming them."""
    if finished is None:
        return
    changed = []
    for key, value in now.items():
        before = finished.get(key)
        if key == "hparams" and isinstance(before, dict):
            changed += [f"{k} {before.get(k)!r} -> {value.get(k)!r}" for k in sorted(before.keys() | value.keys())
                        if before.get(k) != value.get(k) or type(before.get(k)) is not type(value.get(k))]
        elif before != value:
            changed.append(f"{key} {before!r} -> {value!r}")
    if changed:
        raise UserError(f"--resume with other settings than the finished trials ({source}): {'; '.join(changed)}; "
                        "resume with the same options, or start a new --out")


def repair_torn_log(log: Path) -> None:
    """A kill mid-write leaves a fragment after the last newline: cut it, and say so."""
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return
    if data and not data.endswith(b"\n"):
        keep = data[: data.rfind(b"\n") + 1]
        write_atomic(log, lambda p: p.write_bytes(keep))
        print(f"trainmark run: {log}: removed an incomplete last line ({len(data) - len(keep)} bytes) "
              "left by an interrupted write", file=sys.stderr)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{log}: not UTF-8 at byte {exc.start}: the log was damaged; move the folder aside "
                        "and start a new --out") from None


def archive_attempt(bench_dir: Path, k: int) -> Path | None:
    """Move an unfinished trial's files (and its epochs.log lines) to ``interrupted/``; keep them."""
    parts = [bench_dir / layout.result_file(k), bench_dir / layout.trial_dir(k)]
    log = bench_dir / layout.EPOCHS_LOG
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    mine = [ln for ln in lines if _trial_of(ln) == k]
    if not mine and not any(p.exists() for p in parts):
        return None
    dest = bench_dir / layout.INTERRUPTED_DIR / f"{layout.trial_dir(k)}-{time.strftime('%Y%m%dT%H%M%S')}"
    dest.mkdir(parents=True)
    for p in parts:
        if p.exists():
            shutil.move(str(p), dest / p.name)
    if mine:
        write_text_atomic(dest / layout.EPOCHS_LOG, "\n".join(mine) + "\n")
        rest = [ln for ln in lines if _trial_of(ln) != k]
        write_text_atomic(log, "".join(ln + "\n" for ln in rest))
    return dest


def interrupted_attempts(bench_dir: Path, k: int) -> list[dict[str, Any]]:
    """The archived attempts of trial ``k`` (``interrupted/trial_<k>-<time>/``), oldest first: their folder, seed,
    status and epochs, which trial ``k``'s MLLOG names so that no started trial goes unseen (checker: TRIAL-004)."""
    folder = bench_dir / layout.INTERRUPTED_DIR
    prefix = f"{layout.trial_dir(k)}-"
    found = sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith(prefix)) if folder.is_dir() else []
    attempts = []
    for path in found:
        summary = read_trial_json(path, k) or {}
        seed = summary.get("seed")
        if seed is None and (path / layout.result_file(k)).is_file():
            seed = mllog.first_value(mllog.read(path / layout.result_file(k)), mllog.SEED)
        attempts.append({"folder": path.name, "seed": seed if type(seed) is int else None,
                         "status": summary.get("status") or "unfinished (no trial.json: the process was killed)",
                         "epochs": summary.get("epochs") if type(summary.get("epochs")) is int else None})
    return attempts


def leftover_trials(bench_dir: Path, start_at: int) -> list[int]:
    """Trial numbers >= ``start_at`` that left files behind (to be archived, not overwritten)."""
    pattern = layout.ANY_TRIAL_NAME  # any number, unlike RESULT_FILE and TRIAL_DIR: leave nothing behind
    found = {int(m.group(1) or m.group(2)) for p in bench_dir.iterdir() if (m := pattern.fullmatch(p.name))}
    log = bench_dir / layout.EPOCHS_LOG
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    found |= {t for ln in lines if (t := _trial_of(ln)) is not None}
    return sorted(k for k in found if k >= start_at)


def _trial_of(line: str) -> int | None:
    try:
        return epochlog.parse_line(line).trial
    except ValueError:
        return None


def refuse_non_module(build_model: Callable[[], Any], spec: str) -> None:
    """``--model`` must build a torch.nn.Module: say so in one line before any folder is written. A builder that
    raises is left to the trial, which records the crash with its traceback (never dropped)."""
    try:
        built = runtime.built_type(build_model)
    except Exception:  # noqa: BLE001 - the model's own error, recorded by the trial that runs it
        return
    if built is not None:
        raise UserError(f"--model {spec}: returned {built}, not a torch.nn.Module")


def check_batch_norm_batch(build_model: Callable, local_batch: int, name: str) -> None:
    """Batch norm cannot train on one sample per rank: refuse before any trial, not crash in one."""
    if local_batch >= 2:
        return
    if runtime.has_batch_norm(build_model):
        raise UserError(f"{name}: {local_batch} sample per rank, but the model has batch norm, which needs at "
                        "least 2 per rank in training; raise --batch-size or use fewer ranks")


def ceilings_for(path: Path, device: runtime.Device) -> dict:
    """The system description's ``measured_ceilings`` from an ops report measured on this kind of device."""
    import hashlib

    from trainmark.harness.throughput import ops

    report, raw = ops.read_report(path)
    measured_on = (report.get("device") or {}).get("type")
    if measured_on != device.type:
        raise UserError(f"--ceilings {path}: measured on {measured_on}, this run trains on {device.type}; "
                        f"run `trainmark ops --device {device.type} --json FILE` on this machine")
    return ops.ceilings_record(report, Path(path).name, hashlib.sha256(raw).hexdigest())


def save_trial_files(bench_dir: Path, k: int, trainer, result: TrialResult, meta: dict[str, Any]) -> None:
    """The trial's weights and structure (when a model was built), then trial.json, which marks it finished."""
    trial_dir = bench_dir / layout.trial_dir(k)
    trial_dir.mkdir(exist_ok=True)
    if trainer is not None:
        trainer.save_weights(trial_dir / layout.MODEL_FILE)
        write_json_atomic(trial_dir / layout.STRUCTURE_FILE, trainer.structure)
    write_json_atomic(trial_dir / layout.TRIAL_JSON, {**meta, **asdict(result)})  # last: marks the trial finished


def open_meter_for(device: runtime.Device, dist: distributed.Dist, estimate_watts: float | None):
    """Rank 0 meters its whole node (all local GPUs, or the CPU packages); other ranks none.
    Several nodes: each node's local rank 0 meters its node and the readings are summed (scale_nodes)."""
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", dist.world))
    if local_world < dist.world:
        from trainmark.harness.measure import nodes as scale_nodes
        return scale_nodes.open_node_meter(device, dist, estimate_watts, runtime.device_ids)
    if not dist.is_main:
        return energy.NullMeter("measured by rank 0")
    if runtime.is_accelerator(device):
        indices = list(range(local_world)) if dist.world > 1 else [device.index or 0]
        return energy.open_meter(str(device), estimate_watts, device_ids=runtime.device_ids(device, indices))
    return energy.open_meter(str(device), estimate_watts)


@dataclass
class Prepared:
    """What every trial of a run shares, settled before the first one."""
    opts: RunOptions
    rules: Any
    ref: Any
    build_model: Callable[[], Any]
    hp: dict[str, Any]
    trials: int
    device: runtime.Device
    dist: distributed.Dist
    sysdesc: dict[str, Any]
    root: Path          # <out>/<division>/<submitter>
    bench_dir: Path     # root/results/<system>/<benchmark>
    data_dir: Path
    precision_why: str = ""   # --precision auto: why it chose what it did (the banner says it)

    @cached_property
    def backend(self) -> framework.Backend:
        """The framework's backend for this run's device, precision and rank: built once, on first use."""
        return framework.backend(self.opts.framework, self.device, self.opts.precision, self.dist)


def settle_precision(rules, opts: RunOptions, device) -> tuple[RunOptions, str]:
    """``--precision auto`` as amp or fp32 (harness/precision_choice.py), and why; other precisions as given."""
    if opts.precision != precision_choice.AUTO:
        return opts, ""
    batch = opts.batch_size or opts.hparams.get("global_batch_size") or rules.defaults()["global_batch_size"]
    chosen, why = precision_choice.choose(rules, batch, opts.framework, device)
    return replace(opts, precision=chosen), why


def prepare(opts: RunOptions) -> Prepared:
    """Validate the options against the rules, join the ranks, describe the system, check the data."""
    rules = get_rules(opts.benchmark, opts.rules_version, opts.rules_dir)
    if opts.division not in layout.DIVISIONS:
        raise UserError(f"--division {opts.division!r}: use closed or open")
    for label, value in (("--submitter", opts.submitter), ("--system-name", opts.system_name)):
        if value is not None and layout.name_refusal(value, max_len=layout.RUN_NAME_MAX):
            raise UserError(f"{label} {value!r}: use letters, digits, '.', '_' and '-' only")
    framework.available(opts.framework)
    framework.implements(opts.framework, rules)
    implementation.refuse_frozen(rules, opts.rules_dir, opts.division)
    if opts.model and opts.framework != "pytorch":
        raise UserError(f"--model builds a PyTorch module: it cannot run under --framework {opts.framework}")
    if opts.model and opts.division == "closed":
        raise UserError("--model trains your own model: that is the open division (add --division open)")
    device = framework.resolve_device(opts.framework, opts.device)  # as the framework that trains sees it
    opts, precision_why = settle_precision(rules, opts, device)  # first: the rules' limits judge what it chose
    hp = resolve_hparams(rules, opts)
    ref = registry.for_rules(rules)
    hp = check_open_recipe(opts, ref, hp)
    build_model = load_custom_model(opts.model) if opts.model else ref.build_model
    if opts.model:
        refuse_non_module(build_model, opts.model)
    trials = opts.trials or rules.trials
    if trials < 1:
        raise UserError("--trials must be at least 1")

    dist = distributed.init(str(device))
    from trainmark.harness.measure import nodes as scale_nodes
    scale_nodes.record_peers(dist)  # so that a crash can name a rank that died
    if dist.world > 1:
        device = runtime.local_device(device, dist.local_rank)
    if hp["global_batch_size"] % dist.world:
        from trainmark.harness.scale.saturation import nearest_divisors
        raise UserError(f"global batch size {hp['global_batch_size']} is not divisible by {dist.world} ranks; the "
                        f"nearest world sizes that divide it: "
                        f"{', '.join(map(str, nearest_divisors(hp['global_batch_size'], dist.world)))}")
    check_batch_norm_batch(build_model, hp["global_batch_size"] // dist.world, rules.name)
    sysdesc = system.build(str(device), opts.submitter, opts.division, opts.system_name, opts.system_file,
                           opts.framework)
    if dist.world > 1:  # several nodes: number_of_nodes and every node listed (a no-op on one node)
        sysdesc = scale_nodes.describe_nodes(sysdesc, dist, lambda: system.detect(str(device)))
    if opts.ceilings:
        sysdesc["measured_ceilings"] = ceilings_for(opts.ceilings, device)
    root = Path(opts.out) / opts.division / opts.submitter
    bench_dir = root / layout.RESULTS_DIR / sysdesc["system_name"] / rules.name

    data_dir = resolve_data_dir(rules, opts.data_dir)
    if opts.division == "closed":
        problems, _ = verify_for(rules, data_dir, opts.framework)  # what this framework reads (ImageNet: tars)
        if problems:
            raise UserError(f"dataset in {data_dir} does not match rules {rules.version} "
                            f"(closed division needs the exact data): {'; '.join(problems)}")
    prep = Prepared(opts, rules, ref, build_model, hp, trials, device, dist, sysdesc, root, bench_dir, data_dir,
                    precision_why)
    _ = prep.backend  # the framework refuses what it cannot run (TensorFlow's amp on a CPU) before anything is written
    return prep


def resume(prep: Prepared) -> tuple[int, int]:
    """(first trial to run, base seed), the same on every rank. Rank 0 checks that it can write, and
    with ``--resume`` archives unfinished trials and refuses changed settings; then it writes the
    system description and the implementation record."""
    opts, rules, bench_dir, root = prep.opts, prep.rules, prep.bench_dir, prep.root
    start_at, base_seed = 1, opts.seed
    if prep.dist.is_main:
        try:
            (root / layout.SYSTEMS_DIR).mkdir(parents=True, exist_ok=True)
            bench_dir.mkdir(parents=True, exist_ok=True)
            probe = bench_dir / ".write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise UserError(f"--out {opts.out}: cannot write results there: {exc.strerror} ({exc.filename})") from None
        if has_results(bench_dir):
            if not opts.resume:
                raise UserError(f"{bench_dir} already holds results: use --resume to continue after the last "
                                "finished trial, or choose another --out")
            repair_torn_log(bench_dir / layout.EPOCHS_LOG)
            done = finished_trials(bench_dir)
            if done:
                refuse_changed_settings(read_trial_json(bench_dir, done[-1]), resume_settings(opts, rules, prep.hp),
                                        bench_dir / layout.trial_dir(done[-1]) / layout.TRIAL_JSON)
            start_at = len(done) + 1
            for k in leftover_trials(bench_dir, start_at):
                archive_attempt(bench_dir, k)
            if done:
                base_seed = resumed_seed(bench_dir, base_seed)
        write_json_atomic(root / layout.SYSTEMS_DIR / layout.system_file(prep.sysdesc["system_name"]), prep.sysdesc)
        implementation.write_record(root, rules, prep.sysdesc["system_name"], opts.division, opts.model,
                                    {k: v if v is None or isinstance(v, (bool, int, float, dict)) else str(v)
                                     for k, v in asdict(opts).items()})
    if base_seed is None:
        base_seed = secrets.randbelow(2 ** 31 - 100_000)
    base_seed = prep.dist.broadcast_int(base_seed)
    start_at = prep.dist.broadcast_int(start_at)
    return start_at, base_seed


def resumed_seed(bench_dir: Path, given: int | None) -> int:
    """The base seed of the finished trials (trial 1's seed). ``--seed`` on a resume must be that one: trial k
    runs seed + k - 1, and another base would make the seeds of one result two unrelated series."""
    path = bench_dir / layout.trial_dir(1) / layout.TRIAL_JSON
    seed = (read_trial_json(bench_dir, 1) or {}).get("seed")
    if type(seed) is not int:
        if given is None:
            raise UserError(f"{path}: seed {seed!r} is not an integer; pass --seed to resume with the original "
                            "base seed")
        return given
    if given is not None and given != seed:
        raise UserError(f"--resume --seed {given}: the finished trials ran from base seed {seed} ({path}); "
                        f"resume without --seed, or with --seed {seed}")
    return seed


def warn_few_trials(trials: int, rules) -> None:
    """Fewer trials than the rules ask for: said once the run is valid and about to train, not first by the
    checker hours later."""
    if trials < rules.trials:
        print(f"trainmark run: warning: --trials {trials} is below the {rules.trials} trials of {rules.name}'s "
              f"rules {rules.version}: 'trainmark check' will count the result as incomplete", file=sys.stderr,
              flush=True)


def run_benchmark(opts: RunOptions) -> RunSummary:
    prep = prepare(opts)
    opts = prep.opts   # --precision auto settled to amp or fp32
    start_at, base_seed = resume(prep)
    rules, device, dist, bench_dir = prep.rules, prep.device, prep.dist, prep.bench_dir
    if dist.is_main and not opts.quiet:
        announce(prep, start_at, base_seed)
    data = prep.backend.load_data(prep.ref, rules, prep.data_dir)
    if prep.ref.train_samples(data) < prep.hp["global_batch_size"]:  # else every epoch ran 0 steps and the run exited 0
        raise UserError(f"global batch size {prep.hp['global_batch_size']} is larger than the "
                        f"{prep.ref.train_samples(data)} training samples: no training step would run "
                        "(use a smaller --batch-size)")
    if dist.is_main and opts.submission:
        warn_few_trials(prep.trials, rules)
    meter = open_meter_for(device, dist, opts.energy_estimate_watts)
    progress = TrialProgress(enabled=dist.is_main and not opts.quiet)
    try:
        device_peak = peaks.device_peak(device)
    except (OSError, ValueError):  # no cpuinfo to derive from: utilization is then unknown, not guessed
        device_peak = None
    dtype_used = prep.backend.precision_label()
    ceiling = (prep.sysdesc.get("measured_ceilings") or {}).get("tflops", {}).get(dtype_used.removeprefix("amp-"))
    peak_dtype, peak_tflops = (device_peak.peak_for_precision(dtype_used, device.type)
                               if device_peak else (None, None))
    meta_common = {"format_version": RESULT_FORMAT_VERSION, "framework": opts.framework, "benchmark": rules.name,
                   "rules_version": rules.version, "division": opts.division, "submitter": opts.submitter,
                   "system_name": prep.sysdesc["system_name"], "device": str(device), "precision": opts.precision,
                   "hparams": prep.hp, "model": opts.model or rules.reference_model["id"], "world_size": dist.world,
                   "peak": {"dtype": peak_dtype, "tflops": peak_tflops, "kind": device_peak.kind,
                            "source": device_peak.source} if device_peak else None}
    results: list[TrialResult] = []
    walls: list[float] = []  # each trial's wall time in this process, for the run's ETA
    meter.start()
    try:
        for k in range(start_at, prep.trials + 1):
            cfg = TrialConfig(
                benchmark=rules.name, trial=k, seed=base_seed + k - 1, division=opts.division,
                submitter=opts.submitter, system_name=prep.sysdesc["system_name"], rules_version=rules.version,
                hparams=prep.hp, max_epochs=min(rules.max_epochs, opts.max_epochs or rules.max_epochs),
                eval_every=rules.evaluation["every_epochs"],
                target_reached=(lambda _v: False) if opts.full_curves else rules.reached,
                metric_name=rules.metric["name"], peak_tflops=peak_tflops, ceiling_tflops=ceiling,
                interrupted_attempts=interrupted_attempts(bench_dir, k) if dist.is_main else [], recipe=opts.recipe)
            began = time.monotonic()
            result = run_one_trial(prep, cfg, data, meter, progress, {**meta_common, "trial": k, "seed": cfg.seed})
            results.append(result)
            walls.append(time.monotonic() - began)
            tell_trial(prep, progress, walls, k, result)
            if dist.world > 1 and result.status == TrialStatus.CRASHED.value:
                break  # the process group is broken (a rank died, or collectives fell out of step): the run ends
        else:
            distributed.shutdown()  # every rank finished every trial: leave the group together
    except KeyboardInterrupt as stop:
        raise RunInterrupted(bench_dir, start_at + len(results), prep.trials, base_seed) from stop  # 1st unfinished
    finally:
        progress.close()
        meter.stop()
    earlier = finished_results(bench_dir, list(range(1, start_at))) if dist.is_main else []
    return RunSummary(bench_dir, results, rules.scoring["max_not_converged"], start_at, earlier)


def tell_trial(prep: Prepared, progress: TrialProgress, walls: list[float], k: int, result: TrialResult) -> None:
    """Trial k's line with the run's ETA: the mean wall time of this process's trials times the trials left."""
    if not prep.dist.is_main or prep.opts.quiet:
        return
    eta = sum(walls) / len(walls) * (prep.trials - k) if k < prep.trials else None
    progress.close()  # a live bar ends before the line, which stays in the scrollback
    say(trial_line(k, prep.trials, result, prep.rules.metric["name"], eta, full_curve=prep.opts.full_curves))


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during trial ``trial``: the finished trials are kept, the interrupted one is saved as
    aborted; ``--resume`` with ``base_seed`` carries on where it stopped."""

    def __init__(self, bench_dir: Path, trial: int, trials: int, base_seed: int):
        super().__init__(f"interrupted during trial {trial}")
        self.bench_dir, self.trial, self.trials, self.base_seed = bench_dir, trial, trials, base_seed


def _model_size(prep: Prepared) -> str | None:
    """Parameters and FLOPs per step, beside the reference's for --model (harness/model_line.py)."""
    from trainmark.harness.model_line import model_size

    try:
        return model_size(prep)
    except Exception:  # noqa: BLE001 - a banner never stops a run: the parameter count alone is shown
        return None


def announce(prep: Prepared, start_at: int, base_seed: int) -> None:
    """The run's banner on stderr (harness/progress.py), before the data is loaded."""
    rules, opts = prep.rules, prep.opts
    try:
        parameters = registry.reference_structure(rules, build=lambda _rules: prep.build_model())["parameter_count"]
    except Exception:  # noqa: BLE001 - a --model builder's own error: its trial records it
        parameters = None
    sign = ">=" if rules.metric["direction"] == "higher" else "<="
    model, note = (opts.model, "your --model") if opts.model else (rules.reference_model["id"], "the reference")
    for line in banner(benchmark=rules.name, rules_version=rules.version, division=opts.division,
                       target=f"{rules.metric['name']} {sign} {rules.target:g}",
                       every_epochs=rules.evaluation["every_epochs"],
                       max_epochs=min(rules.max_epochs, opts.max_epochs or rules.max_epochs), model=model,
                       model_note=note, parameters=parameters, framework=opts.framework,
                       device=runtime.device_banner(prep.device),
                       precision=f"{opts.precision} ({prep.precision_why})" if prep.precision_why else opts.precision,
                       batch_size=prep.hp["global_batch_size"], trials=prep.trials,
                       first_trial=start_at, base_seed=base_seed, out=prep.bench_dir, size=_model_size(prep)):
        say(line)
    changed = convergence.recipe_changes(rules, prep.hp, opts.framework) if opts.division == "closed" else []
    if changed:  # allowed, but the epochs this run is judged against were measured with the point's values
        say(f"  note: rules {rules.version}'s convergence point at global batch {prep.hp['global_batch_size']} was "
            f"calibrated with other values ({'; '.join(changed)}): its epochs to target may not be this run's; "
            f"`trainmark rules show {rules.name}` prints the point's command")


def run_one_trial(prep: Prepared, cfg: TrialConfig, data, meter, progress: TrialProgress,
                  meta: dict[str, Any]) -> TrialResult:
    """One trial with its own MLLOG, clock anchor and telemetry; rank 0 saves its files (also after Ctrl-C)."""
    k, bench_dir, dist = cfg.trial, prep.bench_dir, prep.dist
    log = mllog.TrialLogWriter(bench_dir / layout.result_file(k) if dist.is_main else None)
    monitor = Monitor(meter, sync=prep.backend.sync)
    sampler = open_telemetry(bench_dir / layout.trial_dir(k), meter, monitor, 1 / prep.opts.telemetry_hz) \
        if dist.is_main and prep.opts.telemetry_hz else None
    load = OtherLoad() if prep.device.type == "cpu" else None  # a busy neighbour, measured, not guessed
    timeline = Timeline(monitor, log, nodes=lambda: scale_nodes.node_fields(meter))
    try:
        result, trainer = run_trial(cfg, prep.ref, data, prep.backend, timeline,
                                    lambda line: append_line(bench_dir / layout.EPOCHS_LOG, line),
                                    progress, prep.build_model)
    except TrialInterrupted as stop:
        if dist.is_main:
            save_trial_files(bench_dir, k, stop.trainer, stop.result, meta)
        raise
    finally:
        log.close()
        meta["other_cpu_load_pct"] = load.percent() if load else None
        if sampler is not None:
            sampler.stop()  # idempotent: the trial stops it at run_stop; this covers a crash before
    if dist.is_main:
        save_trial_files(bench_dir, k, trainer, result, meta)
    return result
