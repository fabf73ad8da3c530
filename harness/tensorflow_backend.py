"""TensorFlow behind the framework seam (harness/framework.py): a Keras twin of a reference, one
compiled training step, evaluation, and weights saved as safetensors in the PyTorch layout.

The data path is the reference's own: the same batches, in the same order for a seed, with the same
augmentation as a PyTorch trial (converted to NHWC tensors inside the compiled step), so that a
comparison of the two frameworks compares the frameworks. The recipe is the reference's: the same
learning-rate factor per step (computed by the reference's own schedule function, once, into a table),
SGD with Nesterov momentum, label smoothing, L2 on kernels only (reference/keras_twins/fashion_mnist.py).

The data come through tensorflow-datasets (reference/tfds_builders/fashion_mnist.py): the same arrays
in the same order as the PyTorch reference's loader, so the batches above are unchanged.

Scope today (issue 17): one process, fp32, the Fashion-MNIST minis that
``trainmark.reference.keras_twins.fashion_mnist.MODELS`` names. Anything else is a clear error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

from trainmark.harness.tf_import import tf  # first: it imports TensorFlow safely beside PyTorch

import keras
import numpy as np

from trainmark.errors import UserError
from trainmark.harness import keras_weights
from trainmark.harness.distributed import Dist
from trainmark.reference import fashion_mnist
from trainmark.reference.fashion_mnist_classifier import warmup_hold_decay_to_zero
from trainmark.reference.keras_twins.fashion_mnist import MODELS


def require_twin(ref) -> None:
    """A UserError naming the benchmarks that have a Keras twin, unless ``ref`` is one of them."""
    if ref.name not in MODELS:
        raise UserError(f"--framework tensorflow: {ref.name} has no TensorFlow reference yet "
                        f"(available: {', '.join(sorted(MODELS))})")


def keras_model(ref):
    """The Keras twin of a reference."""
    require_twin(ref)
    return MODELS[ref.name](ref.num_classes)


def learning_rates(hp: dict[str, Any], steps_per_epoch: int) -> np.ndarray:
    """The rate of every step, from the PyTorch reference's own schedule function (0 after the end)."""
    last = int(hp["opt_learning_rate_decay_epochs"] * steps_per_epoch) + 1
    return np.array([hp["opt_base_learning_rate"] * warmup_hold_decay_to_zero(
        step, steps_per_epoch, hp["opt_learning_rate_warmup_epochs"],
        hp.get("opt_learning_rate_decay_start_epochs", 0), hp["opt_learning_rate_decay_epochs"])
        for step in range(last)], dtype=np.float32)


class TableSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A Keras learning-rate schedule that looks the step up in a precomputed table."""

    def __init__(self, table: np.ndarray):
        self.table = tf.constant(table)

    def __call__(self, step):
        return tf.gather(self.table, tf.minimum(tf.cast(step, tf.int32), tf.shape(self.table)[0] - 1))

    def get_config(self):
        return {"table": self.table.numpy().tolist()}


class TensorFlowTrainer:
    """A reference's Keras twin: built, stepped by one ``tf.function``, evaluated, saved."""

    def __init__(self, ref, build_model: Callable[[], Any], hp: dict[str, Any], data, seed: int,
                 device: str, precision: str, dist: Dist = Dist(), *, count_flops: bool = True,
                 schedule_steps: int = 100):
        import torch

        if dist.world > 1:
            raise UserError("--framework tensorflow runs in one process for now (no torchrun)")
        if precision != "fp32":
            raise UserError("--framework tensorflow: only --precision fp32 for now")
        self.ref, self.hp, self.data, self.dist = ref, hp, data, dist
        keras.utils.set_random_seed(seed)
        self.generator = torch.Generator().manual_seed(seed)  # the reference's batch order and flips
        self.model = build_model()
        self.precision_used = "fp32"
        self.local_batch = self.samples_per_step = hp["global_batch_size"]
        self.steps_per_epoch = ref.train_samples(data) // self.local_batch if data is not None else schedule_steps
        self.optimizer = keras.optimizers.SGD(TableSchedule(learning_rates(hp, self.steps_per_epoch)),
                                              momentum=hp["opt_momentum"], nesterov=hp["opt_nesterov"])
        self.optimizer.build(self.model.trainable_variables)
        self.kernels = [w for w in self.model.trainable_variables if w.path.endswith("/kernel")]
        self._loss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=hp["label_smoothing"])
        self._step = tf.function(self._train_step, jit_compile=False, reduce_retracing=True)
        self._eval = tf.function(self._eval_step, jit_compile=False, reduce_retracing=True)
        self.steps = 0
        self.loss = tf.constant(0.0)
        self._nonfinite = False
        self.structure = keras_weights.describe(self.model)
        self.flops_per_step = self._count_flops() if count_flops else None

    @staticmethod
    def _images(images):
        """uint8 (N, 28, 28) -> normalized float32 NHWC, as the reference's ``to_device`` does in NCHW."""
        x = tf.cast(images, tf.float32)[..., None] / 255.0
        return (x - fashion_mnist.MEAN) / fashion_mnist.STD

    def _train_step(self, images, labels):
        x = self._images(images)
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            loss = self._loss(tf.one_hot(labels, self.ref.num_classes), logits)
            l2 = tf.add_n([tf.reduce_sum(tf.square(k)) for k in self.kernels])
            total = loss + 0.5 * self.hp["opt_weight_decay"] * l2
        grads = tape.gradient(total, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def _eval_step(self, images, labels):
        logits = self.model(self._images(images), training=False)
        return tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int64), labels), tf.int64))

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        """The reference's batches of one epoch as TensorFlow tensors (the conversion is timed)."""
        self._nonfinite = False
        for images, labels in self.ref.train_batches(self.data, epoch, self.local_batch, self.generator):
            yield tf.convert_to_tensor(images.numpy()), tf.convert_to_tensor(labels.numpy())

    def step(self, batch: Any, sync: bool = True) -> None:
        self.loss = self._step(*batch)
        self.steps += 1

    def loss_value(self) -> float:
        value = float(self.loss.numpy())
        self._nonfinite |= not np.isfinite(value)
        return value

    def diverged(self) -> bool:
        """Whether the last step's loss is non-finite (checked when asked: one sync)."""
        self.loss_value()
        return self._nonfinite

    def evaluate(self) -> float:
        correct = count = 0
        size = self.ref.eval_batch_size
        for start in range(0, len(self.data.eval_labels), size):
            labels = self.data.eval_labels[start:start + size].numpy()
            images = self.data.eval_images[start:start + size].numpy()
            correct += int(self._eval(tf.convert_to_tensor(images), tf.convert_to_tensor(labels)))
            count += len(labels)
        return correct / count if count else float("nan")

    def save_weights(self, path: Path) -> None:
        """The trained weights in the PyTorch reference's names and layouts, as safetensors (atomic)."""
        from safetensors.numpy import save_file

        from trainmark.files import write_atomic

        arrays, _ = keras_weights.tensors(self.model, self.steps)
        write_atomic(Path(path), lambda p: save_file(arrays, str(p)))

    def _count_flops(self) -> int | None:
        """FLOPs of one training step at the global batch (``step_flops``)."""
        return step_flops(self._train_step, self.local_batch) or None


def step_flops(train_step, batch: int) -> int:
    """FLOPs of one call of ``train_step`` on a uint8 (batch, 28, 28) batch: the convolutions and matmuls
    of its traced graph, forward and gradients, counted as harness/flops.py counts PyTorch's (2 per
    multiply-add; a gradient kernel costs what its forward does). TensorFlow's own profiler counts the
    gradient kernels over the padded input and elementwise ops besides, so it is not used."""
    fn = tf.function(train_step).get_concrete_function(
        tf.TensorSpec((batch, 28, 28), tf.uint8), tf.TensorSpec((batch,), tf.int64))
    return sum(_op_flops(op) for op in fn.graph.get_operations())


def _op_flops(op) -> int:
    shape = lambda t: [int(d) for d in t.shape]  # noqa: E731
    if op.type in ("Conv2D", "Conv2DBackpropInput"):  # 2 x output (or output-gradient) x kh x kw x in
        kh, kw, cin, _ = shape(op.inputs[1])
        return 2 * int(np.prod(shape(op.outputs[0] if op.type == "Conv2D" else op.inputs[2]))) * kh * kw * cin
    if op.type == "Conv2DBackpropFilter":
        kh, kw, cin, _ = shape(op.outputs[0])
        return 2 * int(np.prod(shape(op.inputs[2]))) * kh * kw * cin
    if op.type == "MatMul":
        a, b = shape(op.inputs[0]), shape(op.inputs[1])
        m, k = a[::-1] if op.get_attr("transpose_a") else a
        n = b[0] if op.get_attr("transpose_b") else b[1]
        return 2 * m * n * k
    return 0


class TensorFlowBackend:
    name = "tensorflow"

    def __init__(self, device, precision: str, dist: Dist = Dist()):
        if getattr(device, "type", str(device)) != "cpu":
            raise UserError("--framework tensorflow: only --device cpu for now")
        self.device, self.precision, self.dist = device, precision, dist

    def load_data(self, ref, rules, data_dir: Path):
        """Fashion-MNIST through tensorflow-datasets (reference/tfds_builders/fashion_mnist.py): the same
        arrays, in the same order, as the PyTorch reference's loader returns."""
        require_twin(ref)
        from trainmark.reference.tfds_builders import fashion_mnist as tfds_fashion_mnist

        return tfds_fashion_mnist.load(Path(data_dir), rules.dataset["files"])

    def trainer(self, ref, build_model: Callable[[], Any], hp: dict[str, Any], data, seed: int,
                **options) -> TensorFlowTrainer:
        return TensorFlowTrainer(ref, lambda: keras_model(ref), hp, data, seed, self.device, self.precision,
                                 self.dist, **options)

    def precision_label(self) -> str:
        return "fp32"
