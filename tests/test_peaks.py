"""Peak table lookups (dense figures) and the derived CPU peak on stubbed /proc/cpuinfo files."""
import pytest
import torch

from trainmark.harness.measure import peaks


def _cpuinfo(tmp_path, flags, mhz="3000.000", layout=((0, 0), (0, 1)), threads_per_core=1):
    """A cpuinfo file with one block per logical CPU; ``layout`` = (physical id, core id) per core."""
    blocks = []
    n = 0
    for phys, core in layout:
        for _ in range(threads_per_core):
            blocks.append(f"processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\n"
                          f"cpu MHz\t\t: {mhz}\nphysical id\t: {phys}\ncore id\t\t: {core}\n"
                          f"flags\t\t: {' '.join(flags)}\n")
            n += 1
    path = tmp_path / "cpuinfo"
    path.write_text("\n".join(blocks))
    return str(path)


def test_cpu_peak_avx512_counts_physical_cores_not_threads(tmp_path):
    path = _cpuinfo(tmp_path, ["fpu", "sse2", "avx", "avx2", "fma", "avx512f", "avx512_bf16"],
                    threads_per_core=2)
    peak = peaks.cpu_peak(path, max_freq_path=None)
    assert peak.kind == "derived"
    assert peak.detail["cores"] == 2 and peak.detail["clock_ghz"] == pytest.approx(3.0)
    assert peak.tflops["fp32"] == pytest.approx(2 * 3.0e9 * 64 / 1e12)     # 0.384
    assert peak.tflops["bf16"] == pytest.approx(2 * 3.0e9 * 128 / 1e12)    # avx512_bf16: 128/cycle
    assert "2 cores × 3.000 GHz × 64 FLOP/cycle (avx512f)" in peak.source


def test_cpu_peak_avx2_without_bf16_runs_bf16_at_the_fp32_rate(tmp_path):
    path = _cpuinfo(tmp_path, ["sse2", "avx", "avx2", "fma"], mhz="2500.0", layout=((0, 0), (0, 1), (0, 2), (0, 3)))
    peak = peaks.cpu_peak(path, max_freq_path=None)
    assert peak.tflops["fp32"] == pytest.approx(4 * 2.5e9 * 32 / 1e12)
    assert peak.tflops["bf16"] == peak.tflops["fp32"]
    assert "no bf16 instructions" in peak.detail["per_dtype"]["bf16"]["isa"]


def test_cpu_peak_amx_cap_and_clock_file(tmp_path):
    path = _cpuinfo(tmp_path, ["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"],
                    layout=((0, 0), (0, 1), (1, 0), (1, 1)))
    freq = tmp_path / "max_freq"
    freq.write_text("3500000\n")  # kHz, as cpufreq writes it
    peak = peaks.cpu_peak(path, cpus=3, max_freq_path=str(freq))
    assert peak.detail["cores"] == 3 and peak.detail["clock_source"] == str(freq)
    assert peak.tflops["bf16"] == pytest.approx(3 * 3.5e9 * 1024 / 1e12)
    assert peak.tflops["fp32"] == pytest.approx(3 * 3.5e9 * 64 / 1e12)
    assert peaks.cpu_peak(path, clock_ghz=1.0, max_freq_path=None).tflops["fp32"] == pytest.approx(4 * 64 / 1e3)


@pytest.mark.parametrize("flags,native", [
    (["avx2", "fma", "avx512f", "avx512_bf16"], "avx512_bf16"),            # Zen 4, Zen 5, Cooper Lake on
    (["avx512f", "avx512_bf16", "amx_bf16", "amx_tile"], "amx_bf16"),      # Sapphire Rapids on: the best unit
    (["avx2", "fma"], None),                                               # Zen 3: bf16 converts to fp32
    (["avx2", "fma", "avx512f"], None),                                    # Skylake-SP: AVX-512 without bf16
])
def test_cpu_native_names_the_bf16_unit_or_none(tmp_path, flags, native):
    """The mini suite's PRECISION=auto trains in amp only where this names an instruction set."""
    assert peaks.cpu_native("bf16", _cpuinfo(tmp_path, flags)) == native


def test_cpu_native_reads_an_arm_cores_features(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd sve bf16\nCPU part\t: 0xd4f\n")
    assert peaks.cpu_native("bf16", str(path)) == "bf16+sve"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd\nCPU part\t: 0xd0c\n")   # Neoverse N1
    assert peaks.cpu_native("bf16", str(path)) is None


def test_cpu_peak_rejects_empty_file(tmp_path):
    (tmp_path / "empty").write_text("")
    with pytest.raises(ValueError):
        peaks.cpu_peak(str(tmp_path / "empty"))


@pytest.mark.parametrize("name,key", [
    ("NVIDIA H200", "nvidia-h200-sxm"), ("NVIDIA H200 NVL", "nvidia-h200-nvl"),
    ("NVIDIA H100 80GB HBM3", "nvidia-h100-sxm"), ("NVIDIA H100 PCIe", "nvidia-h100-pcie"),
    ("NVIDIA H100 NVL", "nvidia-h100-nvl"), ("NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", "nvidia-a100-sxm-40gb"), ("NVIDIA A100 80GB PCIe", "nvidia-a100-pcie-80gb"),
    ("NVIDIA A100-PCIE-40GB", "nvidia-a100-pcie-40gb"), ("Tesla V100-SXM2-32GB", "nvidia-v100-sxm2"),
    ("Tesla V100-PCIE-16GB", "nvidia-v100-pcie"), ("Tesla V100S-PCIE-32GB", "nvidia-v100s-pcie"),
    ("NVIDIA B200", "nvidia-b200"), ("NVIDIA GB200", "nvidia-gb200"), ("NVIDIA L40S", "nvidia-l40s"),
    ("NVIDIA L4", "nvidia-l4"), ("AMD Instinct MI300X", "amd-mi300x"), ("AMD Instinct MI325X", "amd-mi325x"),
    ("AMD Instinct MI250X/MI250", "amd-mi250x"), ("TPU v4", "google-tpu-v4"), ("TPU v5 lite", "google-tpu-v5e"),
    ("TPU v5p", "google-tpu-v5p"), ("TPU v6 lite", "google-tpu-v6e"),
])
def test_lookup(name, key):
    assert peaks.lookup(name).key == key


@pytest.mark.parametrize("name", ["NVIDIA L40", "AMD Instinct MI300A", "NVIDIA GH200 480GB", "Radeon RX 7900", ""])
def test_lookup_unknown_devices(name):
    assert peaks.lookup(name) is None


def test_table_is_dense_and_sourced():
    h200 = peaks.lookup("NVIDIA H200")
    assert h200.tflops["bf16"] == pytest.approx(989.5)     # dense; 1979 is the 2:4-sparse datasheet figure
    assert h200.tflops["fp8"] == pytest.approx(1979.0)
    assert peaks.lookup("NVIDIA A100-SXM4-80GB").tflops["tf32"] == 156.0
    for entry in peaks.TABLE:
        assert entry.kind == "datasheet" and len(entry.source) > 20, entry.key
        t = entry.tflops
        # tensor rates never below the vector fp32 rate, 16-bit never below tf32, fp8 never below 16-bit
        if "fp32" in t and "bf16" in t:
            assert t["bf16"] >= t["fp32"], entry.key
        if "tf32" in t:
            assert t["fp32"] <= t["tf32"] <= t["bf16"], entry.key
        if "fp8" in t:  # twice the 16-bit rate, but Gaudi 3's MME runs FP8 at its BF16 rate (Intel's figures)
            ratio = 1.0 if entry.key == "intel-gaudi3" else 2.0
            assert t["fp8"] == pytest.approx(ratio * t["bf16"], rel=0.02), entry.key
    assert len({e.key for e in peaks.TABLE}) == len(peaks.TABLE)


def test_peak_dtype_and_precision_fallback(monkeypatch):
    assert peaks.peak_dtype("amp-bf16") == "bf16"
    assert peaks.peak_dtype("amp-fp16") == "fp16"
    assert peaks.peak_dtype("fp32", "cpu") == "fp32"
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:  # set and restored by hand: torch 2.14's cuBLAS module serves allow_tf32 through __getattr__
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        assert peaks.peak_dtype("fp32", "cuda") == "fp32"
        torch.backends.cudnn.allow_tf32 = True  # cuDNN's default: convs on tensor cores
        assert peaks.peak_dtype("fp32", "cuda") == "tf32"
        assert peaks.peak_dtype("fp32", "xpu") == "fp32"  # TF32 is NVIDIA's: another device type never gets it
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert peaks.lookup("NVIDIA H200").peak_for_precision("fp32", "cuda") == ("tf32", 494.5)
    assert peaks.lookup("Tesla V100-SXM2-16GB").peak_for_precision("fp32", "cuda") == ("fp32", 15.7)
    assert peaks.lookup("TPU v4").peak_for_precision("amp-fp16") == ("fp16", None)
    with pytest.raises(ValueError):
        peaks.peak_dtype("int4")


def test_device_peak_cpu_is_derived():
    p = peaks.device_peak("cpu")
    assert p.kind == "derived" and p.tflops["fp32"] > 0
