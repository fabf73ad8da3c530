"""vgg-mini and inception-mini train through `trainmark run`, and the result passes `trainmark check`.

Test-only rules (tests/rules/1.0/<mini>.yaml) cap each at one trial of one epoch with a target
that one epoch reaches; the shipped targets are reached in the full runs under submissions/.
"""
import json

import pytest

from conftest import TEST_RULES
from trainmark.cli import main
from trainmark.reference.fashion_mnist import resolve_dir

pytestmark = pytest.mark.skipif(not resolve_dir(None).is_dir(),
                                reason="Fashion-MNIST not installed (scripts/install.sh installs it)")


@pytest.mark.parametrize("name", ["vgg-mini", "inception-mini"])
def test_one_epoch_through_the_harness_then_check(name, tmp_path, capsys):
    out = tmp_path / "sub"
    rc = main(["run", name, "--rules-dir", str(TEST_RULES), "--out", str(out), "--submitter", "ci",
               "--system-name", "ci-box", "--seed", "7", "--quiet"])
    assert rc == 0
    d = out / "closed" / "ci" / "results" / "ci-box" / name
    t = json.loads((d / "trial_1" / "trial.json").read_text())
    assert t["status"] == "converged" and t["epochs"] == 1 and t["final_metric"] >= 0.8
    assert t["flops_per_step"] > 0 and t["train_samples"] == 60_000 // 256 * 256
    assert (d / "trial_1" / "model.safetensors").stat().st_size < 4_000_000
    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(TEST_RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["findings_by_severity"].get("error", 0) == 0
