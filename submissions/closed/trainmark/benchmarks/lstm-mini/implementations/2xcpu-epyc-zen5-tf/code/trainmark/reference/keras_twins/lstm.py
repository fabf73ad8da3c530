"""Keras twin of the word-level LSTM language models (reference/lstm_model.py), for ``--framework tensorflow``.

The same model as ``LSTMLanguageModel``: dropout on the input, one Keras ``LSTM`` per layer of ``nn.LSTM``
(PyTorch's gate order and formula; between two layers nn.LSTM's dropout), dropout on the output, and the
adaptive softmax of ``nn.AdaptiveLogSoftmaxWithLoss`` whose weights are also the input embedding (the head's
word rows, then each cluster's rows projected up). Keras ships no adaptive softmax, so its log-likelihood is
written here as PyTorch computes it: the head's log-softmax over the shortlist and one entry per cluster,
plus, for each target in a cluster, the cluster's own log-softmax, computed for the rows whose target falls
in that cluster only (the FLOPs of a step depend on the batch's words, as in PyTorch). Layers are named
after the PyTorch modules (``lstm``, ``softmax.head``, ``softmax.tail.0.0``; ``lstm_l1`` is nn.LSTM's second
layer, its ``_l1`` tensors), so reference/keras_twins/weights.py maps the twin onto the reference's tensors.
lstm-mini has one layer, the full-size lstm (WikiText-103, read through tensorflow-datasets) two.

One difference in parameters, stated: Keras' LSTM has one bias per gate where ``nn.LSTM`` has two
(``bias_ih`` and ``bias_hh``, which only ever act as their sum). The twin starts from their sum and saves
it as ``bias_ih_lK`` with a zero ``bias_hh_lK``: the same function, the same tensors for the checker. Under
Adam each of PyTorch's two biases moves by about the learning rate per step, so their sum moves up to
twice as far as the twin's one bias does.

The recipe is the reference's (lstm.py, recipe.py): Adam at the reference's own rates (the warm-up, then
the peak), the global gradient norm clipped, the mean NLL per target token. The initial weights are drawn
by the PyTorch reference itself under the trial's seed; evaluation is the reference's own (64 streams,
the state carried from chunk to chunk), with this twin standing in for the PyTorch model.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainmark.reference import text_corpus
from trainmark.reference.tf_import import tf  # noqa: E402  (after torch: TensorFlow safely beside PyTorch)

# isort: split

import keras  # noqa: E402
from keras import layers  # noqa: E402

from trainmark.reference.keras_twins import weights as keras_weights  # noqa: E402
from trainmark.reference.keras_twins.recipe import as_tf, clipped_adam, with_l2  # noqa: E402


class LanguageModel(keras.Model):
    """``LSTMLanguageModel`` in Keras: ``nll(tokens, targets, state)``; the state is one (h, c) per layer."""

    def __init__(self, vocab_size: int, hidden: int, layer_count: int, cutoffs: list[int], div_value: float,
                 dropout: float, unroll: bool = False):
        super().__init__(name="lstm_twin")
        self.hidden, self.vocab_size = hidden, vocab_size
        self.bounds = [*cutoffs, vocab_size]  # cluster i holds the words bounds[i] .. bounds[i+1] - 1
        self.stack = [f"lstm_l{k}" if k else "lstm" for k in range(layer_count)]  # nn.LSTM's layers, in order
        named: list[layers.Layer] = [
            *(layers.LSTM(hidden, return_sequences=True, return_state=True, unroll=unroll, name=name)
              for name in self.stack),
            layers.Dense(cutoffs[0] + len(cutoffs), use_bias=False, name="softmax.head")]
        for i, (low, high) in enumerate(zip(self.bounds, self.bounds[1:])):
            named += [layers.Dense(int(hidden // div_value ** (i + 1)), use_bias=False, name=f"softmax.tail.{i}.0"),
                      layers.Dense(high - low, use_bias=False, name=f"softmax.tail.{i}.1")]
        self.named = named
        self.drop = layers.Dropout(dropout)
        self.rows: tuple[int, ...] | None = None  # rows per cluster, fixed only to count a step's FLOPs

    def build(self, input_shape=None):
        """The softmax's layers first: the input embedding reads their kernels before they are called."""
        self.layer("softmax.head").build((None, self.hidden))
        for _, _, _, down, words in self._clusters():
            down.build((None, self.hidden))
            words.build((None, down.units))
        self.built = True

    def layer(self, name: str) -> layers.Layer:
        return next(layer for layer in self.named if layer.name == name)

    def _clusters(self):
        for i, (low, high) in enumerate(zip(self.bounds, self.bounds[1:])):
            yield i, low, high, self.layer(f"softmax.tail.{i}.0"), self.layer(f"softmax.tail.{i}.1")

    def embedding_matrix(self):
        """[vocab, hidden], as ``LSTMLanguageModel.embedding_matrix``: the head's word rows, then each
        cluster's rows projected up (Keras' kernels are PyTorch's weights transposed)."""
        parts = [self.layer("softmax.head").kernel[:, :self.bounds[0]]]
        parts += [tf.matmul(down.kernel, words.kernel) for _, _, _, down, words in self._clusters()]
        return tf.transpose(tf.concat(parts, axis=1))

    def log_prob(self, h, targets):
        """The log-probability of every target ([N]) given the hidden states ([N, hidden])."""
        head = tf.nn.log_softmax(self.layer("softmax.head")(h), axis=-1)
        index = targets
        for i, low, high, _, _ in self._clusters():  # a rare word's head entry is its cluster's
            index = tf.where((targets >= low) & (targets < high), tf.cast(self.bounds[0] + i, targets.dtype), index)
        out = tf.gather(head, index, batch_dims=1)
        for i, low, high, down, words in self._clusters():
            rows = tf.where((targets >= low) & (targets < high))[:, 0]
            if self.rows is not None:
                rows = tf.ensure_shape(rows, [self.rows[i]])
            cluster = tf.nn.log_softmax(words(down(tf.gather(h, rows))), axis=-1)
            local = tf.gather(cluster, tf.gather(targets, rows) - low, batch_dims=1)
            out = tf.tensor_scatter_nd_add(out, rows[:, None], local)
        return out

    def nll(self, tokens, targets, state=None, training=False):
        """(the NLL of every target token, [B x T], the final state: one (h, c) per LSTM layer)."""
        h = self.drop(tf.gather(self.embedding_matrix(), tokens), training=training)
        last = []
        for k, name in enumerate(self.stack):
            if k:  # nn.LSTM's dropout between layers (the same rate as on its input and output)
                h = self.drop(h, training=training)
            h, last_h, last_c = self.layer(name)(h, initial_state=state[k] if state else None, training=training)
            last.append((last_h, last_c))
        h = tf.reshape(self.drop(h, training=training), [-1, self.hidden])
        return -self.log_prob(h, tf.reshape(targets, [-1])), tuple(last)

    def call(self, inputs, training=False):
        """The NLL of every target token, shaped as the targets ([B, T]): a plain Keras model's output."""
        tokens, targets = inputs
        return tf.reshape(self.nll(tokens, targets, training=training)[0], tf.shape(targets))


def language_model(ref, unroll: bool = False) -> LanguageModel:
    """The twin of ``ref.build_model()``, built (its weights exist) with Keras' initialisation."""
    model = LanguageModel(ref.vocab_size, ref.hidden, ref.layers, ref.cutoffs, ref.div_value, ref.dropout, unroll)
    model((tf.constant([[1, 2]], tf.int64), tf.constant([[2, ref.vocab_size - 1]], tf.int64)))
    return model



def load_data(ref, rules, data_dir: Path) -> text_corpus.Corpus:
    """The corpus through tensorflow-datasets, with the PyTorch loader's vocabulary and token streams: the
    King James Bible (lstm-mini) from its prepared files, WikiText-103 (lstm) from Salesforce's zip."""
    if ref.name == "lstm":
        from trainmark.reference.tfds_builders import wikitext103

        return wikitext103.load(Path(data_dir), rules.dataset["archives"], ref.vocab_size)
    from trainmark.reference.tfds_builders import kjv as tfds_kjv

    return tfds_kjv.load(Path(data_dir), rules.dataset["files"], ref.vocab_size)


class LSTMTwin:
    """The LSTM language model under Keras, with the reference's recipe."""

    def __init__(self, ref, hp: dict[str, Any], steps_per_epoch: int, seed: int, unroll: bool = False):
        self.ref, self.hp = ref, hp
        self.model = language_model(ref, unroll)
        keras_weights.load(self.model, {k: v.numpy() for k, v in ref.build_model().state_dict().items()})
        self.optimizer, self.clip_norm = clipped_adam(ref, hp, steps_per_epoch)
        self._nll = tf.function(lambda x, y, state: self.model.nll(x, y, state), reduce_retracing=True)
        self._args = (ref, hp, steps_per_epoch, seed)

    @staticmethod
    def build_model(ref) -> LanguageModel:
        return language_model(ref)

    def unrolled(self, example: tuple) -> "LSTMTwin":
        """The same twin with its LSTM unrolled and each cluster's rows fixed to ``example``'s (a batch as
        ``inputs`` returns it): a graph whose every matmul has a known shape and can be counted."""
        twin = LSTMTwin(*self._args, unroll=True)
        targets = np.asarray(example[1]).reshape(-1)
        bounds = twin.model.bounds
        twin.model.rows = tuple(int(((targets >= lo) & (targets < hi)).sum()) for lo, hi in zip(bounds, bounds[1:]))
        return twin

    inputs = staticmethod(as_tf)  # (token windows, next-token windows)

    def loss(self, tokens, targets, training: bool = True):
        """(the mean NLL per target token, the objective: the same plus Adam's L2 weight decay, if any)."""
        loss = tf.reduce_mean(self.model.nll(tokens, targets, training=training)[0])
        return with_l2(loss, self.model.trainable_variables, self.hp["opt_weight_decay"])

    def __call__(self, tokens: torch.Tensor, targets: torch.Tensor, state=None):
        """For the reference's own ``evaluate``: (NLL per token as a PyTorch tensor, the state to carry)."""
        if state is None:
            zeros = tf.zeros((tokens.shape[0], self.model.hidden))
            state = tuple((zeros, zeros) for _ in self.model.stack)
        nll, state = self._nll(*as_tf(tokens, targets), state)
        return torch.from_numpy(nll.numpy()), state

