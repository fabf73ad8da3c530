"""What the Keras twins share: the reference's own learning-rate schedule as a per-step table, the
reference's tensors as TensorFlow's, and label-smoothed cross-entropy as PyTorch computes it.

The schedule is not re-implemented: ``rate_table`` steps the PyTorch reference's own scheduler (from its
``make_optimizer``, on a one-weight stand-in model) and records the rate of every step, so a twin trains
with exactly the rates a PyTorch trial uses, whatever the schedule's shape.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` and the twins import this module.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from trainmark.reference.tf_import import tf  # first: it imports TensorFlow safely beside PyTorch

# isort: split

import keras  # noqa: E402


def rate_table(ref, hp: dict[str, Any], steps_per_epoch: int, epochs: float) -> np.ndarray:
    """The learning rate of every step of ``epochs`` epochs, read from the reference's own optimizer
    and scheduler (the rate of step k is the one ``optimizer.step()`` uses at step k)."""
    optimizer, scheduler = ref.make_optimizer(torch.nn.Linear(1, 1), hp, steps_per_epoch)
    rates = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": nothing is trained here
        for _ in range(int(np.ceil(epochs * steps_per_epoch)) + 1):
            rates.append(optimizer.param_groups[0]["lr"])
            scheduler.step()
    return np.array(rates, dtype=np.float32)


class TableSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A Keras learning-rate schedule that looks the step up in a table (the last rate after its end)."""

    def __init__(self, table: np.ndarray):
        self.table = tf.constant(table)

    def __call__(self, step):
        return tf.gather(self.table, tf.minimum(tf.cast(step, tf.int32), tf.shape(self.table)[0] - 1))

    def get_config(self):
        return {"table": self.table.numpy().tolist()}


def clipped_adam(ref, hp: dict[str, Any], steps_per_epoch: int) -> tuple[keras.optimizers.Optimizer, float]:
    """(Keras Adam at the reference's own rates, the global gradient norm to clip to): the twin of
    reference/recipe.py's ``clipped_adam``, for the sequence references. Keras' Adam adds epsilon to
    sqrt(v) before the bias correction, PyTorch's after (a difference of epsilon x sqrt(1 - beta2^t))."""
    rates = rate_table(ref, hp, steps_per_epoch, hp["opt_learning_rate_decay_epochs"] + 1)
    adam = keras.optimizers.Adam(TableSchedule(rates), beta_1=hp["opt_adam_beta1"], beta_2=hp["opt_adam_beta2"],
                                 epsilon=hp["opt_adam_epsilon"])
    return adam, float(hp["opt_gradient_clip_norm"])


def with_l2(loss, variables, decay: float):
    """(loss, the objective: loss + decay/2 x the variables' squared norm), whose gradient is PyTorch's
    ``weight_decay`` (L2 added to the gradient, as ``torch.optim.Adam`` and ``SGD`` do)."""
    if not decay:
        return loss, loss
    return loss, loss + 0.5 * decay * tf.add_n([tf.reduce_sum(tf.square(v)) for v in variables])


def as_tf(*tensors: torch.Tensor) -> tuple[tf.Tensor, ...]:
    """PyTorch CPU tensors as TensorFlow tensors (a copy through numpy)."""
    return tuple(tf.convert_to_tensor(t.numpy()) for t in tensors)


def smoothed_cross_entropy(logits, targets, smoothing: float, weights=None):
    """Mean label-smoothed cross-entropy, as ``F.cross_entropy(label_smoothing=...)``: (1 - e) x NLL plus
    e x the mean over classes of -log p; ``weights`` (0 or 1 per target, e.g. not padding) select the
    targets averaged over, as ``ignore_index`` does."""
    logp = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    nll = -tf.gather(logp, tf.cast(targets, tf.int32), axis=-1, batch_dims=len(targets.shape))
    per_target = (1.0 - smoothing) * nll - smoothing * tf.reduce_mean(logp, axis=-1)
    if weights is None:
        return tf.reduce_mean(per_target)
    weights = tf.cast(weights, tf.float32)
    return tf.reduce_sum(per_target * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)
