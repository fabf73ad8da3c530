"""Keras twins of the Fashion-MNIST minis, for ``--framework tensorflow`` (issue 17).

The same layers, widths, padding, initialisation and recipe as the PyTorch references
(reference/resnet_mini.py, vgg_mini.py, inception_mini.py, fashion_mnist_classifier.py), built
from Keras layers. Every layer that holds weights is named after its PyTorch module path
(``layer2.0.conv1``), so ``trainmark.reference.keras_twins.weights`` maps a Keras model onto the PyTorch
reference's tensor names and layouts: one structure, judged by one checker, whichever framework ran.

Differences that the frameworks impose, kept as small as they allow:
- Stride-2 3x3 convolutions pad one pixel on every side explicitly (``ZeroPadding2D``): Keras'
  ``padding="same"`` pads only right and bottom for an even input, and would see other pixels
  (at stride 1 "same" is PyTorch's padding and is used).
- Batch norm uses PyTorch's epsilon (1e-5) and momentum (0.1, Keras' 0.9); Keras updates the moving
  variance with the biased batch variance, PyTorch with the unbiased one (a factor 1 + 1/(N-1) at
  N = 256 x 14 x 14 values per channel: below 1e-5).
- Weight decay is L2 on the convolution and Linear kernels only, added to the loss as
  wd/2 * sum(w^2) so that its gradient is PyTorch SGD's wd * w; biases and batch norm are not decayed.

``FashionMnistTwin`` is what the TensorFlow trainer (harness/frameworks/tensorflow_backend.py) steps: the model,
the optimizer at the reference's own rates, the loss, and the reference's own evaluation.

Imports TensorFlow: only ``trainmark.harness.frameworks.tensorflow_backend`` imports this module.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

# the PyTorch references first: torchvision must be imported before TensorFlow (reference/tf_import.py)
from trainmark.reference import fashion_mnist
from trainmark.reference.inception_mini import DIVISOR as INCEPTION_DIVISOR
from trainmark.reference.resnet_mini import WIDTHS as RESNET_WIDTHS
from trainmark.reference.vgg_mini import CONFIG as VGG_CONFIG

# isort: split
import keras  # noqa: E402
import torch  # noqa: E402
from keras import layers  # noqa: E402

from trainmark.reference.keras_twins.recipe import TableSchedule, as_tf, rate_table, smoothed_cross_entropy, with_l2  # noqa: E402
from trainmark.reference.tf_import import tf  # noqa: E402

BN = {"momentum": 0.9, "epsilon": 1e-5}
# torch.nn.init.kaiming_normal_(mode="fan_out", nonlinearity="relu"): N(0, 2 / (out x kh x kw))
KAIMING_FAN_OUT = keras.initializers.VarianceScaling(2.0, mode="fan_out", distribution="untruncated_normal")


def _conv(x, filters: int, kernel: int, stride: int, name: str, bias: bool = False):
    """PyTorch's Conv2d(kernel, stride, padding=kernel // 2) with Kaiming fan-out weights. At stride 1
    Keras' "same" is that padding; at stride 2 it would pad right and bottom only, so it is explicit."""
    padding = "same"
    if stride > 1 and kernel > 1:
        x, padding = layers.ZeroPadding2D(kernel // 2, name=f"{name}.pad")(x), "valid"
    return layers.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=bias, name=name,
                         kernel_initializer=KAIMING_FAN_OUT, bias_initializer="zeros")(x)


def _torch_linear(units: int, fan_in: int, name: str, weight_std: float | None = None):
    """PyTorch's default nn.Linear initialisation: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in));
    ``weight_std``: the weight N(0, std) instead (Inception3's initialisation)."""
    bound = 1 / math.sqrt(fan_in)
    weights = (keras.initializers.VarianceScaling(1 / 3, "fan_in", "uniform") if weight_std is None
               else keras.initializers.RandomNormal(0.0, weight_std))
    return layers.Dense(units, name=name, kernel_initializer=weights,
                        bias_initializer=keras.initializers.RandomUniform(-bound, bound))


def _basic_block(x, planes: int, stride: int, name: str):
    """torchvision's BasicBlock: conv-bn-relu, conv-bn, plus the (downsampled) input, relu."""
    out = _conv(x, planes, 3, stride, f"{name}.conv1")
    out = layers.ReLU()(layers.BatchNormalization(**BN, name=f"{name}.bn1")(out))
    out = _conv(out, planes, 3, 1, f"{name}.conv2")
    out = layers.BatchNormalization(**BN, name=f"{name}.bn2")(out)
    if stride != 1 or x.shape[-1] != planes:
        x = _conv(x, planes, 1, stride, f"{name}.downsample.0")
        x = layers.BatchNormalization(**BN, name=f"{name}.downsample.1")(x)
    return layers.ReLU()(layers.Add()([out, x]))


def resnet_mini(num_classes: int = 10, widths: tuple[int, ...] = RESNET_WIDTHS) -> keras.Model:
    """reference/resnet_mini.py in Keras: 3x3 stride-2 stem, one BasicBlock per stage, no max-pool."""
    inputs = keras.Input((28, 28, 1))
    x = _conv(inputs, widths[0], 3, 2, "conv1")
    x = layers.ReLU()(layers.BatchNormalization(**BN, name="bn1")(x))
    for stage, planes in enumerate(widths, start=1):
        x = _basic_block(x, planes, 1 if stage == 1 else 2, f"layer{stage}.0")
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, _torch_linear(num_classes, widths[-1], "fc")(x), name="resnet_mini")


def vgg_mini(num_classes: int = 10, config=VGG_CONFIG) -> keras.Model:
    """reference/vgg_mini.py in Keras: make_layers(batch_norm=True) numbering, global pool, one Linear."""
    inputs = keras.Input((28, 28, 1))
    x, index = inputs, 0
    for v in config:
        if v == "M":
            x = layers.MaxPooling2D(2)(x)
            index += 1
            continue
        x = _conv(x, v, 3, 1, f"features.{index}", bias=True)
        x = layers.ReLU()(layers.BatchNormalization(**BN, name=f"features.{index + 1}")(x))
        index += 3  # Conv2d, BatchNorm2d, ReLU
    x = layers.GlobalAveragePooling2D()(x)
    head = layers.Dense(num_classes, name="classifier", kernel_initializer=keras.initializers.RandomNormal(0, 0.01),
                        bias_initializer="zeros")
    return keras.Model(inputs, head(x), name="vgg_mini")


class _Inception:
    """torchvision's Inception v3 blocks as reference/inception_mini.py narrows them (widths / divisor).

    ``BasicConv2d`` is conv (no bias) + batch norm (eps 1e-3) + ReLU, initialised N(0, 0.1) (torch's
    truncation at +-2 is 20 standard deviations away); the pools inside the blocks count the zero
    padding, as ``F.avg_pool2d`` does by default (Keras' "same" pooling would not)."""

    def __init__(self, divisor: int):
        self.divisor = divisor

    def conv(self, x, out: int, kernel, name: str, stride: int = 1, padding=0):
        kernel = (kernel, kernel) if isinstance(kernel, int) else kernel
        padding = (padding, padding) if isinstance(padding, int) else padding
        if any(padding):
            x = layers.ZeroPadding2D(padding, name=f"{name}.pad")(x)
        x = layers.Conv2D(out // self.divisor, kernel, strides=stride, use_bias=False, name=f"{name}.conv",
                          kernel_initializer=keras.initializers.RandomNormal(0.0, 0.1))(x)
        x = layers.BatchNormalization(momentum=0.9, epsilon=1e-3, name=f"{name}.bn")(x)
        return layers.ReLU()(x)

    @staticmethod
    def avg_pool(x):
        return layers.AveragePooling2D(3, strides=1)(layers.ZeroPadding2D(1)(x))

    def a(self, x, pool_features: int, n: str):
        b1 = self.conv(x, 64, 1, f"{n}.branch1x1")
        b5 = self.conv(self.conv(x, 48, 1, f"{n}.branch5x5_1"), 64, 5, f"{n}.branch5x5_2", padding=2)
        b3 = self.conv(x, 64, 1, f"{n}.branch3x3dbl_1")
        b3 = self.conv(self.conv(b3, 96, 3, f"{n}.branch3x3dbl_2", padding=1), 96, 3, f"{n}.branch3x3dbl_3", padding=1)
        bp = self.conv(self.avg_pool(x), pool_features, 1, f"{n}.branch_pool")
        return layers.Concatenate()([b1, b5, b3, bp])

    def b(self, x, n: str):
        b3 = self.conv(x, 384, 3, f"{n}.branch3x3", stride=2)
        bd = self.conv(self.conv(x, 64, 1, f"{n}.branch3x3dbl_1"), 96, 3, f"{n}.branch3x3dbl_2", padding=1)
        bd = self.conv(bd, 96, 3, f"{n}.branch3x3dbl_3", stride=2)
        return layers.Concatenate()([b3, bd, layers.MaxPooling2D(3, strides=2)(x)])

    def c(self, x, c7: int, n: str):
        b1 = self.conv(x, 192, 1, f"{n}.branch1x1")
        b7 = self.conv(x, c7, 1, f"{n}.branch7x7_1")
        b7 = self.conv(b7, c7, (1, 7), f"{n}.branch7x7_2", padding=(0, 3))
        b7 = self.conv(b7, 192, (7, 1), f"{n}.branch7x7_3", padding=(3, 0))
        bd = self.conv(x, c7, 1, f"{n}.branch7x7dbl_1")
        for i, (out, k, p) in enumerate([(c7, (7, 1), (3, 0)), (c7, (1, 7), (0, 3)), (c7, (7, 1), (3, 0)),
                                         (192, (1, 7), (0, 3))], start=2):
            bd = self.conv(bd, out, k, f"{n}.branch7x7dbl_{i}", padding=p)
        bp = self.conv(self.avg_pool(x), 192, 1, f"{n}.branch_pool")
        return layers.Concatenate()([b1, b7, bd, bp])

    def d(self, x, n: str):
        b3 = self.conv(self.conv(x, 192, 1, f"{n}.branch3x3_1"), 320, 3, f"{n}.branch3x3_2", stride=2)
        b7 = self.conv(x, 192, 1, f"{n}.branch7x7x3_1")
        b7 = self.conv(b7, 192, (1, 7), f"{n}.branch7x7x3_2", padding=(0, 3))
        b7 = self.conv(b7, 192, (7, 1), f"{n}.branch7x7x3_3", padding=(3, 0))
        b7 = self.conv(b7, 192, 3, f"{n}.branch7x7x3_4", stride=2)
        return layers.Concatenate()([b3, b7, layers.MaxPooling2D(3, strides=2)(x)])

    def e(self, x, n: str):
        b1 = self.conv(x, 320, 1, f"{n}.branch1x1")
        b3 = self.conv(x, 384, 1, f"{n}.branch3x3_1")
        b3 = layers.Concatenate()([self.conv(b3, 384, (1, 3), f"{n}.branch3x3_2a", padding=(0, 1)),
                                   self.conv(b3, 384, (3, 1), f"{n}.branch3x3_2b", padding=(1, 0))])
        bd = self.conv(self.conv(x, 448, 1, f"{n}.branch3x3dbl_1"), 384, 3, f"{n}.branch3x3dbl_2", padding=1)
        bd = layers.Concatenate()([self.conv(bd, 384, (1, 3), f"{n}.branch3x3dbl_3a", padding=(0, 1)),
                                   self.conv(bd, 384, (3, 1), f"{n}.branch3x3dbl_3b", padding=(1, 0))])
        bp = self.conv(self.avg_pool(x), 192, 1, f"{n}.branch_pool")
        return layers.Concatenate()([b1, b3, bd, bp])


def inception_mini(num_classes: int = 10, divisor: int = INCEPTION_DIVISOR) -> keras.Model:
    """reference/inception_mini.py in Keras: the 28x28 stem, Mixed_5b, 6a, 6b, 7a, 7b, global pool, Linear."""
    block = _Inception(divisor)
    inputs = keras.Input((28, 28, 1))
    x = block.conv(inputs, 32, 3, "Conv2d_1a_3x3", stride=2, padding=1)
    x = block.conv(x, 32, 3, "Conv2d_2a_3x3", padding=1)
    x = block.conv(x, 64, 3, "Conv2d_2b_3x3", padding=1)
    x = block.conv(x, 80, 1, "Conv2d_3b_1x1")
    x = block.conv(x, 192, 3, "Conv2d_4a_3x3", padding=1)
    x = block.a(x, 64, "Mixed_5b")
    x = block.b(x, "Mixed_6a")
    x = block.c(x, 128, "Mixed_6b")
    x = block.d(x, "Mixed_7a")
    x = block.e(x, "Mixed_7b")
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, _torch_linear(num_classes, 2048 // divisor, "fc", weight_std=0.1)(x),
                       name="inception_mini")



def load_data(ref, rules, data_dir: Path) -> fashion_mnist.FashionMNIST:
    """Fashion-MNIST through tensorflow-datasets: the PyTorch loader's arrays, in its order."""
    from trainmark.reference.tfds_builders import fashion_mnist as tfds_fashion_mnist

    return tfds_fashion_mnist.load(Path(data_dir), rules.dataset["files"])


class FashionMnistTwin:
    """A Fashion-MNIST mini under Keras, with the reference's recipe (fashion_mnist_classifier.py): SGD
    with Nesterov momentum at the reference's own rates, label smoothing, L2 on the kernels only."""

    clip_norm = None
    builder = staticmethod(resnet_mini)  # the Keras model of the benchmark (each benchmark's class below)

    def __init__(self, ref, hp: dict[str, Any], steps_per_epoch: int, seed: int):
        self.ref, self.hp = ref, hp
        self.model = self.build_model(ref)
        rates = rate_table(ref, hp, steps_per_epoch, hp["opt_learning_rate_decay_epochs"] + 1)
        self.optimizer = keras.optimizers.SGD(TableSchedule(rates), momentum=hp["opt_momentum"],
                                              nesterov=hp["opt_nesterov"])
        self.kernels = [w for w in self.model.trainable_variables if w.path.endswith("/kernel")]
        self._logits = tf.function(lambda x: self.model(x, training=False), reduce_retracing=True)

    @classmethod
    def build_model(cls, ref) -> keras.Model:
        return cls.builder(ref.num_classes)

    inputs = staticmethod(as_tf)  # (uint8 images [N, 28, 28], labels [N]): normalised inside the step

    def loss(self, images, labels, training: bool = True):
        """(cross-entropy, the objective: cross-entropy + wd/2 x the kernels' squared norm)."""
        x = (tf.cast(images, tf.float32)[..., None] / 255.0 - fashion_mnist.MEAN) / fashion_mnist.STD
        loss = smoothed_cross_entropy(self.model(x, training=training), labels, self.hp["label_smoothing"])
        return with_l2(loss, self.kernels, self.hp["opt_weight_decay"])

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """Logits for the reference's own ``evaluate``: normalised NCHW images in, as a PyTorch model."""
        logits = self._logits(tf.convert_to_tensor(images.permute(0, 2, 3, 1).contiguous().numpy()))
        return torch.from_numpy(logits.numpy())


# the twin of each benchmark, as its rule file names it (implementations: tensorflow)
class ResnetMiniTwin(FashionMnistTwin):
    builder = staticmethod(resnet_mini)


class VggMiniTwin(FashionMnistTwin):
    builder = staticmethod(vgg_mini)


class InceptionMiniTwin(FashionMnistTwin):
    builder = staticmethod(inception_mini)
