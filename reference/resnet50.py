"""resnet50: torchvision's ResNet-50 (v1.5, the stride on the 3x3 convolution) on ImageNet to 75.90% top-1.

The MLPerf Training image-classification workload, trained with the recipe of torchvision's
references (SGD, momentum 0.9, weight decay 1e-4, 0.1 per 256 samples) plus the three changes the
later torchvision recipes and MLPerf's reference use: 5 epochs of linear warm-up, cosine decay and
label smoothing 0.1. Batch norm and biases are not decayed. Numbers and sources: rules/1.0/resnet50.yaml.
"""
from __future__ import annotations

from torch import nn
from torchvision.models import resnet50

from trainmark.reference.imagenet_classifier import ImageNetClassifier


class ResNet50(ImageNetClassifier):
    name = "resnet50"

    def build_model(self) -> nn.Module:
        return resnet50(weights=None, num_classes=self.num_classes)
