"""Model FLOPs of one PyTorch training step (the rates derived from it: harness/measure/flops.py).

Convention (the usual "model FLOPs"): 2 FLOPs per multiply-add of matrix multiplications,
convolutions and attention, forward and backward; elementwise work, normalisation, the loss
reduction and the optimizer step are not counted. The count comes from
``torch.utils.flop_counter.FlopCounterMode`` over one real step (forward, loss, backward):

1. on a copy of the model on the ``meta`` device (no memory, no arithmetic, no side effect);
2. if that raises (an op without a meta kernel, a data-dependent ``.item()``), on the model's
   own device with the caller's batch, with cuDNN/oneDNN RNN and attention kernels disabled
   so that recurrent layers decompose into counted matmuls; the model's buffers (batch-norm
   statistics), the random-number state and every ``.grad`` are restored afterwards.

Attention: the counter has formulas for the CUDA flash/efficient/cuDNN kernels, and on ``meta``
``F.scaled_dot_product_attention`` decomposes into counted ``bmm``s, but the CPU kernel
``aten._scaled_dot_product_flash_attention_for_cpu`` (and its backward) and the out-of-tree
``_scaled_dot_product_fused_attention_overrideable`` have no formula: they count 0. We pass the
counter a ``custom_mapping`` for those ops (only where its registry lacks them), so each op is
counted exactly once, where it really runs: forward 2·B·H·L·S·E + 2·B·H·L·S·Ev (= 4·B·H·L·S·D),
backward twice that (dQ, dK, dV and dP), i.e. 3× forward in total. Causal or masked attention is
counted in full, as the counter does for the CUDA kernels.
"""
from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

__all__ = ["FlopCount", "training_flops_per_step", "attention_flops", "counter"]


@dataclass(frozen=True)
class FlopCount:
    """Result of counting: ``total`` (forward + backward) is None when counting failed."""

    total: int | None
    forward: int | None
    method: str                      # "meta", "device" or "unavailable"
    reason: str | None = None        # why the meta count was not used, or why there is none
    by_op: dict[str, int] = field(default_factory=dict)

    def __int__(self) -> int:
        if self.total is None:
            raise ValueError(f"no FLOP count: {self.reason}")
        return self.total


# ---------------------------------------------------------------- attention formulas

def attention_flops(q_shape, k_shape, v_shape) -> int:
    """Forward FLOPs of softmax(Q·Kᵀ)·V: 2·B·H·L·S·E for the scores plus 2·B·H·L·S·Ev for the output.

    H is the number of query heads (grouped-query attention broadcasts the key/value heads).
    """
    *batch_q, heads, length, e = q_shape
    s = k_shape[-2]
    ev = v_shape[-1]
    b = 1
    for d in batch_q:
        b *= d
    return 2 * b * heads * length * s * e + 2 * b * heads * length * s * ev


def _fwd_formula(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return attention_flops(query, key, value)


def _bwd_formula(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    # dV = Pᵀ·dO and dP = dO·Vᵀ (Ev), dQ = dS·K and dK = dSᵀ·Q (E): twice the forward.
    return 2 * attention_flops(query, key, value)


_MISSING_ATTENTION = {
    "_scaled_dot_product_flash_attention_for_cpu": _fwd_formula,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _bwd_formula,
    "_scaled_dot_product_fused_attention_overrideable": _fwd_formula,
    "_scaled_dot_product_fused_attention_overrideable_backward": _bwd_formula,
}


def _custom_mapping() -> dict[Any, Callable[..., int]]:
    """Formulas for the attention ops this torch's counter has none for (never overriding its own)."""
    registry = getattr(flop_counter, "flop_registry", {})
    mapping = {}
    for name, formula in _MISSING_ATTENTION.items():
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None and packet not in registry:
            mapping[packet] = formula
    return mapping


def counter() -> FlopCounterMode:
    """A silent FlopCounterMode that also counts the attention kernels the stock one misses."""
    return FlopCounterMode(display=False, custom_mapping=_custom_mapping())


# ---------------------------------------------------------------- one counted step

def _map_tensors(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(o, fn) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


def _tensors(obj) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    _map_tensors(obj, lambda t: found.append(t) or t)
    return found


def _default_loss(output) -> torch.Tensor:
    floats = [t for t in _tensors(output) if t.is_floating_point()]
    if not floats:
        raise TypeError("the model output has no floating-point tensor; pass loss_fn")
    return sum(t.float().sum() for t in floats)


def _call(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (list, tuple)) and not hasattr(inputs, "_fields"):
        return model(*inputs)
    return model(inputs)


def _counted_step(model, inputs, loss_fn, targets, grad_of) -> tuple[int, int, dict[str, int]]:
    """Forward, loss and ``backward()`` under the counter; the ``.grad`` of ``grad_of`` is restored.

    ``backward()`` rather than ``autograd.grad``: the counter's module tracker cannot follow
    ``autograd.grad`` through leaf inputs that require grad.
    """
    saved = [(t, t.grad) for t in grad_of if t.requires_grad]
    try:
        with counter() as mode:
            output = _call(model, inputs)
            loss = loss_fn(output) if targets is None else loss_fn(output, targets)
            forward = mode.get_total_flops()
            if loss.requires_grad:
                loss.backward()
            total = mode.get_total_flops()
            by_op = {str(op): int(n) for op, n in mode.get_flop_counts()["Global"].items()}
    finally:
        for t, grad in saved:
            t.grad = grad
    return int(total), int(forward), by_op


def _meta_copy(model: nn.Module) -> nn.Module:
    """Deep copy with every parameter and buffer replaced by a meta tensor of the same shape.

    The memo makes deepcopy skip the real tensors, so a large GPU model is never duplicated.
    """
    memo: dict[int, Any] = {}
    for p in model.parameters():
        memo[id(p)] = nn.Parameter(torch.empty_like(p, device="meta"), requires_grad=p.requires_grad)
    for b in model.buffers():
        memo[id(b)] = torch.empty_like(b, device="meta")
    return copy.deepcopy(model, memo)


def _to_meta(t: torch.Tensor) -> torch.Tensor:
    m = torch.empty_like(t, device="meta")
    return m.requires_grad_(t.requires_grad) if t.is_floating_point() else m


def _count_on_meta(model, inputs, loss_fn, targets):
    meta_model = _meta_copy(model)
    meta_inputs = _map_tensors(inputs, _to_meta)
    meta_targets = _map_tensors(targets, _to_meta)
    grad_of = list(meta_model.parameters()) + _tensors(meta_inputs)
    return _counted_step(meta_model, meta_inputs, loss_fn, meta_targets, grad_of)


@contextlib.contextmanager
def _decomposing_kernels():
    """Disable cuDNN/oneDNN so RNNs decompose into counted matmuls (shape-based counts are unchanged).

    Only the documented ``enabled`` switches are flipped; the ``flags()`` helpers would also
    reset TF32/determinism settings.
    """
    backends = [b for b in (torch.backends.cudnn, getattr(torch.backends, "mkldnn", None)) if b is not None]
    saved = [b.enabled for b in backends]
    try:
        for b in backends:
            b.enabled = False
        yield
    finally:
        for b, was in zip(backends, saved):
            b.enabled = was


def _count_on_device(model, inputs, loss_fn, targets):
    saved = {name: b.detach().clone() for name, b in model.named_buffers()}
    devices = sorted({t.device.index for t in _tensors(inputs) if t.device.type == "cuda"} - {None})
    try:
        with torch.random.fork_rng(devices=devices), _decomposing_kernels():
            grad_of = list(model.parameters()) + _tensors(inputs)
            return _counted_step(model, inputs, loss_fn, targets, grad_of)
    finally:
        with torch.no_grad():
            for name, b in model.named_buffers():
                if name in saved:
                    b.copy_(saved[name])


def training_flops_per_step(model: nn.Module, example_inputs, loss_fn=None, *, targets=None,
                            allow_device_fallback: bool = True) -> FlopCount:
    """Forward + backward model FLOPs of one step on ``example_inputs`` (one batch, any device).

    ``example_inputs``: a tensor, a tuple/list of positional arguments or a dict of keyword
    arguments for ``model``. ``loss_fn(output)`` or, with ``targets``, ``loss_fn(output, targets)``
    returns the scalar loss (default: sum of the floating outputs, which adds no counted FLOPs).
    Never raises for a model that cannot be counted: ``total`` is then None and ``reason`` says why.
    """
    loss_fn = loss_fn or _default_loss
    try:
        total, forward, by_op = _count_on_meta(model, example_inputs, loss_fn, targets)
        if total > 0:
            return FlopCount(total, forward, "meta", None, by_op)
        meta_reason = "the meta count was 0"
    except Exception as exc:  # noqa: BLE001 - any failure on meta means: try the real device
        meta_reason = f"meta device failed: {type(exc).__name__}: {exc}"[:300]
    if not allow_device_fallback:
        return FlopCount(None, None, "unavailable", meta_reason)
    try:
        total, forward, by_op = _count_on_device(model, example_inputs, loss_fn, targets)
    except torch.OutOfMemoryError as exc:
        return FlopCount(None, None, "unavailable", f"{meta_reason}; device count ran out of memory: {exc}"[:400])
    except Exception as exc:  # noqa: BLE001
        return FlopCount(None, None, "unavailable",
                         f"{meta_reason}; device count failed: {type(exc).__name__}: {exc}"[:400])
    if total <= 0:
        return FlopCount(None, None, "unavailable", f"{meta_reason}; no matmul, convolution or attention counted")
    return FlopCount(total, forward, "device", meta_reason, by_op)
