"""vgg16: torchvision's VGG16 (configuration D, without batch norm) on ImageNet.

Plain VGG16, not ``vgg16_bn``: it is the network of Simonyan and Zisserman's paper and the one
benchmark suites name "VGG16", and torchvision publishes a from-scratch recipe for it (its README:
the defaults with ``--lr 1e-2``, since without batch norm 0.1 is too high; 71.592% top-1). That
recipe is kept as it is: SGD, momentum 0.9, weight decay 1e-4 on every parameter, 0.01 per 256
samples, step decay x0.1 every 30 epochs, no warm-up, no label smoothing. Sources:
rules/1.0/vgg16.yaml.
"""
from __future__ import annotations

from torch import nn
from torchvision.models import vgg16

from trainmark.reference.imagenet_classifier import ImageNetClassifier


class VGG16(ImageNetClassifier):
    name = "vgg16"

    def build_model(self) -> nn.Module:
        return vgg16(weights=None, num_classes=self.num_classes)
