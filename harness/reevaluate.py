"""``trainmark check --reevaluate``: a trial's trained weights scored again on the evaluation set.

A log can say anything; the weights a trial saved either reach the logged metric or they do not. This module
loads them into the model the trusted rules name (PyTorch's reference, or a TensorFlow trial's Keras twin
through its layout mapping) and runs the framework trainer's own evaluation on the rules' evaluation data
(harness/frameworks/*_reevaluate.py). Nothing from a submission names code: the class comes from the rule file
(reference/registry.py), the weights are read with safetensors only, and the caller hands over the bytes it read
from the folder (the checker's safe reader), so this module opens no file of the submission.

The model and data are built once per benchmark, rules version, framework and precision, then each trial's
weights are loaded into that model: a mini's re-evaluation is an evaluation pass, seconds on a CPU.
``Reevaluation`` is the evaluator ``trainmark check`` is handed (checker/checks/reeval.py's ``Evaluator``): the
checker chooses the trials and judges the metrics, this module only measures.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from trainmark.errors import UserError

# framework -> "module:class" of its evaluator (imported only when a trial of that framework is re-evaluated)
EVALUATORS = {"pytorch": "trainmark.harness.frameworks.pytorch_reevaluate:PyTorchEvaluator",
              "tensorflow": "trainmark.harness.frameworks.tensorflow_reevaluate:TensorFlowEvaluator"}


@dataclass
class Measurement:
    metric: float | None      # the re-measured metric (None: not measured)
    seconds: float            # loading the weights and evaluating them (the model and data not counted)
    refused: str | None = None  # why these weights could not be evaluated


def evaluation_precision(logged: object) -> str:
    """The ``--precision`` a trial's logged precision label comes from (fp32; amp-bf16 and amp-fp16: amp)."""
    return "amp" if isinstance(logged, str) and logged.startswith("amp") else "fp32"


@dataclass
class Reevaluation:
    """Evaluators shared by every trial checked: ``data_dirs`` maps a benchmark (or None: every benchmark) to
    its data folder, as ``--data-dir`` does for ``trainmark run``; absent, the rules' env var or default."""
    data_dirs: dict[str | None, Path] = field(default_factory=dict)
    device: str = "cpu"
    # False: every trial through the PyTorch reference, a TensorFlow trial too (its weights are saved in the
    # reference's names and layouts; the committed TensorFlow examples give exactly their logged metric), which
    # spares importing TensorFlow for the default check; True: a TensorFlow trial through its Keras twin
    twins: bool = True
    setup_seconds: dict[tuple, float] = field(default_factory=dict)  # building each evaluator (data and model)
    _evaluators: dict[tuple, object] = field(default_factory=dict)
    _data: dict[tuple, tuple[Path, str | None]] = field(default_factory=dict)

    def data_problem(self, rules) -> str | None:
        """Why the benchmark's evaluation data cannot be used (missing, or not the rules' checksums: a metric
        measured on other data proves nothing), in one line; None when it can. Checked once per rules file."""
        from trainmark.rules.datasets import resolve_data_dir, verify_for

        key = (rules.name, rules.version, str(rules.path))
        if key not in self._data:
            folder = resolve_data_dir(rules, self.data_dirs.get(rules.name, self.data_dirs.get(None)))
            try:
                problems, _ = verify_for(rules, folder)
            except UserError as exc:  # not there at all: the rules say where to get it
                problems = [str(exc)]
            self._data[key] = (folder, None if not problems else (
                f"re-evaluation of {rules.name}: dataset in {folder} does not match rules {rules.version}: "
                f"{'; '.join(problems[:3])} (pass --data-dir [{rules.name}=]DIR)"))
        return self._data[key][1]

    def data_dir(self, rules) -> Path:
        """The benchmark's checked evaluation data; a one-line UserError when it cannot be used."""
        problem = self.data_problem(rules)
        if problem is not None:
            raise UserError(problem)
        return self._data[(rules.name, rules.version, str(rules.path))][0]

    def evaluator(self, rules, framework: str, precision: str):
        """The evaluator of one benchmark under ``framework`` at ``precision``, built on first use."""
        from trainmark.harness.frameworks.backend import available, implements
        from trainmark.harness.frameworks.quiet_import import import_quietly
        from trainmark.reference import registry

        key = (rules.name, rules.version, str(rules.path), framework, precision)
        if key not in self._evaluators:
            available(framework)
            implements(framework, rules)
            data_dir = self.data_dir(rules)
            start = time.perf_counter()
            module, _, cls = EVALUATORS[framework].partition(":")
            kind = getattr(import_quietly(module), cls)  # TensorFlow's start-up noise hidden, as in a run
            device = self.device if framework == "pytorch" else "cpu"  # TensorFlow runs on the CPU here
            self._evaluators[key] = kind(registry.for_rules(rules), rules, data_dir, device, precision)
            self.setup_seconds[key] = time.perf_counter() - start
        return self._evaluators[key]

    def measure(self, rules, framework: object, precision: object, weights: bytes) -> Measurement:
        """The metric ``weights`` (a model.safetensors' bytes) reach for a trial that logged ``framework`` and
        ``precision``: a logged name only chooses among the evaluators of the rules' own implementations
        (PyTorch and fp32 where it names none of them). Weights that do not fit the model come back as
        ``refused``, with the reason."""
        from trainmark.harness.frameworks.pytorch_reevaluate import WeightsRefused

        known = self.twins and framework in EVALUATORS and framework in rules.implementations
        framework = framework if known else "pytorch"
        evaluator = self.evaluator(rules, framework, evaluation_precision(precision))
        start = time.perf_counter()
        try:
            metric = evaluator.measure(weights)
        except WeightsRefused as exc:
            return Measurement(None, time.perf_counter() - start, f"under {framework}: {exc}")
        return Measurement(metric, time.perf_counter() - start)
