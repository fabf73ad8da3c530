"""Re-evaluation by default (issue 38): ``trainmark check`` scores one trial per mini benchmark again, drawn at random,
where the data is found; each trial against its own logged metric at the rules' tolerance, reasoned from the
evaluation noise (0.0005 for the Fashion-MNIST minis: a final accuracy raised by 0.0019 fails, which 0.002 passed).

tests/conftest.py turns the default off for the other tests; these turn it back on. They evaluate the real resnet-mini
on the Fashion-MNIST test set (the Debian package dataset-fashion-mnist, which CI installs) and skip without it.
"""
from __future__ import annotations

import json

import pytest
from forge import TENSORFLOW_SYSTEM, bench_dir, check, edit_json, edit_records, error_codes, example, rewrite_epochs_log

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import reeval
from trainmark.cli import check as check_cli
from trainmark.reference import fashion_mnist
from trainmark.rules import get_rules
from trainmark.rules.ruleset import reevaluation

needs_fashion_mnist = pytest.mark.skipif(not fashion_mnist.resolve_dir(None).is_dir(),
                                         reason="Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")


@pytest.fixture
def default_on(monkeypatch):
    monkeypatch.setattr(check_cli, "DEFAULT_REEVALUATION", reeval.ONE_PER_MINI)


@needs_fashion_mnist
def test_the_default_check_re_evaluates_one_trial_and_passes(tmp_path, capsys, default_on):
    rc, report = check(example(tmp_path), capsys)
    assert rc == 0, [f for f in report["findings"] if f["severity"] == "error"]
    measured = [t for b in report["benchmarks"] for t in b["trials"] if "reevaluated_metric" in t]
    assert len(measured) == 1 and measured[0]["reevaluated_metric"] == measured[0]["final_metric"]
    (note,) = [n for n in report["notes"] if n.startswith("re-evaluation (one trial drawn at random)")]
    assert "tolerance 0.0005" in note and "s per trial" in note


def test_no_reevaluate_scores_nothing_and_missing_data_is_an_info(tmp_path, capsys, default_on):
    root = example(tmp_path)
    rc, report = check(root, capsys, "--no-reevaluate")
    assert rc == 0 and not [n for n in report["notes"] if "re-evaluation" in n]
    rc, report = check(root, capsys, "--data-dir", str(tmp_path / "none"))
    (info,) = [f for f in report["findings"] if f["rule"] == "REEVAL-005"]
    assert rc == 0 and info["severity"] == "info" and "--data-dir" in info["message"]


def test_the_tolerance_is_tighter_than_a_forged_0_0019():
    for name in ("resnet-mini", "vgg-mini", "inception-mini"):
        assert reevaluation(get_rules(name))["tolerance"] < 0.0019 / 2


@needs_fashion_mnist
def test_a_final_accuracy_raised_by_0_0019_is_reeval_001(tmp_path):
    from trainmark.harness.reevaluate import Reevaluation

    root = example(tmp_path)
    bench = bench_dir(root)
    honest = json.loads((bench / "trial_4" / "trial.json").read_text())["final_metric"]

    def raise_last(records):
        last = [r for r in records if r["key"] == "eval_accuracy"][-1]
        last["value"] = round(last["value"] + 0.0019, 4)
    edit_records(bench / "result_4.txt", raise_last)
    rewrite_epochs_log(bench)
    edit_json(bench / "trial_4" / "trial.json", lambda d: d.update(final_metric=round(d["final_metric"] + 0.0019, 4)))
    plan = reeval.Reevaluate(Reevaluation(), reeval.ONE_PER_MINI, draw=lambda n: 3)  # trial 4
    report = check_path(root, CheckOptions(reevaluate=plan))
    (finding,) = [f for f in report.findings if f.rule == "REEVAL-001"]
    assert "trial_4" in finding.file and finding.seen == f"{honest:.4f}" and f"{honest + 0.0019:.4f}" in finding.message
    assert report.exit_code == 1 and "REEVAL-001" in {f.rule for f in report.findings if f.severity == "error"}


def test_every_trial_of_every_benchmark_with_reevaluate(tmp_path):
    """--reevaluate: all five trials are handed to the evaluator (a spy: no model, no data)."""
    from test_trials_distinct_38 import _Spy

    spy = _Spy()
    report = check_path(example(tmp_path), CheckOptions(reevaluate=reeval.Reevaluate(spy, reeval.EVERY)))
    assert len(spy.handed) == 5 and len(set(spy.handed)) == 5
    assert {f.rule for f in report.findings if f.rule.startswith("REEVAL")} == {"REEVAL-001"}
    assert error_codes({"findings": [f.to_dict() for f in report.findings]}) >= {"REEVAL-001"}


def test_the_default_scores_a_tensorflow_trial_with_the_pytorch_reference(monkeypatch):
    """The default spares importing TensorFlow: twins=False sends every trial to the PyTorch reference."""
    from trainmark.harness.reevaluate import Reevaluation

    asked = []

    class Stub:
        def measure(self, weights):
            return 0.5

    def evaluator(self, rules, framework, precision):
        asked.append((framework, precision))
        return Stub()
    monkeypatch.setattr(Reevaluation, "evaluator", evaluator)
    rules = get_rules("resnet-mini")
    Reevaluation(twins=False).measure(rules, "tensorflow", "amp-bf16", b"")
    Reevaluation(twins=True).measure(rules, "tensorflow", "fp32", b"")
    Reevaluation(twins=True).measure(rules, "jax", "fp32", b"")  # a name the rules do not implement: PyTorch
    assert asked == [("pytorch", "amp"), ("tensorflow", "fp32"), ("pytorch", "fp32")]


@needs_fashion_mnist
def test_a_tensorflow_trials_weights_give_its_logged_metric_through_the_pytorch_reference(tmp_path):
    import json

    from trainmark.harness.reevaluate import Reevaluation

    trial = bench_dir(example(tmp_path, system=TENSORFLOW_SYSTEM), system=TENSORFLOW_SYSTEM) / "trial_2"
    measured = Reevaluation(twins=False).measure(get_rules("resnet-mini"), "tensorflow", "fp32",
                                                 (trial / "model.safetensors").read_bytes())
    assert measured.metric == json.loads((trial / "trial.json").read_text())["final_metric"]
