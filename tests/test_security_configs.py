"""A submitted folder must never choose a compliance config, and so never run code (issue 16).

MLPerf's shipped configs call ``enqueue_config('training_X/{}_common.yaml'.format(v['value']))``
on logged values. Each test plants a config whose code would write a marker file, points a
logged value (or a path, or a link) at it, and asserts: a finding, and no marker.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf import compliance_configs
from trainmark.checker.mlperf.compliance_configs import MLPERF_CONFIG_DIR, ConfigAllowlist, guarded
from trainmark.checker.mlperf.engine import run_engine
from trainmark.checker.read.mllog_read import read_events
from trainmark.checker.verdict.findings import Findings
from trainmark.errors import UserError

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
pytestmark = pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")


def _evil_config(marker: Path) -> str:
    return f"- BEGIN:\n    CODE: \"__import__('pathlib').Path({str(marker)!r}).write_text('pwned')\"\n"


@pytest.fixture
def resnet(tmp_path):
    """A writable copy of one real MLPerf v4.0 resnet folder, and a marker path."""
    root = tmp_path / "training_results_v4.0"
    shutil.copytree(FIXTURE / "Dell", root / "Dell")
    for other in ("bert", "ssd"):
        shutil.rmtree(root / "Dell" / "results" / "R760xax4L40S" / other)
    shutil.rmtree(root / "Dell" / "results" / "XE8640x4H100-SXM-80GB")
    (root / "Dell" / "systems" / "XE8640x4H100-SXM-80GB.json").unlink(missing_ok=True)
    return root, root / "Dell" / "results" / "R760xax4L40S" / "resnet", tmp_path / "MARKER"


def _set_value(result: Path, key: str, value: str) -> None:
    text = result.read_text()
    old = next(line for line in text.splitlines() if f'"key": "{key}"' in line)
    start = old.index('"value": ') + len('"value": ')
    end = old.index(', "metadata"')
    result.write_text(text.replace(old, old[:start] + _json(value) + old[end:]))


def _json(value: str) -> str:
    import json
    return json.dumps(value)


def _depth_to_root() -> str:
    """'../' enough times to climb from mlperf-logging's config folder to '/'."""
    return "../" * (len(Path(MLPERF_CONFIG_DIR).parts) + 2)


def _security(report):
    return [f for f in report.findings if f.rule == "SECURITY-001"]


def test_division_naming_a_planted_config_runs_nothing(resnet):
    """The reported case: submission_division '../../..../results/sys/bert/x' -> x_common.yaml."""
    root, folder, marker = resnet
    planted = folder / "x_common.yaml"
    planted.write_text(_evil_config(marker))
    _set_value(folder / "result_0.txt", "submission_division", _depth_to_root() + str(folder / "x").lstrip("/"))
    report = check_path(root)
    assert not marker.exists()
    found = _security(report)
    assert found and found[0].file.endswith("resnet/result_0.txt") and found[0].line is not None
    assert report.exit_code == 1


@pytest.mark.parametrize("key,trial", [
    ("submission_benchmark", 1),   # closed_common.yaml enqueues 'training_4.0.0/closed_{}.yaml'
    ("opt_name", 2),               # closed_resnet.yaml enqueues 'closed_resnet_{}.yaml' (include-style)
])
def test_other_config_choosing_keys_naming_a_planted_config_run_nothing(resnet, key, trial):
    root, folder, marker = resnet
    (folder / "y.yaml").write_text(_evil_config(marker))
    _set_value(folder / f"result_{trial}.txt", key, _depth_to_root() + str(folder / "y").lstrip("/"))
    report = check_path(root)
    assert not marker.exists()
    assert any(f.file.endswith(f"result_{trial}.txt") for f in _security(report))


def test_absolute_path_value_runs_nothing(resnet):
    root, folder, marker = resnet
    (folder / "abs_common.yaml").write_text(_evil_config(marker))
    _set_value(folder / "result_3.txt", "submission_division", str(folder / "abs"))
    report = check_path(root)
    assert not marker.exists()
    assert any(f.file.endswith("result_3.txt") for f in _security(report))


def test_the_untouched_files_still_score(resnet):
    """Refusing one hostile file drops that run only; the others are scored as before."""
    root, folder, marker = resnet
    _set_value(folder / "result_0.txt", "submission_division", "../evil")
    report = check_path(root)
    (bench,) = report.benchmarks
    assert bench.score["dropped"] == 1 and bench.score["score_minutes"] is not None


def test_ruleset_cannot_be_chosen_by_a_crafted_name(resnet, tmp_path):
    root, folder, marker = resnet
    with pytest.raises(UserError, match="unknown MLPerf training ruleset"):
        check_path(root, CheckOptions(mlperf_ruleset="../../" + str(tmp_path)))
    # a folder name that looks like a version but is not one MLPerf ships chooses nothing and opens nothing:
    # the check asks for the ruleset (exit 2), and with one named it runs
    odd = tmp_path / "results_v9.9"
    shutil.copytree(root, odd)
    with pytest.raises(UserError, match="--mlperf-ruleset"):
        check_path(odd)
    report = check_path(odd, CheckOptions(mlperf_ruleset="4.0.0"))
    assert not marker.exists() and report.benchmarks


def test_trainmark_rules_version_cannot_name_a_folder(submission_copy, tmp_path):
    """trainmark_rules_version picks a rules folder only from the known list."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil" / "1.0"
    evil.mkdir(parents=True)
    (evil / "resnet-mini.yaml").write_text(_evil_config(marker))
    bench = next(submission_copy.glob("closed/*/results/*/resnet-mini"))
    for result in bench.glob("result_*.txt"):
        _set_value(result, "trainmark_rules_version", str(evil))
    report = check_path(submission_copy)
    assert not marker.exists()
    assert "RULES-001" in {f.rule for f in report.findings}


def test_guard_refuses_files_outside_the_allowlist(tmp_path):
    """Defence in depth: even a config that asks for it cannot make the engine load another file."""
    marker = tmp_path / "MARKER"
    evil = tmp_path / "evil.yaml"
    evil.write_text(_evil_config(marker))
    link = tmp_path / "link.yaml"
    link.symlink_to(evil)
    ours = tmp_path / "ours.yaml"
    text = f"- BEGIN:\n    CODE: \"enqueue_config({str(evil)!r}); enqueue_config({str(link)!r}); " \
           f"enqueue_config('training_4.0.0/../../../{str(evil).lstrip('/')}')\"\n"
    ours.write_text(text)
    allow = ConfigAllowlist()
    allow.add_generated(ours, text)
    events = read_events(b':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", '
                         b'"key": "cache_clear", "value": true, "metadata": {}}\n', "x.txt", Findings(), strict=False)
    old = compliance_configs.ALLOWLIST
    compliance_configs.ALLOWLIST = allow
    try:
        import trainmark.checker.mlperf.engine as engine
        engine.ALLOWLIST, saved = allow, engine.ALLOWLIST
        try:
            result = run_engine(events, str(ours))
        finally:
            engine.ALLOWLIST = saved
    finally:
        compliance_configs.ALLOWLIST = old
    assert not marker.exists()
    assert len(result.refused) == 3 and not result.valid


def test_guard_refuses_a_symlink_inside_the_shipped_folder(tmp_path, monkeypatch):
    """A link planted beside MLPerf's configs (say by a hostile package) is never followed."""
    shipped = tmp_path / "compliance_checker"
    (shipped / "training_4.0.0").mkdir(parents=True)
    (shipped / "training_4.0.0" / "common.yaml").write_text("[]\n")
    outside = tmp_path / "outside.yaml"
    outside.write_text(_evil_config(tmp_path / "MARKER"))
    (shipped / "training_4.0.0" / "evil.yaml").symlink_to(outside)
    monkeypatch.setattr(compliance_configs, "MLPERF_CONFIG_DIR", str(shipped))
    allow = ConfigAllowlist()
    assert allow.resolve("training_4.0.0/common.yaml") is not None
    assert allow.resolve("training_4.0.0/evil.yaml") is None
    with guarded(allow):
        from mlperf_logging.compliance_checker import mlp_compliance
        mlp_compliance.enqueue_config("training_4.0.0/evil.yaml")
        with pytest.raises(PermissionError):
            mlp_compliance.open(str(outside))
    assert allow.refused == ["training_4.0.0/evil.yaml", str(outside)]
    assert not hasattr(mlp_compliance, "open") or mlp_compliance.open is open


def test_shipped_configs_choose_by_these_keys():
    """The keys whose values pick configs are read from MLPerf's own files, not listed by hand."""
    assert {"submission_division", "submission_benchmark"} <= compliance_configs.choosing_keys("4.0.0")
    assert "opt_name" in compliance_configs.choosing_keys("3.1.0")
    assert os.path.isdir(MLPERF_CONFIG_DIR)
