"""Keras twin of Deep Speech 2 (reference/ds2_model.py), for ``--framework tensorflow``.

The same model as ``DeepSpeech2``, from Keras layers: Conv2D + batch norm + Hardtanh(0, 20) blocks over
(frequency, time), the frames past each utterance's end zeroed after every block; bidirectional GRUs
(``reset_after``: PyTorch's formula) whose directions are summed, each but the first after a batch norm,
the backward direction starting at each utterance's own last frame (Keras' mask, as PyTorch's packed
sequences) and the frames past the end zeroed (as ``pad_packed_sequence`` leaves them); then batch norm,
a Linear without bias, log-softmax. Layers are named after the PyTorch modules (``conv.0.0``, ``rnns.1``),
so reference/keras_twins/weights.py maps the twin onto the reference's tensors.

The features are the reference's own: its ``to_device`` computes the log-mel spectrogram (torchaudio) of
every batch, inside the timed step as in a PyTorch trial, and the twin trains on them, so both frameworks
see the same numbers. The recipe is the reference's (ds2.py): Adam at the reference's own rates (warm-up,
the peak held, then the decay), the global gradient norm clipped, CTC averaged per target label as
``F.ctc_loss(reduction="mean", zero_infinity=True)``. The initial weights are drawn by the PyTorch
reference itself under the trial's seed; evaluation is the reference's own greedy decoding and WER.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainmark.reference import ctc
from trainmark.reference.tf_import import tf  # noqa: E402  (after torch: TensorFlow safely beside PyTorch)

# isort: split

import keras  # noqa: E402
from keras import layers  # noqa: E402

from trainmark.reference.keras_twins import weights as keras_weights  # noqa: E402
from trainmark.reference.keras_twins.recipe import as_tf, clipped_adam, with_l2  # noqa: E402

BN = {"momentum": 0.9, "epsilon": 1e-5}  # PyTorch's BatchNorm defaults (its momentum 0.1 is Keras' 0.9)


class DeepSpeech2(keras.Model):
    """``DeepSpeech2`` in Keras: (features [B, F, T], frames [B]) -> (log-probabilities [T', B, C], frames)."""

    def __init__(self, ref, unroll: bool = False):
        super().__init__(name="ds2_twin")
        self.convs = list(ref.convs)
        named: list[layers.Layer] = []
        for i, c in enumerate(self.convs):
            named += [layers.ZeroPadding2D(c.padding),
                      layers.Conv2D(c.channels, c.kernel, strides=c.stride, use_bias=False, name=f"conv.{i}.0"),
                      layers.BatchNormalization(**BN, name=f"conv.{i}.1")]
        for i in range(ref.rnn_layers):
            if i:
                named.append(layers.BatchNormalization(**BN, name=f"rnn_norms.{i}"))
            gru = layers.GRU(ref.rnn_hidden, return_sequences=True, reset_after=True, unroll=unroll)
            named.append(layers.Bidirectional(gru, merge_mode="sum", name=f"rnns.{i}"))
        named += [layers.BatchNormalization(**BN, name="out_norm"),
                  layers.Dense(ref.num_classes, use_bias=False, name="fc")]
        self.named = named
        self.rnn_layers = ref.rnn_layers

    def layer(self, name: str) -> layers.Layer:
        return next(layer for layer in self.named if layer.name == name)

    def call(self, inputs, training=False):
        feats, frames = inputs
        x = feats[..., None]  # [B, F, T, 1]: frequency as height, time as width
        for i, spec in enumerate(self.convs):
            x = self.named[3 * i](x)  # the block's padding
            x = self.layer(f"conv.{i}.1")(self.layer(f"conv.{i}.0")(x), training=training)
            x = tf.clip_by_value(x, 0.0, 20.0)  # Hardtanh(0, 20)
            frames = spec.out_len(frames, 1)
            x = x * tf.cast(tf.sequence_mask(frames, tf.shape(x)[2]), x.dtype)[:, None, :, None]
        shape = tf.shape(x)
        x = tf.reshape(tf.transpose(x, [0, 2, 3, 1]), [shape[0], shape[2], x.shape[3] * x.shape[1]])  # [B, T, C*F]
        mask = tf.sequence_mask(frames, shape[2])
        for i in range(self.rnn_layers):
            if i:
                x = self.layer(f"rnn_norms.{i}")(x, training=training)
            x = self.layer(f"rnns.{i}")(x, mask=mask, training=training)
            x = x * tf.cast(mask, x.dtype)[..., None]
        x = self.layer("fc")(self.layer("out_norm")(x, training=training))
        return tf.transpose(tf.nn.log_softmax(x, axis=-1), [1, 0, 2]), frames


def deepspeech2(ref, unroll: bool = False) -> DeepSpeech2:
    """The twin of ``ref.build_model()``, built (its weights exist) with Keras' initialisation."""
    model = DeepSpeech2(ref, unroll)
    frames = 8  # any length builds the same weights; an unrolled model builds in time proportional to it
    model((tf.zeros((1, ref.features.n_features, frames)), tf.constant([frames], tf.int64)))
    return model



def load_data(ref, rules, data_dir: Path):
    """The reference's data through tensorflow-datasets: FSDD's recordings and evaluation utterances
    (ds2-mini), or LibriSpeech's manifests from OpenSLR's archives (ds2; ``DS2Full.load_data``'s, the audio
    read from tfds's records)."""
    if ref.name == "ds2":
        from trainmark.reference.tfds_builders import librispeech as tfds_librispeech

        return tfds_librispeech.load(Path(data_dir), rules.dataset["archives"], ref.train_subsets())
    from trainmark.reference.tfds_builders import fsdd as tfds_fsdd

    return tfds_fsdd.load(Path(data_dir), rules.dataset["files"])


class DS2Twin:
    """Deep Speech 2 under Keras, with the reference's recipe."""

    def __init__(self, ref, hp: dict[str, Any], steps_per_epoch: int, seed: int, unroll: bool = False):
        self.ref, self.hp = ref, hp
        self.model = deepspeech2(ref, unroll)
        keras_weights.load(self.model, {k: v.numpy() for k, v in ref.build_model().state_dict().items()})
        self.optimizer, self.clip_norm = clipped_adam(ref, hp, steps_per_epoch)
        self._forward = tf.function(lambda feats, frames: self.model((feats, frames), training=False),
                                    reduce_retracing=True)
        self._args = (ref, hp, steps_per_epoch, seed)

    @staticmethod
    def build_model(ref) -> DeepSpeech2:
        return deepspeech2(ref)

    def unrolled(self, example: tuple | None = None) -> "DS2Twin":
        """The same twin with its GRUs unrolled: a graph whose every step's matmuls can be counted (the
        shapes do not depend on the batch's values: ``example`` is not needed, and one such twin traces any
        length)."""
        return DS2Twin(*self._args, unroll=True)

    def length_units(self, batch: tuple) -> int | None:
        """The length of ``batch``'s utterances (the reference's synthetic batch) in units of the feature hop
        times the convolutions' time strides, or None if it is not a whole number of them. On that lattice
        every layer's output length, so the step's FLOPs, is affine in the units: the FLOP count traces the
        unrolled GRUs on two short cuts (``cut``) and extrapolates, where the reference's 12 s would be a graph
        of 6,010 GRU cells (more than 10 minutes and 14 GB to trace)."""
        samples = batch[0].shape[1]
        return samples // self._unit if samples % self._unit == 0 else None

    def cut(self, batch: tuple, units: int) -> tuple:
        """``batch`` with its waveforms cut to ``units`` of the lattice (the labels kept: what is counted,
        convolutions and matmuls, does not depend on them)."""
        waves, lengths, targets, target_lens = batch
        samples = units * self._unit
        return waves[:, :samples], lengths.clamp(max=samples), targets, target_lens

    @property
    def _unit(self) -> int:
        strides = 1
        for spec in self.ref.convs:
            strides *= spec.stride[1]  # (frequency, time)
        return self.ref.features.hop_length * strides

    def inputs(self, *batch: torch.Tensor) -> tuple:
        """(features, frames, targets, target lengths): the reference's own features of the waveforms."""
        return as_tf(*self.ref.to_device(batch, torch.device("cpu"), train=True))

    def loss(self, feats, frames, targets, target_lens, training: bool = True):
        """CTC per utterance divided by its number of labels, averaged; an infinite one counts 0. An utterance
        too short for its labels (fewer frames than labels plus repeated neighbours) has no alignment: PyTorch's
        loss is infinite there (0 with ``zero_infinity``), TensorFlow's kernel refuses the batch, so such an
        utterance is given one label in place of its own (the kernel refuses no labels too) and its loss is
        counted 0 (no gradient), as PyTorch counts it."""
        log_probs, out_frames = self.model((feats, frames), training=training)
        labels, lens = tf.cast(targets, tf.int32), tf.cast(target_lens, tf.int32)
        valid = tf.sequence_mask(lens, tf.shape(labels)[1])
        repeats = tf.reduce_sum(tf.cast((labels[:, 1:] == labels[:, :-1]) & valid[:, 1:], tf.int32), axis=1)
        aligned = lens + repeats <= tf.cast(out_frames, tf.int32)
        one_label = tf.cast(tf.range(tf.shape(labels)[1]) == 0, tf.int32)[None, :]  # [1, 0, 0, ...]
        labels = tf.where(aligned[:, None], labels, one_label)
        sparse = tf.sparse.from_dense(labels)  # labels are 1..C-1; 0 pads (and is the blank)
        per = tf.nn.ctc_loss(sparse, log_probs, None, tf.cast(out_frames, tf.int32), logits_time_major=True,
                             blank_index=ctc.BLANK)
        per = tf.where(aligned & tf.math.is_finite(per), per, tf.zeros_like(per))
        loss = tf.reduce_mean(per / tf.cast(tf.maximum(target_lens, 1), per.dtype))
        return with_l2(loss, self.model.trainable_variables, self.hp["opt_weight_decay"])

    def __call__(self, feats: torch.Tensor, frames: torch.Tensor):
        """For the reference's own ``evaluate``: PyTorch tensors in, (log-probabilities, frames) out."""
        log_probs, out_frames = self._forward(*as_tf(feats, frames))
        return torch.from_numpy(log_probs.numpy()), torch.from_numpy(out_frames.numpy())

