"""Adding a benchmark is a reference module plus a rule file that names it: shown from a temporary folder."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.rules import LATEST_VERSION

TEST_RULES = Path(__file__).parent / "rules"

REFERENCE = '''
import torch
import torch.nn.functional as F
from torch import nn

from trainmark.reference.base import Reference


class Stripes(Reference):
    """Two classes split by the sign of x0 - x1, 16 features."""
    name = "stripes"
    input_shape = (16,)
    num_classes = 2

    def build_model(self):
        return nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 2))

    def load_data(self, data_dir):
        g = torch.Generator().manual_seed(3)
        x = torch.randn(256, 16, generator=g)
        return x, (x[:, 0] > x[:, 1]).long()

    def train_samples(self, data):
        return len(data[1])

    def eval_samples(self, data):
        return len(data[1])

    def train_batches(self, data, epoch, batch_size, generator, rank=0, world=1):
        order = torch.randperm(len(data[1]), generator=generator)[rank::world]
        for i in range(len(order) // batch_size):
            idx = order[i * batch_size:(i + 1) * batch_size]
            yield data[0][idx], data[1][idx]

    def make_optimizer(self, model, hp, steps_per_epoch):
        opt = torch.optim.SGD(model.parameters(), lr=hp["opt_base_learning_rate"])
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)

    def criterion(self, output, targets, hp):
        return F.cross_entropy(output, targets)

    @torch.no_grad()
    def evaluate(self, model, data, device, rank=0, world=1):
        pred = model(data[0][rank::world].to(device)).argmax(1)
        return float((pred.cpu() == data[1][rank::world]).sum()), float(len(data[1][rank::world]))
'''


def test_a_benchmark_from_a_temporary_folder_runs_and_checks(tmp_path, monkeypatch, capsys):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "stripes_ref.py").write_text(REFERENCE)
    rules = tmp_path / "rules" / LATEST_VERSION
    rules.mkdir(parents=True)
    text = (TEST_RULES / LATEST_VERSION / "tiny-test.yaml").read_text()
    text = text.replace("benchmark: tiny-test", "benchmark: stripes").replace("  id: tiny-test\n", "  id: stripes\n")
    text = text.replace("  pytorch: tiny_reference:TinyTest\n", "  pytorch: stripes_ref:Stripes\n")
    (rules / "stripes.yaml").write_text(text)
    monkeypatch.syspath_prepend(str(plugins))
    out = tmp_path / "out"
    code = main(["run", "stripes", "--rules-dir", str(tmp_path / "rules"), "--out", str(out), "--seed", "11",
                 "--quiet", "--submitter", "acme", "--system-name", "box", "--data-dir", str(plugins)])
    assert code == 0, capsys.readouterr().err
    assert "stripes_ref" in sys.modules
    assert sorted(p.name for p in (out / "closed/acme/results/box/stripes").glob("result_*.txt")) == \
        ["result_1.txt", "result_2.txt", "result_3.txt"]
    capsys.readouterr()
    code = main(["check", str(out), "--rules-dir", str(tmp_path / "rules")])
    assert code == 0, capsys.readouterr().out


TWIN = '''
class StripesTwin:
    """Stands in for a Keras twin: the rule file names it, the TensorFlow backend would build it."""

    @classmethod
    def build_model(cls, ref):
        return "a keras model of " + ref.name
'''


def test_a_twin_is_a_module_the_rule_file_names(tmp_path, monkeypatch):
    """Under another framework, the rule file's ``implementations`` entry is the whole registration: the
    backend finds the twin there, and its released-code record covers the twin and the framework's helpers."""
    from trainmark.harness.frameworks.backend import implements
    from trainmark.reference import registry
    from trainmark.rules import get_rules
    from trainmark.rules.reference_code import reference_sources

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "stripes_ref.py").write_text(REFERENCE)
    (plugins / "stripes_twin.py").write_text(TWIN)
    rules_dir = tmp_path / "rules" / LATEST_VERSION
    rules_dir.mkdir(parents=True)
    text = (TEST_RULES / LATEST_VERSION / "tiny-test.yaml").read_text()
    text = text.replace("benchmark: tiny-test", "benchmark: stripes").replace("  id: tiny-test\n", "  id: stripes\n")
    text = text.replace("  pytorch: tiny_reference:TinyTest\n", "  pytorch: stripes_ref:Stripes\n")
    (rules_dir / "plain.yaml").write_text(text.replace("benchmark: stripes", "benchmark: plain").replace(
        "  id: stripes\n", "  id: plain\n"))
    (rules_dir / "stripes.yaml").write_text(text.replace(
        "  pytorch: stripes_ref:Stripes\n", "  pytorch: stripes_ref:Stripes\n  tensorflow: stripes_twin:StripesTwin\n"))
    monkeypatch.syspath_prepend(str(plugins))
    rules = get_rules("stripes", rules_root=tmp_path / "rules")
    sources = reference_sources(rules, "tensorflow")
    assert "stripes_twin" not in sys.modules                      # listed by reading, not by importing
    assert {"code/stripes_ref.py", "code/stripes_twin.py", "code/trainmark/reference/tf_import.py",
            "code/trainmark/reference/keras_twins/weights.py"} <= set(sources)
    assert "code/stripes_twin.py" not in reference_sources(rules)  # the PyTorch record: the reference only
    implements("tensorflow", rules)
    ref = registry.for_rules(rules)
    assert registry.twin(ref, "tensorflow").build_model(ref) == "a keras model of stripes"
    with pytest.raises(UserError, match=r"--framework tensorflow: plain has no TensorFlow reference yet "
                                        r"\(available: stripes\)"):
        implements("tensorflow", get_rules("plain", rules_root=tmp_path / "rules"))
