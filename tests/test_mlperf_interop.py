"""MLPerf's own tools read what trainmark writes: system description, MLLOG with our config, a package."""
from __future__ import annotations

import json
import logging

import pytest
from conftest import TEST_RULES
from mlperf_logging.compliance_checker import mlp_compliance
from mlperf_logging.package_checker import package_checker
from mlperf_logging.system_desc_checker import system_desc_checker

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf import compliance_rules as compliance
from trainmark.checker.mlperf.results import known_rulesets
from trainmark.cli import main
from trainmark.harness.measure import system
from trainmark.harness.run import RunOptions, run_benchmark
from trainmark.rules import get_rules

NEWEST = known_rulesets()[-1]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("interop") / "out"
    run_benchmark(RunOptions(benchmark="tiny-test", out=out, rules_dir=TEST_RULES, quiet=True, submitter="acme",
                             system_name="box", seed=21, data_dir=out.parent))
    return out


@pytest.mark.parametrize("ruleset", ["4.0.0", NEWEST])
def test_system_description_passes_mlperf_system_desc_checker(tmp_path, ruleset):
    desc = system.build("cpu", "acme", "closed", "box", None)
    path = tmp_path / "box.json"
    path.write_text(json.dumps(desc))
    valid, name, prefix, _ = system_desc_checker.check_system_desc(str(path), "training", ruleset)
    assert valid and name == "box"
    assert prefix.startswith("acme,box,")
    assert desc["status"] in system.MLPERF_STATUSES and all(f in desc for f in system.MLPERF_REQUIRED_FIELDS)


def test_user_integers_become_mlperf_strings(tmp_path):
    user = tmp_path / "mine.json"
    user.write_text(json.dumps({"host_processor_core_count": 64, "accelerators_per_node": 8,
                                "accelerator_model_name": "X1", "status": "Available cloud"}))
    desc = system.build("cpu", "acme", "closed", None, user)
    assert desc["host_processor_core_count"] == "64" and desc["accelerators_per_node"] == "8"
    assert desc["system_name"] == "8xX1"
    user.write_text(json.dumps({"status": "available soon"}))
    with pytest.raises(Exception, match="field 'status'"):
        system.build("cpu", "acme", "closed", None, user)


def test_mllog_logs_gradient_accumulation_steps(tiny_run):
    text = (tiny_run / "closed/acme/results/box/tiny-test/result_1.txt").read_text()
    records = [json.loads(line[9:]) for line in text.splitlines() if line.startswith(":::MLLOG ")]
    assert [r["value"] for r in records if r["key"] == "gradient_accumulation_steps"] == [1]


@pytest.mark.parametrize("division", ["closed", "open"])
def test_compliance_command_prints_the_config_the_checker_uses(division, capsys):
    assert main(["rules", "compliance", "tiny-test", "--division", division, "--rules-dir", str(TEST_RULES)]) == 0
    assert capsys.readouterr().out == compliance.compliance_yaml(get_rules("tiny-test", "1.2", TEST_RULES), division)


def test_compliance_command_refuses_a_bad_division(capsys):
    assert main(["rules", "compliance", "tiny-test", "--division", "secret", "--rules-dir", str(TEST_RULES)]) == 2
    assert "--division 'secret'" in capsys.readouterr().err


def test_mlperf_compliance_checker_with_our_config_passes_our_logs(tiny_run, tmp_path):
    config = tmp_path / "tiny-test-closed.yaml"
    assert main(["rules", "compliance", "tiny-test", "--division", "closed", "--rules-dir", str(TEST_RULES),
                 "-o", str(config)]) == 0
    files = sorted((tiny_run / "closed/acme/results/box/tiny-test").glob("result_*.txt"))
    assert len(files) == get_rules("tiny-test", "1.2", TEST_RULES).trials >= 2
    for f in files:
        mlp_compliance.enqueued_configs.clear()
        checker = mlp_compliance.make_checker("training", NEWEST, quiet=False, werror=False)
        valid, *_ = mlp_compliance.main(str(f), str(config.resolve()), checker)
        assert valid, f"{f.name} fails mlperf-logging's compliance checker with our config"
    # and the same config catches a broken file: drop the seed line
    broken = tmp_path / "result_1.txt"
    broken.write_text("".join(ln + "\n" for ln in files[0].read_text().splitlines() if '"key": "seed"' not in ln))
    mlp_compliance.enqueued_configs.clear()
    checker = mlp_compliance.make_checker("training", NEWEST, quiet=True, werror=False)
    assert not mlp_compliance.main(str(broken), str(config.resolve()), checker)[0]


def test_mlperf_package_checker_finds_no_error(tiny_run, caplog):
    caplog.set_level(logging.INFO)
    package_checker.check_training_package(str(tiny_run / "closed" / "acme"), "training", NEWEST, quiet=True,
                                           werror=False, rcp_bypass=False, rcp_bert_train_samples=False,
                                           seed_checker_bypass=False, log_output="unused")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert any("PACKAGE CHECKER FOUND NO ERRORS" in r.getMessage() for r in caplog.records)
    assert any("System description checker passed for box" in r.getMessage() for r in caplog.records)


def test_a_trainmark_folder_gets_no_mlperf_ruleset_note(clean_submission, tmp_path):
    """The MLPerf ruleset judges only MLPerf folders: a trainmark-only check names none, even under a path
    that names a round (the notes of MLPerf folders: tests/test_mlperf_ruleset.py)."""
    import shutil

    tiny = CheckOptions()
    assert not [n for n in check_path(clean_submission, tiny).notes if "MLPerf Training ruleset" in n]
    named = tmp_path / "training_results_v4.0"
    shutil.copytree(clean_submission, named)
    for options in (tiny, CheckOptions(mlperf_ruleset="4.1.0")):
        assert not [n for n in check_path(named, options).notes if "MLPerf Training ruleset" in n]
