"""The trial loop's bookkeeping on the tiny reference: windows, statuses, both logs, resume."""
import json
import math

import pytest
import torch
from conftest import TEST_RULES, TinyTest

from trainmark.errors import UserError
from trainmark.format import epochlog
from trainmark.format.mllog import TrialLogWriter
from trainmark.harness.frameworks.pytorch_backend import PyTorchBackend
from trainmark.harness.measure.energy import MeterBase
from trainmark.harness.measure.windows import Monitor
from trainmark.harness.run import RunOptions, run_benchmark
from trainmark.harness.timeline import Timeline
from trainmark.harness.trial import TrialConfig, run_trial
from trainmark.rules import get_rules


class FakeMeter(MeterBase):
    """100 W exactly, on the fake clock."""

    method, reason = "measured-counter", None

    def __init__(self, clock):
        self.clock = clock

    def joules(self):
        return 100.0 * self.clock()


CPU = PyTorchBackend(torch.device("cpu"), "fp32")


def trial_config(rules, **kw):
    base = dict(benchmark="tiny-test", trial=1, seed=7, division="closed", submitter="t", system_name="s",
                rules_version="1.0", hparams=rules.defaults(),
                max_epochs=rules.max_epochs, eval_every=1, target_reached=rules.reached, metric_name="top1_accuracy")
    base.update(kw)
    return TrialConfig(**base)


def mllog_events(path):
    return [json.loads(line.split(" ", 1)[1]) for line in path.read_text().splitlines()]


def test_eval_windows_are_excluded_from_train_time_and_energy(tmp_path):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    t = [0.0]
    TinyTest.tick = staticmethod(lambda: t.__setitem__(0, t[0] + 1.0))       # 1 s per training step
    TinyTest.eval_tick = staticmethod(lambda: t.__setitem__(0, t[0] + 10.0))  # 10 s per evaluation
    values = iter([0.5, 0.7, 0.95])
    TinyTest.metric_override = staticmethod(lambda: next(values))
    monitor = Monitor(FakeMeter(lambda: t[0]), clock=lambda: t[0], wall=lambda: 1.8e9)
    lines = []
    ref = TinyTest()
    log = TrialLogWriter(tmp_path / "result_1.txt")
    res, _ = run_trial(trial_config(rules), ref, ref.load_data(None), CPU, Timeline(monitor, log), lines.append)
    log.close()
    steps_per_epoch = 512 // 32
    assert res.status == "converged" and res.epochs == 3
    assert res.eval_time_s == pytest.approx(30.0)
    assert res.train_time_s == pytest.approx(3 * steps_per_epoch)
    assert res.total_time_s == pytest.approx(3 * steps_per_epoch + 30.0)
    assert res.train_energy_j == pytest.approx(100.0 * 3 * steps_per_epoch)
    assert res.total_energy_j == pytest.approx(100.0 * (3 * steps_per_epoch + 30))
    assert [h.train_j for h in res.history] == pytest.approx([100.0 * steps_per_epoch] * 3)
    assert res.train_samples_per_s == pytest.approx(3 * 512 / (3 * steps_per_epoch))
    # text log: one line per evaluated epoch, numbered from 1
    parsed = [epochlog.parse_line(line) for line in lines]
    assert [(p.trial, p.epoch, p.metric) for p in parsed] == [(1, 1, 0.5), (1, 2, 0.7), (1, 3, 0.95)]
    # MLLOG: the same instants, so the checker's recomputation gives the same figure
    ev = mllog_events(tmp_path / "result_1.txt")
    at = lambda key: [e["time_ms"] for e in ev if e["key"] == key]  # noqa: E731
    total_ms = at("run_stop")[0] - at("run_start")[0]
    eval_ms = sum(b - a for a, b in zip(at("eval_start"), at("eval_stop")))
    assert (total_ms - eval_ms) / 1000 == pytest.approx(res.train_time_s, abs=0.002)
    joules = lambda key: [e["metadata"]["trainmark_energy_j"] for e in ev if e["key"] == key]  # noqa: E731
    train_j = joules("run_stop")[0] - joules("run_start")[0] - sum(
        b - a for a, b in zip(joules("eval_start"), joules("eval_stop")))
    assert train_j == pytest.approx(res.train_energy_j)
    assert [e["value"] for e in ev if e["key"] == "eval_accuracy"] == [0.5, 0.7, 0.95]
    assert ev[-1]["key"] == "run_stop" and ev[-1]["metadata"]["status"] == "success"
    assert {e["key"] for e in ev} >= {"seed", "global_batch_size", "opt_base_learning_rate", "init_start",
                                      "init_stop", "epoch_start", "epoch_stop", "train_samples", "eval_samples",
                                      "trainmark_model_fingerprint", "trainmark_flops_per_step"}
    assert {e["metadata"]["file"] for e in ev} <= {"harness/trial.py", "harness/timeline.py"}


def test_epoch_cap_marks_not_converged(tmp_path):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    TinyTest.metric_override = staticmethod(lambda: 0.1)
    ref = TinyTest()
    res, _ = run_trial(trial_config(rules, max_epochs=2), ref, ref.load_data(None), CPU,
                       Timeline(Monitor(FakeMeter(lambda: 0)), TrialLogWriter(None)))
    assert res.status == "not_converged" and res.epochs == 2 and res.final_metric == 0.1


def test_the_event_sequence_is_the_documented_one(tmp_path):
    """docs/result-format.md's order, every boundary after init metered; evaluation every 2nd epoch and after
    the last (the cap, 3): epoch 1 has no eval window."""
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    TinyTest.metric_override = staticmethod(lambda: 0.1)
    ref = TinyTest()
    log = TrialLogWriter(tmp_path / "result_1.txt")
    run_trial(trial_config(rules, max_epochs=3, eval_every=2), ref, ref.load_data(None), CPU,
              Timeline(Monitor(FakeMeter(lambda: 0)), log))
    log.close()
    ev = mllog_events(tmp_path / "result_1.txt")
    keys = [e["key"] for e in ev]
    settings = keys[keys.index("init_start") + 1:keys.index("init_stop")]
    assert keys[:keys.index("init_start")] == [
        "submission_benchmark", "submission_division", "submission_org", "submission_platform", "submission_status",
        "trainmark_rules_version", "trainmark_trial", "cache_clear"]
    assert settings[:4] == ["trainmark_world_size", "trainmark_local_batch_size", "trainmark_nodes", "seed"]
    assert settings[-7:] == ["trainmark_precision", "trainmark_model_fingerprint", "trainmark_parameter_count",
                             "trainmark_flops_per_step", "trainmark_energy_method", "trainmark_energy_scope",
                             "trainmark_energy_domains"]
    assert {"gradient_accumulation_steps", "train_samples", "eval_samples", *rules.defaults()} <= set(settings)
    epoch = ["epoch_start", "epoch_stop"]
    evaluation = ["eval_start", "eval_accuracy", "eval_stop"]
    assert keys[keys.index("init_stop"):] == ["init_stop", "run_start", *epoch, *epoch, *evaluation, *epoch,
                                              *evaluation, "trainmark_trial_result", "run_stop"]
    boundaries = [e for e in ev if e["key"].endswith(("_start", "_stop"))]
    assert all(("trainmark_energy_j" in e["metadata"]) == (not e["key"].startswith("init_")) for e in boundaries)


def run_tiny(tmp_path, **kw):
    opts = dict(benchmark="tiny-test", out=tmp_path / "out", rules_dir=TEST_RULES, quiet=True, seed=100,
                submitter="acme", system_name="box")
    opts.update(kw)
    return run_benchmark(RunOptions(**opts))


def bench_dir(tmp_path):
    return tmp_path / "out" / "closed" / "acme" / "results" / "box" / "tiny-test"


def test_run_writes_every_trial_with_distinct_seeds(tmp_path):
    summary = run_tiny(tmp_path)
    d = bench_dir(tmp_path)
    assert [r.status for r in summary.results] == ["converged"] * 3 and summary.ok
    seeds = [json.loads((d / f"trial_{k}" / "trial.json").read_text())["seed"] for k in (1, 2, 3)]
    assert seeds == [100, 101, 102]
    for k in (1, 2, 3):
        assert (d / f"trial_{k}" / "model.safetensors").stat().st_size > 0
        assert json.loads((d / f"trial_{k}" / "structure.json").read_text())["fingerprint"]
    trials_in_log = [epochlog.parse_line(x).trial for x in (d / "epochs.log").read_text().splitlines()]
    assert sorted(set(trials_in_log)) == [1, 2, 3] and trials_in_log == sorted(trials_in_log)
    assert (tmp_path / "out" / "closed" / "acme" / "systems" / "box.json").exists()


def test_diverged_trial_is_recorded_not_dropped(tmp_path):
    TinyTest.nan_at_epoch = 1
    summary = run_tiny(tmp_path, trials=2)
    assert [r.status for r in summary.results] == ["diverged", "diverged"] and not summary.ok
    t1 = json.loads((bench_dir(tmp_path) / "trial_1" / "trial.json").read_text())
    assert t1["status"] == "diverged" and "non-finite" in t1["error"]
    ev = mllog_events(bench_dir(tmp_path) / "result_1.txt")
    assert ev[-1]["key"] == "run_stop" and ev[-1]["metadata"]["status"] == "aborted"


def test_a_non_finite_metric_is_recorded_as_diverged(tmp_path):
    values = iter([0.5, float("nan")])
    TinyTest.metric_override = staticmethod(lambda: next(values))
    summary = run_tiny(tmp_path, trials=1)
    assert [r.status for r in summary.results] == ["diverged"]
    t1 = json.loads((bench_dir(tmp_path) / "trial_1" / "trial.json").read_text())
    assert t1["status"] == "diverged" and "nan after epoch 2" in t1["error"]
    assert [e["metric"] for e in t1["history"]] == [0.5, None] and t1["final_metric"] == 0.5


def test_ctrl_c_keeps_finished_trials_and_resume_archives_the_interrupted_one(tmp_path):
    TinyTest.metric_override = staticmethod(lambda: 0.5)  # never converges: each trial runs all epochs
    TinyTest.interrupt_at = (101, 2)                       # trial 2 (seed 101), epoch 2
    with pytest.raises(KeyboardInterrupt):
        run_tiny(tmp_path, trials=3)
    d = bench_dir(tmp_path)
    t1 = json.loads((d / "trial_1" / "trial.json").read_text())
    t2 = json.loads((d / "trial_2" / "trial.json").read_text())
    assert t1["status"] == "not_converged" and t1["epochs"] == 6
    assert t2["status"] == "aborted" and t2["epochs"] == 1
    # without --resume the folder is refused
    with pytest.raises(UserError, match="already holds results"):
        run_tiny(tmp_path, trials=3)
    TinyTest.interrupt_at = None
    TinyTest.metric_override = None
    summary = run_tiny(tmp_path, trials=3, resume=True, seed=None)
    assert len(summary.results) == 2  # trials 2 and 3 again
    archived = list((d / "interrupted").iterdir())
    assert len(archived) == 1 and (archived[0] / "trial_2" / "trial.json").exists()
    assert [epochlog.parse_line(x).trial for x in (archived[0] / "epochs.log").read_text().splitlines()] == [2]
    seeds = [json.loads((d / f"trial_{k}" / "trial.json").read_text())["seed"] for k in (1, 2, 3)]
    assert seeds == [100, 101, 102]  # the base seed is recovered on resume
    lines = [epochlog.parse_line(x) for x in (d / "epochs.log").read_text().splitlines()]
    assert [x.epoch for x in lines if x.trial == 1] == [1, 2, 3, 4, 5, 6]
    assert math.isclose(lines[-1].metric, summary.results[-1].final_metric, abs_tol=5e-5)


def test_closed_division_refuses_disallowed_hyperparameters(tmp_path):
    with pytest.raises(UserError, match="opt_base_learning_rate=5.0: must lie in"):
        run_tiny(tmp_path, hparams={"opt_base_learning_rate": 5.0})
    with pytest.raises(UserError, match="opt_name='adam': fixed"):
        run_tiny(tmp_path, hparams={"opt_name": "adam"})
    assert run_tiny(tmp_path, hparams={"opt_base_learning_rate": 5.0}, division="open", trials=1).results


def test_open_division_custom_model(tmp_path, monkeypatch):
    (tmp_path / "mymodels.py").write_text(
        "from torch import nn\ndef build():\n    return nn.Sequential(nn.Linear(8, 2))\n")
    monkeypatch.chdir(tmp_path)
    summary = run_tiny(tmp_path, model="mymodels:build", division="open", trials=1)
    assert summary.results[0].status == "converged"
    d = tmp_path / "out" / "open" / "acme" / "results" / "box" / "tiny-test"
    assert json.loads((d / "trial_1" / "structure.json").read_text())["parameter_count"] == 18
    with pytest.raises(UserError, match="open division"):
        run_tiny(tmp_path, model="mymodels:build")


def test_non_finite_metric_is_diverged_and_never_logged(tmp_path):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    values = iter([0.5, float("inf")])
    TinyTest.metric_override = staticmethod(lambda: next(values))
    lines = []
    ref = TinyTest()
    log = TrialLogWriter(tmp_path / "result_1.txt")
    res, _ = run_trial(trial_config(rules), ref, ref.load_data(None), CPU, Timeline(Monitor(FakeMeter(lambda: 0)), log),
                       lines.append)
    log.close()
    assert res.status == "diverged" and res.epochs == 2 and res.final_metric == 0.5 and "inf" in res.error
    assert len(lines) == 1
    ev = mllog_events(tmp_path / "result_1.txt")
    assert [e["value"] for e in ev if e["key"] == "eval_accuracy"] == [0.5]
    assert ev[-1]["metadata"]["status"] == "aborted"


def _ops_report(path, device_type="cpu", fp32=0.5):
    from trainmark.harness.throughput import ops

    report = {"format": ops.FORMAT, "created_utc": "2026-11-30T07:00:00Z",
              "device": {"type": device_type, "name": "test cpu", "torch": "x"}, "peak": None,
              "results": [{"dtype": "fp32", "tflops": fp32, "name": "mm", "pass": "fwd", "backend": "torch"},
                          {"dtype": "fp32", "tflops": fp32 / 2, "name": "mm2", "pass": "bwd", "backend": "torch"}],
              "bandwidth": [{"gbs": 40.0, "op": "copy"}]}
    path.write_text(json.dumps(report))
    return path


def test_measured_ceilings_go_into_the_system_description_and_utilization(tmp_path):
    summary = run_tiny(tmp_path, trials=1, ceilings=_ops_report(tmp_path / "ops.json"))
    sysdesc = json.loads((tmp_path / "out" / "closed" / "acme" / "systems" / "box.json").read_text())
    rec = sysdesc["measured_ceilings"]
    assert rec["tflops"] == {"fp32": 0.5} and rec["memory_gbs"] == 40.0 and rec["report"] == "ops.json"
    assert len(rec["report_sha256"]) == 64 and rec["device_type"] == "cpu"
    assert rec["framework"] == "pytorch" and rec["tensorflow"] is None  # a report without the setting: PyTorch's
    from trainmark.harness.throughput import ops
    odd = {**json.loads((tmp_path / "ops.json").read_text()), "settings": {"framework": "../../etc/passwd"}}
    assert ops.ceilings_record({**odd, "settings": {"framework": ["x"]}}, "ops.json", "0" * 64)["framework"] is None
    assert ops.ceilings_record(odd, "ops.json", "0" * 64)["framework"] is None  # only a framework we know is named
    t1 = json.loads((bench_dir(tmp_path) / "trial_1" / "trial.json").read_text())
    assert t1["ceiling_tflops"] == 0.5
    assert t1["utilization_of_ceiling"] == pytest.approx(t1["achieved_tflops"] / 0.5)
    assert summary.results[0].utilization_of_ceiling == t1["utilization_of_ceiling"]


def test_ceilings_measured_on_another_device_type_are_refused(tmp_path):
    with pytest.raises(UserError, match="measured on cuda, this run trains on cpu"):
        run_tiny(tmp_path, trials=1, ceilings=_ops_report(tmp_path / "ops.json", device_type="cuda"))
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UserError, match="not a trainmark-ops/1 report"):
        run_tiny(tmp_path / "b", trials=1, ceilings=tmp_path / "bad.json")


def test_one_sample_per_rank_is_refused_for_batch_norm_models():
    from torch import nn

    from trainmark.harness.run import check_batch_norm_batch

    with_bn = lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))  # noqa: E731
    with pytest.raises(UserError, match="1 sample per rank, but the model has batch norm"):
        check_batch_norm_batch(with_bn, 1, "x")
    check_batch_norm_batch(with_bn, 2, "x")                                    # two samples: fine
    check_batch_norm_batch(lambda: nn.Linear(2, 2), 1, "x")                   # no batch norm: fine


def test_result_files_are_readable_by_others_as_the_umask_allows(tmp_path):
    import os

    from trainmark.files import write_json_atomic

    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "a.json", {"x": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]   # no temporary file left behind


def test_each_epoch_records_the_time_spent_waiting_for_batches(tmp_path):
    """Issue 37: a data path that sleeps 10 ms before each batch shows in every epoch's data_wait_s (at
    least the sleeps: a sleep never returns early), and the trial's share lies in (0, 1]."""
    import time

    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    TinyTest.tick = staticmethod(lambda: time.sleep(0.01))
    ref = TinyTest()
    log = TrialLogWriter(tmp_path / "result_1.txt")
    res, _ = run_trial(trial_config(rules, max_epochs=2), ref, ref.load_data(None), CPU,
                       Timeline(Monitor(FakeMeter(time.perf_counter)), log))
    log.close()
    steps_per_epoch = 512 // 32
    assert len(res.history) >= 1
    for h in res.history:
        assert h.data_wait_s >= steps_per_epoch * 0.01
        assert h.data_wait_s <= h.train_s + 0.01
    assert 0 < res.data_wait_share <= 1
    assert res.data_wait_share == pytest.approx(sum(h.data_wait_s for h in res.history)
                                                / sum(h.train_s for h in res.history))
