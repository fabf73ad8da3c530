import torch
from torch import nn

from trainmark.format import structure
from trainmark.reference import registry


def test_fingerprint_is_stable_and_independent_of_weights_and_device():
    ref = registry.get("resnet-mini")
    a = structure.describe(ref.build_model())
    torch.manual_seed(123)
    b = structure.describe(ref.build_model())
    with torch.device("meta"):
        c = structure.describe(ref.build_model())
    assert a["fingerprint"] == b["fingerprint"] == c["fingerprint"]
    assert a["parameter_count"] == 308_538


def test_one_layer_more_changes_fingerprint_and_diff_names_it():
    ref = registry.get("resnet-mini")
    base = ref.build_model()
    changed = ref.build_model()
    changed.layer4.append(nn.Identity())
    a, b = structure.describe(base), structure.describe(changed)
    assert a["fingerprint"] != b["fingerprint"]
    assert any("layer4.1" in line and "not in the reference" in line for line in structure.diff(a, b))


def test_width_change_shows_as_shape_difference():
    a = structure.describe(nn.Sequential(nn.Linear(4, 8)))
    b = structure.describe(nn.Sequential(nn.Linear(4, 9)))
    d = structure.diff(a, b)
    assert "parameter 0.weight: reference float32[8, 4], submitted float32[9, 4]" in d
    assert structure.fingerprint(a) == a["fingerprint"]
