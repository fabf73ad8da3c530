import pytest

from trainmark.rules import convergence, get_rules

POINTS = [{"global_batch_size": 256, "epochs_to_target": [6, 6, 7, 6, 7, 7, 6, 8, 6, 7]},
          {"global_batch_size": 1024, "epochs_to_target": [9, 10, 9, 10, 11, 9, 10, 10, 9, 10]}]


def test_reference_runs_pass_their_own_check():
    """Each reference point's own runs pass, and runs reaching the target in half the epochs fail (so a check
    that passed everything would fail this test)."""
    for p in POINTS:
        v = convergence.check(POINTS, p["global_batch_size"], p["epochs_to_target"][:5])
        assert v.ok, v.message
        fast = convergence.check(POINTS, p["global_batch_size"], [e // 2 for e in p["epochs_to_target"][:5]])
        assert fast.ok is False and " < " in fast.message, p["global_batch_size"]


def test_too_fast_is_flagged():
    v = convergence.check(POINTS, 256, [4, 4, 4, 5, 4])
    assert v.ok is False and v.submission_mean == 4.0 and v.min_allowed > 4.0


def test_threshold_matches_the_t_test_formula():
    ref = convergence.ref_points(POINTS)[0]
    # olympic mean of 6,6,7,6,7,7,6,8,6,7 without one 6 and the 8: mean 6.5, n 8
    assert ref.mean == pytest.approx(6.5) and ref.n == 8
    from scipy import stats
    expect = 6.5 - stats.t.ppf(0.95, 8 + 3 - 2) * ref.std * (1 / 8 + 1 / 3) ** 0.5
    assert convergence.min_allowed_mean(ref, 3) == pytest.approx(expect)


def test_interpolation_between_batch_sizes_and_no_verdict_outside():
    ref = convergence.reference_at(convergence.ref_points(POINTS), 640)
    lo, hi = convergence.ref_points(POINTS)
    assert lo.mean < ref.mean < hi.mean and ref.mean == pytest.approx((lo.mean + hi.mean) / 2)
    assert convergence.check(POINTS, 128, [5, 5, 5]).ok is None
    assert convergence.check(POINTS, 4096, [5, 5, 5]).ok is None


def test_slow_middle_point_is_pruned():
    pts = POINTS[:1] + [{"global_batch_size": 512, "epochs_to_target": [20] * 10}] + POINTS[1:]
    assert [p.batch_size for p in convergence.ref_points(pts)] == [256, 1024]


def test_shipped_rules_pass_their_own_reference_runs():
    r = get_rules("resnet-mini")
    for p in r.convergence["points"]:
        assert len(p["epochs_to_target"]) >= 2 * r.trials
        assert convergence.check(r.convergence["points"], p["global_batch_size"], p["epochs_to_target"]).ok


def test_a_convergence_points_recipe_is_read_from_its_command():
    """resnet-mini's batch-256 points ran at the peak rate scaled to 0.4 (their commands say so); the default point
    at 128 ran the defaults; between points there is no single recipe."""
    rules = get_rules("resnet-mini", "1.2")
    for framework in ("pytorch", "tensorflow"):
        recipe, command = convergence.calibrated_recipe(rules, 256, framework)
        assert recipe["opt_base_learning_rate"] == 0.4 and recipe["global_batch_size"] == 256 and "256" in command
        assert convergence.calibrated_recipe(rules, 128, framework)[0]["opt_base_learning_rate"] == 0.2
        assert convergence.calibrated_recipe(rules, 192, framework) is None
    at_256 = {**rules.defaults(), "global_batch_size": 256}
    assert convergence.recipe_changes(rules, at_256, "pytorch") == ["opt_base_learning_rate 0.2, the point's 0.4"]
    assert convergence.recipe_changes(rules, {**at_256, "opt_base_learning_rate": 0.4}, "pytorch") == []


def test_every_benchmarks_defaults_are_its_default_points_recipe():
    """A run with the rules' defaults is told nothing: each calibrated benchmark's defaults are what its point at the
    default batch ran (a rule file whose defaults drifted from its calibration command fails here)."""
    from trainmark.rules import LATEST_VERSION, load_ruleset

    for name, rules in load_ruleset(LATEST_VERSION).items():
        for framework in rules.implementations:
            assert convergence.recipe_changes(rules, rules.defaults(), framework) == [], (name, framework)


@pytest.mark.parametrize("hparam", ['"opt_base_learning_rate=0.4', "opt_base_learning_rate=[0.4"])
def test_a_point_command_that_cannot_be_read_is_an_error_naming_the_rule_file(tmp_path, hparam):
    """An unbalanced quote or an unreadable value in a (--rules-dir) rule file's point command: one line naming the
    file and the point, never a traceback."""
    import shutil

    import yaml

    from trainmark.errors import UserError
    from trainmark.rules.ruleset import RULES_ROOT

    shutil.copytree(RULES_ROOT / "1.2", tmp_path / "1.2")
    path = tmp_path / "1.2" / "resnet-mini.yaml"
    data = yaml.safe_load(path.read_text())
    data["convergence"]["points"][1]["command"] = f"trainmark calibrate resnet-mini --hparam {hparam}"
    path.write_text(yaml.safe_dump(data))
    rules = get_rules("resnet-mini", "1.2", rules_root=tmp_path)
    with pytest.raises(UserError, match=r"resnet-mini\.yaml: convergence point at global batch 256: its command"):
        convergence.recipe_changes(rules, {**rules.defaults(), "global_batch_size": 256}, "pytorch")
    assert convergence.recipe_changes(rules, rules.defaults(), "pytorch") == []   # the other points still read
