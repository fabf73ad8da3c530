"""Peak FLOP rates to divide achieved TFLOPS by: datasheet figures for accelerators, derived ones for CPUs.

Every figure is DENSE (vendors print 2:4-sparse figures, twice as large, with an asterisk; we
halve those) and in TFLOP/s per device (one GPU, one TPU chip, one CPU = the cores we may use).
``fp32`` is the non-tensor (CUDA core / vector) rate on NVIDIA and the matrix-core rate on AMD
(where the datasheet gives one: it is the rate an fp32 GEMM can reach); ``tf32``, ``bf16``,
``fp16`` and ``fp8`` are tensor/matrix-core rates. A dtype missing from an entry means the
datasheet gives no figure for it (e.g. no bf16 on V100, no fp32 for TPUs).

CPU peaks are *derived*, not published: cores × clock × FLOPs per cycle per core, where the
FLOPs per cycle come from the instruction sets ``/proc/cpuinfo`` lists (see ``CPU_FLOPS_PER_CYCLE``).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["DevicePeak", "TABLE", "lookup", "cpu_peak", "device_peak", "peak_dtype",
           "CPU_FLOPS_PER_CYCLE"]


@dataclass(frozen=True)
class DevicePeak:
    """Peak rates of one device: ``tflops`` by dtype, ``mem_bw_gbs`` in GB/s, where they come from."""

    key: str
    name: str
    tflops: dict[str, float]
    source: str
    kind: str = "datasheet"              # "datasheet" or "derived"
    mem_bw_gbs: float | None = None
    note: str = ""
    match: str = ""                      # regex on the lower-cased device name
    detail: dict = field(default_factory=dict)

    def peak(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)

    def peak_for_precision(self, precision: str, device_type: str = "cuda") -> tuple[str, float | None]:
        """(dtype, TFLOP/s) a run in ``precision`` should be compared with (tf32 falls back to fp32)."""
        dtype = peak_dtype(precision, device_type)
        if dtype == "tf32" and "tf32" not in self.tflops:
            dtype = "fp32"
        return dtype, self.tflops.get(dtype)

    def as_dict(self) -> dict:
        return {"key": self.key, "name": self.name, "kind": self.kind, "tflops": dict(self.tflops),
                "mem_bw_gbs": self.mem_bw_gbs, "source": self.source, "note": self.note,
                **({"detail": self.detail} if self.detail else {})}


def _half(sparse: float) -> float:
    """Dense rate from a datasheet figure printed 'with sparsity'."""
    return round(sparse / 2, 2)


_NV_H100 = ("NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/, "
            "'H100 SXM / H100 NVL' table; tensor figures printed with sparsity, halved here)")
_NV_H100_PCIE = ("NVIDIA H100 PCIe product brief PB-11133-001 and H100 datasheet (2022 edition, "
                 "'H100 PCIe' column; tensor figures printed with sparsity, halved here)")
_NV_H200 = ("NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/, "
            "'H200 SXM / H200 NVL' table; tensor figures printed with sparsity, halved here)")
_NV_A100 = ("NVIDIA A100 Tensor Core GPU datasheet, nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf "
            "(same FLOPS for SXM and PCIe, 40 GB and 80 GB; the second figures are with sparsity)")
_NV_V100 = ("NVIDIA Tesla V100 GPU Accelerator datasheet, volta-v100-datasheet-update-us-1165301-r5.pdf "
            "(Tensor Performance = fp16 tensor core, dense)")
_NV_BLACKWELL = ("NVIDIA HGX platform / GB200 NVL72 specifications (nvidia.com/en-us/data-center/hgx/, "
                 "'Individual Blackwell GPU specifications'; tensor figures with sparsity, halved here)")
_NV_L40S = ("NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s/; '*' figures with sparsity, "
            "dense column used)")
_NV_L4 = ("NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4/; "
          "'*' figures with sparsity, halved here)")
_AMD_MI300 = ("AMD Instinct MI300X / MI325X accelerator data sheets (amd.com/en/products/accelerators/"
              "instinct/mi300/...; 'Peak ... Performance' rows, not the 'with Structured Sparsity' rows)")
_AMD_MI250 = ("AMD Instinct MI250X accelerator data sheet (amd.com/en/products/accelerators/instinct/"
              "mi200/mi250x.html; Peak FP32 Matrix 95.7 TF, Peak FP16/BF16 383 TF)")
_NV_B300 = ("NVIDIA HGX B300 specifications (nvidia.com/en-us/data-center/hgx/, 'HGX B300' column divided by "
            "its 8 GPUs; tensor figures with sparsity, halved here)")
_AMD_MI355 = ("AMD Instinct MI355X accelerator data sheet (amd.com/en/products/accelerators/instinct/mi350/"
              "mi355x.html; 'Peak ... Performance' rows, not the 'with Structured Sparsity' rows; no TF32)")
_INTEL_GAUDI = ("Intel Gaudi {} AI accelerator white paper / product brief (intel.com, 'Gaudi {}' MME "
                "BF16 and FP8 dense throughput)")
_INTEL_MAX = ("Intel Data Center GPU Max Series product brief (intel.com, 'Max 1550' / 'Max 1100' peak "
              "vector FP32 and XMX TF32/BF16/FP16 throughput)")
_GOOGLE_TPU = "Google Cloud TPU documentation, system architecture page of each version (cloud.google.com/tpu/docs/{})"

# Order matters: the first entry whose regex matches wins, so variants come before the family.
TABLE: tuple[DevicePeak, ...] = (
    # ------------------------------------------------------------------ NVIDIA
    DevicePeak("nvidia-b300", "NVIDIA B300 (HGX, Blackwell Ultra)", {
        "fp32": 75.0, "tf32": _half(2200), "bf16": _half(4500), "fp16": _half(4500), "fp8": _half(9000)},
        _NV_B300, mem_bw_gbs=8000, match=r"\bg?b300\b"),
    DevicePeak("nvidia-gb200", "NVIDIA GB200 (Blackwell GPU)", {
        "fp32": 80.0, "tf32": _half(2500), "bf16": _half(5000), "fp16": _half(5000), "fp8": _half(10000)},
        _NV_BLACKWELL, mem_bw_gbs=8000, match=r"\bgb200\b"),
    DevicePeak("nvidia-b200", "NVIDIA B200 (HGX, 1000 W)", {
        "fp32": 75.0, "tf32": _half(2200), "bf16": _half(4500), "fp16": _half(4500), "fp8": _half(9000)},
        _NV_BLACKWELL, mem_bw_gbs=7700, match=r"\bb200\b",
        note="HGX B200 figures; the GB200 NVL72 board runs the same GPU faster (see nvidia-gb200)"),
    DevicePeak("nvidia-h200-nvl", "NVIDIA H200 NVL", {
        "fp32": 60.0, "tf32": _half(835), "bf16": _half(1671), "fp16": _half(1671), "fp8": _half(3341)},
        _NV_H200, mem_bw_gbs=4800, match=r"\bh200\b.*\bnvl\b"),
    DevicePeak("nvidia-h200-sxm", "NVIDIA H200 SXM", {
        "fp32": 67.0, "tf32": _half(989), "bf16": _half(1979), "fp16": _half(1979), "fp8": _half(3958)},
        _NV_H200, mem_bw_gbs=4800, match=r"\bh200\b",
        note="torch reports 'NVIDIA H200' for the SXM part"),
    DevicePeak("nvidia-h100-nvl", "NVIDIA H100 NVL", {
        "fp32": 60.0, "tf32": _half(835), "bf16": _half(1671), "fp16": _half(1671), "fp8": _half(3341)},
        _NV_H100, mem_bw_gbs=3900, match=r"\bh100\b.*\bnvl\b"),
    DevicePeak("nvidia-h100-pcie", "NVIDIA H100 PCIe", {
        "fp32": 51.0, "tf32": _half(756), "bf16": _half(1513), "fp16": _half(1513), "fp8": _half(3026)},
        _NV_H100_PCIE, mem_bw_gbs=2000, match=r"\bh100\b.*\bpcie\b"),
    DevicePeak("nvidia-h100-sxm", "NVIDIA H100 SXM", {
        "fp32": 67.0, "tf32": _half(989), "bf16": _half(1979), "fp16": _half(1979), "fp8": _half(3958)},
        _NV_H100, mem_bw_gbs=3350, match=r"\bh100\b",
        note="torch reports e.g. 'NVIDIA H100 80GB HBM3' for the SXM part"),
    DevicePeak("nvidia-a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", {
        "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        _NV_A100, mem_bw_gbs=1935, match=r"\ba100\b.*(pcie.*80\s*gb|80\s*gb.*pcie)"),
    DevicePeak("nvidia-a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", {
        "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        _NV_A100, mem_bw_gbs=1555, match=r"\ba100\b.*pcie"),
    DevicePeak("nvidia-a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", {
        "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        _NV_A100, mem_bw_gbs=2039, match=r"\ba100\b.*80\s*gb"),
    DevicePeak("nvidia-a100-sxm-40gb", "NVIDIA A100 SXM4 40GB", {
        "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        _NV_A100, mem_bw_gbs=1555, match=r"\ba100\b"),
    DevicePeak("nvidia-v100s-pcie", "NVIDIA V100S PCIe", {"fp32": 16.4, "fp16": 130.0},
               _NV_V100, mem_bw_gbs=1134, match=r"\bv100s\b"),
    DevicePeak("nvidia-v100-pcie", "NVIDIA V100 PCIe", {"fp32": 14.0, "fp16": 112.0},
               _NV_V100, mem_bw_gbs=900, match=r"\bv100\b.*\bpcie\b"),
    DevicePeak("nvidia-v100-sxm2", "NVIDIA V100 SXM2", {"fp32": 15.7, "fp16": 125.0},
               _NV_V100, mem_bw_gbs=900, match=r"\bv100\b"),
    DevicePeak("nvidia-l40s", "NVIDIA L40S", {
        "fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0},
        _NV_L40S, mem_bw_gbs=864, match=r"\bl40s\b"),
    DevicePeak("nvidia-l4", "NVIDIA L4", {
        "fp32": 30.3, "tf32": _half(120), "bf16": _half(242), "fp16": _half(242), "fp8": _half(485)},
        _NV_L4, mem_bw_gbs=300, match=r"\bl4\b"),
    # ------------------------------------------------------------------ AMD
    DevicePeak("amd-mi355x", "AMD Instinct MI355X", {
        "fp32": 157.3, "bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.2},
        _AMD_MI355, mem_bw_gbs=8000, match=r"\bmi35[05]x?\b", note="fp32 = Peak FP32 Matrix"),
    DevicePeak("amd-mi325x", "AMD Instinct MI325X", {
        "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
        _AMD_MI300, mem_bw_gbs=6000, match=r"\bmi325x?\b", note="fp32 = Peak FP32 Matrix"),
    DevicePeak("amd-mi300x", "AMD Instinct MI300X", {
        "fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
        _AMD_MI300, mem_bw_gbs=5300, match=r"\bmi300x?\b", note="fp32 = Peak FP32 Matrix"),
    DevicePeak("amd-mi250x", "AMD Instinct MI250X (whole OAM, both dies)", {
        "fp32": 95.7, "bf16": 383.0, "fp16": 383.0},
        _AMD_MI250, mem_bw_gbs=3276.8, match=r"\bmi250x?\b",
        note="fp32 = Peak FP32 Matrix (vector 47.9). ROCm shows each of the two dies as one device: "
             "a single torch device has half these rates"),
    # ------------------------------------------------------------------ Intel
    DevicePeak("intel-gaudi3", "Intel Gaudi 3", {"bf16": 1835.0, "fp8": 1835.0},
               _INTEL_GAUDI.format(3, 3), mem_bw_gbs=3700, match=r"gaudi\s*3|\bhl\s*32[58]"),
    DevicePeak("intel-gaudi2", "Intel Gaudi 2", {"bf16": 432.0, "fp8": 865.0},
               _INTEL_GAUDI.format(2, 2), mem_bw_gbs=2450, match=r"gaudi\s*2|\bhl\s*225"),
    DevicePeak("intel-max-1550", "Intel Data Center GPU Max 1550", {
        "fp32": 52.4, "tf32": 419.4, "bf16": 838.9, "fp16": 838.9},
        _INTEL_MAX, mem_bw_gbs=3276.8, match=r"\bmax\s*1550\b"),
    DevicePeak("intel-max-1100", "Intel Data Center GPU Max 1100", {
        "fp32": 22.2, "tf32": 177.6, "bf16": 355.2, "fp16": 355.2},
        _INTEL_MAX, mem_bw_gbs=1228.8, match=r"\bmax\s*1100\b"),
    # ------------------------------------------------------------------ Google TPU (bf16 only)
    DevicePeak("google-tpu-v6e", "Google TPU v6e (Trillium)", {"bf16": 918.0},
               _GOOGLE_TPU.format("v6e"), mem_bw_gbs=1638, match=r"tpu\s*v6|trillium"),
    DevicePeak("google-tpu-v5p", "Google TPU v5p", {"bf16": 459.0},
               _GOOGLE_TPU.format("v5p"), mem_bw_gbs=2765, match=r"tpu\s*v5\s*p|tpu\s*v5$"),
    DevicePeak("google-tpu-v5e", "Google TPU v5e", {"bf16": 197.0},
               _GOOGLE_TPU.format("v5e"), mem_bw_gbs=819, match=r"tpu\s*v5\s*(e|lite)"),
    DevicePeak("google-tpu-v4", "Google TPU v4", {"bf16": 275.0},
               _GOOGLE_TPU.format("v4"), mem_bw_gbs=1200, match=r"tpu\s*v4"),
)


def _normalise(name: str) -> str:
    return re.sub(r"[-_]", " ", name.strip().lower())


def lookup(device_name: str) -> DevicePeak | None:
    """Datasheet entry for a device name such as ``torch.cuda.get_device_name()``; None if unknown."""
    norm = _normalise(device_name)
    for entry in TABLE:
        if re.search(entry.match, norm):
            return entry
    return None


# ---------------------------------------------------------------- CPU, derived

# FLOPs per cycle per core, best instruction set first (2 FLOPs per fused multiply-add).
# Assumes two vector FMA pipes per core, as on Intel server cores since Skylake-SP Gold 6xxx/Platinum
# and AMD Zen 2+ (Zen 4 executes 512-bit ops in two halves: its AVX-512 rate is the AVX2 one, so
# on Zen 4 the fp32/bf16 figures below are an upper bound, twice its real peak).
#   fp32 avx512f: 2 pipes × 16 lanes × 2 = 64;  avx2+fma: 2 × 8 × 2 = 32;  avx: 8 mul + 8 add = 16;
#   sse2: 4 mul + 4 add = 8.
#   bf16 amx_bf16: 1024 (Intel: an AMX unit does 1024 BF16 FLOPs per cycle per core);
#   bf16 avx512_bf16: VDPBF16PS does 32 bf16 products summed into 16 fp32 lanes = 64 FLOPs, 2 pipes = 128.
#   fp16 amx_fp16: 1024; avx512_fp16: 2 × 32 lanes × 2 = 128.
# Arm (the 'Features' line): asimd (NEON, 128 bits): 2 pipes × 4 lanes × 2 = 16; sve: 32 (Neoverse V1's
#   2 × 256-bit pipes and V2's 4 × 128-bit pipes both give 32; an upper bound on N2's 2 × 128-bit);
#   bf16 BFMMLA/BFDOT: twice the fp32 rate of the same vectors (64 with SVE, 32 with NEON alone).
# Without bf16/fp16 instructions, kernels convert to fp32 and run at the fp32 rate.
CPU_FLOPS_PER_CYCLE: dict[str, tuple[tuple[frozenset, int], ...]] = {
    "fp32": ((frozenset({"avx512f"}), 64), (frozenset({"avx2", "fma"}), 32),
             (frozenset({"avx"}), 16), (frozenset({"sse2"}), 8),
             (frozenset({"sve"}), 32), (frozenset({"asimd"}), 16)),
    "bf16": ((frozenset({"amx_bf16"}), 1024), (frozenset({"avx512_bf16"}), 128),
             (frozenset({"sve", "bf16"}), 64), (frozenset({"asimd", "bf16"}), 32)),
    "fp16": ((frozenset({"amx_fp16"}), 1024), (frozenset({"avx512_fp16"}), 128)),
}


def _parse_cpuinfo(text: str) -> tuple[list[dict[str, str]], set[str]]:
    blocks = []
    for chunk in re.split(r"\n\s*\n", text.strip()):
        entry = {}
        for line in chunk.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                entry[k.strip()] = v.strip()
        if "processor" in entry:
            blocks.append(entry)
    first = blocks[0] if blocks else {}
    flags = set((first.get("flags") or first.get("Features", "")).split())  # x86 'flags', Arm 'Features'

    return blocks, flags


def _native(dtype: str, flags: set[str]) -> tuple[int, str] | None:
    """(FLOPs per cycle, instruction set) of the best unit that computes ``dtype`` itself, or None."""
    for required, fpc in CPU_FLOPS_PER_CYCLE.get(dtype, ()):
        if required <= flags:
            return fpc, "+".join(sorted(required))
    return None


def _flops_per_cycle(dtype: str, flags: set[str]) -> tuple[int, str] | None:
    native = _native(dtype, flags)
    if native is not None:
        return native
    if dtype in ("bf16", "fp16"):
        fp32 = _flops_per_cycle("fp32", flags)
        return (fp32[0], f"{fp32[1]} (no {dtype} instructions: fp32 rate)") if fp32 else None
    return None


def cpu_native(dtype: str, cpuinfo_path: str = "/proc/cpuinfo") -> str | None:
    """The instruction set with which this CPU computes ``dtype`` itself (``avx512_bf16``, ``amx_bf16``,
    ``asimd+bf16``), or None where its kernels would convert to fp32 and gain nothing from it: the mini suite
    trains in amp (bf16 autocast) only where this names one."""
    with open(cpuinfo_path, encoding="utf-8", errors="replace") as fh:
        _, flags = _parse_cpuinfo(fh.read())
    native = _native(dtype, flags)
    return native[1] if native is not None else None


ARM_PARTS = {"0xd0c": "Arm Neoverse N1", "0xd49": "Arm Neoverse N2", "0xd8e": "Arm Neoverse N3",
             "0xd40": "Arm Neoverse V1", "0xd4f": "Arm Neoverse V2", "0xd84": "Arm Neoverse V3"}


def _arm_model(block: dict[str, str]) -> str:
    """An Arm core's name from its 'CPU part' (cpuinfo has no 'model name' there), else 'CPU'."""
    part = block.get("CPU part", "").lower()
    return ARM_PARTS.get(part, f"Arm CPU part {part}" if part else "CPU")


def cpu_peak(cpuinfo_path: str = "/proc/cpuinfo", *, cpus: int | None = None,
             clock_ghz: float | None = None, max_freq_path: str | None =
             "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") -> DevicePeak:
    """Derived peak of this CPU: physical cores (capped at ``cpus``) × clock × FLOPs per cycle.

    Clock: ``clock_ghz`` if given, else the cpufreq maximum (turbo) when the kernel exposes it,
    else the largest ``cpu MHz`` in cpuinfo (in a VM, the nominal clock: turbo is then not counted).
    """
    with open(cpuinfo_path, encoding="utf-8", errors="replace") as fh:
        blocks, flags = _parse_cpuinfo(fh.read())
    if not blocks:
        raise ValueError(f"no processor entries in {cpuinfo_path}")
    physical = {(b.get("physical id", "0"), b.get("core id", b["processor"])) for b in blocks}
    cores = len(physical)
    if cpus is not None:
        cores = max(1, min(cores, cpus))
    clock_source = "argument"
    if clock_ghz is None and max_freq_path and os.path.exists(max_freq_path):
        with open(max_freq_path) as fh:
            clock_ghz, clock_source = int(fh.read().strip()) / 1e6, max_freq_path
    if clock_ghz is None:
        mhz = [float(b["cpu MHz"]) for b in blocks if "cpu MHz" in b]
        if not mhz:
            raise ValueError(f"no clock in {cpuinfo_path}; pass clock_ghz")
        clock_ghz, clock_source = max(mhz) / 1000, f"'cpu MHz' in {cpuinfo_path}"
    tflops, isa = {}, {}
    for dtype in CPU_FLOPS_PER_CYCLE:
        found = _flops_per_cycle(dtype, flags)
        if found:
            tflops[dtype] = round(cores * clock_ghz * found[0] / 1000, 6)
            isa[dtype] = {"flops_per_cycle": found[0], "isa": found[1]}
    model = blocks[0].get("model name") or _arm_model(blocks[0])
    formula = " ; ".join(f"{d}: {cores} cores × {clock_ghz:.3f} GHz × {isa[d]['flops_per_cycle']} "
                         f"FLOP/cycle ({isa[d]['isa']})" for d in tflops)
    return DevicePeak(
        key="cpu-derived", name=f"{model} ({cores} cores)", tflops=tflops, kind="derived",
        source=f"derived from {cpuinfo_path}: {formula}",
        note="not a published figure; assumes 2 FMA pipes per core (see CPU_FLOPS_PER_CYCLE)",
        detail={"cores": cores, "clock_ghz": clock_ghz, "clock_source": clock_source, "per_dtype": isa})


# ---------------------------------------------------------------- torch devices and precisions

def device_peak(device) -> DevicePeak | None:
    """Peak table entry for a torch device ('cpu', 'cuda', 'cuda:1', torch.device)."""
    from trainmark.harness.frameworks import pytorch_runtime

    device = pytorch_runtime.as_device(device)
    if device.type == "cpu":
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        try:
            return cpu_peak(cpus=cpus)
        except (OSError, ValueError):  # no /proc/cpuinfo (not Linux) or no usable entry
            return None
    return lookup(pytorch_runtime.device_name(device))  # any accelerator: the name its driver reports


def peak_dtype(precision: str, device_type: str = "cuda") -> str:
    """Which peak a run's precision should be divided by.

    ``amp-bf16``/``bf16`` → bf16, ``amp-fp16``/``fp16`` → fp16, ``fp8`` → fp8. ``fp32`` on CUDA is
    tf32 when torch lets matmuls or cuDNN convolutions use TF32 (cuDNN does by default), since those
    kernels then run on tensor cores; dividing by the fp32 rate would report utilization above 100 %.
    """
    p = precision.lower().removeprefix("amp-").removeprefix("amp_")
    if p in ("bf16", "bfloat16"):
        return "bf16"
    if p in ("fp16", "float16", "half"):
        return "fp16"
    if p == "fp8":
        return "fp8"
    if p in ("fp32", "float32", "tf32"):
        if p == "tf32":
            return "tf32"
        if device_type != "cpu":
            from trainmark.harness.frameworks import pytorch_runtime
            if pytorch_runtime.tf32_enabled(device_type):
                return "tf32"
        return "fp32"
    raise ValueError(f"unknown precision {precision!r}")
