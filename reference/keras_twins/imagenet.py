"""Keras twins of the full-size ImageNet references (resnet50, vgg16, inception-v3), for ``--framework tensorflow``.

Each is torchvision's network, layer for layer, with its layers named after the torchvision module paths
(``layer3.5.conv2``) so that ``trainmark.reference.keras_twins.weights`` writes the PyTorch ``state_dict``'s
tensors, and each starts from the PyTorch trial's initial weights (the reference's ``build_model`` under
the trial's seed), so the two frameworks start from one point.

Why not keras.applications for all three (issue 17 asked for it):
- ``VGG16``: its convolutions are torchvision's (configuration D), so the twin takes them from
  ``keras.applications.VGG16(include_top=False, weights=None)``, renamed to torchvision's ``features.N``.
  Its top has no dropout, so the classifier is torchvision's (4096, dropout 0.5, 4096, dropout, classes),
  fed with the features flattened in PyTorch's channel-first order.
- ``ResNet50``: keras.applications' is ResNet v1 (stride 2 in the first 1x1 convolution of a stage, and
  biases in every convolution); torchvision's, the reference's and MLPerf's, is v1.5 (stride in the 3x3,
  no biases). Another network, so the twin is built from Keras layers.
- ``InceptionV3``: keras.applications' batch norm has no scale (``scale=False``; torchvision's has
  one), its pools inside the blocks leave the padding out of the average (torchvision's count it), and it
  has no auxiliary classifier. The twin is built from the blocks of the inception-mini twin at full width.

Where the frameworks differ (stated in docs/frameworks.md): batch norm momentum is PyTorch's 0.1
(Keras' 0.9) and Keras' moving variance uses the biased batch variance; Keras' SGD folds the learning
rate into the momentum buffer (PyTorch's applies it after), which differs only while the rate changes.

The schedule is the reference's own function (``sgd_recipe.lr_factor``), called at every step: the
step schedule of vgg16 has no end for a table to stop at.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

# the PyTorch references first: torchvision must be imported before TensorFlow (reference/tf_import.py)
import numpy as np
import torch
from torchvision.models.vgg import cfgs as VGG_CONFIGS

from trainmark.reference import imagenet, sgd_recipe

# isort: split
import keras  # noqa: E402
from keras import layers  # noqa: E402

from trainmark.reference.keras_twins import weights as keras_weights  # noqa: E402
from trainmark.reference.keras_twins.fashion_mnist import BN, _conv, _Inception, _torch_linear  # noqa: E402
from trainmark.reference.keras_twins.recipe import as_tf, smoothed_cross_entropy, with_l2  # noqa: E402
from trainmark.reference.tf_import import tf  # noqa: E402

RESNET50_BLOCKS = (3, 4, 6, 3)  # torchvision.models.resnet50: ResNet(Bottleneck, [3, 4, 6, 3])
EXPANSION = 4                   # torchvision's Bottleneck.expansion


def _bottleneck(x, planes: int, stride: int, name: str):
    """torchvision's Bottleneck (ResNet v1.5): 1x1, 3x3 with the stride, 1x1 to 4 x planes, plus the input."""
    out = layers.ReLU()(layers.BatchNormalization(**BN, name=f"{name}.bn1")(_conv(x, planes, 1, 1, f"{name}.conv1")))
    out = layers.ReLU()(layers.BatchNormalization(**BN, name=f"{name}.bn2")(_conv(out, planes, 3, stride,
                                                                                  f"{name}.conv2")))
    out = layers.BatchNormalization(**BN, name=f"{name}.bn3")(_conv(out, planes * EXPANSION, 1, 1, f"{name}.conv3"))
    if stride != 1 or x.shape[-1] != planes * EXPANSION:
        x = _conv(x, planes * EXPANSION, 1, stride, f"{name}.downsample.0")
        x = layers.BatchNormalization(**BN, name=f"{name}.downsample.1")(x)
    return layers.ReLU()(layers.Add()([out, x]))


def resnet50(num_classes: int = 1000) -> keras.Model:
    """torchvision's resnet50: 7x7 stride-2 stem, 3x3 stride-2 max-pool, four stages of Bottlenecks."""
    inputs = keras.Input((224, 224, 3))
    x = layers.ReLU()(layers.BatchNormalization(**BN, name="bn1")(_conv(inputs, 64, 7, 2, "conv1")))
    # MaxPool2d(3, 2, padding=1) pads with -inf; after the ReLU every value is >= 0, so zeros pick the same maxima
    x = layers.MaxPooling2D(3, strides=2)(layers.ZeroPadding2D(1)(x))
    for stage, blocks in enumerate(RESNET50_BLOCKS, start=1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _bottleneck(x, 64 * 2 ** (stage - 1), stride, f"layer{stage}.{block}")
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, _torch_linear(num_classes, x.shape[-1], "fc")(x), name="resnet50")


def _torch_feature_names(config) -> list[str]:
    """torchvision's ``features.N`` of every convolution of ``make_layers(config)`` (no batch norm)."""
    names, index = [], 0
    for v in config:
        if v != "M":
            names.append(f"features.{index}")
        index += 1 if v == "M" else 2  # MaxPool2d; Conv2d and ReLU
    return names


def vgg16(num_classes: int = 1000) -> keras.Model:
    """keras.applications' VGG16 convolutions under torchvision's names, then torchvision's classifier."""
    base = keras.applications.VGG16(include_top=False, weights=None, input_shape=(224, 224, 3))
    names = iter(_torch_feature_names(VGG_CONFIGS["D"]))

    def as_torchvision(layer):
        config = layer.get_config()
        if isinstance(layer, layers.Conv2D):
            config["name"] = next(names)
        return type(layer).from_config(config)

    features = keras.models.clone_model(base, clone_function=as_torchvision)
    if next(names, None) is not None:
        raise ValueError("keras.applications.VGG16 has fewer convolutions than torchvision's configuration D")
    # AdaptiveAvgPool2d((7, 7)) keeps the 7x7 map of a 224 input as it is; flatten channel-first, as PyTorch
    x = layers.Flatten()(layers.Permute((3, 1, 2))(features.output))
    x = layers.Dropout(0.5)(layers.Dense(4096, activation="relu", name="classifier.0")(x))
    x = layers.Dropout(0.5)(layers.Dense(4096, activation="relu", name="classifier.3")(x))
    return keras.Model(features.input, layers.Dense(num_classes, name="classifier.6")(x), name="vgg16")


def inception_v3(num_classes: int = 1000) -> keras.Model:
    """torchvision's inception_v3(aux_logits=True) at 299 pixels: (logits, auxiliary logits)."""
    block = _Inception(1)
    inputs = keras.Input((299, 299, 3))
    x = block.conv(inputs, 32, 3, "Conv2d_1a_3x3", stride=2)
    x = block.conv(x, 32, 3, "Conv2d_2a_3x3")
    x = layers.MaxPooling2D(3, strides=2)(block.conv(x, 64, 3, "Conv2d_2b_3x3", padding=1))
    x = block.conv(x, 80, 1, "Conv2d_3b_1x1")
    x = layers.MaxPooling2D(3, strides=2)(block.conv(x, 192, 3, "Conv2d_4a_3x3"))
    for name, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        x = block.a(x, pool_features, name)
    x = block.b(x, "Mixed_6a")
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = block.c(x, c7, name)
    aux = layers.AveragePooling2D(5, strides=3)(x)  # InceptionAux: no padding, so nothing to count or not
    aux = block.conv(block.conv(aux, 128, 1, "AuxLogits.conv0"), 768, 5, "AuxLogits.conv1")
    aux = layers.Dense(num_classes, name="AuxLogits.fc")(layers.GlobalAveragePooling2D()(aux))
    x = block.e(block.e(block.d(x, "Mixed_7a"), "Mixed_7b"), "Mixed_7c")
    x = layers.Dropout(0.5)(layers.GlobalAveragePooling2D()(x))
    return keras.Model(inputs, [layers.Dense(num_classes, name="fc")(x), aux], name="inception_v3")



def load_data(ref, rules, data_dir: Path) -> imagenet.ImageNet:
    """ImageNet through tensorflow-datasets' imagenet2012 (the tars in ``data_dir``), in the PyTorch loader's
    order and numbering, with the reference's own transforms."""
    from trainmark.reference.tfds_builders import imagenet2012

    return imagenet2012.load(Path(data_dir), ref.train_crop, ref.eval_resize, ref.eval_crop)


class ReferenceSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The rate of the reference's LambdaLR at every step: peak x ``sgd_recipe.lr_factor(step / steps)``,
    the reference's own function, evaluated in Python at each step."""

    def __init__(self, hp: dict[str, Any], steps_per_epoch: int):
        self.hp, self.steps = dict(hp), max(steps_per_epoch, 1)

    def rate(self, step) -> np.float32:
        factor = sgd_recipe.lr_factor(int(step) / self.steps, self.hp)
        return np.float32(sgd_recipe.peak_learning_rate(self.hp) * factor)

    def __call__(self, step):
        rate = tf.numpy_function(self.rate, [step], tf.float32, stateful=False)
        return tf.ensure_shape(rate, ())

    def get_config(self):
        return {"hp": self.hp, "steps_per_epoch": self.steps}


class ImageNetTwin:
    """A full-size ImageNet reference under Keras, with its recipe (reference/sgd_recipe.py): SGD with
    momentum at the reference's rates, weight decay as L2 on every weight or, unless
    ``opt_decay_norm_and_bias``, on the kernels only; label smoothing; inception-v3's auxiliary loss."""

    clip_norm = None
    builder = staticmethod(resnet50)  # the Keras model of the benchmark (each benchmark's class below)

    def __init__(self, ref, hp: dict[str, Any], steps_per_epoch: int, seed: int):
        self.ref, self.hp = ref, hp
        self.model = self.build_model(ref)
        # the PyTorch trial's initial weights: its seed is set before the trainer builds the twin
        keras_weights.load(self.model, {k: v.numpy() for k, v in ref.build_model().state_dict().items()})
        self.optimizer = keras.optimizers.SGD(ReferenceSchedule(hp, steps_per_epoch), momentum=hp["opt_momentum"])
        decayed = self.model.trainable_variables
        if not hp["opt_decay_norm_and_bias"]:  # sgd_recipe.param_groups: 1-d tensors are not decayed
            decayed = [w for w in decayed if len(w.shape) > 1]
        self.decayed = decayed
        self._logits = tf.function(lambda x: self._main(self.model(x, training=False)), reduce_retracing=True)

    @classmethod
    def build_model(cls, ref) -> keras.Model:
        return cls.builder(ref.num_classes)

    inputs = staticmethod(as_tf)  # (uint8 images [N, 3, H, W], labels [N]): normalised inside the step

    @staticmethod
    def _main(outputs):
        return outputs[0] if isinstance(outputs, (list, tuple)) else outputs

    def loss(self, images, labels, training: bool = True):
        """(the reference's criterion: cross-entropy, plus inception-v3's auxiliary term as ``inception_loss``
        adds it; the objective: that plus the L2 term)."""
        x = tf.transpose(tf.cast(images, tf.float32), (0, 2, 3, 1)) / 255.0
        x = (x - tf.constant(imagenet.MEAN)) / tf.constant(imagenet.STD)
        outputs = self.model(x, training=training)
        smoothing = self.hp["label_smoothing"]
        loss = smoothed_cross_entropy(self._main(outputs), labels, smoothing)
        if isinstance(outputs, (list, tuple)) and training:  # torchvision returns the aux logits in training only
            loss = loss + self.hp["aux_loss_weight"] * smoothed_cross_entropy(outputs[1], labels, smoothing)
        return with_l2(loss, self.decayed, self.hp["opt_weight_decay"])

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """Logits for the reference's own ``evaluate``: normalised NCHW images in, as a PyTorch model."""
        logits = self._logits(tf.convert_to_tensor(images.permute(0, 2, 3, 1).contiguous().numpy()))
        return torch.from_numpy(logits.numpy())


# the twin of each benchmark, as its rule file names it (implementations: tensorflow)
class Resnet50Twin(ImageNetTwin):
    builder = staticmethod(resnet50)


class Vgg16Twin(ImageNetTwin):
    builder = staticmethod(vgg16)


class InceptionV3Twin(ImageNetTwin):
    builder = staticmethod(inception_v3)
