"""Whether a run's settings are ones ``trainmark check`` accepts: one judgement for both sides.

``trainmark run`` asks before it writes anything and the checker asks of every trial's logged settings, so a
setting the check would reject (a batch size outside the calibrated range, a precision or hyperparameter the
rules forbid, a ``--hparam`` name no recipe reads) is refused in seconds with the same reason, not after hours of
training. It returns kinds, not finding codes: this layer sits below the checker, which names each kind's code
(``checker/checks/trials.py``: batch CONVERGE-003, precision HPARAM-003, hyperparameter HPARAM-001).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainmark.errors import UserError
from trainmark.format import labels
from trainmark.rules import convergence
from trainmark.rules.reference_code import implementation_of
from trainmark.rules.ruleset import BenchmarkRules

BATCH = "batch size"
PRECISION = "precision"
HYPERPARAMETER = "hyperparameter"
UNREAD = "unread hyperparameter"

# Rule-file hyperparameters that no recipe reads: they name what the harness builds, so a --hparam would log a
# value while something else runs. Each points at the option that does act (docs/open-division.md).
NAMED_BY_OPTION = {"opt_name": "--optimizer"}


@dataclass(frozen=True)
class Refusal:
    """One setting the check would reject: its kind, the setting, why, what is allowed and what was seen."""
    kind: str
    key: str
    message: str
    allowed: str
    seen: Any


class NotAdmissible(UserError):
    """``trainmark run``'s refusal: the settings a check would reject, before anything is written (exit 2)."""

    def __init__(self, rules: BenchmarkRules, found: list[Refusal]):
        self.rules, self.refusals = rules, found
        super().__init__(self.render())

    def render(self, code_of: dict[str, str] | None = None) -> str:
        """One line: each refusal with its finding code (``code_of``: kind -> code, given by the caller that may
        import the checker), what is allowed, and that nothing was written."""
        parts = [f"{(code_of or {}).get(r.kind, r.kind)}: {r.message} (allowed: {r.allowed})" for r in self.refusals]
        return (f"{self.rules.name} settings that 'trainmark check' would reject: {'; '.join(parts)}; "
                "nothing was written")


def precision_labels(rules: BenchmarkRules) -> list[str]:
    """The precisions a trial may log (``amp`` is logged as the dtype it resolved to: amp-bf16, amp-fp16)."""
    return [label for family in rules.precisions for label in labels.PRECISIONS.get(family, ())]


def batch_range(rules: BenchmarkRules, implementation: str) -> tuple[int, int] | None:
    """The smallest and largest global batch size the rules' convergence points of ``implementation`` judge
    (``resnet-mini``, ``resnet-mini@tensorflow``); None when it has none."""
    kept = convergence.ref_points(convergence.points_of(rules, implementation))
    return (kept[0].batch_size, kept[-1].batch_size) if kept else None


def calibrated_ranges(rules: BenchmarkRules) -> dict[str, tuple[int, int] | None]:
    """Each implementation the rules name (by framework) with its calibrated batch range."""
    return {framework: batch_range(rules, implementation_of(rules, framework)) for framework in rules.implementations}


def batch_refusal(rules: BenchmarkRules, batch: int, implementation: str) -> Refusal | None:
    """Closed division: a batch size whose epochs to target the rules cannot judge (outside the calibrated range,
    or an implementation without points). Rules without any points (a full-size benchmark not yet calibrated)
    refuse nothing: there the release lacks the evidence, not the submitter."""
    if not rules.convergence["points"]:
        return None
    span = batch_range(rules, implementation)
    if span is None:
        return Refusal(BATCH, "global_batch_size", f"no reference convergence points for {implementation} in rules "
                       f"{rules.version}: its epochs to target cannot be judged", "an implementation the rules "
                       "calibrated", implementation)
    low, high = span
    if low <= batch <= high:
        return None
    return Refusal(BATCH, "global_batch_size", f"global batch size {batch} lies outside {implementation}'s calibrated "
                   f"range {low}-{high} (rules {rules.version}): a closed result must lie within the calibrated batch "
                   "sizes", f"a global batch size in [{low}, {high}]", batch)


def allowed_text(rules: BenchmarkRules, key: str) -> str:
    """What the closed division allows for hyperparameter ``key``, in words."""
    spec = rules.hyperparameters.get(key)
    if spec is None:
        return f"one of {', '.join(sorted(rules.hyperparameters))}"
    rule = spec["closed"]
    if rule == "fixed":
        return f"{spec['default']!r} (fixed)"
    if isinstance(rule, dict) and "choices" in rule:
        return f"one of {rule['choices']}"
    if isinstance(rule, dict):
        return f"in [{rule['min']}, {rule['max']}]"
    return "any value"


def hyperparameter_refusals(rules: BenchmarkRules, hparams: dict[str, Any], division: str) -> list[Refusal]:
    """Closed: every value within the rules (``BenchmarkRules.violations``), one refusal per key."""
    return [Refusal(HYPERPARAMETER, key, problem, allowed_text(rules, key), value)
            for key, value in sorted(hparams.items()) for problem in rules.violations({key: value}, division)]


def unread_names(rules: BenchmarkRules, names: list[str]) -> list[Refusal]:
    """``--hparam`` names the benchmark's recipe never reads, in either division: a typo (``opt_base_lr``) or a
    label (``opt_name``) would be logged as if it had acted."""
    readable = sorted(k for k in rules.hyperparameters if k not in NAMED_BY_OPTION)
    out = []
    for name in sorted(set(names)):
        if name in NAMED_BY_OPTION:
            out.append(Refusal(UNREAD, name, f"{name} is not read by {rules.name}'s recipe: it records what runs; "
                               f"choose it with {NAMED_BY_OPTION[name]} (open division)", ", ".join(readable), name))
        elif name not in rules.hyperparameters:
            out.append(Refusal(UNREAD, name, f"{name} is not a hyperparameter {rules.name}'s recipe reads",
                               ", ".join(readable), name))
    return out


def refusals(rules: BenchmarkRules, hparams: dict[str, Any], *, division: str, precision: str | None,
             framework: str | None, given: list[str] = ()) -> list[Refusal]:
    """Every reason ``trainmark check`` would reject these settings (empty: admissible).

    ``hparams`` are the resolved hyperparameters, ``given`` the names passed with ``--hparam`` (None for a logged
    trial), ``precision`` the option (fp32, amp) or the logged label (amp-bf16), ``framework`` pytorch or
    tensorflow (None: PyTorch)."""
    out = unread_names(rules, list(given)) if division == "open" else []
    if precision is not None and precision not in rules.precisions and precision not in precision_labels(rules):
        out.append(Refusal(PRECISION, "precision", f"precision {precision} is not allowed by {rules.name}'s rules "
                           f"{rules.version}", ", ".join(rules.precisions), precision))
    if division != "closed":
        return out
    out += hyperparameter_refusals(rules, hparams, division)
    batch = hparams.get("global_batch_size")
    if type(batch) is int:
        refusal = batch_refusal(rules, batch, implementation_of(rules, framework))
        out += [refusal] if refusal else []
    return out


def batch_rule(rules: BenchmarkRules) -> str | None:
    """What the closed division allows for the global batch size, in words (``trainmark rules show``,
    docs/rules.md): the calibrated range per framework; None when the rules have no points (any size is judged
    by nothing, so none is refused)."""
    if not rules.convergence["points"]:
        return None
    spans = [f"{framework} {'none calibrated' if span is None else _span(span)}"
             for framework, span in calibrated_ranges(rules).items()]
    return "the calibrated range only: " + ", ".join(spans)


def _span(span: tuple[int, int]) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]} to {span[1]}"
