"""``trainmark profile --all``: every benchmark of a rules version profiled briefly, one line each: parameters,
FLOPs and bytes per sample, intensity, time share by bound (AIBench's workload characterization)."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from trainmark.harness.profile import session
from trainmark.harness.profile.output import characterization_row

ALL_BATCH = 32        # --all's batch size unless --batch-size is given: per-sample figures, short steps


def characterize(rule_set: dict, device, settings: session.ProfileSettings, *, ceilings: dict | None = None,
                 progress: Callable[[str], None] = lambda line: None) -> tuple[list[dict], list[tuple[str, str]]]:
    """(one characterization row per benchmark profiled, (benchmark, why not) for the others)."""
    from trainmark.reference import registry

    rows, skipped = [], []
    the_roofs = session.roofs(device, settings.framework, ceilings)
    for name in sorted(rule_set):
        rules = rule_set[name]
        if settings.framework not in rules.implementations:
            skipped.append((name, f"no {settings.framework} implementation"))
            continue
        batch = settings.batch_size or min(int(rules.defaults()["global_batch_size"]), ALL_BATCH)
        try:
            profile = session.profile_benchmark(rules, registry.for_rules(rules), device,
                                                replace(settings, batch_size=batch), the_roofs=the_roofs)
        except Exception as exc:  # noqa: BLE001 - one benchmark that cannot be profiled is a line, not the end
            skipped.append((name, f"{type(exc).__name__}: {exc}"[:200]))
            continue
        rows.append(characterization_row(profile))
        progress(f"  {name}: {len(profile['operators'])} operators, {profile['step']['time_s'] * 1e3:.1f} ms per step")
    return rows, skipped
