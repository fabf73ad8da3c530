"""Model conformity: structure.json against the reference rebuilt on meta, and the weights' header."""
from __future__ import annotations

import json
import shutil

import pytest
import synthetic
import torch
from safetensors.torch import save_file
from torchvision.ops import MLP

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks.conformity import ReferenceStructures
from trainmark.format import structure
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


def bench(root, division="closed"):
    return root / division / "acme" / "results" / "sys1" / "resnet-mini"


def rel(division="closed"):
    return f"{division}/acme/results/sys1/resnet-mini"


@pytest.fixture(scope="module")
def clean_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    synthetic.write_submission(root, RULES, synthetic.tiny_reference_model())
    synthetic.write_submission(root, RULES, synthetic.tiny_reference_model(), division="open")
    return root


@pytest.fixture
def root(clean_tree, tmp_path):
    dest = tmp_path / "sub"
    shutil.copytree(clean_tree, dest)
    return dest


def findings(report, rule):
    return [f for f in report.findings if f.rule == rule]


def one_layer_more():
    return MLP(16, [32, 32, 10], norm_layer=torch.nn.BatchNorm1d)


def replace_model(trial_dir, model):
    desc = structure.describe(model)
    (trial_dir / "structure.json").write_text(json.dumps(desc, indent=2))
    weights = synthetic.trained_weights(model.state_dict(), seed=7)  # trained: no constant tensor (WORK-005)
    save_file({k: v.contiguous() for k, v in weights.items()}, str(trial_dir / "model.safetensors"))
    return desc


def test_reference_is_built_on_meta_and_matches_a_real_build():
    built = []

    def builder(rules):
        model = synthetic.tiny_reference_model()
        built.append(next(model.parameters()).device.type)
        return model
    desc, why = ReferenceStructures(builder).describe(RULES)
    assert why == "" and built == ["meta"]
    assert desc["fingerprint"] == structure.describe(synthetic.tiny_reference_model())["fingerprint"]


def test_shipped_registry_reference_is_described():
    desc, why = ReferenceStructures().describe(RULES)
    from trainmark.reference import registry
    assert why == ""
    assert desc["fingerprint"] == structure.describe(registry.get("resnet-mini").build_model())["fingerprint"]


def test_broken_reference_becomes_a_note_not_a_crash(root):
    def broken(rules):
        raise RuntimeError("no such model")
    report = check_path(root, CheckOptions(reference_builder=broken))
    assert report.exit_code == 0
    assert any("could not be built" in n for n in report.notes)


def test_conform_001_edited_structure(root):
    path = bench(root) / "trial_1" / "structure.json"
    desc = json.loads(path.read_text())
    desc["modules"][1]["config"] = "in_features=16, out_features=33, bias=True"
    text = json.dumps(desc, indent=2)
    path.write_text(text)
    (finding,) = [f for f in findings(check_path(root, TINY), "CONFORM-001")]
    assert finding.file == f"{rel()}/trial_1/structure.json"
    assert finding.line == text[:text.index('"fingerprint"')].count("\n") + 1


def test_conform_002_one_layer_more_closed(root):
    trial = bench(root) / "trial_2"
    replace_model(trial, one_layer_more())
    report = check_path(root, TINY)
    (finding,) = findings(report, "CONFORM-002")
    text = (trial / "structure.json").read_text()
    assert finding.file == f"{rel()}/trial_2/structure.json"
    assert finding.line == text[:text.index('"name": "4"')].count("\n") + 1  # first module that differs
    assert "module 4" in finding.message and "module 7" in finding.message
    assert findings(report, "CONFORM-006")  # the MLLOG still logs the reference's fingerprint
    assert report.exit_code == 1


def test_conform_003_open_division_reports_differences(root):
    trial = bench(root, "open") / "trial_1"
    desc = replace_model(trial, one_layer_more())
    reference = structure.describe(synthetic.tiny_reference_model())
    for key, value in (("trainmark_model_fingerprint", desc["fingerprint"]),
                       ("trainmark_parameter_count", desc["parameter_count"])):
        synthetic.edit_mllog(bench(root, "open") / "result_1.txt", key, synthetic.set_value(value))
    report = check_path(root / "open", TINY)
    (finding,) = findings(report, "CONFORM-003")
    assert finding.severity == "info"
    assert f"{desc['parameter_count']:,} parameters, " in finding.message
    assert f"the reference resnet-mini: {reference['parameter_count']:,} parameters" in finding.message
    assert finding.file == "acme/results/sys1/resnet-mini"  # the benchmark folder: named once, not per trial
    assert findings(report, "CONFORM-007")  # trial 1 now differs from the others
    assert report.exit_code == 0


def test_conform_003_names_one_open_model_once_for_all_its_trials(root):
    """Issue 39: the structural diff was 16 lines per trial; every trial of one model gives one finding."""
    folder = bench(root, "open")
    for k in range(1, 6):
        desc = replace_model(folder / f"trial_{k}", one_layer_more())
        for key, value in (("trainmark_model_fingerprint", desc["fingerprint"]),
                           ("trainmark_parameter_count", desc["parameter_count"])):
            synthetic.edit_mllog(folder / f"result_{k}.txt", key, synthetic.set_value(value))
    (finding,) = findings(check_path(root / "open", TINY), "CONFORM-003")
    assert finding.message.startswith(f"open-division model {desc['fingerprint'][:12]}: ")
    assert "FLOP" in finding.message and "structural difference" in finding.message


def test_conform_004_truncated_weights(root):
    path = bench(root) / "trial_3" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-4])
    (finding,) = findings(check_path(root, TINY), "CONFORM-004")
    assert finding.file == f"{rel()}/trial_3/model.safetensors"


def test_conform_005_weights_shape_mismatch(root):
    path = bench(root) / "trial_1" / "model.safetensors"
    tensors = {k: v.contiguous() for k, v in synthetic.tiny_reference_model().state_dict().items()}
    tensors["0.weight"] = torch.zeros(33, 16)
    save_file(tensors, str(path))
    (finding,) = findings(check_path(root, TINY), "CONFORM-005")
    assert finding.file == f"{rel()}/trial_1/model.safetensors"
    assert finding.expected == "float32[32, 16]" and finding.seen == "float32[33, 16]"


def test_conform_006_logged_parameter_count(root):
    line = synthetic.edit_mllog(bench(root) / "result_4.txt", "trainmark_parameter_count", synthetic.set_value(7))
    (finding,) = findings(check_path(root, TINY), "CONFORM-006")
    assert (finding.file, finding.line) == (f"{rel()}/result_4.txt", line)


def test_without_injected_builder_the_shipped_reference_judges(root):
    # the synthetic model is not resnet-mini: closed-division conformity must fail on every trial
    report = check_path(root / "closed", CheckOptions())
    assert len(findings(report, "CONFORM-002")) == 5


def test_conform_003_counts_every_difference_and_shows_the_first_20(root):
    """Issue 32: "13 structural differences" listed 5; now the count is every difference and the message lists
    the first 20 of them, then how many more."""
    trial = bench(root, "open") / "trial_1"
    wide = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(30)])
    desc = replace_model(trial, wide)
    reference = structure.describe(synthetic.tiny_reference_model())
    every = structure.diff(reference, desc, limit=10**6)
    for key, value in (("trainmark_model_fingerprint", desc["fingerprint"]),
                       ("trainmark_parameter_count", desc["parameter_count"])):
        synthetic.edit_mllog(bench(root, "open") / "result_1.txt", key, synthetic.set_value(value))
    (finding,) = findings(check_path(root / "open", TINY), "CONFORM-003")
    shown = int(finding.message.split("(the first ")[1].split(" ")[0])
    assert len(every) > 20 and 10 <= shown <= 20  # 20, or fewer when they would overflow the message
    assert f"{len(every)} structural differences (the first {shown} here)" in finding.message
    assert finding.message.endswith(f"; ... and {len(every) - shown} more")
    assert every[shown - 1] in finding.message and every[shown] not in finding.message
