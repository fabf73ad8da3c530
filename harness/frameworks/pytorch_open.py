"""The open division's options under PyTorch: an optimizer from ``torch.optim``, a learning-rate schedule from
``torch.optim.lr_scheduler`` and augmentation from ``torchvision.transforms.v2``, each by its class name.

The reference's recipe is built first (its parameter groups, learning rates, weight decay, gradient clipping and
schedule), then the named parts replace their counterparts: another optimizer takes the same groups at the
reference's peak rates, and keeps the reference's schedule unless ``--lr-schedule`` names one. ``check`` builds all
of it on a stand-in model and takes one step, so a wrong name or argument is refused before anything is written.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from trainmark.errors import UserError
from trainmark.format import mllog
from trainmark.harness.open_recipe import OpenRecipe, jsonable


def _named(module, name: str, base: type, what: str) -> type:
    """The class ``name`` of ``module`` that derives from ``base``, or a one-line error listing them."""
    found = getattr(module, name, None)
    if isinstance(found, type) and issubclass(found, base) and found is not base:
        return found
    choices = sorted(n for n, v in vars(module).items() if isinstance(v, type) and issubclass(v, base)
                     and v is not base and not n.startswith("_"))
    raise UserError(f"{what} {name!r}: not a class of {module.__name__}; choose from {', '.join(choices)}")


def optimizer_class(name: str) -> type:
    return _named(torch.optim, name, torch.optim.Optimizer, "--optimizer")


def schedule_class(name: str) -> type:
    return _named(torch.optim.lr_scheduler, name, torch.optim.lr_scheduler.LRScheduler, "--lr-schedule")


def transforms(recipe: OpenRecipe) -> list:
    """The named ``torchvision.transforms.v2`` classes, each built with its defaults."""
    from torchvision.transforms import v2

    out = []
    for name in recipe.augment:
        cls = _named(v2, name, v2.Transform, "--augment")
        try:
            out.append(cls())
        except TypeError as exc:
            raise UserError(f"--augment {name}: it needs arguments ({exc}); name a transform that has defaults, "
                            "e.g. RandomHorizontalFlip, RandomErasing, RandomAutocontrast") from None
    return out


def rebuild(recipe: OpenRecipe, optimizer, scheduler):
    """(optimizer, scheduler): the reference's, with the parts ``recipe`` names replaced."""
    if recipe.optimizer:
        args = dict(recipe.optimizer_args)
        lr, decay = args.pop("lr", None), args.pop("weight_decay", None)  # given: for every group
        groups = [{"params": g["params"], "lr": g.get("initial_lr", g["lr"]) if lr is None else lr,
                   "weight_decay": g.get("weight_decay", 0.0) if decay is None else decay}
                  for g in optimizer.param_groups]
        new = optimizer_class(recipe.optimizer)(groups, **args)
        for hook in getattr(optimizer, "_optimizer_step_pre_hooks", {}).values():  # the recipe's gradient clipping
            new.register_step_pre_hook(hook)
        if scheduler is not None and not recipe.lr_schedule:
            if not isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR):
                raise UserError(f"--optimizer: the reference's schedule ({type(scheduler).__name__}) cannot move to "
                                "another optimizer; name one with --lr-schedule")
            scheduler = torch.optim.lr_scheduler.LambdaLR(new, scheduler.lr_lambdas)
        optimizer = new
    if recipe.lr_schedule:
        for g in optimizer.param_groups:  # the new schedule starts from the peak rates, not the reference's step 0
            g["lr"] = g.pop("initial_lr", g["lr"])
        scheduler = schedule_class(recipe.lr_schedule)(optimizer, **recipe.lr_schedule_args)
    return optimizer, scheduler


def augmenter(recipe: OpenRecipe, ref) -> Callable[[Any], Any] | None:
    """A function of a training batch (on the device) that augments each sample's input, or None."""
    if not recipe.augment:
        return None
    from torchvision.transforms import v2

    compose = v2.Compose(transforms(recipe))

    def augment(batch):
        inputs, targets = ref.split_batch(batch)
        images = torch.stack([compose(x) for x in inputs[0]])
        if getattr(ref, "channels_last", False):
            images = images.contiguous(memory_format=torch.channels_last)
        return (images, *inputs[1:], targets)
    return augment


def record(recipe: OpenRecipe, optimizer, scheduler) -> list[tuple[str, Any]]:
    """The MLLOG settings of what was built: the classes in the trainer, their arguments."""
    out = []
    if recipe.optimizer:
        out.append((mllog.OPEN_OPTIMIZER, {"name": type(optimizer).__name__, "module": "torch.optim",
                                           "args": jsonable(recipe.optimizer_args)}))
    if recipe.lr_schedule:
        out.append((mllog.OPEN_LR_SCHEDULE, {"name": type(scheduler).__name__, "module": "torch.optim.lr_scheduler",
                                             "args": jsonable(recipe.lr_schedule_args), "stepped": "every step"}))
    if recipe.augment:
        out.append((mllog.OPEN_AUGMENT, {"names": list(recipe.augment), "module": "torchvision.transforms.v2",
                                         "applied": "per training sample, after the reference's own augmentation"}))
    return out


def check(recipe: OpenRecipe, ref, hp: dict[str, Any]) -> str | None:
    """Build the recipe on a stand-in model and take one step: a one-line UserError for anything wrong, before
    anything is written. Returns the optimizer's name as ``opt_name`` logs it (None: the reference's)."""
    if recipe.augment and len(getattr(ref, "input_shape", ())) != 3:
        raise UserError(f"--augment: torchvision transforms act on images; {ref.name} does not train on images")
    transforms(recipe)
    stand_in = nn.Linear(2, 2)
    try:
        optimizer, scheduler = rebuild(recipe, *ref.make_optimizer(stand_in, hp, 10))
        stand_in(torch.ones(1, 2)).sum().backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - the library's own words for a wrong argument, on one line
        given = " ".join(f for f in recipe.flags() if f in ("--optimizer", "--lr-schedule"))
        raise UserError(f"{given or 'the open recipe'}: building it failed: {type(exc).__name__}: {exc}") from None
    return type(optimizer).__name__.lower() if recipe.optimizer else None
