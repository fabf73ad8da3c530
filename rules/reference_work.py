"""The work a closed-division trial does, per rules version: ``rules/<version>/reference-work.json`` (issue 38).

WORK-001 and WORK-002 weigh a window's time against the work done in it: samples trained and evaluated,
FLOPs per step. Read from the MLLOG, each of those is the submitter's word (raising ``eval_samples`` or
lowering ``trainmark_flops_per_step`` made a forged time look possible). The rules know them: the dataset
sizes from the rules' data, the reference model's FLOPs per sample measured once per rules version with the
project's FLOP counter. ``trainmark rules flops --rules-version V`` writes the file (like the code hashes),
naming the command and where each number comes from; the checker derives every figure from it and reports
a logged copy that disagrees.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from trainmark.rules.ruleset import RULES_ROOT

WORK_FILE = "reference-work.json"


def work_file(version: str, rules_root: Path | None = None) -> Path:
    return Path(rules_root or RULES_ROOT) / version / WORK_FILE


@functools.lru_cache(maxsize=16)
def load(version: str, rules_root: Path | None = None) -> dict[str, dict] | None:
    """Each benchmark's entry ({train_samples, eval_samples, flops_per_sample, ...}); None without a file (a
    rules folder of one's own may ship none: the checks then say what they could not derive)."""
    path = work_file(version, rules_root)
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))["benchmarks"]


def render(version: str, benchmarks: dict[str, dict], measured_on: str) -> str:
    return json.dumps({"written_by": f"trainmark rules flops --rules-version {version}", "measured_on": measured_on,
                       "benchmarks": benchmarks}, indent=1, sort_keys=False) + "\n"


def flops_per_step(rules, global_batch_size: object = None) -> int | None:
    """The reference's FLOPs of one training step at ``global_batch_size`` (default: the rules'): its measured
    FLOPs per sample times the batch; None where none was measured. The banner, ``check`` (CONFORM-003) and the
    report name an open-division model's FLOPs beside it (issue 39)."""
    try:
        entry = (load(rules.version, rules.path.parent.parent) or {}).get(rules.name) or {}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    per_sample = entry.get("flops_per_sample") if isinstance(entry, dict) else None
    batch = global_batch_size if type(global_batch_size) is int and global_batch_size > 0 \
        else rules.defaults().get("global_batch_size")
    if not isinstance(per_sample, (int, float)) or isinstance(per_sample, bool) or type(batch) is not int:
        return None
    return round(per_sample * batch)
