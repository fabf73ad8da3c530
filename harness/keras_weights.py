"""Keras weights in the PyTorch reference's names and layouts, and back: one canonical layout.

A Keras layer named after a PyTorch module path (``layer2.0.conv1``, see
reference/keras_twins/fashion_mnist.py) holds that module's tensors in Keras' own layout. This module
maps them onto the names, shapes and dtypes of the PyTorch ``state_dict``, so that a TensorFlow
trial writes the same ``model.safetensors`` and the same parameter and buffer lists in
``structure.json`` as a PyTorch trial of the same model, and the checker's conformity check judges
both against one reference structure. ``load`` is the inverse (the weight-transfer test).

Layouts: a Conv2D kernel is (kh, kw, in, out), PyTorch's (out, in, kh, kw); a Dense kernel
(in, out), PyTorch's (out, in); batch norm's gamma, beta, moving mean and moving variance are
PyTorch's weight, bias, running_mean and running_var, and PyTorch's ``num_batches_tracked``
buffer counts the training steps (Keras keeps no such counter).
"""
from __future__ import annotations

import numpy as np

from trainmark.format.structure import FORMAT, fingerprint

# Keras layer class -> ((Keras weight, PyTorch tensor suffix, axes to PyTorch, is a parameter), ...)
_LAYOUT = {
    "Conv2D": (("kernel", "weight", (3, 2, 0, 1), True), ("bias", "bias", None, True)),
    "Dense": (("kernel", "weight", (1, 0), True), ("bias", "bias", None, True)),
    "BatchNormalization": (("gamma", "weight", None, True), ("beta", "bias", None, True),
                           ("moving_mean", "running_mean", None, False),
                           ("moving_variance", "running_var", None, False)),
}


def _slots(model):
    """(layer, Keras weight variable, PyTorch name, axes, is a parameter) for every weight, in layer order."""
    for layer in model.layers:
        kind = type(layer).__name__
        if not layer.weights:
            continue
        if kind not in _LAYOUT:
            raise ValueError(f"layer {layer.name!r} ({kind}) has no canonical layout")
        by_name = {w.path.rsplit("/", 1)[-1]: w for w in layer.weights}
        for keras_name, suffix, axes, is_param in _LAYOUT[kind]:
            if keras_name in by_name:
                yield layer, by_name[keras_name], f"{layer.name}.{suffix}", axes, is_param


def tensors(model, steps: int = 0) -> tuple[dict[str, np.ndarray], list[str]]:
    """(name -> array in PyTorch's layout, the names that are parameters), in PyTorch's order per layer."""
    out: dict[str, np.ndarray] = {}
    params: list[str] = []
    for layer, weight, name, axes, is_param in _slots(model):
        value = np.asarray(weight.numpy())
        out[name] = np.ascontiguousarray(value.transpose(axes) if axes else value)
        if is_param:
            params.append(name)
        if name.endswith(".running_var"):
            out[f"{layer.name}.num_batches_tracked"] = np.array(steps, dtype=np.int64)
    return out, params


def load(model, state: dict[str, np.ndarray]) -> None:
    """Set a Keras model's weights from PyTorch-layout arrays (a ``state_dict`` as numpy)."""
    for _layer, weight, name, axes, _ in _slots(model):
        value = np.asarray(state[name])
        if axes:
            value = value.transpose(np.argsort(axes))
        if tuple(value.shape) != tuple(weight.shape):
            raise ValueError(f"{name}: shape {list(value.shape)} does not fit Keras' {list(weight.shape)}")
        weight.assign(value)


def describe(model) -> dict:
    """The ``trainmark.format.structure`` description of a Keras model: its Keras layers as modules,
    its tensors under PyTorch's names and layouts (what the checker compares across frameworks)."""
    arrays, params = tensors(model)
    param_set = set(params)
    entries = [{"name": n, "shape": list(a.shape), "dtype": str(a.dtype)} for n, a in arrays.items()]
    body = {
        "modules": [{"name": layer.name, "type": f"keras.layers.{type(layer).__name__}",
                     "config": _config(layer)} for layer in model.layers],
        "parameters": [e for e in entries if e["name"] in param_set],
        "buffers": [e for e in entries if e["name"] not in param_set],
    }
    count = sum(int(np.prod(e["shape"])) for e in body["parameters"])
    return {"format": FORMAT, **body, "parameter_count": count, "fingerprint": fingerprint(body)}


def _config(layer) -> str:
    """A short, stable summary of a layer's settings (the Keras counterpart of ``extra_repr``)."""
    cfg = layer.get_config()
    keys = ("filters", "kernel_size", "strides", "padding", "use_bias", "units", "epsilon", "momentum", "pool_size")
    return ", ".join(f"{k}={cfg[k]}" for k in keys if k in cfg)
