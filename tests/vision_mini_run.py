"""One CI trial of a mini vision reference through `trainmark run`, then `trainmark check` on it.

Test-only rules (tests/rules/1.0/<mini>.yaml) cap the trial at one epoch with the schedule
compressed to it and a target that epoch reaches; the shipped targets are reached in the full
runs committed under submissions/.
"""
import json

import pytest

from conftest import TEST_RULES
from trainmark.cli import main
from trainmark.reference.fashion_mnist import resolve_dir
from trainmark.rules import get_rules

needs_fashion_mnist = pytest.mark.skipif(not resolve_dir(None).is_dir(),
                                         reason="Fashion-MNIST not installed (scripts/install.sh installs it)")


def run_then_check(name: str, tmp_path, capsys) -> dict:
    out = tmp_path / "sub"
    rc = main(["run", name, "--rules-dir", str(TEST_RULES), "--out", str(out), "--submitter", "ci",
               "--system-name", "ci-box", "--seed", "7", "--quiet"])
    assert rc == 0
    d = out / "closed" / "ci" / "results" / "ci-box" / name
    t = json.loads((d / "trial_1" / "trial.json").read_text())
    assert t["status"] == "converged" and t["epochs"] == 1
    assert t["final_metric"] >= get_rules(name, rules_root=TEST_RULES).target
    assert t["flops_per_step"] > 0 and t["train_samples"] == 60_000 // 256 * 256
    assert (d / "trial_1" / "model.safetensors").stat().st_size < 1_000_000
    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(TEST_RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["findings_by_severity"].get("error", 0) == 0
    return t
