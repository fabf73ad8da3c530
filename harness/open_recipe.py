"""The open division's relaxations of the reference recipe, as ``trainmark run`` options (docs/open-division.md).

The rules relax the optimizer, the learning-rate schedule and data augmentation in the open division; each has an
option that acts: ``--optimizer NAME`` (+ ``--optimizer-arg KEY=VALUE``), ``--lr-schedule NAME``
(+ ``--lr-schedule-arg``) and ``--augment NAME[,NAME]``, taken by name from the framework's own library. This
module holds them without importing a framework; ``frameworks/pytorch_open.py`` and ``tensorflow_open.py`` build
them (first on a stand-in model, before anything is written) and say what the MLLOG records.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trainmark.errors import UserError


@dataclass(frozen=True)
class OpenRecipe:
    optimizer: str | None = None                 # a class of torch.optim (or keras.optimizers), by name
    optimizer_args: dict[str, Any] = field(default_factory=dict)
    lr_schedule: str | None = None               # a class of torch.optim.lr_scheduler, stepped once per step
    lr_schedule_args: dict[str, Any] = field(default_factory=dict)
    augment: tuple[str, ...] = ()                # classes of torchvision.transforms.v2, applied per sample

    def flags(self) -> list[str]:
        """The options given, as the user typed them (for messages)."""
        return [flag for flag, given in (("--optimizer", self.optimizer), ("--optimizer-arg", self.optimizer_args),
                                         ("--lr-schedule", self.lr_schedule),
                                         ("--lr-schedule-arg", self.lr_schedule_args), ("--augment", self.augment))
                if given]

    def refuse_in_closed(self, division: str) -> None:
        """The closed division trains the reference recipe: none of these options belongs there."""
        if division == "closed" and self.flags():
            raise UserError(f"{', '.join(self.flags())} change the reference recipe: that is the open division "
                            "(add --division open)")
        if self.optimizer_args and not self.optimizer:
            raise UserError("--optimizer-arg needs --optimizer NAME (the arguments are that optimizer's)")
        if self.lr_schedule_args and not self.lr_schedule:
            raise UserError("--lr-schedule-arg needs --lr-schedule NAME (the arguments are that schedule's)")


def key_values(pairs: list[str], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` options as keyword arguments; a value is JSON where it parses (0.9, true, [0.9, 0.99]),
    else a string."""
    out: dict[str, Any] = {}
    for text in pairs:
        key, sep, raw = text.partition("=")
        if not sep or not key.isidentifier():
            raise UserError(f"{flag} {text!r}: expected KEY=VALUE, e.g. {flag} betas=[0.9,0.99]")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def names(text: str | None) -> tuple[str, ...]:
    """``--augment A,B`` as names, in order."""
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def jsonable(value: Any) -> Any:
    """An argument as the MLLOG can hold it (a tuple as a list; anything else JSON lacks as its text)."""
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)
