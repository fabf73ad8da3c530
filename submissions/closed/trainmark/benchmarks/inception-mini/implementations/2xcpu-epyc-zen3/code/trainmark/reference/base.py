"""What the harness needs from a reference implementation, and the usual defaults.

A reference owns the model, the data and the recipe; the harness owns the loop, the
clock, the logs and the energy. Batches are tuples of tensors; ``to_device`` moves them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import torch
from torch import nn

from trainmark.errors import UserError


class Reference:
    name: str = ""
    # Input of one sample, for synthetic batches and FLOP counting: shape and dtype.
    input_shape: tuple[int, ...] = ()
    num_classes: int = 0
    channels_last: bool = False  # the harness stores the model channels-last when True

    def build_model(self) -> nn.Module:
        raise NotImplementedError

    def prepare_data(self, out_dir: Path, source: Path | None = None) -> list[Path]:
        """Build the dataset deterministically into ``out_dir`` (``trainmark data prepare``, untimed)
        from ``source`` (default: where the reference finds it); return the files written.
        References whose data is used as downloaded keep this default."""
        raise UserError(f"{self.name}: its dataset is used as downloaded, there is nothing to prepare "
                        "(`trainmark rules show` says where to get it)")

    def load_data(self, data_dir: Path | None) -> Any:
        """Read the dataset (untimed, once per run); raise UserError saying how to get it."""
        raise NotImplementedError

    def train_samples(self, data) -> int:
        raise NotImplementedError

    def eval_samples(self, data) -> int:
        raise NotImplementedError

    def train_batches(self, data, epoch: int, batch_size: int, generator: torch.Generator,
                      rank: int = 0, world: int = 1) -> Iterator[tuple[torch.Tensor, ...]]:
        """This rank's share of one epoch, ``batch_size`` being the per-rank batch."""
        raise NotImplementedError

    def to_device(self, batch, device: torch.device, train: bool):
        return tuple(t.to(device, non_blocking=True) for t in batch)

    def make_optimizer(self, model: nn.Module, hp: dict[str, Any], steps_per_epoch: int):
        """(optimizer, scheduler stepped once per training step)."""
        raise NotImplementedError

    def split_batch(self, batch) -> tuple[tuple, Any]:
        """(model inputs, targets): the last tensor of a batch is the target by default."""
        return tuple(batch[:-1]), batch[-1]

    def criterion(self, output, targets, hp: dict[str, Any]) -> torch.Tensor:
        raise NotImplementedError

    def loss(self, model: nn.Module, batch, hp: dict[str, Any]) -> torch.Tensor:
        inputs, targets = self.split_batch(batch)
        return self.criterion(model(*inputs), targets, hp)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, data, device: torch.device, rank: int = 0, world: int = 1
                 ) -> tuple[float, float]:
        """Sums over this rank's share, usually (sum, count); the harness all-reduces each of them
        and passes them to ``finalize_metric`` (BLEU returns its ten n-gram statistics)."""
        raise NotImplementedError

    def finalize_metric(self, total: float, count: float) -> float:
        """The quality metric from the all-reduced ``evaluate`` sums: their mean by default.

        Override when the metric is not a mean (perplexity is exp of the mean NLL per token).
        """
        return total / count if count else float("nan")

    def synthetic_batch(self, batch_size: int, device: torch.device | str = "cpu"):
        """Random tensors in the form ``train_batches`` yields: throughput without an input pipeline."""
        x = torch.randn(batch_size, *self.input_shape, device=device)
        y = torch.randint(0, self.num_classes, (batch_size,), device=device)
        return x, y
