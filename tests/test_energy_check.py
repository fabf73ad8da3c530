"""Energy by domain and telemetry end to end: a tiny run on fake meters, then the checker's
ENERGY-* and TELEMETRY-* findings, each broken alone."""
import json
import shutil

import pytest
import synthetic
from conftest import TEST_RULES, TinyTest
from energy_fakes import FakeNVML, add_uj, make_powercap

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import telemetry as telemetry_check
from trainmark.checker.read.evidence import read_telemetry
from trainmark.checker.read.safefs import SafeTree
from trainmark.checker.verdict.findings import Findings
from trainmark.format.mllog_read import Event
from trainmark.harness import run
from trainmark.harness.measure import energy
from trainmark.harness.run import RunOptions, run_benchmark

BENCH = "closed/acme/results/box/tiny-test"
STEP_J, EVAL_J = 1.0, 0.2   # the fake GPU's energy per training step and per evaluation


def tiny_run(tmp_path, monkeypatch, throttle=0, fail_after_steps=None):
    """3 trials of tiny-test on a fake GPU (energy moves only while training or evaluating) and CPU."""
    nv = FakeNVML(archs=(7,))
    nv.throttle[0] = throttle
    root = make_powercap(tmp_path / "powercap", packages=((0, 10 ** 12),))
    steps = [0]

    def tick():
        steps[0] += 1
        nv.energy_mj[0] += int(STEP_J * 1000)
        add_uj(root / "intel-rapl:0", 250_000, 10 ** 12)
        if fail_after_steps is not None and steps[0] == fail_after_steps:
            nv.fail_energy = True

    def eval_tick():
        nv.energy_mj[0] += int(EVAL_J * 1000)
    TinyTest.tick = staticmethod(tick)
    TinyTest.eval_tick = staticmethod(eval_tick)
    if fail_after_steps is not None:  # every trial takes 3 epochs of 16 steps: the fault lands mid-trial
        metrics = iter([0.5, 0.6, 0.95] * 3)
        TinyTest.metric_override = staticmethod(lambda: next(metrics))
    monkeypatch.setattr(run, "open_meter_for", lambda device, dist, watts: energy.open_meter(
        "cuda:0", rapl_root=root, pynvml=nv, ipmitool=False))
    out = tmp_path / "out"
    run_benchmark(RunOptions(benchmark="tiny-test", out=out, rules_dir=TEST_RULES, quiet=True, seed=100,
                             submitter="acme", system_name="box", telemetry_hz=50, data_dir=tmp_path))
    return out


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        yield tiny_run(tmp_path_factory.mktemp("energy"), mp)
    finally:
        mp.undo()
        TinyTest.tick = staticmethod(lambda: None)
        TinyTest.eval_tick = staticmethod(lambda: None)


@pytest.fixture
def copy(clean, tmp_path):
    dest = tmp_path / "out"
    shutil.copytree(clean, dest)
    return dest


def check(root):
    return check_path(root, CheckOptions(rules_root=TEST_RULES))


def codes(report, prefix=("ENERGY-", "TELEMETRY-")):
    return [(f.rule, f.file, f.line) for f in report.findings if f.rule.startswith(prefix)]


def test_trial_records_joules_per_domain_scope_and_telemetry(clean):
    d = clean / BENCH
    t = json.loads((d / "trial_1" / "trial.json").read_text())
    assert t["energy_scope"] == "gpu0+package-0" and t["energy_method"] == "measured-counter"
    gpu, cpu = t["energy_domains"]["gpu0"], t["energy_domains"]["package-0"]
    steps, evals = t["steps"], t["epochs"]
    assert gpu["train_j"] == pytest.approx(STEP_J * steps) and gpu["total_j"] == pytest.approx(
        STEP_J * steps + EVAL_J * evals)   # one eval_tick per evaluation
    assert cpu["train_j"] == pytest.approx(0.25 * steps) and cpu["in_total"] and cpu["kind"] == "cpu-package"
    assert t["train_energy_j"] == pytest.approx(gpu["train_j"] + cpu["train_j"])
    assert "1 mJ" in gpu["resolution"] and gpu["reason"] is None
    assert t["telemetry"]["file"] == "telemetry.csv" and t["telemetry"]["period_s"] == pytest.approx(0.02)
    assert "gpu0.throttle" in t["telemetry"]["columns"] and t["telemetry"]["samples"] >= 2
    for epoch in t["history"]:
        assert epoch["energy_domains_j"]["gpu0"] == pytest.approx(STEP_J * 16)
        assert epoch["telemetry"]["mean"]["gpu0.temp_c"] == 60 and epoch["telemetry"]["throttle"] == {}
    events = [json.loads(x[9:]) for x in (d / "result_1.txt").read_text().splitlines()]
    assert sum(e["key"] == "trainmark_telemetry" for e in events) == t["epochs"]
    (scope,) = [e["value"] for e in events if e["key"] == "trainmark_energy_scope"]
    assert scope == "gpu0+package-0"
    stop = [e for e in events if e["key"] == "run_stop"][0]["metadata"]
    assert set(stop["trainmark_energy_domains_j"]) == {"gpu0", "package-0"}
    header = (d / "trial_1" / "telemetry.csv").read_text().splitlines()[0]
    assert header.startswith("time_ms,gpu0.power_w,package-0.power_w,gpu0.temp_c")


def test_a_clean_run_passes_with_no_energy_or_telemetry_findings(clean):
    report = check(clean)
    assert not [f for f in report.findings if f.severity == "error"], codes(report, ("",))
    assert [c for c in codes(report) if c[0] != "TELEMETRY-002"] == []  # a contended machine may stall >2 s


def test_energy_001_epoch_energies_do_not_add_up(copy):
    path = copy / BENCH / "result_2.txt"

    def more(record):
        record["metadata"]["trainmark_train_energy_j"] += 5.0
        return record
    line = synthetic.edit_mllog(path, "epoch_stop", more)
    stop_line = synthetic.mllog_lines_of(path, "run_stop")[0]
    assert line and ("ENERGY-001", f"{BENCH}/result_2.txt", stop_line) in codes(check(copy))


def test_energy_002_domains_do_not_add_up_to_the_total(copy):
    path = copy / BENCH / "result_1.txt"

    def more(record):
        record["metadata"]["trainmark_energy_domains_j"]["gpu0"] += 10.0
        return record
    line = synthetic.edit_mllog(path, "run_stop", more)
    report = check(copy)
    assert ("ENERGY-002", f"{BENCH}/result_1.txt", line) in codes(report)
    assert report.exit_code == 1


def test_energy_003_meter_failing_mid_run_is_null_with_reason_and_a_finding(tmp_path, monkeypatch):
    out = tiny_run(tmp_path, monkeypatch, fail_after_steps=20)   # trial 1, epoch 2
    t = json.loads((out / BENCH / "trial_1" / "trial.json").read_text())
    assert t["status"] == "converged"                              # the trial goes on
    assert t["train_energy_j"] is None and t["total_energy_j"] is None and "GPU is lost" in t["energy_reason"]
    assert t["energy_domains"]["gpu0"]["train_j"] is None and "GPU is lost" in t["energy_domains"]["gpu0"]["reason"]
    assert t["energy_domains"]["package-0"]["train_j"] == pytest.approx(0.25 * t["steps"])
    assert t["history"][0]["train_j"] is not None and t["history"][1]["train_j"] is None  # never 0
    report = check(out)
    found = [f for f in report.findings if f.rule == "ENERGY-003"]
    assert found and found[0].file == f"{BENCH}/result_1.txt" and "GPU is lost" in found[0].message
    assert not [c for c in codes(report) if c[0] == "ENERGY-002"]


def test_telemetry_001_throttling_while_timed(tmp_path, monkeypatch):
    out = tiny_run(tmp_path, monkeypatch, throttle=0x20 | 0x1)
    t = json.loads((out / BENCH / "trial_1" / "trial.json").read_text())
    assert t["history"][0]["telemetry"]["throttle"]["gpu0"]["reasons"] == ["sw_thermal_slowdown"]
    found = [f for f in check(out).findings if f.rule == "TELEMETRY-001"]
    # every trial whose sampler wrote a row inside a timed window (the tiny trials last a fraction of a second:
    # on a loaded CI machine one may get none, and on a fast CPU one may end between two rows) reports the
    # throttling, and at least one of the three does
    sampled = {f"{BENCH}/trial_{k}/telemetry.csv" for k in (1, 2, 3) if _rows_while_timed(out / BENCH, k)}
    assert {f.file for f in found} == sampled and len(sampled) >= 1
    assert "sw_thermal_slowdown" in found[0].message and found[0].severity == "warning"


def _rows_while_timed(bench, k: int) -> int:
    """Telemetry rows of trial k inside its run minus its evaluations, from the files themselves."""
    from trainmark.format import mllog

    events = mllog.read(bench / f"result_{k}.txt")
    at = {e.key: e.time_ms for e in events if e.key in ("run_start", "run_stop")}
    evals = list(zip([e.time_ms for e in events if e.key == "eval_start"],
                     [e.time_ms for e in events if e.key == "eval_stop"]))
    rows = [float(line.split(",", 1)[0]) for line in
            (bench / f"trial_{k}" / "telemetry.csv").read_text().splitlines()[1:]]
    return sum(at["run_start"] <= t <= at["run_stop"] and not any(a <= t <= b for a, b in evals) for t in rows)


def test_telemetry_003_a_tampered_file(copy):
    path = copy / BENCH / "trial_2" / "telemetry.csv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(",", ",abc,", 1)
    path.write_text("\n".join(lines) + "\n")
    assert ("TELEMETRY-003", f"{BENCH}/trial_2/telemetry.csv", 3) in codes(check(copy))


def test_the_telemetry_file_is_part_of_the_format(copy):
    assert not [f for f in check(copy).findings if f.rule == "LAYOUT-004"]


def event(line, key, time_ms):
    return Event(line, "", time_ms, key, None, {}, None)


def test_telemetry_gaps_and_throttle_only_inside_timed_windows(tmp_path):
    # run 0..10 s with an evaluation 4..6 s; a sample every 0.5 s except 6.5 -> 9.5 s (3 s gap)
    times = [x / 2 for x in range(0, 14)] + [9.5, 10.0]
    throttled = {5.0: 0x40}   # 5.0 s is inside the evaluation: not a timed window
    rows = ["time_ms,gpu0.throttle"] + [f"{int(t * 1000)},{throttled.get(t, 0)}" for t in times]
    rows.append("10000,4")  # power cap at run_stop (a timed instant)
    trial = tmp_path / "trial_1"
    trial.mkdir()
    (trial / "telemetry.csv").write_text("\n".join(rows) + "\n")
    events = [event(1, "run_start", 0), event(2, "eval_start", 4000), event(3, "eval_stop", 6000),
              event(4, "run_stop", 10000)]
    findings = Findings()
    telemetry_check.check_trial(events, read_telemetry(SafeTree(tmp_path), "trial_1/telemetry.csv"), findings)
    got = [(f.rule, f.line, f.seen) for f in findings]
    assert got == [("TELEMETRY-002", 16, "3.0 s without one"), ("TELEMETRY-001", 18, "sw_power_cap")]


def test_a_torn_last_row_is_ignored_but_a_bad_header_is_not(tmp_path):
    findings = Findings()
    assert telemetry_check.parse(b"time_ms,a.b\n1,2\n3,4", "t.csv", findings) and not len(findings)
    assert not telemetry_check.parse(b"when,a.b\n1,2\n", "t.csv", findings)
    assert not telemetry_check.parse(b"time_ms,a.b\n5,2\n3,4\n", "t.csv", findings)  # time goes back
    assert [f.line for f in findings] == [1, 3] and {f.rule for f in findings} == {"TELEMETRY-003"}


@pytest.mark.parametrize("data", [b"time_ms,a\n1,\x00\n", b"time_ms,a\x00\n", b"\xff\xfe", b"",
                                  b"time_ms,a\n1," + b"9" * 200_000 + b"\n", b"time_ms,a\n1,inf\n",
                                  b"time_ms,a,a\n", b"time_ms,../x\n", b"time_ms,a\n1,2,3\n"])
def test_hostile_telemetry_is_one_finding_never_a_crash(data):
    findings = Findings()
    assert not telemetry_check.parse(data, "t.csv", findings)
    assert [f.rule for f in findings] == ["TELEMETRY-003"]
