"""Time to train at N accelerators (harness/scale/time_to_train.py), suspect points, and `trainmark scale
validate` on small synthetic MLPerf rounds (harness/scale/mlperf_throughput.py, mlperf_validate.py)."""
import argparse
import json
from pathlib import Path

import pytest
from conftest import TEST_RULES

from trainmark.cli import scale as scale_cli
from trainmark.errors import UserError
from trainmark.harness.scale import mlperf_throughput as runs_io
from trainmark.harness.scale import mlperf_validate as mv
from trainmark.harness.scale import projection as scale_model
from trainmark.harness.scale import saturation
from trainmark.harness.scale import time_to_train as ttt
from trainmark.rules.ruleset import get_rules

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"
LINK = scale_model.Link(latency_s=5e-6, bandwidth_bps=20e9, source="test")


def conv_of(points: dict[int, list[float]], unit: str = "epochs") -> ttt.Convergence:
    raw = [{"global_batch_size": b, "epochs_to_target": v} for b, v in points.items()]
    return ttt._convergence(raw, unit, "test")


# ---------------------------------------------------------------- convergence and the global batch

def test_mlperf_points_are_interpolated_as_the_rcp_checker_does():
    from mlperf_logging.rcp_checker import rcp_checker

    checker = rcp_checker.RCP_Checker("training", "4.1.0", "ssd", False)
    low, high = (checker._find_top_min_rcp(1000, "pruned_rcps"), checker._find_bottom_max_rcp(1000, "pruned_rcps"))
    theirs = checker._create_interp_rcp(1000, low, high)[1]["RCP Mean"]
    ours = ttt.from_mlperf("ssd", "4.1.0").at(1000)
    assert ours.mean == pytest.approx(theirs) and ours.between == (768, 2560)
    bert = ttt.from_mlperf("bert", "5.0.0")
    assert bert.unit == "samples" and bert.covered[0] == 256
    assert ttt.from_mlperf("resnet", "5.0.0").source.endswith("training_4.0.0/rcps_resnet.json (mlperf-logging)")
    assert ttt.from_mlperf("no_such_benchmark") is None


def test_weak_scaling_is_capped_to_what_converges_and_says_so():
    conv = conv_of({256: [5] * 5, 1024: [6, 6, 7, 6, 6]})
    plan = ttt.plan_batch(8, "weak", 256, 256, conv)
    assert plan["batch"] == 1024 and plan["capped"] and "capped from 2048 to 1024" in plan["note"]
    assert ttt.plan_batch(2, "weak", 256, 256, conv) == {
        "batch": 512, "wanted_batch": 512, "capped": False, "reason": None, "note": None}
    assert ttt.plan_batch(64, "strong", 256, 512, conv)["batch"] == 512
    beyond = ttt.plan_batch(2048, "weak", 256, 256, conv)
    assert beyond["batch"] is None and "at least 2048" in beyond["reason"]
    below = ttt.plan_batch(1, "strong", 256, 128, conv)
    assert below["batch"] is None and "below the smallest covered by the convergence points (256)" in below["reason"]
    with pytest.raises(ValueError, match="weak, strong, best"):
        ttt.plan_batch(1, "sideways", 1, 1, conv)
    assert ttt.candidate_batches(8, 256, 256, conv)[0] == 256 and ttt.candidate_batches(8, 256, 256, conv)[-1] == 1024


def test_time_to_train_rows_for_resnet_mini_from_its_rules():
    rules = get_rules("resnet-mini", "1.1")
    conv = ttt.from_rules(rules)
    spe, source = ttt.samples_per_epoch(rules)
    assert conv.covered == (128, 256) and conv.unit == "epochs" and spe == 60_000 and "split.train" in source
    profile = scale_model.ComputeProfile(compute_s=0.5, local_batch=256, gradient_bytes=1_240_000)
    for mode in ("weak", "strong", "best"):
        rows = ttt.project_time_to_train(profile, LINK, [1, 8, 256, 512], mode=mode, global_batch=256, conv=conv,
                                         samples_per_epoch=spe, throughput_spread=0.1)
        ok = [r for r in rows if r["status"] == "projected"]
        assert [r["n"] for r in ok] == [1, 8, 256] and all(r["global_batch"] == 256 for r in ok)
        (refused,) = [r for r in rows if r["status"] != "projected"]
        assert refused["n"] == 512
        assert ("less than one sample per accelerator at 512" if mode == "strong" else "at least 512") in \
            refused["reason"]
        one = ok[0]
        assert one["convergence"]["to_converge"] == 5 and one["convergence"]["samples"] == 300_000
        assert one["minutes"] == pytest.approx(300_000 / (256 / 0.5) / 60)
        lo, hi = one["minutes_interval"]
        assert lo < one["minutes"] < hi
    weak = ttt.project_time_to_train(profile, LINK, [8], mode="weak", global_batch=256, conv=conv,
                                     samples_per_epoch=spe)
    assert weak[0]["batch_capped"] and weak[0]["wanted_global_batch"] == 2048
    no_size = ttt.project_time_to_train(profile, LINK, [8], mode="strong", global_batch=256, conv=conv,
                                        samples_per_epoch=None)
    assert no_size[0]["status"] == "no projection" and "--train-samples" in no_size[0]["reason"]


def test_best_scaling_trades_epochs_against_throughput():
    # epochs grow fast past 512: with a cheap all-reduce the best batch stops there
    conv = conv_of({256: [4] * 5, 512: [4] * 5, 4096: [40] * 5})
    profile = scale_model.ComputeProfile(compute_s=0.1, local_batch=32, gradient_bytes=1000, fixed_fraction=0.2)
    (row,) = ttt.project_time_to_train(profile, LINK, [16], mode="best", global_batch=256, conv=conv,
                                       samples_per_epoch=1000)
    assert row["global_batch"] == 512 and "fastest to train" in row["batch_note"]


def test_fixed_step_fraction_keeps_part_of_the_compute():
    profile = scale_model.ComputeProfile(compute_s=1.0, local_batch=100, gradient_bytes=0, fixed_fraction=0.1)
    assert profile.compute_at(100) == pytest.approx(1.0)
    assert profile.compute_at(10) == pytest.approx(0.1 + 0.9 * 0.1)


def test_two_level_all_reduce():
    intra, inter = scale_model.Link(1e-6, 400e9, "nvlink"), scale_model.Link(1e-5, 40e9, "nic")
    links = scale_model.TwoLevelLink(intra, inter, per_node=8)
    assert scale_model.two_level_allreduce_seconds(8, 1e8, links) == scale_model.allreduce_seconds(8, 1e8, intra)
    big = scale_model.two_level_allreduce_seconds(8 * 512, 1e8, links)
    # 512 nodes: the tree's 2 log2(512) = 18 hops, not the ring's 2 x 511
    assert big == pytest.approx(scale_model.allreduce_seconds(8, 1e8, intra) + 18 * 1e-5 + 2 * 1e8 / 8 / 40e9)


# ---------------------------------------------------------------- suspect points

def test_efficiency_above_one_and_a_wide_spread_are_suspect():
    s = saturation.ScaleSettings(benchmark="x", nprocs=[1, 2], global_batch=64)
    points = [{"world_size": 1, "efficiency": 1.0, "step_spread": 0.05},
              {"world_size": 2, "efficiency": 6.15, "step_spread": 0.6}]
    saturation.flag_suspects(points, s)
    assert points[0]["suspect"] is None
    assert "efficiency 6.15 > 1" in points[1]["suspect"] and "spread 60% > 25%" in points[1]["suspect"]


def test_a_single_rank_slower_than_the_sweeps_quiet_rate_is_suspect():
    """The sweep measured 0.10 s per step at batch 64 alone; a one-rank point computing 0.20 s was measured on a
    busier machine, and every projection starts from it. Within the tolerance, and without a sweep, it is not."""
    curve = ((32, 0.06), (96, 0.14))  # 0.10 s at 64, interpolated
    s = saturation.ScaleSettings(benchmark="x", nprocs=[1, 2], global_batch=64, compute_curve=curve)
    slow, fine, two = ({"world_size": 1, "compute_s": 0.20}, {"world_size": 1, "compute_s": 0.12},
                       {"world_size": 2, "compute_s": 0.30})
    saturation.flag_suspects([slow, fine, two], s)
    assert "2.00x the sweep's quiet 100 ms at batch 64" in slow["suspect"]
    assert fine["suspect"] is None and two["suspect"] is None  # two ranks on shared cores may compute slower
    unswept = {"world_size": 1, "compute_s": 0.20}
    saturation.flag_suspects([unswept], saturation.ScaleSettings(benchmark="x", nprocs=[1], global_batch=64))
    assert unswept["suspect"] is None


def test_settings_take_the_convergence_source_and_refuse_bad_values():
    parser = argparse.ArgumentParser()
    scale_cli.register(parser.add_subparsers())

    def settings(*argv):
        return scale_cli.settings_from_args(parser.parse_args(["scale", "tiny-test", "--rules-dir", str(TEST_RULES),
                                                               "--batch-size", "64", *argv]))
    s = settings("--rcp", "resnet", "--train-samples", "1281167", "--scaling", "strong")
    assert s.convergence.unit == "epochs" and s.samples_per_epoch == 1281167 and s.scaling == "strong"
    assert settings().convergence is None and settings().scaling == "best"
    with pytest.raises(UserError, match="no reference convergence points"):
        settings("--rcp", "nonsense")
    with pytest.raises(UserError, match="--fixed-step-fraction 2"):
        settings("--fixed-step-fraction", "2")
    with pytest.raises(UserError, match="scale validate"):
        scale_cli.settings_from_args(parser.parse_args(["scale", "tiny-test", "somewhere"]))


def test_summary_shows_time_to_train_and_suspects():
    conv = ttt.from_rules(get_rules("resnet-mini", "1.1"))
    s = saturation.ScaleSettings(benchmark="resnet-mini", nprocs=[1, 2], global_batch=256, link=LINK,
                                 convergence=conv, samples_per_epoch=60_000, project_sizes=[1, 8, 512])
    raw = {"gradient_bytes": 1_240_000, "allreduce": []}
    points = [{"world_size": n, "status": "ok", "global_batch": 256, "samples_per_s": v, "step_s": 256 / v,
               "compute_s": 256 / v, "comm_s": 0.0, "exposed_comm_s": 0.0, "step_spread": 0.05, "_raw": raw,
               "nnodes": 1, "nproc_per_node": n, "local_batch": 256 // n, "error": None}
              for n, v in ((1, 100.0), (2, 1230.0))]
    result = {"points": points, **saturation.analyse(points, s)}
    proj = result["projection"]
    assert result["suspect_points"] == [2] and proj["suspect"] is None
    rows = proj["time_to_train"]
    assert [r["status"] for r in rows] == ["projected", "projected", "no projection"]
    assert proj["convergence"]["covered_global_batches"] == [128, 256]
    text = saturation.format_summary(result)
    assert "SUSPECT: efficiency 6.15 > 1" in text and "time to train (best scaling" in text
    assert "no projection: 512 accelerators need a global batch of at least 512" in text


# ---------------------------------------------------------------- MLPerf rounds

def _log(path: Path, benchmark: str, batch: int, minutes: float, progress: float, key: str = "epoch_num",
         train_samples: int | None = None, status: str = "success") -> None:
    def line(t, k, v, **meta):
        return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME", "key": k,
                                         "value": v, "metadata": {"file": "x.py", "lineno": 1, **meta}})
    t0 = 1_700_000_000_000
    lines = [line(t0, "submission_benchmark", benchmark), line(t0, "global_batch_size", batch),
             line(t0 + 1, "run_start", None)]
    if train_samples is not None:
        lines.append(line(t0 + 2, "train_samples", train_samples))
    lines += [line(t0 + 10, "eval_accuracy", 0.1, **{key: progress / 2}),
              line(t0 + int(minutes * 60000), "eval_accuracy", 0.9, **{key: progress}),
              line(t0 + 1 + int(minutes * 60000), "run_stop", None, status=status)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _system(sub: Path, name: str, nodes: int, per_node: int, accelerator: str = "NVIDIA H100-SXM5-80GB") -> None:
    (sub / "systems").mkdir(parents=True, exist_ok=True)
    (sub / "systems" / f"{name}.json").write_text(json.dumps({
        "submitter": sub.name, "division": "closed", "number_of_nodes": str(nodes),
        "accelerators_per_node": str(per_node), "accelerator_model_name": accelerator,
        "accelerator_interconnect": "NVLINK Gen4 900 GB/s + NVSWITCH Gen3",
        "host_networking": "8x ConnectX-7 IB NDR 400Gb/s"}))


@pytest.fixture
def small_round(tmp_path):
    """Acme at 8 and 64 H100s: ssd (train_samples logged as steps), bert (samples) and llama (refused)."""
    sub = tmp_path / "training_results_v4.1" / "Acme"
    _system(sub, "n1", 1, 8)
    _system(sub, "n8", 8, 8)
    for k, minutes in enumerate((36.0, 35.0, 37.0)):
        _log(sub / "results/n1/ssd" / f"result_{k}.txt", "ssd", 256, minutes, 4, train_samples=4572)
        _log(sub / "results/n1/bert" / f"result_{k}.txt", "bert", 768, minutes / 7, 2_550_000)
        _log(sub / "results/n1/llama2_70b_lora" / f"result_{k}.txt", "llama2_70b_lora", 8, 30.0, 3072,
             key="samples_count")
    for k, minutes in enumerate((6.0, 6.2, 5.9)):
        _log(sub / "results/n8/ssd" / f"result_{k}.txt", "ssd", 256, minutes, 4, train_samples=4572)
        _log(sub / "results/n8/bert" / f"result_{k}.txt", "bert", 4608, minutes / 7, 2_830_000)
        _log(sub / "results/n8/llama2_70b_lora" / f"result_{k}.txt", "llama2_70b_lora", 8, 5.0, 3072,
             key="samples_count")
    _log(sub / "results/n8/ssd/result_3.txt", "ssd", 256, 1.0, 1, status="aborted")
    return tmp_path / "training_results_v4.1"


def test_mlperf_runs_are_read_in_the_rcp_checkers_units(small_round):
    sub = small_round / "Acme"
    ssd = runs_io.read_run(sub / "results/n1/ssd/result_0.txt")
    assert (ssd.unit, ssd.to_converge, ssd.samples) == ("epochs", 4, 4 * 1_170_301)
    assert "steps per epoch" in ssd.unit_check and ssd.minutes == pytest.approx(36.0, abs=1e-3)
    bert = runs_io.read_run(sub / "results/n1/bert/result_0.txt")
    assert (bert.unit, bert.samples) == ("samples", 2_550_000)
    sd = tmp_path_sd(sub)
    assert (sd.unit, sd.to_converge) == ("samples", 5000 * 256)
    with pytest.raises(ValueError, match="'aborted', not success"):
        runs_io.read_run(sub / "results/n8/ssd/result_3.txt")
    assert runs_io.olympic_mean([36.0, 35.0, 37.0, 100.0, 1.0]) == pytest.approx(36.0)
    desc = runs_io.read_system(sub, "n8")
    assert (desc.accelerators, desc.per_node) == (64, 8)
    assert mv.inter_link(desc).bandwidth_bps == pytest.approx(50e9 * mv.BUS_EFFICIENCY)
    assert mv.intra_link(desc)[0].bandwidth_bps == pytest.approx(450e9 * mv.BUS_EFFICIENCY)


def test_a_tpu_v5p_slice_is_one_ici_domain_and_dlrm_is_not_projected():
    """Google's v5p system descriptions name no interconnect: the accelerator's name is the link (1,200 GB/s both
    ways per chip, one torus per slice), not PCIe and a 400 Gb/s NIC. DLRM's embeddings are model-parallel."""
    tpu = runs_io.SystemDesc("cloud-tpu-v5p-512", "Google", "closed", "TPU-v5p", 512, 4, "", "")
    link, domain = mv.intra_link(tpu)
    assert link.bandwidth_bps == pytest.approx(600e9 * mv.BUS_EFFICIENCY) and domain == 6144
    gpu = runs_io.SystemDesc("pcie-box", "Acme", "closed", "Some GPU", 8, 8, "", "")
    assert mv.intra_link(gpu)[1] == 8 and "PCIe 4.0" in mv.intra_link(gpu)[0].source
    assert "all-to-all" in mv.refusal("dlrm_dcnv2") and "tensor, pipeline" in mv.refusal("llama31_405b")
    assert mv.refusal("bert") is None


def tmp_path_sd(sub: Path) -> runs_io.MLPerfRun:
    """A v3.1 stable diffusion log: step_num only, evaluations logged after run_stop and out of order."""
    path = sub / "results/n1/stable_diffusion/result_0.txt"
    _log(path, "stable_diffusion", 256, 50.0, 6000, key="step_num")
    lines = path.read_text().splitlines()
    stop = json.loads(lines[-1].split(" ", 1)[1])
    stop["metadata"]["step_num"] = 5000
    path.write_text("\n".join(lines[:-1] + [":::MLLOG " + json.dumps(stop)]) + "\n")
    return runs_io.read_run(path)


def test_validate_writes_one_record_per_pair_and_the_medians(small_round, tmp_path, capsys):
    from trainmark.cli import main

    out = tmp_path / "validation.json"
    assert main(["scale", "validate", str(small_round), "--json", str(out), "--scaling", "weak"]) == 0
    result = json.loads(out.read_text())
    assert result["format"] == "trainmark-scale-validation/1" and result["rounds"][0]["rcp_version"] == "4.1.0"
    records = {r["benchmark"]: r for r in result["records"]}
    assert set(records) == {"ssd", "bert", "llama2_70b_lora"}
    for r in records.values():
        assert set(runs_io_fields()) <= set(r) and (r["n_small"], r["n_large"]) == (8, 64)
    assert records["llama2_70b_lora"]["projected_minutes"] is None
    assert "model-parallel LLM" in records["llama2_70b_lora"]["reason"]
    ssd = records["ssd"]
    assert ssd["actual_minutes"] == pytest.approx(6.0, abs=1e-3) and ssd["batch_projected"] == 2048
    assert ssd["error"] == pytest.approx(ssd["projected_minutes"] / ssd["actual_minutes"] - 1)
    assert ssd["baselines"]["linear"]["minutes"] == pytest.approx(36.0 / 8, abs=1e-3)
    assert ssd["to_converge_projected"] == pytest.approx(4 * ttt.from_mlperf("ssd", "4.1.0").at(2048).mean / 4)
    (bucket,) = [b for b in result["buckets"] if b["bucket"] == "<=8 -> >=64"]
    assert bucket["pairs"] == 2 and bucket["refused"] == 1 and bucket["model"] is not None
    assert result["unreadable_runs"] == 1
    text = capsys.readouterr().out
    assert "<=8 -> >=64" in text and "not projected: llama2_70b_lora: model-parallel LLM" in text
    twice = mv.validate_rounds([small_round, small_round], scaling="weak")
    assert len(twice["records"]) == 3 and twice["rounds"][1]["pairs_repeated_from_earlier_rounds"] == 3


def runs_io_fields():
    from trainmark.format import artifacts

    return artifacts.SCALE_VALIDATION_RECORD_FIELDS


def test_validate_refuses_without_rounds(tmp_path):
    from trainmark.cli import main

    assert main(["scale", "validate"]) == 2
    assert main(["scale", "validate", str(tmp_path / "missing")]) == 2


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
def test_shared_fixture_runs_are_read_in_epochs():
    runs = runs_io.system_runs(FIXTURE / "Dell", "XE8640x4H100-SXM-80GB", "resnet")
    assert len(runs) == 5 and all(r.unit == "epochs" and r.samples == r.to_converge * 1_281_167 for r in runs)
    assert all(10 < r.minutes < 60 for r in runs)
    assert mv.read_round(FIXTURE, []) and mv.pairs(mv.read_round(FIXTURE, [])) == []


def test_trainmark_scale_runs_the_tiny_benchmark_under_torchrun_and_projects_time(tmp_path, monkeypatch, capsys):
    """The CLI end to end: real torchrun workers (1 and 2 gloo ranks), time to train from MLPerf's SSD
    points (any covered points do for the tiny model), suspects in the JSON."""
    from trainmark.cli import main

    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code = main(["scale", "tiny-test", "--rules-dir", str(TEST_RULES), "--nproc", "1,2", "--batch-size", "256",
                 "--steps", "1", "--repeats", "2", "--warmup-steps", "0", "--rcp", "ssd", "--rcp-version", "4.1.0",
                 "--train-samples", "512", "--project-sizes", "8,64,8192", "--out", str(tmp_path), "--no-plots",
                 # the link and overlap given: one-step timings on a shared CI machine are too noisy to fit one
                 "--link-bandwidth-gbs", "10", "--link-latency-us", "50", "--overlap", "0.5"])
    assert code == 0
    saved = json.loads((tmp_path / "scale.json").read_text())
    assert all("suspect" in p for p in saved["points"])
    assert saved["settings"]["scaling"] == "best"
    rows = saved["projection"]["time_to_train"]
    assert [r["n"] for r in rows] == [8, 64, 8192]
    first = rows[0]
    assert first["status"] == "projected" and 256 <= first["global_batch"] <= 2048 and first["minutes"] > 0
    epochs = ttt.from_mlperf("ssd", "4.1.0").at(first["global_batch"]).mean
    assert first["convergence"]["samples"] == pytest.approx(epochs * 512)
    assert rows[2]["status"] == "no projection" and "beyond the largest covered" in rows[2]["reason"]
    assert "time to train (best scaling; convergence: MLPerf RCPs training_4.1.0/rcps_ssd.json" in \
        capsys.readouterr().out


def test_a_sweep_curve_shapes_compute_over_the_local_batch(tmp_path):
    curve = ((8, 0.010), (32, 0.016), (128, 0.040))
    assert scale_model.curve_seconds(curve, 32) == pytest.approx(0.016)
    assert scale_model.curve_seconds(curve, 80) == pytest.approx(0.016 + 0.024 * 48 / 96)
    assert scale_model.curve_seconds(curve, 4) == pytest.approx(0.010 - 0.006 * 4 / 24)   # the fixed part stays
    assert scale_model.curve_seconds(curve, 0) == pytest.approx(0.010 - 0.006 * 8 / 24)
    assert scale_model.curve_seconds(curve, 256) == pytest.approx(0.040 + 0.024 * 128 / 96)
    assert scale_model.curve_seconds(((10, 1.0),), 5) == pytest.approx(0.5)
    profile = scale_model.ComputeProfile(compute_s=0.032, local_batch=32, gradient_bytes=0, curve=curve)
    assert profile.compute_at(32) == pytest.approx(0.032) and profile.compute_at(8) == pytest.approx(0.020)
    sweep = tmp_path / "sweep.json"
    points = [{"status": "ok", "precision": "fp32", "batch_size": b, "step_ms": 1000 * t} for b, t in curve]
    points += [{"status": "oom", "precision": "fp32", "batch_size": 512, "step_ms": None},
               {"status": "ok", "precision": "amp", "batch_size": 8, "step_ms": 3.0}]
    sweep.write_text(json.dumps({"format": "trainmark-sweep/1", "points": points}))
    assert saturation.read_sweep_curve(sweep, "fp32") == curve
    with pytest.raises(UserError, match="no measured point at precision bf16"):
        saturation.read_sweep_curve(sweep, "bf16")
    (tmp_path / "other.json").write_text('{"format": "trainmark-ops/1"}')
    with pytest.raises(UserError, match="not a trainmark-sweep/1 report"):
        saturation.read_sweep_curve(tmp_path / "other.json", "fp32")
    parser = argparse.ArgumentParser()
    scale_cli.register(parser.add_subparsers())
    args = parser.parse_args(["scale", "tiny-test", "--rules-dir", str(TEST_RULES), "--sweep", str(sweep)])
    assert scale_cli.settings_from_args(args).compute_curve == curve
    args = parser.parse_args(["scale", "tiny-test", "--rules-dir", str(TEST_RULES), "--sweep", str(sweep),
                              "--fixed-step-fraction", "0.1"])
    with pytest.raises(UserError, match="one model of compute"):
        scale_cli.settings_from_args(args)


def test_a_two_level_link_is_used_past_one_node():
    inter = scale_model.Link(1e-5, 5e9, "between nodes")
    s = saturation.ScaleSettings(benchmark="x", nprocs=[1], global_batch=64, link=LINK, inter_link=inter,
                                 node_size=8, project_sizes=[8, 64])
    raw = {"gradient_bytes": 100_000_000, "allreduce": []}
    one = {"world_size": 1, "status": "ok", "global_batch": 64, "samples_per_s": 640.0, "step_s": 0.1,
           "compute_s": 0.1, "comm_s": 0.0, "exposed_comm_s": 0.0, "step_spread": 0.0, "_raw": raw,
           "nnodes": 1, "nproc_per_node": 1, "local_batch": 64, "error": None}
    result = {"points": [one], **saturation.analyse([one], s)}
    assert result["link"]["per_node"] == 8 and result["link"]["inter"]["bandwidth_bps"] == 5e9
    rows = {r["n"]: r for r in result["projection"]["rows"]}
    links = scale_model.TwoLevelLink(LINK, inter, 8)
    assert rows[8]["comm_s"] == pytest.approx(scale_model.allreduce_seconds(8, 1e8, LINK))
    assert rows[64]["comm_s"] == pytest.approx(scale_model.two_level_allreduce_seconds(64, 1e8, links))
    assert "link: inside a node of 8:" in saturation.format_summary(result)
    parser = argparse.ArgumentParser()
    scale_cli.register(parser.add_subparsers())
    base = ["scale", "tiny-test", "--rules-dir", str(TEST_RULES)]
    got = scale_cli.settings_from_args(parser.parse_args(base + ["--node-size", "8", "--inter-link-bandwidth-gbs",
                                                                 "50", "--inter-link-latency-us", "10"]))
    assert got.node_size == 8 and got.inter_link.bandwidth_bps == 50e9
    with pytest.raises(UserError, match="needs --node-size"):
        scale_cli.settings_from_args(parser.parse_args(base + ["--node-size", "8"]))


def test_overlap_is_measured_unless_given():
    points = [{"world_size": 1, "compute_s": 0.1, "comm_s": 0.0, "exposed_comm_s": 0.0},
              {"world_size": 4, "compute_s": 0.1, "comm_s": 0.010, "exposed_comm_s": 0.004}]
    overlap, source = saturation.measured_overlap(points)
    assert overlap == pytest.approx(0.06) and "measured at world size 4" in source
    assert saturation.measured_overlap(points[:1]) == (0.0, "no launch of 2 ranks or more: nothing hidden assumed")
