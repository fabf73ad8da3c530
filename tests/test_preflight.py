"""``trainmark run`` refuses, before anything is written, exactly the settings ``trainmark check`` rejects
(issue 39): both ask rules/admissible.py. For every benchmark of the latest rules, each setting is judged by the
run's preflight and by a full check of a folder that logs it; the finding codes must agree."""
from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import default_plans, edit_mllog, set_value, tiny_reference_model, write_submission

from trainmark.checker.check import check_path
from trainmark.checker.checks.trials import ADMISSIBLE_CODES
from trainmark.format import layout
from trainmark.harness.run import RunOptions, refuse_inadmissible
from trainmark.rules import LATEST_VERSION, admissible, get_rules, load_ruleset

JUDGED = set(ADMISSIBLE_CODES.values())  # CONVERGE-003, HPARAM-001, HPARAM-003
BENCHMARKS = sorted(load_ruleset(LATEST_VERSION))


def cases(rules) -> list[tuple[str, str, dict]]:
    """(name, framework, hyperparameter changes): the default, batch sizes at and beyond each end of every
    framework's calibrated range, and a fixed hyperparameter moved."""
    out = [("default", "pytorch", {})]
    for framework, span in admissible.calibrated_ranges(rules).items():
        low, high = span or (rules.defaults()["global_batch_size"],) * 2
        out += [(f"{framework} batch {b}", framework, {"global_batch_size": b})
                for b in sorted({max(1, low // 2), low, high, high * 2})]
    if not rules.convergence["points"]:
        out.append(("uncalibrated batch", "pytorch", {"global_batch_size": 3}))
    fixed = [k for k, spec in rules.hyperparameters.items()
             if spec["closed"] == "fixed" and type(spec["default"]) is float]
    if fixed:
        out.append((f"{fixed[0]} moved", "pytorch", {fixed[0]: rules.defaults()[fixed[0]] * 1.5}))
    return out


def run_codes(rules, framework: str, changes: dict) -> set[str]:
    hp = {**rules.defaults(), **changes}
    opts = RunOptions(benchmark=rules.name, framework=framework, hparams=changes)
    try:
        refuse_inadmissible(rules, opts, hp)
    except admissible.NotAdmissible as exc:
        return {ADMISSIBLE_CODES[r.kind] for r in exc.refusals}
    return set()


class CheckedFolder:
    """One synthetic submission per framework, its logged settings rewritten for each case, then checked."""

    def __init__(self, root: Path, rules, framework: str):
        plans = default_plans(rules)
        for plan in plans:
            plan.framework = None if framework == "pytorch" else framework
        self.root, self.rules, self.trials, self.touched = root, rules, len(plans), set()
        self.folder = write_submission(root, rules, tiny_reference_model(), plans=plans) / layout.RESULTS_DIR / \
            "sys1" / rules.name

    def codes(self, changes: dict) -> set[str]:
        self.touched |= set(changes)
        for k in range(1, self.trials + 1):
            for key in self.touched:
                edit_mllog(self.folder / layout.result_file(k), key,
                           set_value(changes.get(key, self.rules.defaults()[key])))
        return {f.rule for f in check_path(self.root).findings if f.rule in JUDGED}


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_run_refuses_what_check_rejects(benchmark, tmp_path):
    rules = get_rules(benchmark)
    folders = {fw: CheckedFolder(tmp_path / fw, rules, fw) for fw in rules.implementations}
    for name, framework, changes in cases(rules):
        refused = run_codes(rules, framework, changes)
        rejected = folders[framework].codes(changes)
        assert refused == rejected, f"{benchmark}, {name}: run refuses {refused}, check rejects {rejected}"
    assert any(run_codes(rules, fw, ch) for _, fw, ch in cases(rules)) == bool(
        rules.convergence["points"] or any(spec["closed"] == "fixed" for spec in rules.hyperparameters.values()))


def test_a_batch_outside_the_calibrated_range_is_refused_before_anything_is_written(tmp_path, capsys):
    import synthetic

    from trainmark.cli import main

    out = tmp_path / "out"
    assert main(["run", "resnet-mini", "--batch-size", "64", "--out", str(out)]) == 2  # rules 1.2: 128 and 256
    err = capsys.readouterr().err
    assert "CONVERGE-003" in err and "128-256" in err and "[128, 256]" in err and "nothing was written" in err
    rules = synthetic.two_point_rules(tmp_path / "rules")  # rules 1.1's points: 128 and 256
    for batch in ("64", "512"):
        assert main(["run", "resnet-mini", "--batch-size", batch, "--out", str(out), "--rules-dir", str(rules)]) == 2
        err = capsys.readouterr().err
        assert "CONVERGE-003" in err and "128-256" in err and "[128, 256]" in err and "nothing was written" in err
    assert not out.exists()


def test_open_division_refuses_an_hparam_no_recipe_reads():
    rules = get_rules("resnet-mini")
    for typo in ({"opt_base_lr": 0.001}, {"opt_name": "adam"}):
        opts = RunOptions(benchmark="resnet-mini", division="open", hparams=typo)
        with pytest.raises(admissible.NotAdmissible) as caught:
            refuse_inadmissible(rules, opts, {**rules.defaults(), **typo})
        assert [r.kind for r in caught.value.refusals] == [admissible.UNREAD]
        assert "opt_base_learning_rate" in caught.value.refusals[0].allowed  # the allowed names are listed
    assert "--optimizer" in admissible.unread_names(rules, ["opt_name"])[0].message


def test_calibration_measures_new_batch_sizes():
    """``trainmark calibrate`` is how a new batch size gets points: its batch is never refused."""
    rules = get_rules("resnet-mini")
    refuse_inadmissible(rules, RunOptions(benchmark="resnet-mini", submission=False), {**rules.defaults(),
                                                                                       "global_batch_size": 64})


def test_rules_show_prints_the_calibrated_range(capsys):
    from trainmark.cli import main

    assert main(["rules", "show", "resnet-mini"]) == 0
    text = capsys.readouterr().out
    block = text[text.index("  global_batch_size:"):].split("\n  opt_name:")[0]
    assert "closed: free" not in block and "pytorch: [128, 256]" in block and "tensorflow: [128, 256]" in block
    rules_md = (Path(__file__).parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "the calibrated range only: pytorch 128 to 256, tensorflow 128 to 256" in rules_md


def test_interrupted_attempts_are_part_of_the_format(tmp_path):
    """After --resume, ``interrupted/`` holds the archived attempts the MLLOG names (TRIAL-004 if removed): no
    finding may tell the user to remove it (LAYOUT-004)."""
    rules = get_rules("resnet-mini")
    sub = write_submission(tmp_path, rules, tiny_reference_model())
    folder = sub / layout.RESULTS_DIR / "sys1" / rules.name
    (folder / layout.INTERRUPTED_DIR / "trial_1-20260101T000000").mkdir(parents=True)
    findings = check_path(tmp_path).findings
    assert not [f for f in findings if layout.INTERRUPTED_DIR in f.file and "not part of the format" in f.message]
