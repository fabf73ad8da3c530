"""The real thing, small: resnet-mini on Fashion-MNIST through `trainmark run`, then `trainmark check`.

Test-only rules (tests/rules/1.2/resnet-mini.yaml) lower the target to 0.85 and cap epochs at 3,
so two trials take about a minute on 2 CPU cores; the shipped target is reached in the full run
committed under submissions/.
"""
import json

import pytest
from conftest import TEST_RULES

from trainmark.cli import main
from trainmark.format import epochlog
from trainmark.reference.fashion_mnist import resolve_dir

pytestmark = pytest.mark.skipif(not resolve_dir(None).is_dir(),
                                reason="Fashion-MNIST not installed (scripts/install.sh installs it)")


def test_two_real_trials_then_check(tmp_path, capsys):
    out = tmp_path / "sub"
    rc = main(["run", "resnet-mini", "--trials", "2", "--rules-dir", str(TEST_RULES), "--out", str(out),
               "--submitter", "ci", "--system-name", "ci-box", "--seed", "42", "--quiet"])
    assert rc == 0
    d = out / "closed" / "ci" / "results" / "ci-box" / "resnet-mini"
    lines = [epochlog.parse_line(x) for x in (d / "epochs.log").read_text(encoding="utf-8").splitlines()]
    assert {x.trial for x in lines} == {1, 2}
    for k in (1, 2):
        t = json.loads((d / f"trial_{k}" / "trial.json").read_text())
        assert t["status"] == "converged" and t["final_metric"] >= 0.85
        assert t["train_time_s"] < t["total_time_s"] and t["train_samples_per_s"] > 0
        assert t["energy_method"] in ("measured-counter", "unavailable")
        if t["energy_method"] == "unavailable":
            assert t["train_energy_j"] is None and t["energy_reason"]
        assert t["flops_per_step"] > 0 and t["achieved_tflops"] > 0
        assert (d / f"trial_{k}" / "model.safetensors").stat().st_size < 2_000_000
        assert lines[[x.trial for x in lines].index(k) + t["epochs"] - 1].metric == pytest.approx(
            t["final_metric"], abs=5e-5)
    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(TEST_RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and report["counts"]["error"] == 0
    (bench,) = report["benchmarks"]
    assert bench["benchmark"] == "resnet-mini" and len(bench["trials"]) == 2
    for t in bench["trials"]:  # the checker's recomputation agrees with the harness's own figures
        own = json.loads((d / f"trial_{t['trial']}" / "trial.json").read_text())
        assert t["train_time_s"] == pytest.approx(own["train_time_s"], abs=0.01)
