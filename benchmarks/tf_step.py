"""Training samples/s of the harness's TensorFlow step beside a plain Keras ``model.fit``, side by side.

    python benchmarks/tf_step.py [--models resnet-mini vgg-mini] [--steps 20] [--repeats 4]

"ours" is the step ``trainmark run --framework tensorflow`` times: ``TensorFlowTrainer.step``
(harness/frameworks/tensorflow_backend.py), one ``tf.function`` without XLA that normalises the uint8 batch
to NHWC float, runs the Keras twin forward, the label-smoothed cross-entropy plus the kernels' L2
term, the gradients and SGD with Nesterov momentum on the reference's per-step learning-rate table.
"plain" is the textbook Keras loop on the same model, initialisation and batch: ``model.compile``
(SGD with Nesterov momentum, ``CategoricalCrossentropy(from_logits=True, label_smoothing)``, the
kernels' L2 as ``kernel_regularizer``, ``jit_compile=False``: XLA is off on both sides) and
``model.fit`` over the same batches, already normalised (ours converts them inside its step).
For lstm-mini, ours runs the LSTM twin's adaptive-softmax NLL, the global gradient norm clipped and
Adam on the reference's rate table; plain is ``model.compile`` (Adam with ``global_clipnorm``, the mean
of the model's per-token NLL as the loss) and ``model.fit`` over the same 64-token windows, drawn from a
Zipf law as the reference's synthetic batch is.
Rounds alternate in ABBA order (plain, ours, ours, plain, ...); medians are compared. The issue's
bound: ours at most 1.05x plain's time per step (ratio of samples/s >= 0.95).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

from trainmark.reference.tf_import import tf  # first: TensorFlow beside PyTorch

# isort: split
import keras  # noqa: E402

from trainmark.harness.frameworks import tensorflow_backend as tfb  # noqa: E402
from trainmark.reference import fashion_mnist, registry  # noqa: E402
from trainmark.rules import get_rules  # noqa: E402

BOUND = 0.95  # samples/s ratio: ours may take at most 1.05x plain's time per step


def _batches(name: str, steps: int, batch: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``steps`` batches as the reference's ``train_batches`` yields them (images and labels, or token
    windows and their next tokens, word ids from a Zipf law as ``synthetic_batch`` draws them)."""
    rng = np.random.default_rng(seed)
    if name == "lstm-mini":
        ref = registry.for_rules(get_rules(name))
        p = 1.0 / np.arange(1, ref.vocab_size + 1)
        tokens = rng.choice(ref.vocab_size, (steps, batch, ref.bptt + 1), p=p / p.sum())
        return [(w[:, :-1], w[:, 1:]) for w in tokens]
    images = rng.integers(0, 256, (steps, batch, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, (steps, batch), dtype=np.int64)
    return list(zip(images, labels))


def _ours(name: str, batches):
    rules = get_rules(name)
    ref, hp = registry.for_rules(rules), rules.defaults()
    trainer = tfb.TensorFlowBackend(torch.device("cpu"), "fp32").trainer(ref, None, hp, None, 0, count_flops=False)
    batches = [tuple(tf.constant(t) for t in batch) for batch in batches]

    def run():
        for batch in batches:
            trainer.step(batch)
        trainer.loss_value()  # one sync, as the harness does every few steps
    return run


def _plain(name: str, batches):
    rules = get_rules(name)
    hp = rules.defaults()
    keras.utils.set_random_seed(0)
    model = tfb.keras_model(registry.for_rules(rules))
    x, y = (np.concatenate(part) for part in zip(*batches))
    if name == "lstm-mini":  # the model's output is the NLL of every token: the loss is its mean
        model.compile(optimizer=keras.optimizers.Adam(hp["opt_base_learning_rate"],
                                                      global_clipnorm=hp["opt_gradient_clip_norm"]),
                      loss=lambda _targets, nll: tf.reduce_mean(nll), jit_compile=False)
        data = tf.data.Dataset.from_tensor_slices(((x, y), y))
    else:
        for layer in model.layers:  # the kernels' L2 (Keras reads each variable's regularizer)
            if getattr(layer, "kernel", None) is not None:
                layer.kernel.regularizer = keras.regularizers.L2(hp["opt_weight_decay"] / 2)
        model.compile(optimizer=keras.optimizers.SGD(hp["opt_base_learning_rate"], momentum=hp["opt_momentum"],
                                                     nesterov=hp["opt_nesterov"]),
                      loss=keras.losses.CategoricalCrossentropy(from_logits=True,
                                                                label_smoothing=hp["label_smoothing"]),
                      jit_compile=False)
        x = (x[..., None].astype(np.float32) / 255 - fashion_mnist.MEAN) / fashion_mnist.STD
        data = tf.data.Dataset.from_tensor_slices((x, np.eye(10, dtype=np.float32)[y]))
    data = data.batch(len(batches[0][0])).cache()
    return lambda: model.fit(data, epochs=1, verbose=0, shuffle=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["resnet-mini", "lstm-mini", "vgg-mini"])
    p.add_argument("--steps", type=int, default=20, help="steps per timed round")
    p.add_argument("--repeats", type=int, default=4, help="ABBA rounds")
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"tensorflow {tf.__version__}, keras {keras.__version__}, XLA off")
    for name in args.models:
        batch = get_rules(name).defaults()["global_batch_size"]
        batches = _batches(name, args.steps, batch)
        runs = {"ours": _ours(name, batches), "plain": _plain(name, batches)}
        for fn in runs.values():  # trace and warm up
            fn()
        times = {"ours": [], "plain": []}
        for r in range(args.repeats):
            for side in (("plain", "ours", "ours", "plain") if r % 2 == 0 else ("ours", "plain", "plain", "ours")):
                start = time.perf_counter()
                runs[side]()
                times[side].append(time.perf_counter() - start)
        rate = {k: args.steps * batch / statistics.median(v) for k, v in times.items()}
        ratio = rate["ours"] / rate["plain"]
        print(f"{name}: ours {rate['ours']:.0f} samples/s, plain model.fit {rate['plain']:.0f} samples/s, "
              f"ratio {ratio:.3f} ({'ok' if ratio >= BOUND else 'SLOWER than the bound'} {BOUND})")


if __name__ == "__main__":
    main()
