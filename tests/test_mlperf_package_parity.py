"""Every check MLPerf's package checker makes, made by our own code (issue 31, item 3).

The untouched v4.0 sample passes with the scores MLPerf's summarizer gives; each mutation MLPerf's
package checker rejects (dropped runs, a broken system description, duplicated seeds, an RCP failure)
is an error here, and a forged scaling.json changes no score. Expected figures come from
mlperf-logging 4.1.68's own tools run once on a scratch copy of the fixture (see test_checker_mlperf.py).
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.mlperf import mlperf_data, rcp
from trainmark.checker.mlperf.seeds import seed_problems
from trainmark.format.mllog_read import Event

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
needs_fixture = pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
SYSTEM = "R760xax4L40S"
RESNET_MINUTES = 85.95998333333334          # MLPerf's summarizer on the fixture
BERT_FACTOR = 1.029979955725132             # what MLPerf's package checker writes into bert/scaling.json


@pytest.fixture
def sub(tmp_path) -> Path:
    """A scratch copy of the fixture's Dell submitter folder."""
    dest = tmp_path / "mlperf-training-v4.0"
    shutil.copytree(FIXTURE, dest)
    return dest / "Dell"


def check(path: Path):
    return check_path(path, CheckOptions(mlperf_ruleset="4.0.0"))


def rules_of(report, severity: str | None = None) -> set[str]:
    return {f.rule for f in report.findings if severity is None or f.severity == severity}


def score_of(report, benchmark: str, system: str = SYSTEM) -> dict:
    return next(b.score for b in report.benchmarks if (b.system, b.benchmark) == (system, benchmark))


def edit(path: Path, change) -> None:
    path.write_text(change(path.read_text(encoding="latin-1")), encoding="latin-1")


# --- the untouched fixture -------------------------------------------------------------------------

@needs_fixture
def test_untouched_fixture_passes_every_package_check_with_computed_factors():
    report = check_path(FIXTURE)
    assert report.exit_code == 0 and not rules_of(report, "error")
    for result in report.benchmarks:
        assert result.score["rcp"]["passed"], result.rel
    assert score_of(report, "bert")["scaling_factor"] == BERT_FACTOR   # computed, equal to MLPerf's file
    assert score_of(report, "resnet")["score_minutes"] == pytest.approx(RESNET_MINUTES, rel=1e-12)


@needs_fixture
@pytest.mark.parametrize("second, fails", [("lars", False), ("sgd", True)])
def test_a_key_logged_twice_with_one_value_is_mlperfs_warning_not_a_failure(sub, second, fails):
    """MLPerf's package checker runs its compliance engine without --werror: an EXACTLY_ONE key logged twice
    with the same value is a warning (v3.1 Intel-HabanaLabs stable_diffusion logs its opt_* keys twice); two
    values fail the run."""
    folder = sub / "results" / SYSTEM / "resnet"
    for result in folder.glob("result_*.txt"):
        edit(result, lambda t: "".join(line + (line.replace('"value": "lars"', f'"value": "{second}"')
                                                .replace('"lineno": ', '"lineno": 1')   # not a duplicate line
                                                if '"key": "opt_name"' in line else "")
                                       for line in t.splitlines(keepends=True)))
    report = check(sub)
    assert any(f.rule == "MLPERF-001" and "/resnet/" in f.file for f in report.findings) is fails
    if not fails:
        assert score_of(report, "resnet")["score_minutes"] == pytest.approx(RESNET_MINUTES, rel=1e-12)


# --- a. the number of result files -----------------------------------------------------------------

@needs_fixture
@pytest.mark.parametrize("kept", [4, 2])
def test_fewer_result_files_than_required_is_an_error(sub, kept):
    for k in range(kept, 5):
        (sub / "results" / SYSTEM / "resnet" / f"result_{k}.txt").unlink()
    report = check(sub)
    assert "MLPERF-004" in rules_of(report, "error") and report.exit_code == 1


@needs_fixture
def test_a_benchmark_without_score_fails_the_check(sub):
    for k in (2, 3, 4):
        (sub / "results" / SYSTEM / "resnet" / f"result_{k}.txt").unlink()
    report = check(sub)
    assert score_of(report, "resnet")["score_minutes"] is None
    assert report.exit_code == 1


@needs_fixture
def test_more_result_files_than_required_is_an_error(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    shutil.copy(folder / "result_4.txt", folder / "result_5.txt")
    report = check(sub)
    assert {"MLPERF-007", "MLPERF-010"} <= rules_of(report, "error")   # the copy repeats a seed too


# --- b. the system description ---------------------------------------------------------------------

def _edit_system(sub: Path, change) -> None:
    path = sub / "systems" / f"{SYSTEM}.json"
    desc = json.loads(path.read_text())
    change(desc)
    path.write_text(json.dumps(desc))


@needs_fixture
def test_missing_field_and_old_status_are_errors(sub):
    def breaks(desc):
        del desc["accelerator_model_name"]
        desc["status"] = "available"
    _edit_system(sub, breaks)
    report = check_path(sub, CheckOptions(mlperf_ruleset="5.0.0"))
    found = {(f.rule, f.seen) for f in report.findings}
    assert ("MLPERF-008", "absent") in found and ("MLPERF-009", "available") in found
    assert report.exit_code == 1


@needs_fixture
def test_status_before_v4_1_is_not_checked(sub):
    """Status values are checked from Training 4.1.0 on: the published v4.0 round says 'onprem', 'cloud' and
    'available' (mlperf-logging 4.1.68 applies them to 4.0.0 too, failing its own published round)."""
    _edit_system(sub, lambda d: d.update(status="onprem"))
    assert "MLPERF-009" not in rules_of(check(sub))
    assert "MLPERF-009" in rules_of(check_path(sub, CheckOptions(mlperf_ruleset="4.1.0")), "error")


@needs_fixture
@pytest.mark.parametrize("field,value", [("accelerators_per_node", 4), ("division", "Closed")])
def test_summary_fields_are_strings_and_division_closed_or_open(sub, field, value):
    _edit_system(sub, lambda d: d.update({field: value}))
    assert "MLPERF-009" in rules_of(check(sub), "error")


def test_required_fields_are_read_from_mlperf_logging():
    fields = mlperf_data.system_required_fields()
    assert {"accelerator_model_name", "division", "status", "sw_notes"} <= set(fields) and len(fields) >= 30
    assert "Available cloud" in mlperf_data.system_status_values()


# --- c. seeds --------------------------------------------------------------------------------------

def _seed_of(path: Path) -> str:
    return re.search(r'"key": "seed", "value": (\d+)', path.read_text(encoding="latin-1"))[1]


@needs_fixture
def test_duplicated_seed_is_an_error(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    seed = _seed_of(folder / "result_0.txt")
    edit(folder / "result_1.txt", lambda t: re.sub(r'("key": "seed", "value": )\d+', rf"\g<1>{seed}", t))
    report = check(sub)
    (finding,) = [f for f in report.findings if f.rule == "MLPERF-010"]
    assert finding.file.endswith("resnet/result_1.txt") and finding.line is not None
    assert report.exit_code == 1


@needs_fixture
def test_run_without_seed_is_an_error(sub):
    edit(sub / "results" / SYSTEM / "resnet" / "result_2.txt",
         lambda t: "".join(line for line in t.splitlines(keepends=True) if '"key": "seed"' not in line))
    assert "MLPERF-010" in rules_of(check(sub), "error")


@needs_fixture
def test_seed_bypass_is_a_warning_only_as_mlperf_reads_it(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    seed = _seed_of(folder / "result_0.txt")
    edit(folder / "result_1.txt", lambda t: re.sub(r'("key": "seed", "value": )\d+', rf"\g<1>{seed}", t))
    (folder / "package_checker_params").write_text("seed-checker-bypass\n")  # the newline: MLPerf ignores it
    assert "MLPERF-010" in rules_of(check(sub))
    (folder / "package_checker_params").write_text("seed-checker-bypass")
    report = check(sub)
    assert "MLPERF-010" not in rules_of(report) and "MLPERF-013" in rules_of(report, "warning")


def test_seed_rules_as_mlperfs_seed_checker():
    def seed(value, line=1, source="train.py", lineno=7):
        return Event(line, "", 0.0, "seed", value, {"file": source, "lineno": lineno}, "POINT_IN_TIME")
    problems = seed_problems([("a", [seed(1)]), ("b", [seed(1)]), ("c", [seed("x")]), ("d", []),
                              ("e", [seed(2), seed(3, lineno=8)]), ("f", None)])
    assert [(p.file, p.error) for p in problems] == [("b", True), ("c", True), ("d", True), ("e", False),
                                                     ("f", True)]


def test_before_4_1_a_folder_without_any_seed_passes_as_the_round_checkers_did():
    """mlperf-logging required a seed in every run from 4.1.0 on (commit ac0096c); the v3.1 and v4.0 checkers
    accepted a folder where no run logs one (the published closed dlrm_dcnv2 folders, HugeCTR), and failed
    a run without one only when another run logs one."""
    def seed(value):
        return Event(1, "", 0.0, "seed", value, {"file": "train.py", "lineno": 7}, "POINT_IN_TIME")
    unseeded = [("a", []), ("b", []), ("c", [])]
    for ruleset in ("3.1.0", "4.0.0"):
        assert [(p.file, p.error) for p in seed_problems(unseeded, ruleset)] == [("a", False)]
        assert [(p.file, p.error) for p in seed_problems([("a", []), ("b", [seed(1)]), ("c", [seed(2)])],
                                                         ruleset)] == [("a", True)]
    for ruleset in ("4.1.0", "5.0.0", None):
        assert [(p.file, p.error) for p in seed_problems(unseeded, ruleset)] == [("a", True), ("b", True),
                                                                               ("c", True)]


@needs_fixture
@pytest.mark.parametrize("ruleset, rule", [("4.0.0", "MLPERF-011"), ("4.1.0", "MLPERF-010")])
def test_no_seed_in_any_run_fails_only_from_4_1(sub, ruleset, rule):
    folder = sub / "results" / SYSTEM / "ssd"     # ssd: in 4.0.0 and 4.1.0
    for result in folder.glob("result_*.txt"):
        edit(result, lambda t: "".join(line for line in t.splitlines(keepends=True) if '"key": "seed"' not in line))
    report = check_path(sub, CheckOptions(mlperf_ruleset=ruleset))
    assert {f.rule for f in report.findings if f.file.startswith(f"results/{SYSTEM}/ssd")
            and f.rule.startswith("MLPERF-01")} == {rule}


# --- d. RCP and the scaling factor -----------------------------------------------------------------

def _shrink_epochs(text: str) -> str:
    """Every evaluation at half its epoch: converging twice as fast as any reference allows."""
    def half(match):
        return f'{match[1]}{int(match[2]) // 2}'
    return "\n".join(re.sub(r'("epoch_num": )(\d+)', half, line) if '"key": "eval_accuracy"' in line else line
                     for line in text.split("\n"))


@needs_fixture
def test_rcp_failure_is_an_error(sub):
    for path in (sub / "results" / SYSTEM / "resnet").glob("result_*.txt"):
        edit(path, _shrink_epochs)
    report = check(sub)
    (finding,) = [f for f in report.findings if f.rule == "MLPERF-012"]
    assert finding.file.endswith("resnet") and "Missing RCP" in finding.message
    assert report.exit_code == 1


@needs_fixture
def test_rcp_bypass_is_a_warning_and_scales_nothing(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    for path in folder.glob("result_*.txt"):
        edit(path, _shrink_epochs)
    (folder.parent / "package_checker_params").write_text("rcp-bypass")   # system-wide, as MLPerf reads it
    report = check(sub)
    assert "MLPERF-012" not in rules_of(report) and "MLPERF-013" in rules_of(report, "warning")
    assert score_of(report, "resnet")["scaling_factor"] == 1.0


@needs_fixture
@pytest.mark.parametrize("forged", [0.5, 0.0001, 2.0])
def test_forged_scaling_json_is_a_finding_and_never_scales(sub, forged):
    """Below the computed factor (it would flatter the score): MLPERF-014, error. Above it (it would only slow
    the score, as the published factors of RCP checkers before mlperf-logging 39fc7a0 do): MLPERF-017, warning."""
    (sub / "results" / SYSTEM / "resnet" / "scaling.json").write_text(json.dumps({"scaling_factor": forged}))
    (sub / "results" / SYSTEM / "bert" / "scaling.json").write_text(json.dumps({"scaling_factor": forged}))
    report = check(sub)
    rule = "MLPERF-014" if forged < 1 else "MLPERF-017"
    assert {f.file.split("/")[-2] for f in report.findings if f.rule == rule} == {"resnet", "bert"}
    assert report.exit_code == (1 if forged < 1 else 0)
    assert score_of(report, "resnet")["score_minutes"] == pytest.approx(RESNET_MINUTES, rel=1e-12)
    assert score_of(report, "bert")["scaling_factor"] == BERT_FACTOR


@needs_fixture
@pytest.mark.parametrize("written, flagged", [(1.03, False), (1.02998, False), (1.031, True), (1.0, True),
                                              (1.02997996, False), (1.02997997, True)])
def test_a_scaling_json_rounded_by_hand_is_not_forged(sub, written, flagged):
    """The v3.1 round's review wrote factors rounded (ASUSTeK unet3d: 1.09 for 1.0905325): the computed factor
    rounded to the written decimals (two or more) is no MLPERF-014; the score still uses the computed one."""
    (sub / "results" / SYSTEM / "bert" / "scaling.json").write_text(json.dumps({"scaling_factor": written}))
    report = check(sub)
    assert bool({"MLPERF-014", "MLPERF-017"} & set(rules_of(report))) is flagged
    assert score_of(report, "bert")["scaling_factor"] == BERT_FACTOR


@needs_fixture
def test_scaling_factor_is_computed_without_scaling_json(sub):
    (sub / "results" / SYSTEM / "bert" / "scaling.json").unlink()
    report = check(sub)
    assert score_of(report, "bert")["score_minutes"] == pytest.approx(82.69514655800441, rel=1e-12)
    assert not rules_of(report, "error")


@needs_fixture
def test_open_division_has_no_rcp_and_no_factor(sub):
    _edit_system(sub, lambda d: d.update(division="open"))
    (sub / "results" / SYSTEM / "bert" / "scaling.json").unlink()
    report = check(sub)
    bert = score_of(report, "bert")
    assert bert["rcp"] is None and bert["scaling_factor"] == 1.0


def test_rcp_statistics_are_mlperfs():
    """The figures MLPerf's RCP checker logs on the fixture (package checker, training 4.0.0)."""
    bert = next(p for p in rcp.reference_points("4.0.0", "bert") if p.batch_size == 448)
    assert (bert.mean, bert.min_mean) == (2414421.3333333335, pytest.approx(2274732.0290379203, rel=1e-12))
    gnn = rcp.prune(rcp.reference_points("4.0.0", "gnn"), "gnn", 10)
    assert [p.batch_size for p in gnn] == [4096, 32768, 262144]
    low, high = gnn[0], gnn[1]
    point = rcp.interpolate(8192, low, high, "gnn", 10)
    assert point.mean == pytest.approx(0.8103174603174603, rel=1e-12)
    assert point.min_mean == pytest.approx(0.786132570296999, rel=1e-12)


@pytest.mark.parametrize("scale", [0.96, 0.98, 1.0, 1.2, 3.0])
def test_scaling_factor_is_never_below_one(scale):
    """MLPerf's factor is reference mean / submission mean, floored at 1, and only when the check passes."""
    runs = [rcp.RunConvergence(256, "ssd", 4 * scale) for _ in range(5)]
    verdict = rcp.check_rcp(runs, "ssd", "4.0.0")
    assert verdict.scaling_factor >= 1.0
    assert verdict.passed == (scale >= 1.0)          # ssd's smallest reference converges in 4 epochs, stdev 0


# --- e. power results ------------------------------------------------------------------------------

def _add_power(folder: Path, nodes: int = 2) -> None:
    for result in folder.glob("result_*.txt"):
        run = folder / "power" / result.stem
        run.mkdir(parents=True)
        for i in range(nodes):
            (run / f"node_{i}.txt").write_text("")
        (run / "sw_0.txt").write_text("")


@needs_fixture
def test_complete_power_results_pass(sub):
    _add_power(sub / "results" / SYSTEM / "resnet")
    report = check(sub)
    assert not {"MLPERF-015", "MLPERF-016"} & rules_of(report) and report.exit_code == 0


@needs_fixture
def test_one_run_with_broken_power_results_is_accepted_two_are_not(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    _add_power(folder)
    shutil.rmtree(folder / "power" / "result_0")
    report = check(sub)
    assert "MLPERF-015" in rules_of(report, "warning") and report.exit_code == 0
    (folder / "power" / "result_1" / "node_1.txt").rename(folder / "power" / "result_1" / "node_2.txt")  # 2 of 2
    report = check(sub)
    assert "MLPERF-016" in rules_of(report, "error") and report.exit_code == 1


@needs_fixture
def test_a_run_with_fewer_power_files_than_the_others(sub):
    folder = sub / "results" / SYSTEM / "resnet"
    _add_power(folder)
    (folder / "power" / "result_3" / "node_1.txt").unlink()
    (finding,) = [f for f in check(sub).findings if f.rule == "MLPERF-015"]
    assert finding.file.endswith("result_3.txt") and "1 node power files; the other runs have 2" in finding.message


# --- f. our budgets fit the largest real files (issue 31, item 2) ----------------------------------

def test_the_largest_real_mlperf_files_fit_the_reader_budgets():
    """v4.0 NVIDIA gpt3 has 13,212 records (5.6e8 squared characters), v5.0 llama31_405b 9,531 (8,192 of
    them init_start): files of that shape are read whole, with no LIMIT finding."""
    from trainmark.checker.read.mllog_read import read_events
    from trainmark.checker.verdict.findings import Findings

    record = (':::MLLOG {"namespace": "", "time_ms": 1713455897907, "event_type": "POINT_IN_TIME", "key": '
              '"init_start", "value": null, "metadata": {"file": "/workspace/llm/custom_callbacks.py", '
              '"lineno": 123, "pad": "%s"}}')
    line = record % ("x" * (205 - len(record)))
    findings = Findings()
    events = read_events("\n".join([line] * 13_212 * 3).encode(), "result_0.txt", findings, strict=False)
    assert len(events) == 3 * 13_212 and not len(findings)


@needs_fixture
def test_power_numbering_as_mlperf_reads_it(sub):
    """v4.0 smc: node_1.txt beside nodes_1_to_1.png: two 'node' files numbered 1 and 1, within 0..1 (MLPerf
    passes it); a lone node_1.txt is outside 0..0 and a non-numbered node file is a finding."""
    folder = sub / "results" / SYSTEM / "resnet"
    _add_power(folder, nodes=0)
    for run in (folder / "power").iterdir():
        (run / "node_1.txt").write_text("")
        (run / "nodes_1_to_1.png").write_text("")
    assert not {"MLPERF-015", "MLPERF-016"} & rules_of(check(sub))
    (folder / "power" / "result_0" / "nodes_1_to_1.png").unlink()
    (folder / "power" / "result_0" / "node_a.png").write_text("")
    (finding,) = [f for f in check(sub).findings if f.rule == "MLPERF-015"]
    assert "'node_a.png' is not numbered" in finding.message


@needs_fixture
def test_a_system_folder_says_its_division_is_unknown_and_a_submitter_folder_does_not(sub):
    """systems/<system>.json lies outside a system folder: the closed-division checks run, and a note says so."""
    system_notes = [n for n in check(sub / "results" / SYSTEM).notes if n.startswith("division unknown")]
    assert len(system_notes) == 1 and "bert" in system_notes[0] and "seeds, RCP" in system_notes[0]
    assert not [n for n in check(sub).notes if n.startswith("division unknown")]


@needs_fixture
def test_the_scoring_checks_read_only_the_keys_they_declare():
    """The seed, RCP, division and config-name checks and the run's time are given only the events of the keys
    each declares (issue 42); on every run of the fixture, and on runs with a bad seed, a bad evaluation and a
    wrong division among other keys, each gives what it gives on all the events."""
    from trainmark.checker.mlperf import compliance_configs, division, results
    from trainmark.checker.verdict.findings import Findings
    from trainmark.format.mllog_read import read_records

    runs = [(str(p), read_records(p.read_bytes(), strict=False)) for p in sorted(FIXTURE.rglob("result_*.txt"))]
    assert len(runs) > 30
    first = runs[0][1]
    crafted = [e for e in first if e.key != "seed"] + [Event(9000, "", 1.0, "seed", "x", {"file": "a", "lineno": 1},
                                                             None)]
    broken = [Event(e.line, e.text, e.time_ms, e.key, "open" if e.key == "submission_division" else e.value,
                    {} if e.key == "eval_accuracy" else e.metadata, e.event_type) for e in first]
    errors = [Event(e.line, e.text, e.time_ms, "eval_error" if e.key == "eval_accuracy" else e.key, e.value,
                    e.metadata, e.event_type) for e in first]
    runs += [("crafted", crafted), ("broken", broken), ("errors", errors)]
    scored = [(rel, results._scored(events, "4.0.0")) for rel, events in runs]
    assert sum(map(len, (e for _, e in scored))) < sum(map(len, (e for _, e in runs))) / 5  # a real cut

    def findings(parsed):
        found = Findings()
        division.check_logged_division(parsed, "closed", found)
        return [(f.rule, f.file, f.line, f.message) for f in found]

    assert findings(scored) == findings(runs) and findings(runs)
    assert seed_problems(scored, "4.0.0") == seed_problems(runs, "4.0.0")
    assert any(p.file == "crafted" for p in seed_problems(runs, "4.0.0"))
    for (_, all_events), (_, some) in zip(runs, scored):
        assert rcp.run_convergence(some, "4.0.0") == rcp.run_convergence(all_events, "4.0.0")
        assert (compliance_configs.choosing_value_problems(some, "4.0.0")
                == compliance_configs.choosing_value_problems(all_events, "4.0.0"))
    assert rcp.run_convergence(broken, "4.0.0").epochs == rcp.NOT_CONVERGED
    assert rcp.run_convergence(errors, "4.0.0") == rcp.run_convergence(first, "4.0.0")
    assert rcp.run_convergence(first, "4.0.0").epochs != rcp.NOT_CONVERGED
