"""What the full-size TensorFlow trial tests share: rules that pin a fixture's data, and the checked trial."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import yaml

from trainmark.cli import main


def rules_with_shipped(tmp_path: Path, name: str, edit: Callable[[dict], None]) -> Path:
    """The test rules plus the shipped ``name``.yaml as ``edit`` changes it (the fixture's checksums, a target a
    miniature meets), with the released hashes generated for them."""
    from conftest import SHIPPED_RULES, TEST_RULES
    from test_implementation_record import _rules_with_hashes

    src = tmp_path / "rules-src"
    shutil.copytree(TEST_RULES, src)
    rule = yaml.safe_load((SHIPPED_RULES / "1.2" / f"{name}.yaml").read_text())
    edit(rule)
    (src / "1.2" / f"{name}.yaml").write_text(yaml.safe_dump(rule))
    return _rules_with_hashes(tmp_path / "rules", src)


def one_short_trial(archives: dict, target: float) -> Callable[[dict], None]:
    """An ``edit`` for ``rules_with_shipped``: the fixture's archives, one trial of one epoch to ``target``."""
    def edit(rule: dict) -> None:
        rule["dataset"]["archives"] = archives
        rule["metric"]["target"] = target
        rule.update(max_epochs=1, trials=1, scoring={**rule["scoring"], "drop_fastest_and_slowest": 0})
    return edit


def checked_trial(out: Path, rules: Path, name: str, capsys) -> tuple[dict, object, object]:
    """(trial 1's trial.json, the PyTorch reference, its model holding the trial's weights) after asserting that
    `trainmark check` passes the folder with no finding about its code."""
    from safetensors.torch import load_file

    from trainmark.reference import registry
    from trainmark.rules import get_rules

    trial_dir = out / "closed" / "ci" / "results" / "ci-box" / name / "trial_1"
    capsys.readouterr()
    rc = main(["check", str(out), "--rules-dir", str(rules), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0, [(f["rule"], f["message"]) for f in report["findings"] if f["severity"] == "error"]
    assert report["passed"] is True and not [f for f in report["findings"] if f["rule"].startswith("CODE-")]
    ref = registry.for_rules(get_rules(name, rules_root=rules))
    model = ref.build_model()
    model.load_state_dict(load_file(trial_dir / "model.safetensors"))
    return json.loads((trial_dir / "trial.json").read_text()), ref, model.eval()
