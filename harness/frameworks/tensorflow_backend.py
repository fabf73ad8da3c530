"""TensorFlow behind the framework seam (harness/frameworks/backend.py): a reference's Keras twin, one compiled
training step, the reference's own evaluation, and weights saved as safetensors in the PyTorch layout.

A twin (reference/keras_twins/) is what this trainer steps; it has
- ``model``: a Keras model whose layers are named after the PyTorch reference's modules;
- ``optimizer``: the reference's optimizer at the reference's own rates (``recipe.rate_table``);
- ``clip_norm``: the global gradient norm clipped to before every step (None: no clipping);
- ``inputs(*batch)``: a batch of the reference's ``train_batches`` as TensorFlow tensors;
- ``loss(*inputs, training)``: (the loss logged, the objective differentiated);
- whatever the reference's own ``evaluate`` calls on a PyTorch model (``model(images)``,
  ``model.greedy(src, max_len)``, ``model(tokens, targets, state)``), taking and returning PyTorch
  tensors, so that evaluation is the reference's code, not a copy;
- optionally ``unrolled(example)``: a twin whose graph the FLOP count can read (recurrent layers
  unrolled, data-dependent shapes fixed to ``example``'s).
- optionally ``length_units(batch)`` and ``cut(batch, units)``: the synthetic batch's length on a lattice on
  which the step's FLOPs are affine, and the batch cut to fewer units (an unrolled recurrent twin is counted
  at two short lengths and extrapolated).

The data path is the reference's own: the same batches, in the same order for a seed, with the same
augmentation as a PyTorch trial, read through tensorflow-datasets (reference/tfds_builders/), so that a
comparison of the two frameworks compares the frameworks.

Several ranks (torchrun, as for PyTorch): each rank steps its share of the global batch (the reference's
``train_batches`` for its rank), and the gradients are averaged over the ranks through torch.distributed
(gloo) before the global norm is clipped and the optimizer applied, as DistributedDataParallel does; the
gradients cross from TensorFlow to torch.distributed as one flat numpy vector per step. Evaluation sums the
reference's per-rank counts. One process keeps the single fused step.

Where it runs (harness/frameworks/tensorflow_devices.py): the CPU, one GPU, every GPU of the machine in one
process (``tf.distribute.MirroredStrategy``: each replica computes its share of the batch's gradients, their
mean is taken, clipped and applied once, as several ranks do), or a TPU (``TPUStrategy``). ``--precision
amp`` is Keras mixed precision (``mixed_bfloat16``) on GPUs and TPUs; the CPU refuses it. The benchmarks
are those whose rule files name a twin (``implementations: {tensorflow: MODULE:CLASS}``).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Iterator

from trainmark.reference.tf_import import tf  # first: it imports TensorFlow safely beside PyTorch

# isort: split
import keras
import numpy as np

from trainmark.harness.frameworks import pytorch_runtime, tensorflow_devices, tensorflow_open
from trainmark.harness.frameworks.distributed import Dist
from trainmark.harness.open_recipe import OpenRecipe
from trainmark.reference.keras_twins import weights as keras_weights


def twin_class(ref):
    """A reference's Keras twin, as the benchmark's rule file names it; a UserError names the benchmarks
    that have one."""
    from trainmark.harness.frameworks.backend import implements
    from trainmark.reference import registry

    implements("tensorflow", ref.rules)
    return registry.twin(ref, "tensorflow")


def twin_module(ref):
    """The module of a reference's Keras twin (its ``load_data``, and ``prepare_data`` where it has one)."""
    return importlib.import_module(twin_class(ref).__module__)


def keras_model(ref):
    """The Keras twin's model of a reference, freshly initialised."""
    return twin_class(ref).build_model(ref)


class TensorFlowTrainer:
    """A reference's Keras twin: built, stepped by one ``tf.function``, evaluated, saved."""

    def __init__(self, ref, build_model: Callable[[], Any], hp: dict[str, Any], data, seed: int,
                 device: str, precision: str, dist: Dist = Dist(), *, count_flops: bool = True,
                 schedule_steps: int = 100, placement: tensorflow_devices.Placement | None = None,
                 recipe: OpenRecipe | None = None):
        self.placement = placement or tensorflow_devices.for_device(device)
        self.precision_used = _precision(precision, self.placement)
        self.ref, self.hp, self.data, self.dist = ref, hp, data, dist
        keras.utils.set_random_seed(seed)
        # twins initialised from the PyTorch reference draw what a PyTorch trial draws; the generator is the
        # reference's batch order and augmentation (its data path is the PyTorch reference's own)
        self.generator = pytorch_runtime.seed_reference(seed)
        # replicas of a strategy are fed as ranks are: each its share (order[r::n]) from its own generator
        self.replicas = self.placement.replicas
        self._generators = [pytorch_runtime.generator(seed) for _ in range(self.replicas)]
        shares = dist.world * self.replicas
        self.local_batch = hp["global_batch_size"] // shares
        self.samples_per_step = self.local_batch * shares
        self.steps_per_epoch = ((ref.train_samples(data) // shares) // self.local_batch
                                if data is not None else schedule_steps)
        with self.placement.scope():  # variables on the device, or mirrored on every replica
            self.twin = twin_class(ref)(ref, hp, self.steps_per_epoch, seed)
            self.model = self.twin.model
            self.twin.optimizer = tensorflow_open.rebuild(recipe, self.twin.optimizer)  # open: --optimizer
            self.twin.optimizer.build(self.model.trainable_variables)
        compiled = lambda f: tf.function(f, jit_compile=False, reduce_retracing=True, autograph=False)  # noqa: E731
        self._step = compiled(training_step(self.twin))
        self._gradients, self._apply = compiled(gradients(self.twin)), compiled(apply_gradients(self.twin))
        self._splits = None  # several ranks: the gradients' offsets in the all-reduced vector
        self.steps = 0
        self.loss = tf.constant(0.0)
        self._nonfinite = False
        self.structure = keras_weights.describe(self.model)
        self.flops_per_step = self._count_flops() if count_flops else None
        self.open_settings = tensorflow_open.record(recipe, self.twin.optimizer)

    def epoch_batches(self, epoch: int) -> Iterator[Any]:
        """The reference's batches of one epoch as TensorFlow tensors (the conversion is timed). Several
        replicas: a list of their batches, each the share a rank of that many would read."""
        self._nonfinite = False
        if self.replicas > 1:
            n = self.replicas
            shares = [self.ref.train_batches(self.data, epoch, self.local_batch, g, r, n)
                      for r, g in enumerate(self._generators)]
            yield from ([self.prepare(b) for b in group] for group in zip(*shares))
            return
        for batch in self.ref.train_batches(self.data, epoch, self.local_batch, self.generator,
                                            self.dist.rank, self.dist.world):
            yield self.prepare(batch)

    def prepare(self, batch: Any) -> tuple:
        """A batch as ``train_batches`` yields it, as ``step`` takes it: TensorFlow tensors."""
        return self.twin.inputs(*batch)

    def step(self, batch: Any, sync: bool = True) -> None:
        """One training step. With several ranks: this rank's gradients, averaged over the ranks (skipped
        with ``sync=False``, as ``trainmark scale`` times the compute alone), then clipped and applied."""
        if self.placement.strategy is not None:
            self.loss = self._replicated_step(batch)
        elif self.dist.world == 1:
            self.loss = self._step(*batch)
        else:
            self.loss, grads = self._gradients(*batch)
            self._apply(self._averaged(grads) if sync else grads)
        self.steps += 1

    def _averaged(self, grads: list) -> list:
        """The gradients' mean over the ranks: one flat numpy vector through the process group's all-reduce
        (``Dist.mean``; an embedding's sparse gradient made dense, as DistributedDataParallel all-reduces it)."""
        arrays = [tf.convert_to_tensor(g).numpy() for g in grads]
        if self._splits is None:  # where each variable's gradient ends in the flat vector: fixed per model
            self._splits = np.cumsum([a.size for a in arrays])[:-1]
        flat = self.dist.mean(np.concatenate([a.reshape(-1) for a in arrays]))
        return [tf.constant(part.reshape(a.shape)) for part, a in zip(np.split(flat, self._splits), arrays)]

    def _replicated_step(self, batches: list):
        """One step over the strategy's replicas: each its batch's gradients, their mean (as several ranks
        take it), clipped and applied once to the mirrored variables."""
        strategy = self.placement.strategy
        args = tuple(strategy.experimental_distribute_values_from_function(
            lambda ctx, i=i: batches[ctx.replica_id_in_sync_group][i]) for i in range(len(batches[0])))
        loss, grads = strategy.run(self._gradients, args=args)
        mean = lambda v: strategy.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None)  # noqa: E731
        self._apply([mean(g) for g in grads])
        return mean(loss)

    def loss_value(self) -> float:
        value = float(self.loss.numpy())
        self._nonfinite |= not np.isfinite(value)
        return value

    def diverged(self) -> bool:
        """Whether the last step's loss is non-finite on any rank (checked when asked: one sync)."""
        self.loss_value()
        return self.dist.any(self._nonfinite, "cpu")

    def evaluate(self) -> float:
        """The reference's own evaluation, with the twin standing in for the PyTorch model, its counts summed
        over the ranks. The reference's metric code is PyTorch's (the twin takes and returns PyTorch
        tensors there): the released reference code computes a TensorFlow trial's metric too, so that
        both frameworks are scored by the same code; a TensorFlow copy of it could differ in the last bit."""
        sums = self.ref.evaluate(self.twin, self.data, "cpu", self.dist.rank, self.dist.world)
        return self.ref.finalize_metric(*self.dist.sum(list(sums), "cpu"))

    def save_weights(self, path: Path) -> None:
        """The trained weights in the PyTorch reference's names and layouts, as safetensors (atomic)."""
        from safetensors.numpy import save_file

        from trainmark.files import write_atomic

        arrays, _ = keras_weights.tensors(self.model, self.steps)
        write_atomic(Path(path), lambda p: save_file(arrays, str(p)))

    def _count_flops(self) -> int | None:
        """FLOPs of one training step at the global batch, on the reference's synthetic batch (a twin with
        recurrent layers is counted unrolled, a loop's body being a graph of its own; a twin whose work
        depends on the data, the adaptive softmax's, is counted with the example batch's shapes fixed)."""
        batch = self.hp["global_batch_size"]  # the whole step's work, over every rank (as PyTorch's count)
        key = (self.ref.name, batch, type(self.twin).__name__)
        if key not in _FLOPS:  # tracing an unrolled recurrent twin takes seconds to a minute: once per process
            _FLOPS[key] = self._traced_flops(self.ref.synthetic_batch(batch)) or None
        return _FLOPS[key]

    def _traced_flops(self, batch: tuple) -> int:
        """FLOPs of one step on ``batch``. A twin whose step is affine in its batch's length (``length_units``)
        is traced on cuts of SHORT and 2 x SHORT units, and the count extrapolated exactly to the batch's own."""
        units = self.twin.length_units(batch) if hasattr(self.twin, "length_units") else None
        if units is None or units <= 2 * SHORT:
            example = self.prepare(batch)
            twin = self.twin.unrolled(example) if hasattr(self.twin, "unrolled") else self.twin
            return step_flops(training_step(twin), example)
        examples = [self.prepare(self.twin.cut(batch, n)) for n in (SHORT, 2 * SHORT)]
        twin = self.twin.unrolled(examples[0])  # built once: a twin with length units fixes no shape from it
        short, longer = (step_flops(training_step(twin), example) for example in examples)
        return short + (longer - short) // SHORT * (units - SHORT)


SHORT = 2  # units of a recurrent twin's length on which its step is traced (above it, the count is extrapolated)


_FLOPS: dict[tuple, int | None] = {}  # (benchmark, batch, twin) -> FLOPs per step, counted in this process


def _precision(precision: str, placement: tensorflow_devices.Placement) -> str:
    """The label a run logs; amp sets Keras's mixed precision policy (GPUs and TPUs; a UserError on the CPU)."""
    if precision == "fp32":
        keras.mixed_precision.set_global_policy("float32")
        return "fp32"
    policy = tensorflow_devices.mixed_precision_policy(placement)
    keras.mixed_precision.set_global_policy(policy)
    return "amp-bf16" if policy == "mixed_bfloat16" else "amp-fp16"


def training_step(twin) -> Callable:
    """One training step of a twin: loss and gradients, the global norm clipped, the optimizer applied.
    Traced without AutoGraph: its Python control flow is fixed when traced (AutoGraph, trying to convert
    this closure, only warns that it cannot)."""
    grads_of, apply = gradients(twin), apply_gradients(twin)

    def step(*inputs):
        loss, grads = grads_of(*inputs)
        apply(grads)
        return loss
    return step


def gradients(twin) -> Callable:
    """(the loss logged, the gradients of the objective) on one batch: a step's first half."""
    def compute(*inputs):
        with tf.GradientTape() as tape:
            loss, objective = twin.loss(*inputs, training=True)
        return loss, tape.gradient(objective, twin.model.trainable_variables)
    return compute


def apply_gradients(twin) -> Callable:
    """The global norm clipped, the optimizer applied: a step's second half (after the ranks' mean)."""
    def apply(grads):
        if twin.clip_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, twin.clip_norm)
        twin.optimizer.apply_gradients(zip(grads, twin.model.trainable_variables))
    return apply


def step_flops(train_step, example: tuple) -> int:
    """FLOPs of one call of ``train_step`` on tensors shaped as ``example``: the convolutions and matmuls
    (einsums included) of its traced graph that run, forward and gradients, counted as harness/measure/flops.py
    counts PyTorch's (2 per multiply-add; a gradient kernel costs what its forward does). Ops whose
    results nothing uses (the gradient of the input batch) are pruned when the graph runs and are not
    counted. TensorFlow's own profiler counts the gradient kernels over the padded input and elementwise
    ops besides, so it is not used. A recurrent layer's loop body is a graph of its own: trace an
    unrolled twin instead."""
    specs = [tf.TensorSpec(t.shape, t.dtype) for t in example]
    graph = tf.function(train_step, autograph=False).get_concrete_function(*specs).graph
    return sum(_op_flops(op) for op in _live_ops(graph))


def _live_ops(graph) -> list:
    """The ops of ``graph`` that its outputs or its side effects (stateful ops: variable updates) need."""
    todo = [t.op for t in graph.outputs] + list(graph.control_outputs)
    todo += [op for op in graph.get_operations() if op._is_stateful]  # noqa: SLF001 - TensorFlow's own flag
    live: set = set()
    while todo:
        op = todo.pop()
        if op in live:
            continue
        live.add(op)
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
    return [op for op in graph.get_operations() if op in live]


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
    if op.type in ("BatchMatMulV2", "BatchMatMulV3"):
        a, b = shape(op.inputs[0]), shape(op.inputs[1])
        m, k = a[-1:-3:-1] if op.get_attr("adj_x") else a[-2:]
        n = b[-2] if op.get_attr("adj_y") else b[-1]
        return 2 * int(np.prod(shape(op.outputs[0])[:-2])) * m * n * k
    if op.type == "Einsum" and len(op.inputs) == 2:  # 2 x the product of every index's size
        labels = op.get_attr("equation").decode().split("->")[0].split(",")
        sizes = {c: d for spec, t in zip(labels, op.inputs) for c, d in zip(spec, shape(t))}
        return 2 * int(np.prod(list(sizes.values())))
    return 0


def resolve_device(spec: str):
    """``--device`` as TensorFlow sees this machine (its own GPUs, a TPU), named as the harness names devices."""
    return pytorch_runtime.as_device(tensorflow_devices.resolve(spec))


class TensorFlowBackend:
    name = "tensorflow"

    def __init__(self, device, precision: str, dist: Dist = Dist()):
        self.placement = tensorflow_devices.for_device(device, dist.local_rank if dist.world > 1 else None)
        tensorflow_devices.check_precision(precision, self.placement)  # before anything is written
        self.device, self.precision, self.dist = device, precision, dist

    def load_data(self, ref, rules, data_dir: Path):
        """The reference's data through tensorflow-datasets (the twin's builder): the same arrays, in the
        same order, as the PyTorch reference's loader returns. With several ranks, each machine's local rank 0
        builds the dataset while the others wait, then they read it (two builders of one dataset collide)."""
        load = lambda: twin_module(ref).load_data(ref, rules, Path(data_dir))  # noqa: E731
        if self.dist.world == 1:
            return load()
        if self.dist.local_rank == 0:
            data = load()
            self.dist.barrier()
            return data
        self.dist.barrier()
        return load()

    def trainer(self, ref, build_model: Callable[[], Any], hp: dict[str, Any], data, seed: int,
                **options) -> TensorFlowTrainer:
        """``build_model`` (a PyTorch builder) is not used: the twin builds its Keras model (``--model``, a
        PyTorch module, is refused before a TensorFlow run starts)."""
        return TensorFlowTrainer(ref, lambda: keras_model(ref), hp, data, seed, self.device, self.precision,
                                 self.dist, placement=self.placement, **options)

    def precision_label(self) -> str:
        if self.precision == "fp32":
            return "fp32"
        return "amp-bf16" if tensorflow_devices.mixed_precision_policy(self.placement) == "mixed_bfloat16" \
            else "amp-fp16"

    def sync(self) -> None:
        """Wait for the device: reading a value back is TensorFlow's barrier (nothing queued on the CPU)."""
        if self.placement.harness_device != "cpu":
            tf.test.experimental.sync_devices()

    def step_flops(self, ref, hp: dict[str, Any], batch_size: int) -> tuple[int | None, str | None]:
        """The trainer's own count at ``batch_size`` (the twin's traced step), and why there is none."""
        trainer = self.trainer(ref, ref.build_model, {**hp, "global_batch_size": batch_size}, None, seed=0,
                               count_flops=True)
        count = trainer.flops_per_step
        return count, None if count else f"{self.name} counted no FLOPs"
