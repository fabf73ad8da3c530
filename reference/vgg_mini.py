"""vgg-mini: a narrow torchvision VGG (``make_layers``, no batch norm, like vgg16) on Fashion-MNIST.

torchvision's own ``VGG`` class and ``make_layers``, re-plumbed for 28x28 one-channel images: a
one-channel first convolution (``make_layers`` always starts from 3), a narrow configuration in
VGG's notation, and VGG's three-layer classifier (Linear-ReLU-Dropout twice, then Linear) at
width ``HIDDEN`` instead of 4096, fed by a global average pool. Initialised as
``VGG.__init__`` initialises. Without batch norm, as the full-size vgg16 reference.
"""
from __future__ import annotations

import torch
from torch import nn
from torchvision.models.vgg import VGG, make_layers

from trainmark.reference.fashion_mnist_classifier import FashionMnistClassifier
from trainmark.reference.registry import register

# VGG notation: channels of a 3x3 convolution, or "M" for a 2x2 max-pool. 28 -> 14 -> 7 -> 3.
CONFIG = (32, "M", 64, "M", 128, 128, "M", 256)
HIDDEN = 256
DROPOUT = 0.0
BATCH_NORM = False


def vgg_mini(num_classes: int = 10, config=CONFIG, hidden: int = HIDDEN, dropout: float = DROPOUT,
             batch_norm: bool = BATCH_NORM) -> VGG:
    features = make_layers(list(config), batch_norm=batch_norm)
    features[0] = nn.Conv2d(1, config[0], kernel_size=3, padding=1)  # make_layers starts from 3 channels
    with torch.device("meta"):  # VGG.__init__'s 120 M-parameter classifier, replaced below: never allocated
        model = VGG(features, num_classes=num_classes, init_weights=False, dropout=dropout)
    width = [c for c in config if c != "M"][-1]
    model.avgpool = nn.AdaptiveAvgPool2d((1, 1))
    if hidden:
        model.classifier = nn.Sequential(
            nn.Linear(width, hidden), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(hidden, hidden), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(hidden, num_classes))
    else:
        model.classifier = nn.Sequential(nn.Linear(width, num_classes))
    for m in model.modules():  # the initialisation VGG.__init__ applies
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.constant_(m.bias, 0)
    return model


@register
class VggMini(FashionMnistClassifier):
    name = "vgg-mini"

    def build_model(self) -> nn.Module:
        return vgg_mini(self.num_classes)
