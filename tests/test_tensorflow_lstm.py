"""The full-size lstm under TensorFlow (issue 17): the two-layer Keras twin trains on WikiText-103 read from
Salesforce's zip through tensorflow-datasets (reference/tfds_builders/wikitext103.py), its trial passes
`trainmark check`, and its weights score the same perplexity in the PyTorch reference.

The zip is a miniature in the published layout (tests/test_tfds_builders.py's ``wikitext_zip``), pinned by
the test's copy of the shipped rules; the model is the full size (61,138,432 parameters, 267,736 words).
"""
import importlib.util

import pytest
import torch

from trainmark.cli import main

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="TensorFlow not installed (pip install -e '.[tensorflow]')")


@needs_tf
@pytest.mark.slow
def test_lstm_trains_under_tensorflow_from_the_wikitext_zip_then_passes_the_checker(tmp_path, capsys, monkeypatch):
    """A closed TensorFlow run (batch 4: three steps on the miniature) checks the zip, builds tfds's dataset
    from it, trains both LSTM layers, evaluates with every layer's state carried, and passes the checker with
    no code finding against the released ``lstm@tensorflow``; the PyTorch reference, holding the trial's
    weights and reading the unzipped files, scores the same perplexity."""
    from test_tfds_builders import _md5_pin, wikitext_zip
    from tf_trials import checked_trial, one_short_trial, rules_with_shipped

    folder, unzipped = wikitext_zip(tmp_path, copies=8)
    rules = rules_with_shipped(tmp_path, "lstm", one_short_trial(_md5_pin(folder), 1.0e9))  # 48.7: not on a miniature
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    out = tmp_path / "sub"
    assert main(["run", "lstm", "--framework", "tensorflow", "--rules-dir", str(rules), "--data-dir", str(folder),
                 "--batch-size", "4", "--out", str(out), "--submitter", "ci", "--system-name", "ci-box",
                 "--seed", "3", "--quiet"]) == 0
    t, ref, model = checked_trial(out, rules, "lstm", capsys)
    assert t["status"] == "converged" and t["flops_per_step"] > 0
    assert list((tmp_path / "tfds" / "trainmark_wikitext103").iterdir())
    weights = model.state_dict()
    assert weights["lstm.weight_ih_l1"].shape == (4096, 1024) and not weights["lstm.bias_hh_l1"].any()
    perplexity = ref.finalize_metric(*ref.evaluate(model, ref.load_data(unzipped), torch.device("cpu")))
    print(f"lstm under TensorFlow: perplexity {t['final_metric']:.2f}; the same weights in PyTorch {perplexity:.2f}")
    assert abs(perplexity / t["final_metric"] - 1) <= 1e-3
