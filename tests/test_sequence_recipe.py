"""The sequence references' shared recipe: the learning-rate shape and gradient clipping
inside ``optimizer.step()`` (where the harness cannot see it)."""
import pytest
import torch
from torch import nn

from trainmark.reference.recipe import clipped_adam, warmup_linear_decay

HP = dict(opt_base_learning_rate=0.01, opt_adam_beta1=0.9, opt_adam_beta2=0.999, opt_adam_epsilon=1e-8,
          opt_weight_decay=0.0, opt_gradient_clip_norm=0.5, opt_learning_rate_warmup_steps=4,
          opt_learning_rate_decay_epochs=2, opt_learning_rate_final_factor=0.1)


def test_warmup_then_linear_decay_then_flat():
    f = [warmup_linear_decay(s, 4, 14, 0.1) for s in range(20)]
    assert f[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert f[4] == 1.0 and f[9] == pytest.approx(0.55) and f[14:] == [0.1] * 6
    assert warmup_linear_decay(0, 0, 10, 1.0) == 1.0                      # no warm-up: start at the peak


def test_scheduler_follows_the_shape_per_step():
    model = nn.Linear(3, 1)
    opt, sched = clipped_adam(model, HP, steps_per_epoch=7)               # decay ends at step 14
    rates = []
    for _ in range(16):
        rates.append(opt.param_groups[0]["lr"])
        model(torch.randn(2, 3)).sum().backward()
        opt.step()
        sched.step()
    assert rates[0] == pytest.approx(0.0025) and rates[3] == pytest.approx(0.01)
    assert rates[14] == pytest.approx(0.001) and rates[15] == pytest.approx(0.001)


def test_gradients_are_clipped_before_every_step():
    model = nn.Linear(3, 1)
    opt, _ = clipped_adam(model, HP, steps_per_epoch=7)
    (1e4 * model(torch.ones(1, 3))).sum().backward()
    assert torch.cat([p.grad.flatten() for p in model.parameters()]).norm() > 100
    opt.step()
    assert torch.cat([p.grad.flatten() for p in model.parameters()]).norm() == pytest.approx(0.5, rel=1e-4)
