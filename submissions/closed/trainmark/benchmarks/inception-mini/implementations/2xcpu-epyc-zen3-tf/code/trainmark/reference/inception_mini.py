"""inception-mini: torchvision's Inception v3, one block of each kind, widths / 8, on Fashion-MNIST.

torchvision's own ``Inception3`` class, built from its own ``BasicConv2d`` and ``InceptionA`` to
``InceptionE`` blocks, each given a ``conv_block`` that divides both channel counts by ``DIVISOR``
(every width in Inception v3 is a multiple of 8, so the blocks' concatenations still fit). One
block of each kind (Mixed_5b, 6a, 6b, 7a, 7b; the repeats are ``Identity``), as resnet-mini keeps
one block per stage: the full depth trained 2.1x slower (335 against 714 samples/s, one core).
The stem is re-plumbed for 28x28 one-channel images (one stride-2 padded 3x3, then padded 3x3s,
no max-pool), so the blocks see 14x14, 6x6 and 2x2 maps where the full network sees 35x35, 17x17
and 8x8. No auxiliary classifier: its 5x5 head needs the 17x17 maps it is built for. No dropout
before the classifier (Inception3's 0.5 regularises 27 M parameters over ~100 epochs; this
trains for a few). Initialised as ``Inception3.__init__`` initialises (truncated normal, std 0.1).
"""
from __future__ import annotations

from functools import partial

from torch import nn
from torchvision.models.inception import (
    BasicConv2d,
    Inception3,
    InceptionA,
    InceptionAux,
    InceptionB,
    InceptionC,
    InceptionD,
    InceptionE,
)

from trainmark.reference.fashion_mnist_classifier import FashionMnistClassifier

DIVISOR = 8  # 8 keeps every Inception v3 width an integer and the model at 0.15 M parameters


def narrow_conv(in_channels: int, out_channels: int, divisor: int = DIVISOR, **kwargs) -> BasicConv2d:
    """BasicConv2d with both widths divided by ``divisor`` (the image's 3 input channels excepted)."""
    return BasicConv2d(in_channels // divisor if in_channels >= divisor else in_channels,
                       out_channels // divisor, **kwargs)


def _init(module: nn.Module) -> None:
    """The initialisation Inception3.__init__ applies, for the modules replaced after it."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, mean=0.0, std=float(getattr(m, "stddev", 0.1)), a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


def inception_mini(num_classes: int = 10, divisor: int = DIVISOR) -> Inception3:
    conv = partial(narrow_conv, divisor=divisor)
    blocks = [conv] + [partial(b, conv_block=conv) for b in
                       (InceptionA, InceptionB, InceptionC, InceptionD, InceptionE, InceptionAux)]
    model = Inception3(num_classes=num_classes, aux_logits=False, init_weights=True, inception_blocks=blocks,
                       dropout=0.0)
    # Stem for 28x28x1: one stride-2 padded convolution (28 -> 14), padded 3x3s, no max-pool,
    # where the full stem has two strides, two unpadded 3x3s and two max-pools (299 -> 35).
    model.Conv2d_1a_3x3 = conv(1, 32, kernel_size=3, stride=2, padding=1)
    model.Conv2d_2a_3x3 = conv(32, 32, kernel_size=3, padding=1)
    model.Conv2d_4a_3x3 = conv(80, 192, kernel_size=3, padding=1)
    model.maxpool1 = model.maxpool2 = nn.Identity()
    model.fc = nn.Linear(2048 // divisor, num_classes)
    # One block of each kind: Mixed_5b gives the 288 channels Mixed_6a expects (as Mixed_5d did).
    model.Mixed_5b = blocks[1](192, pool_features=64)
    model.Mixed_5c = model.Mixed_5d = nn.Identity()
    model.Mixed_6c = model.Mixed_6d = model.Mixed_6e = model.Mixed_7c = nn.Identity()
    for module in (model.Conv2d_1a_3x3, model.Conv2d_2a_3x3, model.Conv2d_4a_3x3, model.Mixed_5b, model.fc):
        _init(module)
    return model


class InceptionMini(FashionMnistClassifier):
    name = "inception-mini"

    def build_model(self) -> nn.Module:
        return inception_mini(self.num_classes)
