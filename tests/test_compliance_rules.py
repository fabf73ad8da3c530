"""The compliance YAML generated from the rule files, run by mlperf-logging's own engine."""
from __future__ import annotations

import re
import shutil

import pytest
import synthetic
import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf import compliance_rules as compliance
from trainmark.checker.verdict.registry import load_all
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
RULE_IDS = load_all()


@pytest.fixture(scope="module")
def clean_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    synthetic.write_submission(root, RULES, synthetic.tiny_reference_model())
    return root


def test_yaml_is_what_the_engine_reads_and_follows_the_rule_file():
    text = compliance.compliance_yaml(RULES, "closed")
    records = yaml.load(text, Loader=yaml.BaseLoader)  # the engine's loader: every scalar a string
    keys = {r["KEY"]["NAME"]: r["KEY"] for r in records if "KEY" in r}
    assert keys["submission_benchmark"]["CHECK"] == ["v['value'] == 'resnet-mini'"]
    assert any(f">= {RULES.target!r}" in post for post in [keys["eval_accuracy"]["POST"]])
    assert f"<= {RULES.max_epochs}" in " ".join(keys["epoch_start"]["CHECK"])
    assert keys["opt_momentum"]["REQ"] == "EXACTLY_ONE"
    assert "1800000" in " ".join(keys["init_stop"]["CHECK"])
    open_keys = {r["KEY"]["NAME"]: r["KEY"] for r in yaml.safe_load(compliance.compliance_yaml(RULES, "open"))
                 if "KEY" in r}
    assert open_keys["opt_momentum"]["REQ"] == "OPTIONAL"
    assert "14400000" in " ".join(open_keys["init_stop"]["CHECK"])


def test_every_tag_is_a_catalogued_rule():
    tags = set(re.findall(r"#\s*([A-Z]+-\d{3})", compliance.compliance_yaml(RULES, "closed")))
    assert tags and tags <= set(RULE_IDS)
    assert set(compliance.key_rules(RULES, "closed").values()) <= set(RULE_IDS)


def test_unknown_division_is_refused():
    with pytest.raises(ValueError):
        compliance.compliance_yaml(RULES, "semi-open")


def test_mlperf_entry_point_accepts_a_clean_file_with_the_generated_rules(clean_tree, tmp_path):
    config = compliance.write_compliance_file(RULES, "closed", tmp_path)
    assert compliance.write_compliance_file(RULES, "closed", tmp_path) == config  # content-addressed
    result = clean_tree / "closed/acme/results/sys1/resnet-mini/result_1.txt"
    mlp_compliance.enqueued_configs.clear()
    checker = mlp_compliance.make_checker("training", "6.1.0", quiet=True, werror=True)
    valid, *_ = mlp_compliance.main(str(result), str(config), checker)
    assert valid


def test_a_changed_target_changes_the_verdict_in_one_place(clean_tree, tmp_path):
    path = tmp_path / "rules" / RULES.version / "resnet-mini.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(RULES.path.read_text().replace("target: 0.91", "target: 0.95"))
    options = CheckOptions(rules_root=tmp_path / "rules", reference_builder=lambda r: synthetic.tiny_reference_model())
    report = check_path(clean_tree, options)
    rules = {f.rule for f in report.findings}
    assert {"TARGET-001", "TARGET-002", "TARGET-003"} <= rules  # logs say success; 0.9131 < 0.95
    assert report.benchmarks[0].score["score_train_time_s"] is None


def test_engine_state_does_not_leak_between_files(clean_tree, tmp_path):
    bench = tmp_path / "resnet-mini"  # a benchmark folder checked on its own
    shutil.copytree(clean_tree / "closed/acme/results/sys1/resnet-mini", bench)
    synthetic.edit_mllog(bench / "result_1.txt", "submission_status", synthetic.set_value(""))
    report = check_path(bench, CheckOptions(reference_builder=lambda r: synthetic.tiny_reference_model()))
    assert {(f.rule, f.file) for f in report.findings} == {("MLLOG-003", "result_1.txt")}
    assert mlp_compliance.enqueued_configs == []


def test_rule_code_compiled_once_gives_the_engines_own_findings(clean_tree, tmp_path):
    """The engine's CHECK/PRE/POST strings are compiled once per run (checker/mlperf/engine.py), not per line:
    a folder with failing checks (a target missed, an empty status, a seed edited) gets exactly the findings
    the engine gives compiling every string itself."""
    import contextlib

    from trainmark.checker.mlperf import engine

    bench = tmp_path / "resnet-mini"
    shutil.copytree(clean_tree / "closed/acme/results/sys1/resnet-mini", bench)
    synthetic.edit_mllog(bench / "result_1.txt", "submission_status", synthetic.set_value(""))
    synthetic.edit_mllog(bench / "result_2.txt", "eval_accuracy", synthetic.set_value(0.5), nth=-1)
    synthetic.edit_mllog(bench / "result_3.txt", "seed", synthetic.set_value("x"))
    options = CheckOptions(reference_builder=lambda r: synthetic.tiny_reference_model())

    def findings():
        return [f.to_dict() for f in check_path(bench, options).findings]
    once = findings()
    real = engine._code_compiled_once
    engine._code_compiled_once = contextlib.nullcontext
    try:
        every_time = findings()
    finally:
        engine._code_compiled_once = real
    assert once == every_time and {f["rule"] for f in once} >= {"MLLOG-003"}
    assert not hasattr(mlp_compliance, "eval") and not hasattr(mlp_compliance, "exec")  # restored
