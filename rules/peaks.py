"""The sourced peak FLOP rates, as data the checker may read: ``rules/peaks.json`` (issue 38).

harness/measure/peaks.py holds the table the harness divides achieved TFLOPS by (datasheet figures with
their sources, CPU FLOPs per cycle per instruction set). The checker may not import the harness (the
layers, docs/architecture.md), and a peak a submission writes into trial.json is the submitter's word, so
``trainmark rules peaks`` writes the same table here as JSON (a test fails when they drift), and WORK-002
judges an epoch against the peak of the accelerator the system description names.

For a CPU the system description gives no instruction sets, so the bound is the highest FLOPs per cycle any
instruction set of the table reaches for the precision (AVX-512's 64 for fp32, AMX's 1024 for bf16/fp16) among
those the named vendor's CPUs can have (``vendor_lacks``: no AMD CPU has AMX or AVX512-FP16, no Arm CPU any x86
set; a name the table cannot place keeps every row), and
its clock is the fastest any CPU boosts to (``MAX_CPU_CLOCK_GHZ``), since the description's frequency is the
clock when it was written (an idle core's, on bare metal): an upper bound, which is what "physically
impossible" needs, and never below an honest run's own peak.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from trainmark.rules.ruleset import RULES_ROOT

PEAKS_FILE = RULES_ROOT / "peaks.json"
MAX_CPU_CLOCK_GHZ = 6.2   # the fastest boost clock of a shipping CPU (Intel Core i9-14900KS, 2024 datasheet)
RECORD_CPU_CLOCK_GHZ = 9.2  # above the overclocking record (9.12 GHz, a Core i9-14900KF on liquid helium, 2024):
#                             a described clock beyond it is not a clock, and would only loosen the bound
MAX_NAME = 200   # a device name from a submission, clipped before any regex sees it
# the dtypes a run's precision may execute in (fp32 on NVIDIA may run as tf32: the higher bounds it)
PRECISION_DTYPES = {"fp32": ("fp32", "tf32"), "amp-bf16": ("bf16",), "amp-fp16": ("fp16",), "bf16": ("bf16",),
                    "fp16": ("fp16",), "amp": ("bf16", "fp16")}


@dataclass(frozen=True)
class Peak:
    """The bound WORK-002 judges against: TFLOP/s of the whole system, and how it was found."""
    tflops: float
    source: str


# Instruction sets a vendor's CPUs have never implemented, by a pattern of the processor's name (lower case).
# AMX and AVX512-FP16 are Intel's alone (Intel's ISA Extensions Reference; AMD's Zen 4/5 add AVX-512 with BF16
# and VNNI only: AMD64 Architecture Programmer's Manual, 2024); an Arm core runs none of the x86 sets.
X86_SETS = {"amx_bf16", "amx_fp16", "avx512_fp16", "avx512_bf16", "avx512f", "avx2", "fma", "avx", "sse2"}
VENDOR_LACKS = ((re.compile(r"\b(amd|epyc|ryzen|threadripper)\b"), frozenset({"amx_bf16", "amx_fp16", "avx512_fp16"})),
                (re.compile(r"\b(arm|aarch64|neoverse|graviton\d*|altra|grace|cobalt|axion)\b"), frozenset(X86_SETS)))


def vendor_lacks(processor: str) -> frozenset:
    """The instruction sets the named processor's vendor never shipped (empty where the name places none)."""
    name = processor[:MAX_NAME].lower()
    return next((sets for pattern, sets in VENDOR_LACKS if pattern.search(name)), frozenset())


class PeakTable:
    def __init__(self, data: dict):
        self.devices = data["devices"]
        self.cpu_flops_per_cycle: dict[str, list] = data["cpu_flops_per_cycle"]
        self._patterns = [(re.compile(d["match"]), d) for d in self.devices]

    def device(self, name: str) -> dict | None:
        """The entry of an accelerator named like torch/the system description names it; None if unknown."""
        norm = re.sub(r"[-_]", " ", name[:MAX_NAME].strip().lower())
        return next((d for pattern, d in self._patterns if pattern.search(norm)), None)

    def device_peak(self, name: str, precision: str, count: int) -> Peak | None:
        entry = self.device(name)
        rates = [entry["tflops"][d] for d in _dtypes(precision) if d in entry["tflops"]] if entry else []
        if not rates:
            return None
        return Peak(max(rates) * count, f"{count} x {entry['name']} at {max(rates):g} TFLOPS ({entry['source']})")

    def cpu_peak(self, cores: int, ghz: float, precision: str, processor: str = "") -> Peak | None:
        """The most ``cores`` of the named processor can do: its vendor's best instruction set, the fastest clock."""
        lacks = vendor_lacks(processor)
        rows = [row for d in (*_dtypes(precision), "fp32") for row in self.cpu_flops_per_cycle.get(d, ())]
        best = max((fpc for isa, fpc in rows if not lacks & set(isa)), default=0)  # no bf16 ISA: the fp32 rate
        if not best or cores <= 0:
            return None
        ghz = ghz if math.isfinite(ghz) and MAX_CPU_CLOCK_GHZ < ghz <= RECORD_CPU_CLOCK_GHZ else MAX_CPU_CLOCK_GHZ
        of = f"{processor[:60]!r}'s vendor" if lacks else "any instruction set"
        return Peak(cores * ghz * best / 1000, f"{cores} cores x {ghz:g} GHz (the fastest boost clock) x {best} "
                                                f"FLOP/cycle (the most {of} does for {precision})")


def _dtypes(precision: str) -> tuple[str, ...]:
    return PRECISION_DTYPES.get(precision, ("fp32", "tf32", "bf16", "fp16"))


def load(path: Path = PEAKS_FILE) -> PeakTable:
    return PeakTable(json.loads(path.read_text(encoding="utf-8")))


def render(devices: list[dict], cpu_flops_per_cycle: dict) -> str:
    """The text of rules/peaks.json (``trainmark rules peaks`` writes it from harness/measure/peaks.py)."""
    return json.dumps({"written_by": "trainmark rules peaks (from trainmark.harness.measure.peaks)",
                       "devices": devices, "cpu_flops_per_cycle": cpu_flops_per_cycle}, indent=1) + "\n"
