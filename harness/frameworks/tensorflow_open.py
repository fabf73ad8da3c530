"""The open division's options under TensorFlow: the Keras twins honour what Keras offers here.

``--optimizer NAME`` takes a class of ``keras.optimizers`` by name, with ``--optimizer-arg``, at the twin's own
learning-rate schedule (the reference's rates, step by step) unless ``learning_rate`` is given; the twin's weight
decay (in its objective) and gradient clipping stay. ``--lr-schedule`` and ``--augment`` name PyTorch classes
(torch.optim.lr_scheduler, torchvision.transforms.v2) that have no Keras counterpart in the twins: refused in one
line before anything is written.
"""
from __future__ import annotations

from typing import Any

from trainmark.reference.tf_import import tf  # noqa: F401 - first: it imports TensorFlow safely beside PyTorch

# isort: split
import keras

from trainmark.errors import UserError
from trainmark.format import mllog
from trainmark.harness.open_recipe import OpenRecipe, jsonable


def optimizer_class(name: str) -> type:
    """The class ``name`` of ``keras.optimizers``, or a one-line error listing them."""
    found = getattr(keras.optimizers, name, None)
    base = keras.optimizers.Optimizer
    if isinstance(found, type) and issubclass(found, base) and found is not base:
        return found
    choices = sorted(n for n in dir(keras.optimizers) if isinstance(getattr(keras.optimizers, n), type)
                     and issubclass(getattr(keras.optimizers, n), base) and getattr(keras.optimizers, n) is not base)
    raise UserError(f"--optimizer {name!r}: not a class of keras.optimizers (--framework tensorflow); choose from "
                    f"{', '.join(choices)}")


def _arguments(recipe: OpenRecipe) -> tuple[Any, dict[str, Any]]:
    """(the learning rate given, or None, and the other arguments)."""
    args = dict(recipe.optimizer_args)
    rate = args.pop("learning_rate", None)
    rate = args.pop("lr", rate)
    return rate, args


def rebuild(recipe: OpenRecipe | None, optimizer):
    """The twin's optimizer, or the one ``--optimizer`` names at the twin's schedule."""
    if recipe is None or not recipe.optimizer:
        return optimizer
    rate, args = _arguments(recipe)
    schedule = getattr(optimizer, "_learning_rate", None) or optimizer.learning_rate
    return optimizer_class(recipe.optimizer)(learning_rate=schedule if rate is None else rate, **args)


def record(recipe: OpenRecipe | None, optimizer) -> list[tuple[str, Any]]:
    """The MLLOG setting of the optimizer that was built."""
    if recipe is None or not recipe.optimizer:
        return []
    return [(mllog.OPEN_OPTIMIZER, {"name": type(optimizer).__name__, "module": "keras.optimizers",
                                    "args": jsonable(recipe.optimizer_args)})]


def check(recipe: OpenRecipe, ref, hp: dict[str, Any]) -> str | None:
    """Refuse what the twins cannot honour and build the optimizer once on a stand-in variable, before anything
    is written; returns its name as ``opt_name`` logs it."""
    refused = [flag for flag in ("--lr-schedule", "--augment") if flag in recipe.flags()]
    if refused:
        raise UserError(f"--framework tensorflow: {' and '.join(refused)} act on PyTorch only "
                        "(torch.optim.lr_scheduler, torchvision.transforms.v2); the Keras twins honour --optimizer "
                        "(keras.optimizers) at the twin's own schedule: use --framework pytorch for the rest")
    if not recipe.optimizer:
        return None
    rate, args = _arguments(recipe)
    cls = optimizer_class(recipe.optimizer)
    try:
        stand_in = keras.Variable([1.0, 2.0])
        optimizer = cls(learning_rate=0.01 if rate is None else rate, **args)
        optimizer.apply_gradients([(keras.ops.ones_like(stand_in), stand_in)])
    except Exception as exc:  # noqa: BLE001 - Keras's own words for a wrong argument, on one line
        raise UserError(f"--optimizer {recipe.optimizer}: building it failed: {type(exc).__name__}: {exc}") from None
    return type(optimizer).__name__.lower()
