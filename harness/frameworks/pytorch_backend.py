"""PyTorch behind the framework seam (harness/frameworks/backend.py): a reference model built, wrapped for
several ranks, stepped under the precision's autocast, evaluated and saved as safetensors."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from torch import nn

from trainmark.format.structure import describe
from trainmark.harness.frameworks import pytorch_device, pytorch_open, pytorch_runtime
from trainmark.harness.frameworks import pytorch_flops as flops
from trainmark.harness.frameworks.distributed import Dist
from trainmark.harness.open_recipe import OpenRecipe


def autocast_for(device: torch.device, precision: str):
    """(context factory, GradScaler or None, label) for the requested precision."""
    if precision == "fp32":
        return contextlib.nullcontext, None, "fp32"
    dtype = pytorch_device.amp_dtype(device)  # bf16 where the device computes it, else fp16
    label = "amp-bf16" if dtype == torch.bfloat16 else "amp-fp16"
    return (lambda: pytorch_device.autocast(device, dtype)), pytorch_device.grad_scaler(device, dtype), label


class PyTorchTrainer:
    """A reference model under PyTorch: built, wrapped for several ranks, stepped, evaluated, saved.

    ``hp["global_batch_size"]`` is split over ``dist.world`` ranks. ``data=None`` builds a trainer
    without a data set (the sweep's synthetic batches): ``steps_per_epoch`` is then
    ``schedule_steps``, which only shapes the learning-rate schedule.
    """

    def __init__(self, ref, build_model: Callable[[], nn.Module], hp: dict[str, Any], data, seed: int,
                 device: torch.device, precision: str, dist: Dist = Dist(), *, count_flops: bool = True,
                 schedule_steps: int = 100, recipe: OpenRecipe | None = None):
        self.ref, self.hp, self.data, self.device, self.dist = ref, hp, data, device, dist
        torch.manual_seed(seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.model = build_model().to(device)
        if getattr(ref, "channels_last", False):
            self.model = self.model.to(memory_format=torch.channels_last)
        self.structure = describe(self.model)
        self.train_model = self.model
        if dist.world > 1:
            self.train_model = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[device.index] if pytorch_device.is_accelerator(device) else None)
        self.local_batch = hp["global_batch_size"] // dist.world
        self.samples_per_step = self.local_batch * dist.world
        self.steps_per_epoch = ((ref.train_samples(data) // dist.world) // self.local_batch
                                if data is not None else schedule_steps)
        self.optimizer, self.scheduler = ref.make_optimizer(self.train_model, hp, self.steps_per_epoch)
        self.augment, self.open_settings = None, []  # the open division's --optimizer, --lr-schedule, --augment
        if recipe is not None:
            self.optimizer, self.scheduler = pytorch_open.rebuild(recipe, self.optimizer, self.scheduler)
            self.augment = pytorch_open.augmenter(recipe, ref)
            self.open_settings = pytorch_open.record(recipe, self.optimizer, self.scheduler)
        self.autocast, self.scaler, self.precision_used = autocast_for(device, precision)
        self.flops_per_step = count_step_flops(ref, self.model, hp, device) if count_flops else None
        self.after_step = pytorch_device.step_hook(device)  # e.g. an XLA device's mark_step; nothing for most
        self.loss = None
        self._nonfinite = torch.zeros((), dtype=torch.bool, device=device)

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        """This rank's batches of one epoch, on the device (the conversion is timed, as it is training)."""
        self.train_model.train()
        self._nonfinite = torch.zeros((), dtype=torch.bool, device=self.device)
        for batch in self.ref.train_batches(self.data, epoch, self.local_batch, self.generator,
                                            self.dist.rank, self.dist.world):
            yield self.prepare(batch)

    def prepare(self, batch: Any) -> Any:
        """A batch as ``train_batches`` yields it, as ``step`` takes it: on the device."""
        batch = self.ref.to_device(batch, self.device, train=True)
        return batch if self.augment is None else self.augment(batch)

    def step(self, batch: Any, sync: bool = True) -> None:
        """One training step: forward and loss under the precision's autocast, backward, optimizer,
        scheduler. The loss stays on the device; a non-finite one is remembered without a sync.
        ``sync=False`` skips the gradient all-reduce of several ranks (``trainmark scale`` times the
        compute alone that way); training always syncs."""
        quiet = self.train_model.no_sync() if not sync and self.dist.world > 1 else contextlib.nullcontext()
        with quiet:
            with self.autocast():
                loss = self.ref.loss(self.train_model, batch, self.hp)
            self.optimizer.zero_grad(set_to_none=True)
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        self.after_step()
        self._nonfinite |= ~torch.isfinite(loss.detach())
        self.loss = loss

    def loss_value(self) -> float:
        """The last step's loss (a device sync: call it every few steps, not every step)."""
        return self.loss.item()

    def diverged(self) -> bool:
        """Whether any rank saw a non-finite loss since the epoch began (every rank agrees)."""
        return self.dist.any(bool(self._nonfinite), self.device)

    def evaluate(self) -> float:
        """The metric on the full evaluation set, summed over ranks (may be non-finite)."""
        self.train_model.eval()
        with self.autocast():
            sums = self.dist.sum(list(self.ref.evaluate(self.model, self.data, self.device, self.dist.rank,
                                                        self.dist.world)), self.device)
        return self.ref.finalize_metric(*sums)

    def save_weights(self, path: Path) -> None:
        """The trained weights as safetensors (written atomically)."""
        from safetensors.torch import save_file

        from trainmark.files import write_atomic

        tensors = {n: t.detach().cpu().clone().contiguous() for n, t in self.model.state_dict().items()}
        write_atomic(Path(path), lambda p: save_file(tensors, str(p)))


resolve_device = pytorch_runtime.check_device  # --device: auto, cpu or TYPE[:INDEX] as PyTorch sees this machine


class PyTorchBackend:
    name = "pytorch"

    def __init__(self, device: torch.device, precision: str, dist: Dist = Dist()):
        self.device, self.precision, self.dist = device, precision, dist

    def load_data(self, ref, rules, data_dir: Path):
        """The reference's own loader (the rules' checksums were checked by the caller)."""
        return ref.load_data(data_dir)

    def trainer(self, ref, build_model: Callable[[], nn.Module], hp: dict[str, Any], data, seed: int,
                **options) -> PyTorchTrainer:
        return PyTorchTrainer(ref, build_model, hp, data, seed, self.device, self.precision, self.dist, **options)

    def precision_label(self) -> str:
        """The label a run at this precision logs (``amp`` resolves to the device's autocast dtype)."""
        return autocast_for(self.device, self.precision)[2]

    def sync(self) -> None:
        """Wait for this backend's CUDA device (nothing on a CPU)."""
        pytorch_runtime.synchronize(self.device)

    def step_flops(self, ref, hp: dict[str, Any], batch_size: int) -> tuple[int | None, str | None]:
        """Model FLOPs of one step at ``batch_size``, on the meta device (no memory, no time; no fallback
        to the real device), and why there is no count."""
        hp_b = {**hp, "global_batch_size": batch_size}
        try:
            with torch.device("meta"):  # no parameter memory, no initialisation time
                model = ref.build_model()
        except Exception:  # noqa: BLE001 - a builder that needs real tensors
            model = ref.build_model()
        batch = ref.to_device(ref.synthetic_batch(batch_size, "cpu"), torch.device("cpu"), train=True)
        inputs, targets = ref.split_batch(batch)
        count = flops.training_flops_per_step(model, inputs, lambda out, t: ref.criterion(out, t, hp_b),
                                              targets=targets, allow_device_fallback=False)
        return count.total, count.reason


def count_step_flops(ref, model: nn.Module, hp: dict[str, Any], device: torch.device) -> int | None:
    """Model FLOPs of one training step at the global batch size (None where uncountable)."""
    batch = ref.to_device(ref.synthetic_batch(hp["global_batch_size"], "cpu"), device, train=True)
    inputs, targets = ref.split_batch(batch)
    count = flops.training_flops_per_step(model, inputs, lambda out, t: ref.criterion(out, t, hp), targets=targets)
    return count.total
