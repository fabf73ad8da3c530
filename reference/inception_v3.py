"""inception-v3: torchvision's Inception v3 with its auxiliary classifier, on ImageNet at 299 pixels.

torchvision ports its Inception v3 weights from TensorFlow rather than training them, so the
training recipe follows the one that produced them, TF-slim's ``train_image_classifier.py``:
the auxiliary logits' cross-entropy is added with weight 0.4, both with label smoothing 0.1
(Szegedy et al. 2016, section 7). The optimizer and schedule are those of resnet50 (SGD,
momentum 0.9, 0.1 per 256 samples, 5 warm-up epochs, cosine), since that paper's RMSProp on 50
replicas has no torchvision counterpart. Training crops 299; evaluation resizes to 342 and crops
299 (torchvision's Inception_V3_Weights transforms). Sources: rules/1.0/inception-v3.yaml.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn
from torchvision.models import inception_v3
from torchvision.models.inception import InceptionOutputs

from trainmark.reference.imagenet_classifier import ImageNetClassifier


def inception_loss(output, labels, label_smoothing: float, aux_weight: float):
    """Cross-entropy of the main logits plus ``aux_weight`` times that of the auxiliary ones
    (which the model returns only in training mode)."""
    if isinstance(output, InceptionOutputs):
        loss = F.cross_entropy(output.logits, labels, label_smoothing=label_smoothing)
        if output.aux_logits is not None:
            loss = loss + aux_weight * F.cross_entropy(output.aux_logits, labels, label_smoothing=label_smoothing)
        return loss
    return F.cross_entropy(output, labels, label_smoothing=label_smoothing)


class InceptionV3(ImageNetClassifier):
    name = "inception-v3"
    train_crop = 299
    eval_resize = 342
    eval_crop = 299

    def build_model(self) -> nn.Module:
        return inception_v3(weights=None, aux_logits=True, init_weights=True, num_classes=self.num_classes)

    def criterion(self, output, labels, hp):
        return inception_loss(output, labels, hp["label_smoothing"], hp["aux_loss_weight"])
