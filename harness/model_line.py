"""The model a run trains, for its banner: parameters and FLOPs per step, and for ``--model`` the reference's
beside them (trainmark/format/model_size.py words it as ``check`` and the report do)."""
from __future__ import annotations

from typing import Any, Callable

from trainmark.format.model_size import beside_reference, size_words
from trainmark.reference import registry
from trainmark.rules.reference_work import flops_per_step


class _WithModel:
    """The reference with another model builder: what the backend's FLOP counter builds for a ``--model``."""

    def __init__(self, ref, build_model: Callable[[], Any]):
        self._ref, self.build_model = ref, build_model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ref, name)


def model_size(prep) -> str:
    """``308,538 parameters, 5.32 GFLOP per step`` for the reference; for ``--model`` its own (counted on the meta
    device, before any data is loaded) beside the reference's shipped figures."""
    rules, batch = prep.rules, prep.hp["global_batch_size"]
    reference = registry.reference_structure(rules)["parameter_count"]
    ref_flops = flops_per_step(rules, batch)
    if not prep.opts.model:
        return size_words(reference, ref_flops)
    try:
        parameters = registry.reference_structure(rules, build=lambda _rules: prep.build_model())["parameter_count"]
        flops, _why = prep.backend.step_flops(_WithModel(prep.ref, prep.build_model), prep.hp, batch)
    except Exception:  # noqa: BLE001 - the builder's own error: its first trial records it
        parameters = flops = None
    return beside_reference(parameters, flops, rules.reference_model["id"], reference, ref_flops)
