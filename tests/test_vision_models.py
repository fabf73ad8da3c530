"""The vision references' models and recipes: fingerprints, sizes, FLOPs, losses, learning rates.

Full-size models are built on the ``meta`` device (no memory, no arithmetic), as the checker does.
Parameter counts and forward FLOPs are compared with what torchvision publishes for the same
architectures (its weights' metadata, available offline), so a wrong resolution or a swapped
model fails here.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from torchvision.models import Inception_V3_Weights, ResNet50_Weights, VGG16_Weights
from torchvision.models.inception import InceptionOutputs

from trainmark.format.structure import describe
from trainmark.harness.frameworks import pytorch_flops as flops
from trainmark.reference import registry, sgd_recipe
from trainmark.reference.inception_v3 import inception_loss
from trainmark.rules import get_rules

FULL = {"resnet50": ResNet50_Weights.IMAGENET1K_V1, "inception-v3": Inception_V3_Weights.IMAGENET1K_V1,
        "vgg16": VGG16_Weights.IMAGENET1K_V1}
MINIS = ["vgg-mini", "inception-mini"]


def meta_model(name):
    with torch.device("meta"):
        return registry.get(name).build_model()


def test_full_size_fingerprints_are_stable_distinct_and_match_torchvision_sizes():
    prints = {}
    for name, weights in FULL.items():
        first, again = describe(meta_model(name)), describe(meta_model(name))
        assert first["fingerprint"] == again["fingerprint"]
        assert first["parameter_count"] == weights.meta["num_params"]
        prints[name] = first["fingerprint"]
    assert len(set(prints.values())) == 3


def test_vgg16_is_the_plain_one():
    from torchvision.models import vgg16_bn
    with torch.device("meta"):
        bn = describe(vgg16_bn(weights=None))
    assert bn["fingerprint"] != describe(meta_model("vgg16"))["fingerprint"]
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in meta_model("vgg16").modules())


@pytest.mark.parametrize("name", list(FULL))
def test_forward_flops_at_the_reference_resolution_match_torchvision(name):
    ref = registry.get(name)
    hp = {**get_rules(name).defaults(), "global_batch_size": 2}
    batch = ref.to_device(ref.synthetic_batch(2), torch.device("meta"), train=True)
    inputs, targets = ref.split_batch(batch)
    count = flops.training_flops_per_step(meta_model(name), inputs, lambda o, t: ref.criterion(o, t, hp),
                                          targets=targets)
    gmacs_per_image = count.forward / 2 / 2 / 1e9
    assert gmacs_per_image == pytest.approx(FULL[name].meta["_ops"], rel=0.01)
    assert count.total > 2.5 * count.forward  # the backward was counted too


def test_mini_fingerprints_are_stable_and_small():
    prints = set()
    for name in MINIS:
        d = describe(meta_model(name))
        assert d["fingerprint"] == describe(meta_model(name))["fingerprint"]
        assert 50_000 < d["parameter_count"] < 1_000_000  # weights of a few MB at most
        prints.add(d["fingerprint"])
    assert len(prints) == 2


@pytest.mark.parametrize("name", MINIS)
def test_mini_takes_a_synthetic_batch(name):
    ref = registry.get(name)
    torch.manual_seed(0)
    model = ref.build_model().to(memory_format=torch.channels_last)
    images, labels = ref.synthetic_batch(8)
    assert images.shape == (8, 28, 28) and images.dtype == torch.uint8
    batch = ref.to_device((images, labels), torch.device("cpu"), train=True)
    hp = get_rules(name).defaults()
    loss = ref.loss(model, batch, hp)
    assert loss.ndim == 0 and math.isfinite(loss.item())
    model.eval()
    assert model(batch[0]).shape == (8, 10)


def test_inception_loss_adds_the_auxiliary_loss_with_weight_0_4():
    torch.manual_seed(0)
    main, aux, labels = torch.randn(4, 1000), torch.randn(4, 1000), torch.randint(0, 1000, (4,))
    hp = get_rules("inception-v3").defaults()
    assert hp["aux_loss_weight"] == 0.4 and hp["label_smoothing"] == 0.1
    expected = F.cross_entropy(main, labels, label_smoothing=0.1) + 0.4 * F.cross_entropy(aux, labels,
                                                                                        label_smoothing=0.1)
    ref = registry.get("inception-v3")
    assert ref.criterion(InceptionOutputs(main, aux), labels, hp) == pytest.approx(expected.item())
    # evaluation mode returns the main logits only
    assert inception_loss(main, labels, 0.1, 0.4) == pytest.approx(
        F.cross_entropy(main, labels, label_smoothing=0.1).item())


def _lr_curve(name, epochs, batch=256, **override):
    hp = {**get_rules(name).defaults(), "global_batch_size": batch, **override}
    model = torch.nn.Linear(2, 2)
    opt, sched = sgd_recipe.make_sgd(model, hp, steps_per_epoch=10)
    lrs = []
    for _ in range(epochs * 10):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def test_resnet50_learning_rate_warms_up_then_follows_the_cosine():
    lrs = _lr_curve("resnet50", 90)
    assert lrs[0] == pytest.approx(0.001)             # 1% of 0.1
    assert lrs[50] == pytest.approx(0.1)              # end of the 5 warm-up epochs
    assert lrs[475] == pytest.approx(0.05, rel=1e-3)  # half-way through the cosine (epoch 47.5)
    assert lrs[-1] < 1e-4
    assert max(_lr_curve("resnet50", 6, batch=1024)) == pytest.approx(0.4)  # 0.1 x 1024 / 256


def test_vgg16_learning_rate_steps_every_30_epochs():
    lrs = _lr_curve("vgg16", 61)
    assert lrs[0] == pytest.approx(0.01) and lrs[299] == pytest.approx(0.01)
    assert lrs[300] == pytest.approx(0.001) and lrs[600] == pytest.approx(0.0001)


def test_weight_decay_groups():
    from torchvision.models import resnet50, vgg16
    with torch.device("meta"):
        r, v = resnet50(), vgg16()
    groups = sgd_recipe.param_groups(r, 1e-4, decay_norm_and_bias=False)
    assert groups[1]["weight_decay"] == 0.0 and all(p.ndim == 1 for p in groups[1]["params"])
    assert len(groups[0]["params"]) + len(groups[1]["params"]) == len(list(r.parameters()))
    (only,) = sgd_recipe.param_groups(v, 1e-4, decay_norm_and_bias=True)
    assert len(only["params"]) == len(list(v.parameters()))
