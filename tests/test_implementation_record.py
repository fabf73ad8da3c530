"""Code in the submission: `trainmark run` writes the implementation record, `trainmark check` verifies it."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED_RULES, TEST_RULES

from trainmark import RESULT_FORMAT_VERSION
from trainmark.checker.check import CheckOptions, check_path
from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.harness.code_record import manifest_text
from trainmark.harness.run import RunOptions, run_benchmark
from trainmark.rules import LATEST_VERSION, known_versions, reference_code

SUB = "closed/acme"
RECORD = f"{SUB}/benchmarks/tiny-test/implementations/box"
BENCH = f"{SUB}/results/box/tiny-test"


def _rules_with_hashes(dest: Path, src: Path = TEST_RULES) -> Path:
    """The test rules (or ``src``) plus reference-code.json and reference-structures.json generated
    for them (as `trainmark rules code-hashes` does)."""
    from trainmark.cli.rules import structure_table
    from trainmark.rules import reference_structures

    shutil.copytree(src, dest)
    table = reference_code.hash_table(LATEST_VERSION, dest)
    reference_code.hash_file(LATEST_VERSION, dest).write_text(reference_code.render(table), encoding="utf-8")
    reference_structures.structure_file(LATEST_VERSION, dest).write_text(
        reference_structures.render(structure_table(LATEST_VERSION, dest)), encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def closed_run(tmp_path_factory):
    """tiny-test, closed division, 5 trials (a few seconds): the folder and the rules it was judged with."""
    base = tmp_path_factory.mktemp("impl")
    rules = _rules_with_hashes(base / "rules")
    run_benchmark(RunOptions(benchmark="tiny-test", out=base / "out", rules_dir=rules, quiet=True,
                             submitter="acme", system_name="box", seed=11, data_dir=base))
    return base / "out", rules


@pytest.fixture
def run_copy(closed_run, tmp_path):
    out, rules = closed_run
    shutil.copytree(out, tmp_path / "out", symlinks=True)
    return tmp_path / "out", rules


def check(out: Path, rules: Path):
    return check_path(out, CheckOptions(rules_root=rules))


def findings(report):
    """(rule, file) of every finding but CONVERGE-002: the tiny test rules carry no convergence points, which
    the checker says as a warning on every closed tiny-test folder; these tests are about the code record."""
    return [(f.rule, f.file) for f in report.findings if f.rule != "CONVERGE-002"]


def rewrite_manifest(record: Path) -> None:
    (record / "MANIFEST.sha256").write_text(manifest_text(record), encoding="utf-8")


def test_shipped_reference_hashes_are_up_to_date():
    """Every table that is not frozen as released describes the installed code; the latest is never frozen."""
    assert not reference_code.frozen(LATEST_VERSION)
    for version in known_versions():
        if reference_code.frozen(version):
            continue
        text = reference_code.render(reference_code.hash_table(version))
        assert reference_code.hash_file(version).read_text(encoding="utf-8") == text, \
            f"rules/{version}/reference-code.json is stale: run `trainmark rules code-hashes --rules-version {version}`"


def test_a_frozen_table_is_never_rewritten(tmp_path, capsys):
    """rules 1.0's hashes stay as released (its results are verified against them): code-hashes refuses to write
    them, and a closed run under 1.0 is refused before anything is written."""
    path = reference_code.hash_file("1.0")
    before = path.read_bytes()
    assert "new runs use 1.1" in reference_code.frozen("1.0")
    assert main(["rules", "code-hashes", "--rules-version", "1.0"]) == 2
    err = capsys.readouterr().err
    assert "is frozen" in err and len(err.strip().splitlines()) == 1
    assert path.read_bytes() == before
    run = dict(benchmark="resnet-mini", rules_version="1.0", quiet=True, submitter="acme", system_name="box",
               trials=1, data_dir=tmp_path, out=tmp_path / "out")
    with pytest.raises(UserError, match=r"rules 1\.0: its reference code is frozen as released .*--rules-version 1\.2"):
        run_benchmark(RunOptions(**run))
    assert not (tmp_path / "out").exists()
    assert main(["run", "resnet-mini", "--rules-version", "1.0", "--out", str(tmp_path / "out"), "--quiet",
                 "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "frozen as released" in err and len(err.strip().splitlines()) == 1


def test_a_twins_record_covers_the_framework_helpers():
    """A Keras twin's record holds its module, and the helpers the TensorFlow backend runs for every twin (the
    weight mapping, the import guard), which live in trainmark.reference for this."""
    from trainmark.rules import get_rules

    for name in ("resnet-mini", "lstm-mini"):
        sources = reference_code.reference_sources(get_rules(name), "tensorflow")
        assert {"code/trainmark/reference/keras_twins/weights.py", "code/trainmark/reference/tf_import.py",
                "code/trainmark/reference/keras_twins/recipe.py"} <= set(sources), name
        assert not [p for p in reference_code.reference_sources(get_rules(name)) if "keras_twins" in p]


def test_reference_sources_follow_imports_of_the_reference_package():
    from trainmark.rules import get_rules

    sources = reference_code.reference_sources(get_rules("resnet-mini"))
    assert "code/trainmark/reference/resnet_mini.py" in sources
    assert "code/trainmark/reference/fashion_mnist_classifier.py" in sources  # imported by resnet_mini
    assert "code/trainmark/reference/base.py" in sources                       # imported transitively
    assert "code/trainmark/reference/lstm.py" not in sources                   # another benchmark's code
    rule_file = SHIPPED_RULES / LATEST_VERSION / "resnet-mini.yaml"
    assert sources[f"code/rules/{LATEST_VERSION}/resnet-mini.yaml"] == rule_file


def test_a_twins_sources_are_found_by_reading_never_by_running_them():
    """The Keras twins import TensorFlow at the top; listing their sources (``trainmark rules code-hashes``)
    must not run them: ``from recipe import as_tf`` names no module file, and nothing is imported to learn so."""
    import subprocess
    import sys

    code = ("import sys; from trainmark.rules import get_rules, reference_code as rc; "
            "s = rc.reference_sources(get_rules('lstm-mini'), 'tensorflow'); "
            "print('code/trainmark/reference/keras_twins/recipe.py' in s, 'tensorflow' in sys.modules, "
            "any(m.startswith('trainmark.reference.keras_twins.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False"]


def test_run_writes_the_record_and_check_verifies_it(run_copy):
    out, rules = run_copy
    record = out / RECORD
    info = json.loads((record / "implementation.json").read_text())
    assert info["benchmark"] == "tiny-test" and info["division"] == "closed" and info["model"] is None
    rule_file = f"code/rules/{LATEST_VERSION}/tiny-test.yaml"
    assert "code/tiny_reference.py" in info["code_files"] and rule_file in info["code_files"]
    assert (record / rule_file).read_bytes() == (rules / LATEST_VERSION / "tiny-test.yaml").read_bytes()
    env = json.loads((record / "environment.json").read_text())
    assert env["distributions"]["torch"] and env["python"] and "cuda" in env and "cuda_driver" in env
    assert json.loads((record / "command.json").read_text())["options"]["benchmark"] == "tiny-test"
    for line in (record / "MANIFEST.sha256").read_text().splitlines():  # what `sha256sum -c` does
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((record / name).read_bytes()).hexdigest() == digest
    trial = json.loads((out / BENCH / "trial_1" / "trial.json").read_text())
    assert trial["format_version"] == RESULT_FORMAT_VERSION
    report = check(out, rules)
    assert findings(report) == [] and report.exit_code == 0


def test_edited_reference_code_is_two_findings(run_copy):
    out, rules = run_copy
    with open(out / RECORD / "code/tiny_reference.py", "a") as f:
        f.write("# faster\n")
    report = check(out, rules)
    assert ("CODE-004", f"{RECORD}/code/tiny_reference.py") in findings(report)   # manifest
    assert ("CODE-007", f"{RECORD}/code/tiny_reference.py") in findings(report)   # released reference
    assert report.exit_code == 1


def test_consistent_record_of_modified_code_fails_the_closed_division(run_copy):
    out, rules = run_copy
    record = out / RECORD
    (record / "code/trainmark/reference/base.py").write_text("# my own base\n")
    (record / "code/trainmark/reference/extra.py").write_text("x = 1\n")
    rewrite_manifest(record)
    got = findings(check(out, rules))
    assert ("CODE-007", f"{RECORD}/code/trainmark/reference/base.py") in got
    assert ("CODE-007", f"{RECORD}/code/trainmark/reference/extra.py") in got
    assert not [r for r, _ in got if r in ("CODE-003", "CODE-004", "CODE-005")]


def test_manifest_listing_a_missing_file_and_a_file_not_listed(run_copy):
    out, rules = run_copy
    record = out / RECORD
    (record / "command.json").unlink()
    (record / "notes.txt").write_text("added later\n")
    got = findings(check(out, rules))
    assert ("CODE-003", f"{RECORD}/command.json") in got
    assert ("CODE-005", f"{RECORD}/notes.txt") in got
    assert ("CODE-006", f"{RECORD}/command.json") in got


def test_malformed_manifest_line_is_named(run_copy):
    out, rules = run_copy
    path = out / RECORD / "MANIFEST.sha256"
    path.write_text(path.read_text() + "0" * 64 + "  ../../escape.txt\n")
    report = check(out, rules)
    (bad,) = [f for f in report.findings if f.rule == "CODE-002"]
    assert bad.file == f"{RECORD}/MANIFEST.sha256" and bad.line == len(path.read_text().splitlines())


def test_missing_record_is_an_error_for_format_2_and_a_note_for_format_1(run_copy):
    """Format 1 (no record) only where neither the MLLOG nor the rules' released hashes require the record."""
    out, rules = run_copy
    shutil.rmtree(out / SUB / "benchmarks")
    report = check(out, rules)
    assert ("CODE-001", RECORD) in findings(report) and report.exit_code == 1
    for trial in (out / BENCH).glob("trial_*/trial.json"):
        data = json.loads(trial.read_text())
        data.pop("format_version")
        trial.write_text(json.dumps(data))
    assert ("CODE-001", RECORD) in findings(check(out, rules))  # the MLLOG still logs format 2
    for result in (out / BENCH).glob("result_*.txt"):
        result.write_text("".join(line + "\n" for line in result.read_text().splitlines()
                                  if '"trainmark_format_version"' not in line))
    assert ("CODE-013", RECORD) in findings(check(out, rules))  # these rules ship code hashes
    report = check(out, TEST_RULES)  # no hashes: a format-1 folder gets a note
    assert not [f for f in report.findings if f.rule.startswith("CODE-")]
    assert any("code not verified" in n and "result format 1" in n for n in report.notes)


def test_record_of_another_system_and_a_link_inside(run_copy):
    out, rules = run_copy
    record = out / RECORD
    info = json.loads((record / "implementation.json").read_text())
    info["system"] = "other-box"
    (record / "implementation.json").write_text(json.dumps(info))
    (record / "code" / "passwd").symlink_to("/etc/passwd")
    rewrite_manifest(record)
    got = findings(check(out, rules))
    assert ("CODE-010", f"{RECORD}/implementation.json") in got
    assert ("HOSTILE-001", f"{RECORD}/code/passwd") in got


def test_closed_check_without_released_hashes_is_a_warning(run_copy):
    out, _ = run_copy
    report = check(out, TEST_RULES)  # the test rules ship no reference-code.json
    assert [rule for rule, _ in findings(report)] == ["CODE-008"] and report.exit_code == 0


def test_run_warns_before_training_when_the_reference_is_not_the_released_one(tmp_path, capsys):
    rules = _rules_with_hashes(tmp_path / "rules")
    run = dict(benchmark="tiny-test", rules_dir=rules, quiet=True, submitter="acme", system_name="box", seed=3,
               trials=1, data_dir=tmp_path)
    run_benchmark(RunOptions(out=tmp_path / "a", **run))
    assert "differs from the released reference" not in capsys.readouterr().err
    table = json.loads(reference_code.hash_file(LATEST_VERSION, rules).read_text())
    table["benchmarks"]["tiny-test"]["code/tiny_reference.py"] = "0" * 64
    reference_code.hash_file(LATEST_VERSION, rules).write_text(json.dumps(table))
    run_benchmark(RunOptions(out=tmp_path / "b", **run))
    err = capsys.readouterr().err
    assert f"differs from the released reference of rules {LATEST_VERSION} (code/tiny_reference.py)" in err


def test_open_division_records_the_model_source(tmp_path, monkeypatch):
    (tmp_path / "mymodel_b12.py").write_text(
        "from torch import nn\n\ndef build():\n    return nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))\n")
    monkeypatch.chdir(tmp_path)  # --model imports from the working folder
    rules = _rules_with_hashes(tmp_path / "rules")
    out = tmp_path / "out"
    run_benchmark(RunOptions(benchmark="tiny-test", out=out, rules_dir=rules, quiet=True, submitter="acme",
                             system_name="box", seed=5, division="open", model="mymodel_b12:build", trials=1,
                             data_dir=tmp_path))
    record = out / "open/acme/benchmarks/tiny-test/implementations/box"
    assert (record / "model/mymodel_b12.py").read_text() == (tmp_path / "mymodel_b12.py").read_text()
    assert json.loads((record / "implementation.json").read_text())["model"] == "mymodel_b12:build"
    assert not [f for f in check(out, rules).findings if f.rule.startswith("CODE-")]
    (record / "model/mymodel_b12.py").unlink()
    rewrite_manifest(record)
    got = findings(check(out, rules))
    assert ("CODE-009", "open/acme/benchmarks/tiny-test/implementations/box/model") in got


def test_code_hashes_command_checks_staleness(tmp_path, capsys):
    rules = _rules_with_hashes(tmp_path / "rules")
    assert main(["rules", "code-hashes", "--check", "--rules-dir", str(rules)]) == 0
    with open(rules / LATEST_VERSION / "tiny-test.yaml", "a") as f:
        f.write("# edited\n")
    assert main(["rules", "code-hashes", "--check", "--rules-dir", str(rules)]) == 1
    assert "stale" in capsys.readouterr().err
    assert main(["rules", "code-hashes", "--rules-dir", str(rules)]) == 0
    assert main(["rules", "code-hashes", "--check", "--rules-dir", str(rules)]) == 0


def test_a_trial_folder_without_a_result_file_still_claims_its_format(run_copy):
    """The code check reads every trial folder's trial.json from the benchmark's evidence (``code_claims``), not
    only those of trials with a result file: a format-2 claim there still requires the record."""
    out, _ = run_copy
    shutil.rmtree(out / SUB / "benchmarks")
    for trial in (out / BENCH).glob("trial_*/trial.json"):
        data = json.loads(trial.read_text())
        data.pop("format_version")
        trial.write_text(json.dumps(data))
    for result in (out / BENCH).glob("result_*.txt"):
        result.write_text("".join(line + "\n" for line in result.read_text().splitlines()
                                  if '"trainmark_format_version"' not in line))
    assert not [f for f in check(out, TEST_RULES).findings if f.rule == "CODE-001"]
    (out / BENCH / "trial_9").mkdir()
    (out / BENCH / "trial_9" / "trial.json").write_text(json.dumps({"format_version": 2}))
    assert ("CODE-001", RECORD) in findings(check(out, TEST_RULES))


def test_trial_folders_without_a_result_file_are_read_within_a_bound(tmp_path):
    """A folder of thousands of result-less trial_<k>/ would make the checker read each trial.json (1 MiB cap):
    only the first MAX_ORPHAN_TRIALS are, beside every trial with a result file."""
    from trainmark.checker.read import evidence
    from trainmark.checker.read.levels import BenchmarkFolder
    from trainmark.checker.read.safefs import SafeTree

    (tmp_path / "result_1.txt").write_text("")
    for k in range(1, evidence.MAX_ORPHAN_TRIALS + 12):
        (tmp_path / f"trial_{k}").mkdir()
        (tmp_path / f"trial_{k}" / "trial.json").write_text(json.dumps({"format_version": 2}))
    tree = SafeTree(tmp_path)
    ev = evidence.read_benchmark(BenchmarkFolder("", "tiny-test", None, None, None, tree.list_dir("")), tree)
    assert sorted(ev.trial_jsons) == list(range(1, evidence.MAX_ORPHAN_TRIALS + 2))  # trial 1, then 20 orphans
    assert all(j.value == {"format_version": 2} for j in ev.trial_jsons.values())
