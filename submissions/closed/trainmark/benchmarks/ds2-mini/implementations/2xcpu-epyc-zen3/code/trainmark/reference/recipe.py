"""Recipe pieces the sequence references share: Adam with gradient-norm clipping, and the
learning-rate shape (linear warm-up, then linear decay), both stepped once per training step.

Clipping lives in an optimizer step pre-hook because the harness calls ``optimizer.step()``
itself; under a GradScaler the hook runs after the gradients are unscaled, and under DDP
after they are all-reduced, so every rank clips the same global gradient.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


def warmup_linear_decay(step: int, warmup_steps: int, decay_steps: int, final: float) -> float:
    """Factor on the base rate: 0 -> 1 over ``warmup_steps``, then 1 -> ``final`` by ``decay_steps``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step >= decay_steps:
        return final
    frac = (step - warmup_steps) / max(decay_steps - warmup_steps, 1)
    return 1.0 - (1.0 - final) * frac


def clipped_adam(model: nn.Module, hp: dict[str, Any], steps_per_epoch: int):
    """(Adam, LambdaLR) from the rules' ``opt_*`` hyperparameters.

    ``opt_learning_rate_decay_epochs`` is where the rate reaches ``opt_learning_rate_final_factor``
    of its peak and stays; ``opt_gradient_clip_norm`` bounds the global gradient norm.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=hp["opt_base_learning_rate"],
                           betas=(hp["opt_adam_beta1"], hp["opt_adam_beta2"]), eps=hp["opt_adam_epsilon"],
                           weight_decay=hp["opt_weight_decay"])
    max_norm = float(hp["opt_gradient_clip_norm"])
    def clip(*_) -> None:
        nn.utils.clip_grad_norm_(params, max_norm)

    opt.register_step_pre_hook(clip)
    warmup = int(hp["opt_learning_rate_warmup_steps"])
    decay = max(int(round(hp["opt_learning_rate_decay_epochs"] * steps_per_epoch)), warmup + 1)
    final = float(hp["opt_learning_rate_final_factor"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_linear_decay(s, warmup, decay, final))
    return opt, sched
