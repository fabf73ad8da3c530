"""``tiny-test``: a reference (tests/rules/1.2/tiny-test.yaml names it) that trains a linear classifier on a
separable synthetic set in milliseconds, so the harness's bookkeeping (windows, logs, statuses, resume, ranks)
is tested without waiting for a CNN. Imported by conftest.py and by dist_launch.py (torchrun).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from trainmark.reference.base import Reference


class TinyData:
    def __init__(self, n=512, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] + 0.5 * self.x[:, 1] > 0).long()


class TinyTest(Reference):
    """Hooks: ``nan_at_epoch`` makes the loss NaN, ``interrupt_at`` raises Ctrl-C at (trial seed, epoch),
    ``tick`` is called once per training step and ``eval_tick`` once per evaluation (fake clocks)."""

    name = "tiny-test"
    input_shape = (8,)
    num_classes = 2
    nan_at_epoch: int | None = None
    interrupt_at: tuple[int, int] | None = None
    tick = staticmethod(lambda: None)
    eval_tick = staticmethod(lambda: None)
    metric_override = None

    def build_model(self):
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def load_data(self, data_dir):
        return TinyData()

    def train_samples(self, data):
        return len(data.y)

    def eval_samples(self, data):
        return len(data.y)

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        if TinyTest.interrupt_at and TinyTest.interrupt_at[1] == epoch and \
                torch.initial_seed() == TinyTest.interrupt_at[0]:
            raise KeyboardInterrupt
        order = torch.randperm(len(data.y), generator=generator)[rank::world]
        for i in range(len(order) // batch_size):
            idx = order[i * batch_size:(i + 1) * batch_size]
            TinyTest.tick()
            x = data.x[idx]
            if TinyTest.nan_at_epoch == epoch:
                x = x * float("nan")
            yield x, data.y[idx]

    def make_optimizer(self, model, hp, steps_per_epoch):
        opt = torch.optim.SGD(model.parameters(), lr=hp["opt_base_learning_rate"])
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)

    def criterion(self, output, targets, hp):
        return F.cross_entropy(output, targets)

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        TinyTest.eval_tick()
        if TinyTest.metric_override is not None:
            return TinyTest.metric_override(), 1.0
        pred = model(data.x[rank::world].to(device)).argmax(1)
        return float((pred.cpu() == data.y[rank::world]).sum()), float(len(data.y[rank::world]))
