"""Issue 41: TensorFlow beyond the CPU: where --device places a Keras twin, and a mirrored step on two replicas."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from trainmark.errors import UserError
from trainmark.harness.frameworks import tensorflow_devices as tfd

ROOT = Path(__file__).resolve().parents[1]


class _Errors:
    class OpError(Exception):
        pass


def fake_tf(gpus: int, tpu: bool = False):
    """The few calls place() makes, answering as a machine with ``gpus`` GPUs (and a TPU) would."""
    class Resolver:
        def __init__(self):
            if not tpu:
                raise ValueError("Please provide a TPU Name to connect to.")

    class Strategy:
        def __init__(self, arg=None):
            self.num_replicas_in_sync = len(arg) if isinstance(arg, list) else 8

    return SimpleNamespace(
        errors=_Errors,
        config=SimpleNamespace(list_logical_devices=lambda kind: [
            SimpleNamespace(name=f"/device:GPU:{i}") for i in range(gpus)] if kind == "GPU" else [],
            experimental_connect_to_cluster=lambda r: None),
        tpu=SimpleNamespace(experimental=SimpleNamespace(initialize_tpu_system=lambda r: None)),
        distribute=SimpleNamespace(cluster_resolver=SimpleNamespace(TPUClusterResolver=Resolver),
                                   TPUStrategy=Strategy, MirroredStrategy=Strategy))


def test_auto_is_the_cpu_when_tensorflow_sees_nothing_else():
    p = tfd.place("auto", tf=fake_tf(0))
    assert (p.label, p.harness_device, p.replicas) == ("cpu", "cpu", 1)


def test_auto_takes_one_gpu_or_mirrors_several(monkeypatch):
    one = tfd.place("auto", tf=fake_tf(1))
    assert (one.label, one.harness_device, one.strategy) == ("gpu:0", "cuda:0", None)
    monkeypatch.setattr(tfd, "_tf", lambda: fake_tf(4))
    four = tfd.place("auto", tf=fake_tf(4))
    assert four.label == "mirrored over 4 GPUs" and four.replicas == 4 and four.harness_device == "cuda"
    assert tfd.place("cuda:2", tf=fake_tf(4)).devices == ["/device:GPU:2"]


def test_a_tpu_is_taken_when_reachable_and_refused_in_one_line_when_not():
    p = tfd.place("auto", tf=fake_tf(2, tpu=True))
    assert p.label == "tpu (8 cores)" and p.harness_device == "xla:0"
    with pytest.raises(UserError, match="--device tpu: no TPU reachable"):
        tfd.place("tpu", tf=fake_tf(0))


def test_a_gpu_tensorflow_cannot_see_is_refused_naming_what_it_found():
    with pytest.raises(UserError, match=r"TensorFlow sees no GPU \(TensorFlow found only the CPU"):
        tfd.place("cuda", tf=fake_tf(0))
    with pytest.raises(UserError, match=r"TensorFlow sees 2 GPU\(s\)"):
        tfd.place("cuda:5", tf=fake_tf(2))
    with pytest.raises(UserError, match="use auto, cpu, cuda"):
        tfd.place("xpu", tf=fake_tf(0))


def test_amp_is_keras_mixed_precision_on_accelerators_and_refused_on_the_cpu():
    assert tfd.mixed_precision_policy(tfd.Placement("gpu:0", "cuda:0", ["/GPU:0"])) == "mixed_bfloat16"
    assert tfd.mixed_precision_policy(tfd.Placement("tpu", "xla:0")) == "mixed_bfloat16"
    with pytest.raises(UserError, match="Keras mixed precision runs on GPUs and TPUs"):
        tfd.check_precision("amp", tfd.Placement("cpu", "cpu", ["/CPU:0"]))
    tfd.check_precision("fp32", tfd.Placement("cpu", "cpu", ["/CPU:0"]))


MIRRORED = textwrap.dedent("""
    import sys
    from trainmark.reference.tf_import import tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import numpy as np
    from trainmark.harness.frameworks.tensorflow_backend import TensorFlowTrainer
    from trainmark.harness.frameworks.tensorflow_devices import Placement
    from trainmark.reference import registry
    from trainmark.rules import get_rules

    rules = get_rules("resnet-mini")
    ref = registry.for_rules(rules)
    hp = {**rules.defaults(), "global_batch_size": 16}
    images, labels = ref.synthetic_batch(16)
    names = [d.name for d in tf.config.list_logical_devices("CPU")]
    ranks = TensorFlowTrainer(ref, None, hp, None, 7, "cpu", "fp32", count_flops=False,
                              placement=Placement("cpu", "cpu", [names[0]]))
    mirrored = TensorFlowTrainer(ref, None, hp, None, 7, "cpu", "fp32", count_flops=False,
                                 placement=Placement("mirrored", "cpu", names, tf.distribute.MirroredStrategy(names)))
    mirrored.model.set_weights(ranks.model.get_weights())
    halves = [ranks.prepare((images[i::2], labels[i::2])) for i in range(2)]
    # what two ranks do: each its half's gradients, their mean applied once
    grads = [ranks._gradients(*h)[1] for h in halves]
    ranks._apply([(a + b) / 2 for a, b in zip(*grads)])
    mirrored.step(halves)
    before = mirrored.local_batch, mirrored.samples_per_step
    one = [np.asarray(v.numpy()) for v in ranks.model.trainable_variables]
    two = [np.asarray(v.numpy()) for v in mirrored.model.trainable_variables]
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(one, two))
    print("replicas", mirrored.replicas, "batch", before, "max difference", diff)
    sys.exit(0 if mirrored.replicas == 2 and before == (8, 16) and diff < 1e-6 else 1)
""")



@pytest.mark.slow
def test_a_mirrored_step_on_two_replicas_equals_one_whole_batch_step():
    """Two logical CPUs stand in for two GPUs: a mirrored step gives the weights two ranks give (each its
    share's gradients, their mean applied once), within float32 summation order."""
    pytest.importorskip("tensorflow")
    out = subprocess.run([sys.executable, "-P", "-c", MIRRORED], capture_output=True, text=True, timeout=600,
                         cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert "replicas 2" in out.stdout
