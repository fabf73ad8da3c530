"""TensorFlow's first minutes (issue 39): its start-up noise is hidden unless --verbose, and a precision it cannot
run here (Keras mixed precision on a CPU) is refused in one line before anything is written."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

# not importorskip: TensorFlow imported before torchvision segfaults (reference/tf_import.py)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow not installed")

IMPORT = "from trainmark.harness.frameworks.quiet_import import import_quietly; import_quietly('{module}')"


def _import_stderr(verbose: bool) -> str:
    env = {**os.environ, "TRAINMARK_VERBOSE": "1" if verbose else "0"}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    code = IMPORT.format(module="trainmark.harness.frameworks.tensorflow_backend")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600).stderr


def test_start_up_noise_is_hidden_unless_verbose():
    quiet, loud = _import_stderr(False), _import_stderr(True)
    assert quiet == ""
    if loud:  # a machine where TensorFlow says nothing at start-up proves nothing more
        assert "absl" in loud or "cuda" in loud.lower() or "oneDNN" in loud


RETRACING = (IMPORT.format(module="trainmark.harness.frameworks.tensorflow_backend") + "\nimport tensorflow as tf\n"
             "for n in range(12):\n    tf.function(lambda x: x * 2)(tf.zeros([n + 1]))\n")  # a function per call


@pytest.mark.parametrize("verbose", [False, True])
def test_tf_function_retracing_notes_are_shown_only_when_verbose(verbose):
    """A Keras twin makes its evaluation's tf.function per trial: from the third trial on TensorFlow's Python
    logger warned about retracing in every run's output, a note for TensorFlow's developers, not the user."""
    env = {**os.environ, "TRAINMARK_VERBOSE": "1" if verbose else "0"}
    err = subprocess.run([sys.executable, "-c", RETRACING], capture_output=True, text=True, env=env,
                         timeout=600).stderr
    assert ("retracing" in err) is verbose, err[-2000:]


def test_amp_on_a_cpu_is_refused_before_anything_is_written(tmp_path, capsys):
    from trainmark.cli import main

    out = tmp_path / "out"
    assert main(["run", "resnet-mini", "--framework", "tensorflow", "--precision", "amp", "--device", "cpu",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mixed precision" in err[0] and "--precision fp32" in err[0]
    assert not out.exists()
