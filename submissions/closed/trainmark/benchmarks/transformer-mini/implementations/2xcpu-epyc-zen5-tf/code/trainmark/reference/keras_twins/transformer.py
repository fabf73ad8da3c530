"""Keras twin of the translation Transformer (reference/transformer_model.py), for ``--framework tensorflow``.

The same model as ``Seq2SeqTransformer`` around ``nn.Transformer``, from Keras layers: one embedding shared by
source, target and the output projection, scaled by sqrt(d_model), the reference's own sinusoidal
positions, ``MultiHeadAttention`` with key-padding and causal masks, pre-norm (or post-norm) layers with
``nn.TransformerEncoderLayer``'s and ``nn.TransformerDecoderLayer``'s dropouts, and greedy decoding as
``Seq2SeqTransformer.greedy`` does it. Every layer that holds weights is named after its PyTorch module
(``transformer.decoder.layers.0.multihead_attn``), so reference/keras_twins/weights.py maps it onto the
reference's tensors; ``nn.MultiheadAttention``'s packed q/k/v projection is Keras' three.

The recipe is the reference's (transformer.py, recipe.py): Adam at the reference's own rates, the global
gradient norm clipped, label-smoothed cross-entropy over the real target tokens. The initial weights are
drawn by the PyTorch reference itself (``build_model`` under the trial's seed, then loaded): the same
initialisation, by construction, as a PyTorch trial of that seed. As in PyTorch, the embedding row of
the padding id gets no gradient from lookups (``padding_idx``) but, tied, does from the output projection.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import torch

from trainmark.errors import UserError
from trainmark.reference import parallel_text
from trainmark.reference.tf_import import tf  # noqa: E402  (after torch: TensorFlow safely beside PyTorch)
from trainmark.reference.transformer_model import BOS, EOS, PAD, Seq2SeqTransformer, sinusoids

# isort: split

import keras  # noqa: E402
from keras import layers  # noqa: E402

from trainmark.reference.keras_twins import weights as keras_weights  # noqa: E402
from trainmark.reference.keras_twins.recipe import as_tf, clipped_adam, smoothed_cross_entropy, with_l2  # noqa: E402


class Transformer(keras.Model):
    """``Seq2SeqTransformer`` in Keras: ``encode``, ``decode`` (logits), ``call`` = both."""

    def __init__(self, vocab_size: int, d_model: int, heads: int, encoder_layers: int, decoder_layers: int,
                 ff_dim: int, dropout: float, norm_first: bool, max_len: int = 1024):
        super().__init__(name="transformer_twin")
        self.d_model, self.norm_first, self.rate = d_model, norm_first, dropout
        self.positions = tf.constant(sinusoids(max_len, d_model).numpy())
        named: list[layers.Layer] = [layers.Embedding(vocab_size, d_model, name="embed")]

        def attention(name):
            named.append(layers.MultiHeadAttention(heads, d_model // heads, dropout=dropout, name=name))

        def block(prefix: str, attentions: tuple[str, ...], norms: int):
            for a in attentions:
                attention(f"{prefix}.{a}")
            named.extend([layers.Dense(ff_dim, activation="relu", name=f"{prefix}.linear1"),
                          layers.Dense(d_model, name=f"{prefix}.linear2")])
            named.extend(layers.LayerNormalization(epsilon=1e-5, name=f"{prefix}.norm{i}")
                         for i in range(1, norms + 1))

        self.encoder_layers = [f"transformer.encoder.layers.{i}" for i in range(encoder_layers)]
        self.decoder_layers = [f"transformer.decoder.layers.{i}" for i in range(decoder_layers)]
        for prefix in self.encoder_layers:
            block(prefix, ("self_attn",), 2)
        for prefix in self.decoder_layers:
            block(prefix, ("self_attn", "multihead_attn"), 3)
        if norm_first:  # pre-norm stacks end with a norm
            named += [layers.LayerNormalization(epsilon=1e-5, name=f"transformer.{stack}.norm")
                      for stack in ("encoder", "decoder")]
        self.named = named
        self.drop = layers.Dropout(dropout)

    def layer(self, name: str) -> layers.Layer:
        return next(layer for layer in self.named if layer.name == name)

    def _embed(self, tokens, training):
        x = self.layer("embed")(tokens)
        x = tf.where((tokens == PAD)[..., None], tf.stop_gradient(x), x)  # padding_idx: no gradient from lookups
        x = x * math.sqrt(self.d_model) + self.positions[:tf.shape(tokens)[1]]
        return self.drop(x, training=training)

    def _sublayer(self, x, norm: str, fn, training):
        """x + dropout(fn(norm(x))) before, norm(x + dropout(fn(x))) after (PyTorch's norm_first)."""
        if self.norm_first:
            return x + self.drop(fn(self.layer(norm)(x)), training=training)
        return self.layer(norm)(x + self.drop(fn(x), training=training))

    def _feed_forward(self, prefix: str, training):
        linear1, linear2 = self.layer(f"{prefix}.linear1"), self.layer(f"{prefix}.linear2")
        return lambda h: linear2(self.drop(linear1(h), training=training))

    def _attend(self, name: str, memory, mask, training):
        return lambda h: self.layer(name)(h, memory if memory is not None else h, attention_mask=mask,
                                          training=training)

    def encode(self, src, training=False):
        """(memory [B, S, d], the source's key mask [B, 1, S]: True where a real token is)."""
        keys = (src != PAD)[:, None, :]
        x = self._embed(src, training)
        for p in self.encoder_layers:
            x = self._sublayer(x, f"{p}.norm1", self._attend(f"{p}.self_attn", None, keys, training), training)
            x = self._sublayer(x, f"{p}.norm2", self._feed_forward(p, training), training)
        return (self.layer("transformer.encoder.norm")(x) if self.norm_first else x), keys

    def decode(self, tgt_in, memory, src_keys, training=False, last_only=False):
        """Logits [B, T, vocab] of the next token at every target position (the tied projection); with
        ``last_only``, [B, vocab] of the last position, all greedy decoding needs."""
        length = tf.shape(tgt_in)[1]
        causal = tf.linalg.band_part(tf.ones((length, length), tf.bool), -1, 0)[None]
        self_mask = tf.logical_and(causal, (tgt_in != PAD)[:, None, :])
        x = self._embed(tgt_in, training)
        for p in self.decoder_layers:
            x = self._sublayer(x, f"{p}.norm1", self._attend(f"{p}.self_attn", None, self_mask, training), training)
            x = self._sublayer(x, f"{p}.norm2", self._attend(f"{p}.multihead_attn", memory, src_keys, training),
                               training)
            x = self._sublayer(x, f"{p}.norm3", self._feed_forward(p, training), training)
        if self.norm_first:
            x = self.layer("transformer.decoder.norm")(x)
        if last_only:
            x = x[:, -1]
        return tf.matmul(x, self.layer("embed").embeddings, transpose_b=True)

    def call(self, inputs, training=False):
        src, tgt_in = inputs
        memory, keys = self.encode(src, training)
        return self.decode(tgt_in, memory, keys, training)


def transformer(ref) -> Transformer:
    """The twin of ``ref.build_model()``, built (its weights exist) with Keras' initialisation."""
    model = Transformer(ref.vocab_size, ref.d_model, ref.heads, ref.encoder_layers, ref.decoder_layers, ref.ff_dim,
                        ref.dropout, ref.norm_first)
    model((tf.constant([[4, EOS]]), tf.constant([[BOS, 4]])))
    return model


WMT14_HOW_TO_GET = ("put statmt's four WMT14 archives in the data folder and run `trainmark data prepare transformer "
                    "--framework tensorflow --data-dir DIR` (tensorflow-datasets builds wmt14_translate from them, "
                    "and the subword model spm.model is trained on its training pairs)")


def load_data(ref, rules, data_dir: Path) -> parallel_text.ParallelCorpus:
    """The PyTorch loader's corpus, pair for pair, through tensorflow-datasets: transformer-mini's Bible pairs;
    transformer's WMT14 through tfds's own wmt14_translate, built from statmt's archives (the PyTorch reference
    reads the plain text made from them: tfds_builders/wmt14.py says what can differ)."""
    if ref.name == "transformer":
        from trainmark.reference.tfds_builders import wmt14 as tfds_wmt14

        how = WMT14_HOW_TO_GET
        corpus = tfds_wmt14.load(Path(data_dir), rules.dataset.get("archives") or {}, ref.max_tokens, how)
    else:
        from trainmark.reference.tfds_builders import bible_parallel as tfds_bible_parallel

        how = ref.how_to_get
        corpus = tfds_bible_parallel.load(Path(data_dir), rules.dataset["files"], ref.max_tokens, how)
    if (size := corpus.decoder().get_piece_size()) != ref.vocab_size:  # as the PyTorch reference's load_data
        raise UserError(f"{ref.name}: {parallel_text.SPM_FILE} has {size} subwords, the reference model "
                        f"expects {ref.vocab_size}: {how}")
    return corpus


def prepare_data(ref, rules, out_dir: Path, source: Path | None = None) -> list[Path]:
    """``trainmark data prepare transformer --framework tensorflow``: builds tfds's wmt14_translate from the
    archives in ``source`` (default ``out_dir``) and trains ``out_dir``/spm.model on its training sentences,
    English then German, as the PyTorch reference's ``prepare_data`` trains it on train.en then train.de.
    transformer-mini reads the same prepared folder in either framework."""
    if ref.name != "transformer":
        return ref.prepare_data(out_dir, source)
    from trainmark.reference.tfds_builders import wmt14 as tfds_wmt14

    lines = tfds_wmt14.training_lines(Path(source or out_dir), rules.dataset.get("archives") or {})
    out_dir.mkdir(parents=True, exist_ok=True)
    return [parallel_text.train_spm(lines, ref.vocab_size, out_dir / parallel_text.SPM_FILE)]


class TransformerTwin:
    """The translation Transformer under Keras, with the reference's recipe."""

    def __init__(self, ref, hp: dict[str, Any], steps_per_epoch: int, seed: int):
        self.ref, self.hp = ref, hp
        self.model = self.build_model(ref)
        keras_weights.load(self.model, {k: v.numpy() for k, v in ref.build_model().state_dict().items()})
        self.optimizer, self.clip_norm = clipped_adam(ref, hp, steps_per_epoch)
        self._encode = tf.function(lambda src: self.model.encode(src), reduce_retracing=True)
        self._last = tf.function(lambda out, memory, keys: self.model.decode(out, memory, keys, last_only=True),
                                 reduce_retracing=True)

    @staticmethod
    def build_model(ref) -> Transformer:
        return transformer(ref)

    inputs = staticmethod(as_tf)  # (src, tgt_in, tgt_out), padded with PAD

    def loss(self, src, tgt_in, tgt_out, training: bool = True):
        """(label-smoothed cross-entropy over the real target tokens, the objective: the same plus
        Adam's L2 weight decay, wd/2 x every weight's squared norm, as ``torch.optim.Adam(weight_decay)``)."""
        logits = self.model((src, tgt_in), training=training)
        loss = smoothed_cross_entropy(logits, tgt_out, self.hp["label_smoothing"], weights=tgt_out != PAD)
        return with_l2(loss, self.model.trainable_variables, self.hp["opt_weight_decay"])

    # the reference's own greedy decoding, calling the two methods below in place of the PyTorch model's
    greedy = Seq2SeqTransformer.greedy

    def encode(self, src: torch.Tensor):
        return self._encode(tf.convert_to_tensor(src.numpy()))

    def next_logits(self, tgt_in: torch.Tensor, memory, src_keys, seen=None) -> torch.Tensor:
        """The logits of the last position only, as [B, vocab]: ``greedy`` reads nothing else. The whole prefix
        runs through the decoder at every step (``seen``, the PyTorch model's cache, is not used)."""
        with warnings.catch_warnings():  # Keras warns of a softmax over one key when it traces the first step
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(self._last(tf.convert_to_tensor(tgt_in.numpy()), memory, src_keys).numpy())

