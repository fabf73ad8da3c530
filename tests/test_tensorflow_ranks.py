"""--framework tensorflow on two ranks under torchrun (gloo): each rank steps its half of the global batch, the
gradients are averaged through torch.distributed, one rank writes; the trial converges and passes the checker,
and its weights score the same BLEU in the PyTorch reference."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="TensorFlow not installed (pip install -e '.[tensorflow]')")


@needs_tf
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("diatheke") is None, reason="Debian diatheke + sword-text-kjv/-web not installed")
def test_transformer_mini_on_two_tensorflow_ranks_then_check(tmp_path, capsys):
    from test_tensorflow import transformer_mini_test_cut
    from tf_trials import checked_trial

    data, rules = transformer_mini_test_cut(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE), "TRAINMARK_TFDS_DIR": str(tmp_path / "tfds")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", "29541",
           str(HERE / "dist_launch.py"), "run", "transformer-mini", "--framework", "tensorflow", "--rules-dir",
           str(rules), "--data-dir", str(data), "--out", str(out), "--submitter", "ci", "--system-name", "ci-box",
           "--seed", "7", "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = out / "closed" / "ci" / "results" / "ci-box" / "transformer-mini"
    events = [json.loads(x.split(" ", 1)[1]) for x in (d / "result_1.txt").read_text().splitlines()]
    assert [e["key"] for e in events].count("run_stop") == 1  # one writer
    t, ref, model = checked_trial(out, rules, "transformer-mini", capsys)
    assert t["world_size"] == 2 and t["status"] == "converged"
    bleu = ref.finalize_metric(*ref.evaluate(model, ref.load_data(data), torch.device("cpu")))
    print(f"transformer-mini on 2 TensorFlow ranks: BLEU {t['final_metric']:.2f}; in PyTorch {bleu:.2f}")
    assert abs(bleu - t["final_metric"]) <= 1.0  # BLEU points: greedy ties may differ
