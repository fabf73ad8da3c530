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
buffer counts the training steps (Keras keeps no such counter); layer norm's gamma and beta are
weight and bias, an Embedding's table is weight; a MultiHeadAttention's query, key and value kernels
(in, heads, head size) are the three row blocks of ``nn.MultiheadAttention``'s packed in_proj_weight
(3 x heads x head size, in), its output kernel (heads, head size, out) is out_proj.weight transposed;
a Bidirectional GRU (``reset_after``: PyTorch's formula) holds nn.GRU's weights with the gate blocks in
Keras' order (update, reset, candidate; PyTorch's is reset, update, candidate) and both biases in one
(2, 3 x hidden) array, the backward direction's as the ``_reverse`` tensors; an LSTM's kernels are
nn.LSTM's weight_ih_l0 and weight_hh_l0 transposed (the same gate order: input, forget, cell, output) and
its one bias is the sum of nn.LSTM's two (carried as ``bias_ih_l0``, with a zero ``bias_hh_l0``). A stacked
nn.LSTM is one Keras LSTM per layer: the layer named ``lstm_l1`` holds module ``lstm``'s ``_l1`` tensors.
"""
from __future__ import annotations

import re

import numpy as np

from trainmark.format.structure import FORMAT, fingerprint

# Keras layer class -> ((Keras weight, PyTorch tensor suffix, axes to PyTorch, is a parameter), ...)
_LAYOUT = {
    "Conv2D": (("kernel", "weight", (3, 2, 0, 1), True), ("bias", "bias", None, True)),
    "Dense": (("kernel", "weight", (1, 0), True), ("bias", "bias", None, True)),
    "BatchNormalization": (("gamma", "weight", None, True), ("beta", "bias", None, True),
                           ("moving_mean", "running_mean", None, False),
                           ("moving_variance", "running_var", None, False)),
    "LayerNormalization": (("gamma", "weight", None, True), ("beta", "bias", None, True)),
    "Embedding": (("embeddings", "weight", None, True),),
}
_ATTENTION = ("query", "key", "value")
_DIRECTIONS = (("forward", ""), ("backward", "_reverse"))  # Keras' Bidirectional -> nn.GRU's suffixes


def _gates(array: np.ndarray) -> np.ndarray:
    """Keras' GRU gate blocks (update z, reset r, candidate) <-> PyTorch's (r, z, n), along axis 0."""
    z, r, n = np.split(array, 3)
    return np.concatenate([r, z, n])


def _weights(layer) -> dict[str, object]:
    """A layer's weight variables by their path below the layer (``kernel``, ``query/kernel``)."""
    return {w.path.split(f"{layer.name}/", 1)[-1]: w for w in layer.weights}


def _to_torch(layer) -> tuple[dict[str, np.ndarray], list[str]]:
    """(PyTorch suffix -> array, the suffixes that are parameters) of one Keras layer."""
    kind, weights = type(layer).__name__, _weights(layer)
    if kind == "MultiHeadAttention":  # nn.MultiheadAttention packs q, k and v: in_proj_weight [3d, d]
        get = lambda key: np.asarray(weights[key].numpy())  # noqa: E731
        d_in = get("query/kernel").shape[0]
        out = {"in_proj_weight": np.concatenate([get(f"{p}/kernel").reshape(d_in, -1).T for p in _ATTENTION]),
               "in_proj_bias": np.concatenate([get(f"{p}/bias").reshape(-1) for p in _ATTENTION])}
        kernel = get("attention_output/kernel")
        out["out_proj.weight"] = kernel.reshape(-1, kernel.shape[-1]).T
        out["out_proj.bias"] = get("attention_output/bias")
        return out, list(out)
    if kind == "Bidirectional":  # of a GRU (reset_after, as nn.GRU): kernel [in, 3H], bias [input, recurrent]
        out = {}
        for direction, end in _DIRECTIONS:
            get = lambda key: np.asarray(_cell_weight(weights, key, direction).numpy())  # noqa: E731
            out[f"weight_ih_l0{end}"] = _gates(get("kernel").T)
            out[f"weight_hh_l0{end}"] = _gates(get("recurrent_kernel").T)
            out[f"bias_ih_l0{end}"], out[f"bias_hh_l0{end}"] = (_gates(b) for b in get("bias"))
        return out, list(out)
    if kind == "LSTM":  # one layer of nn.LSTM: kernel [in, 4H], recurrent_kernel [H, 4H], bias [4H]
        get = lambda key: np.asarray(_cell_weight(weights, key).numpy())  # noqa: E731
        bias, k = get("bias"), _module(layer)[1]
        out = {f"weight_ih_l{k}": get("kernel").T, f"weight_hh_l{k}": get("recurrent_kernel").T,
               f"bias_ih_l{k}": bias, f"bias_hh_l{k}": np.zeros_like(bias)}
        return out, list(out)
    if kind not in _LAYOUT:
        raise ValueError(f"layer {layer.name!r} ({kind}) has no canonical layout")
    out, params = {}, []
    for keras_name, suffix, axes, is_param in _LAYOUT[kind]:
        if keras_name in weights:
            value = np.asarray(weights[keras_name].numpy())
            out[suffix] = value.transpose(axes) if axes else value
            params += [suffix] if is_param else []
    return out, params


def _from_torch(layer, get) -> None:
    """Assign one Keras layer's weights from ``get(suffix)``, PyTorch-layout arrays."""
    kind, weights = type(layer).__name__, _weights(layer)
    if kind == "MultiHeadAttention":
        packed_w, packed_b = np.split(get("in_proj_weight"), 3), np.split(get("in_proj_bias"), 3)
        for p, w, b in zip(_ATTENTION, packed_w, packed_b):
            _assign(weights[f"{p}/kernel"], w.T, layer.name)
            _assign(weights[f"{p}/bias"], b, layer.name)
        _assign(weights["attention_output/kernel"], get("out_proj.weight").T, layer.name)
        _assign(weights["attention_output/bias"], get("out_proj.bias"), layer.name)
        return
    if kind == "Bidirectional":
        for direction, end in _DIRECTIONS:
            _assign(_cell_weight(weights, "kernel", direction), _gates(get(f"weight_ih_l0{end}")).T, layer.name)
            _assign(_cell_weight(weights, "recurrent_kernel", direction), _gates(get(f"weight_hh_l0{end}")).T,
                    layer.name)
            _assign(_cell_weight(weights, "bias", direction),
                    np.stack([_gates(get(f"bias_ih_l0{end}")), _gates(get(f"bias_hh_l0{end}"))]), layer.name)
        return
    if kind == "LSTM":
        k = _module(layer)[1]
        _assign(_cell_weight(weights, "kernel"), get(f"weight_ih_l{k}").T, layer.name)
        _assign(_cell_weight(weights, "recurrent_kernel"), get(f"weight_hh_l{k}").T, layer.name)
        _assign(_cell_weight(weights, "bias"), get(f"bias_ih_l{k}") + get(f"bias_hh_l{k}"), layer.name)
        return
    for keras_name, suffix, axes, _ in _LAYOUT[kind]:
        if keras_name in weights:
            value = get(suffix)
            _assign(weights[keras_name], value.transpose(np.argsort(axes)) if axes else value, layer.name)


def _cell_weight(weights: dict, name: str, direction: str = ""):
    """A recurrent layer's cell weight (``lstm_cell/kernel``), of one direction of a Bidirectional layer
    when ``direction`` is given (``forward_gru/gru_cell/kernel``)."""
    (match,) = [w for key, w in weights.items() if key.startswith(direction) and key.rsplit("/", 1)[-1] == name]
    return match


def _module(layer) -> tuple[str, int]:
    """(the PyTorch module a layer holds tensors of, its layer in that module): a Keras LSTM named ``lstm_l1``
    is layer 1 of module ``lstm`` (nn.LSTM's tensors ``weight_ih_l1``, ...); any other layer is its module."""
    if type(layer).__name__ == "LSTM" and (match := re.fullmatch(r"(.+)_l(\d+)", layer.name)):
        return match.group(1), int(match.group(2))
    return layer.name, 0


def _assign(weight, value: np.ndarray, name: str) -> None:
    """``weight.assign(value)``, reshaped to Keras' shape when only the grouping differs (heads)."""
    if int(np.prod(value.shape)) != int(np.prod(weight.shape)):
        raise ValueError(f"{name}: shape {list(value.shape)} does not fit Keras' {list(weight.shape)}")
    weight.assign(np.ascontiguousarray(value).reshape(tuple(weight.shape)))


def tensors(model, steps: int = 0) -> tuple[dict[str, np.ndarray], list[str]]:
    """(name -> array in PyTorch's layout, the names that are parameters), in PyTorch's order per layer."""
    out: dict[str, np.ndarray] = {}
    params: list[str] = []
    for layer in model.layers:
        if not layer.weights:
            continue
        arrays, layer_params = _to_torch(layer)
        module = _module(layer)[0]
        for suffix, value in arrays.items():
            out[f"{module}.{suffix}"] = np.ascontiguousarray(value)
        params += [f"{module}.{s}" for s in layer_params]
        if "running_var" in arrays:
            out[f"{module}.num_batches_tracked"] = np.array(steps, dtype=np.int64)
    return out, params


def load(model, state: dict[str, np.ndarray]) -> None:
    """Set a Keras model's weights from PyTorch-layout arrays (a ``state_dict`` as numpy)."""
    for layer in model.layers:
        if layer.weights:
            _from_torch(layer, lambda suffix: np.asarray(state[f"{_module(layer)[0]}.{suffix}"]))


def describe(model) -> dict:
    """The ``trainmark.format.structure`` description of a Keras model: its Keras layers as modules,
    its tensors under PyTorch's names and layouts (what the checker compares across frameworks)."""
    arrays, params = tensors(model)
    param_set = set(params)
    entries = [{"name": n, "shape": list(a.shape), "dtype": str(a.dtype)} for n, a in arrays.items()]
    body = {
        "modules": [{"name": _module_name(index, layer), "type": f"keras.layers.{type(layer).__name__}",
                     "config": _config(layer)} for index, layer in enumerate(model.layers)],
        "parameters": [e for e in entries if e["name"] in param_set],
        "buffers": [e for e in entries if e["name"] not in param_set],
    }
    count = sum(int(np.prod(e["shape"])) for e in body["parameters"])
    return {"format": FORMAT, **body, "parameter_count": count, "fingerprint": fingerprint(body)}


def _module_name(index: int, layer) -> str:
    """A layer with weights is named after its PyTorch module; another (ReLU, pooling) gets Keras' automatic
    name, which counts the layers made so far in the process (``re_lu_17`` in a second trial), so it is
    described by its place instead: every trial of one model has the same description and fingerprint."""
    return layer.name if layer.weights else f"{type(layer).__name__}#{index}"


def _config(layer) -> str:
    """A short, stable summary of a layer's settings (the Keras counterpart of ``extra_repr``)."""
    cfg = layer.get_config()
    keys = ("filters", "kernel_size", "strides", "padding", "use_bias", "units", "epsilon", "momentum", "pool_size")
    return ", ".join(f"{k}={cfg[k]}" for k in keys if k in cfg)
