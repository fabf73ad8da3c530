"""The SGD recipe of the full-size ImageNet references: batch-scaled learning rate, warm-up, decay.

As torchvision's ``references/classification/train.py`` trains them (SGD, momentum, weight decay,
linear warm-up from 1% of the peak, then cosine or step decay), with the learning rate quoted per
256 samples and scaled linearly with the global batch (Goyal et al. 2017, "Accurate, Large
Minibatch SGD", section 2.1; torchvision's README: 8 GPUs x 32 = 256 at lr 0.1). The factor is
recomputed every step instead of every epoch (torchvision's granularity), so that warm-up is
smooth at the large batches where it matters.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

REFERENCE_BATCH = 256      # the batch the base learning rate is quoted for (see the module docstring)
WARMUP_START = 0.01        # torchvision train.py --lr-warmup-decay default: warm-up starts at 1% of the peak


def peak_learning_rate(hp: dict[str, Any]) -> float:
    return hp["opt_base_learning_rate"] * hp["global_batch_size"] / REFERENCE_BATCH


def lr_factor(epoch: float, hp: dict[str, Any]) -> float:
    """Multiplier of the peak learning rate at fractional ``epoch`` (0 = first step)."""
    warmup = hp["opt_learning_rate_warmup_epochs"]
    if epoch < warmup:
        return WARMUP_START + (1 - WARMUP_START) * epoch / warmup
    schedule = hp["opt_learning_rate_schedule"]
    if schedule == "cosine":  # torchvision: CosineAnnealingLR(T_max = epochs - warm-up epochs), to 0
        span = max(hp["opt_learning_rate_decay_epochs"] - warmup, 1e-9)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (epoch - warmup) / span)))
    if schedule == "step":  # torchvision: StepLR(step_size, gamma), counted from the end of warm-up
        return hp["opt_learning_rate_step_gamma"] ** int((epoch - warmup) // hp["opt_learning_rate_step_epochs"])
    raise ValueError(f"opt_learning_rate_schedule {schedule!r}: use cosine or step")


def param_groups(model: nn.Module, weight_decay: float, decay_norm_and_bias: bool) -> list[dict[str, Any]]:
    """One group with weight decay and, unless ``decay_norm_and_bias``, one without for 1-d tensors
    (batch-norm scales and shifts, biases): the "no bias decay" of He et al. 2019, section 3.1."""
    if decay_norm_and_bias:
        return [{"params": [p for p in model.parameters() if p.requires_grad], "weight_decay": weight_decay}]
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (no_decay if p.ndim <= 1 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_sgd(model: nn.Module, hp: dict[str, Any], steps_per_epoch: int):
    """(SGD optimizer, per-step LambdaLR) for the hyperparameters of a full-size rule file."""
    groups = param_groups(model, hp["opt_weight_decay"], hp["opt_decay_norm_and_bias"])
    opt = torch.optim.SGD(groups, lr=peak_learning_rate(hp), momentum=hp["opt_momentum"])
    steps = max(steps_per_epoch, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step / steps, hp))
    return opt, sched
