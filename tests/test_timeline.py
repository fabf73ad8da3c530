"""The Timeline: one statement per window writes both boundaries with the same clock and meter readings."""
import pytest

from trainmark.format import mllog
from trainmark.harness.measure.energy import MeterBase
from trainmark.harness.measure.windows import Monitor
from trainmark.harness.timeline import Timeline


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Meter(MeterBase):
    """10 W on the fake clock."""
    method, reason = "measured-counter", None

    def __init__(self, clock):
        self.clock = clock

    def joules(self):
        return 10.0 * self.clock()


def make(tmp_path, nodes=dict):
    clock = Clock()
    log = mllog.TrialLogWriter(tmp_path / "result_1.txt")
    timeline = Timeline(Monitor(Meter(clock), clock=clock, wall=lambda: 1000.0), log, nodes=nodes)
    return clock, log, timeline


def records(tmp_path):
    return {(r.key, r.metadata.get("epoch_num")): r for r in mllog.read(tmp_path / "result_1.txt")}


def test_a_window_writes_both_boundaries_with_time_and_energy(tmp_path):
    clock, log, timeline = make(tmp_path)
    with timeline.window("epoch", epoch=3) as w:
        clock.t = 2.5
        w.fields[mllog.SAMPLES] = 64
    with timeline.window("eval", epoch=3) as ev:
        clock.t = 3.0
        end = ev.close()
        clock.t = 9.0  # after close: not part of the window
        timeline.eval_accuracy(0.75, 3, at=end.end_s)
    log.close()
    got = records(tmp_path)
    start, stop = got[("epoch_start", 3)], got[("epoch_stop", 3)]
    assert (start.time_ms, stop.time_ms) == (1_000_000, 1_002_500)  # wall anchor + clock, in ms
    assert start.metadata["trainmark_energy_j"] == 0.0 and stop.metadata["trainmark_energy_j"] == 25.0
    assert stop.metadata["trainmark_train_energy_j"] == 25.0 and stop.metadata["trainmark_samples"] == 64
    assert w.window.seconds == 2.5 and w.window.joules == 25.0
    eval_stop = got[("eval_stop", 3)]
    assert eval_stop.time_ms == 1_003_000 and eval_stop.metadata["trainmark_eval_energy_j"] == 5.0
    assert got[("eval_accuracy", 3)].time_ms == 1_003_000 and ev.window.seconds == 0.5
    keys = [r.key for r in mllog.read(tmp_path / "result_1.txt")]
    assert keys == ["epoch_start", "epoch_stop", "eval_start", "eval_accuracy", "eval_stop"]


def test_an_exception_leaves_the_window_without_its_stop_boundary(tmp_path):
    clock, log, timeline = make(tmp_path)
    with timeline.window("run") as run:
        with pytest.raises(RuntimeError, match="boom"):
            with timeline.window("epoch", epoch=1):
                clock.t = 1.0
                raise RuntimeError("boom")
        run.status = "aborted"
        clock.t = 2.0
    log.close()
    keys = [r.key for r in mllog.read(tmp_path / "result_1.txt")]
    assert keys == ["run_start", "epoch_start", "run_stop"]
    assert records(tmp_path)[("run_stop", None)].metadata["status"] == "aborted" and run.window.seconds == 2.0


def test_init_logs_the_header_first_and_no_energy(tmp_path):
    clock, log, timeline = make(tmp_path)
    header = dict(benchmark="b", division="open", org="o", platform="p", rules_version="1.0", trial=2)
    with timeline.window("init", header=header) as init:
        timeline.settings([("seed", 5)], at=init.start.s)
        clock.t = 4.0
    log.close()
    recs = mllog.read(tmp_path / "result_1.txt")
    assert [r.key for r in recs][:8] == ["submission_benchmark", "submission_division", "submission_org",
                                         "submission_platform", "submission_status", "trainmark_rules_version",
                                         "trainmark_trial", "cache_clear"]
    assert [r.key for r in recs][8:] == ["init_start", "seed", "init_stop"]
    assert all("trainmark_energy_j" not in r.metadata for r in recs)
    assert recs[-1].time_ms - recs[8].time_ms == 4000 and init.window.seconds == 4.0


def test_run_boundaries_carry_the_per_node_fields(tmp_path):
    clock, log, timeline = make(tmp_path, nodes=lambda: {"trainmark_node_energy_j": [clock.t]})
    with timeline.window("run") as run:
        clock.t = 1.0
        run.status = "success"
    log.close()
    got = records(tmp_path)
    assert got[("run_start", None)].metadata["trainmark_node_energy_j"] == [0.0]
    assert got[("run_stop", None)].metadata["trainmark_node_energy_j"] == [1.0]
    assert got[("run_stop", None)].metadata["status"] == "success"


def test_a_window_cannot_be_opened_twice(tmp_path):
    _, log, timeline = make(tmp_path)
    with timeline.window("epoch", epoch=1):
        with pytest.raises(RuntimeError, match="already open"):
            with timeline.window("epoch", epoch=2):
                pass
    log.close()
