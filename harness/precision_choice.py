"""``--precision auto``: amp where the rules calibrate this reference in amp-bf16 at the run's batch size and the
device computes bf16 in its own units (a CPU's AVX512-BF16 or AMX, a GPU's tensor cores), fp32 otherwise.

Chosen before anything runs and said in the banner, so bf16 is never used silently and never where the rules
have no band to judge its curve by (docs/calibration.md); ``--precision amp`` or ``fp32`` overrides it.
"""
from __future__ import annotations

from trainmark.rules.convergence import band_for
from trainmark.rules.reference_code import implementation_of

AUTO = "auto"
AMP_LABEL = "amp-bf16"   # the precision a CPU's or bf16 GPU's amp logs, and the rules' band is keyed by


def choose(rules, batch_size: int, framework: str, device) -> tuple[str, str]:
    """(``amp`` or ``fp32``, why): the precision ``--precision auto`` trains in."""
    implementation = implementation_of(rules, framework)
    if not band_for(rules, batch_size, AMP_LABEL, framework):
        return "fp32", f"auto: rules {rules.version} calibrate {implementation} at batch {batch_size} in fp32 only"
    from trainmark.harness.frameworks.pytorch_device import native_bf16

    # a twin's amp runs on accelerators only (its backend refuses it on a CPU)
    native = None if framework != "pytorch" and str(device).startswith("cpu") else native_bf16(device)
    if not native:
        return "fp32", "auto: no bf16 units on this device (--precision amp would emulate bf16 at fp32's speed)"
    return "amp", f"auto: rules {rules.version} calibrate {implementation} in {AMP_LABEL}, and {native}"
