"""Issue 30: telemetry as evidence and energy that is consistent, tried as a dishonest submitter would.

The committed examples ran on a virtual machine (no energy counters), so ``measured()`` first turns a copy of the
transformer-mini example (its evaluations last seconds, several telemetry rows each) into a trial measured by a
fake RAPL package, every figure consistent: a power function of
the windows (training, evaluation, the rest), its integral as the cumulative readings of every boundary,
its row means as ``package-0.power_w`` and a matching ``run.cpu_pct`` in telemetry.csv. That trial passes;
each forgery below then breaks it the way the issue describes and must fail with its own finding.
"""
from __future__ import annotations

import json
import re

from forge import bench_dir, check, edit_json, edit_records, error_codes, example, read_records, record

from trainmark.format import mllog

DOMAIN = "package-0"
WATTS = {"epoch": 60.0, "eval": 50.0, None: 20.0}      # training, evaluation, anything else
CPU_PCT = {"epoch": 95.0, "eval": 90.0, None: 10.0}
TRIALS = range(1, 6)
BENCH = "transformer-mini"  # greedy decoding: every evaluation spans several 1-second telemetry rows


def windows(records: list[dict]) -> list[tuple[str, int, int]]:
    """(kind, start ms, stop ms) of every epoch and eval window."""
    out, open_at = [], {}
    for r in records:
        kind, _, edge = r["key"].rpartition("_")
        if kind in ("epoch", "eval") and edge in ("start", "stop"):
            if edge == "start":
                open_at[kind] = r["time_ms"]
            else:
                out.append((kind, open_at.pop(kind), r["time_ms"]))
    return out


def joules(spans: list[tuple[str, int, int]], t0: float, t: float, level=WATTS) -> float:
    """The integral of the piecewise power from t0 to t (ms), in joules (or %-seconds of ``level``)."""
    total, at = 0.0, t0
    for kind, a, b in sorted(spans, key=lambda s: s[1]):
        if b <= at or a >= t:
            continue
        a, b = max(a, at), min(b, t)
        total += level[None] * (a - at) / 1000 + level[kind] * (b - a) / 1000
        at = b
    return total + level[None] * max(0.0, t - at) / 1000


def telemetry_rows(path, spans, t0, cpu_pct=CPU_PCT, **more: dict) -> None:
    """Rewrite telemetry.csv at its own times with the power and CPU use of ``spans`` (and ``more`` columns,
    ``other_cpu_pct={"epoch": ..., "eval": ..., None: ...}`` for ``other.cpu_pct``)."""
    times = [int(line.split(",")[0]) for line in path.read_text().splitlines()[1:]]
    levels = {"run.cpu_pct": cpu_pct, **{k.replace("_", ".", 1): v for k, v in more.items()}}
    lines = [",".join(["time_ms", f"{DOMAIN}.power_w", *levels]), f"{times[0]}," + "," * len(levels)]
    for a, b in zip(times, times[1:]):
        cells = [(joules(spans, t0, b, level) - joules(spans, t0, a, level)) / ((b - a) / 1000)
                 for level in (WATTS, *levels.values())]
        lines.append(",".join([str(b), *(f"{c:.6g}" for c in cells)]))
    path.write_text("\n".join(lines) + "\n")


def measure_trial(bench, k: int, scale: float = 1.0) -> None:
    """Trial k as a fake RAPL package measured it (every energy figure ``scale`` times the truth)."""
    records = read_records(bench / f"result_{k}.txt")
    spans = windows(records)
    t0 = records[0]["time_ms"]
    e = {r["time_ms"]: scale * joules(spans, t0, r["time_ms"]) for r in records}
    domain = {"kind": "cpu-package", "method": "measured-counter", "resolution": "1 uJ counter", "reason": None,
              "in_total": True}
    opened: dict[str, float] = {}
    for r in records:
        md = r.get("metadata", {})
        if mllog.ENERGY_J in md:
            md[mllog.ENERGY_J], md[mllog.DOMAINS_J] = e[r["time_ms"]], {DOMAIN: e[r["time_ms"]]}
        if r["key"] in (mllog.EPOCH_START, mllog.EVAL_START):
            opened[r["key"]] = e[r["time_ms"]]
        if r["key"] == mllog.EPOCH_STOP:
            md[mllog.TRAIN_ENERGY_J] = e[r["time_ms"]] - opened[mllog.EPOCH_START]
        if r["key"] == mllog.EVAL_STOP:
            md[mllog.EVAL_ENERGY_J] = e[r["time_ms"]] - opened[mllog.EVAL_START]
        if r["key"] == mllog.ENERGY_METHOD:
            r["value"] = "measured-counter"
        if r["key"] == mllog.ENERGY_SCOPE:
            r["value"] = DOMAIN
        if r["key"] == mllog.ENERGY_DOMAINS:
            r["value"] = {DOMAIN: {k_: v for k_, v in domain.items()}}
    run = [record(records, mllog.RUN_START)["time_ms"], record(records, mllog.RUN_STOP)["time_ms"]]
    total = e[run[1]] - e[run[0]]
    evals = sum(e[b] - e[a] for kind, a, b in spans if kind == "eval")
    energy = {"train_energy_j": total - evals, "total_energy_j": total, "energy_method": "measured-counter",
              "energy_reason": None, "energy_scope": DOMAIN,
              "energy_domains": {DOMAIN: {**domain, "train_j": total - evals, "total_j": total}}}
    record(records, mllog.TRIAL_RESULT)["value"].update(energy)
    (bench / f"result_{k}.txt").write_text("".join(mllog.PREFIX + json.dumps(r) + "\n" for r in records))
    spent = {kind: [e[b] - e[a] for kind_, a, b in spans if kind_ == kind] for kind in ("epoch", "eval")}

    def trial_json(d):
        d.update(energy)
        for item in d["history"]:
            item["train_j"], item["eval_j"] = spent["epoch"][item["epoch"] - 1], spent["eval"][item["epoch"] - 1]
            item["energy_domains_j"] = {DOMAIN: item["train_j"]}
    edit_json(bench / f"trial_{k}" / "trial.json", trial_json)
    telemetry_rows(bench / f"trial_{k}" / "telemetry.csv", spans, t0)


def measured(tmp_path, scale: float = 1.0):
    root = example(tmp_path, BENCH)
    bench = bench_dir(root, BENCH)
    for k in TRIALS:
        measure_trial(bench, k, scale)
    return root, bench


def trial_energy(bench, k: int = 1) -> float:
    return json.loads((bench / f"trial_{k}" / "trial.json").read_text())["total_energy_j"]


def test_a_consistent_measured_trial_passes(tmp_path, capsys):
    root, bench = measured(tmp_path)
    rc, report = check(root, capsys)
    assert rc == 0 and error_codes(report) == set(), [f for f in report["findings"] if f["severity"] == "error"]
    records = read_records(bench / "result_1.txt")
    run_s = (record(records, mllog.RUN_STOP)["time_ms"] - record(records, mllog.RUN_START)["time_ms"]) / 1000
    assert 50 * run_s < trial_energy(bench) < 60 * run_s   # mostly training (60 W), then evaluation (50 W)


def test_format_2_without_telemetry_is_an_error(tmp_path, capsys):
    root = example(tmp_path, BENCH)
    for k in TRIALS:
        (bench_dir(root, BENCH) / f"trial_{k}" / "telemetry.csv").unlink()
    rc, report = check(root, capsys)
    assert rc == 1 and "TELEMETRY-004" in error_codes(report)


def test_time_only_telemetry_of_the_examples_gives_no_timeline_or_power_finding(tmp_path, capsys):
    rc, report = check(example(tmp_path, BENCH), capsys)
    assert rc == 0
    assert not {f["rule"] for f in report["findings"]} & {"TELEMETRY-004", "TELEMETRY-005", "TELEMETRY-006",
                                                          "ENERGY-004", "ENERGY-005", "ENERGY-006"}


def halve_run_stop(bench, k: int) -> float:
    """run_stop's reading halved; returns the forged total the summaries must show to match."""
    forged = {}

    def edit(records):
        start, stop = record(records, mllog.RUN_START), record(records, mllog.RUN_STOP)
        stop["metadata"][mllog.ENERGY_J] /= 2
        stop["metadata"][mllog.DOMAINS_J][DOMAIN] /= 2
        forged["total"] = stop["metadata"][mllog.ENERGY_J] - start["metadata"][mllog.ENERGY_J]
    edit_records(bench / f"result_{k}.txt", edit)
    return forged["total"]


def test_halved_run_stop_energy_matched_in_trial_json_is_an_error(tmp_path, capsys):
    root, bench = measured(tmp_path)
    for k in TRIALS:
        total = halve_run_stop(bench, k)
        edit_json(bench / f"trial_{k}" / "trial.json", lambda d, t=total: d.update(
            total_energy_j=t, train_energy_j=t - (d["total_energy_j"] - d["train_energy_j"])))
    rc, report = check(root, capsys)
    assert rc == 1 and {"ENERGY-004", "ENERGY-005"} <= error_codes(report)


def test_halved_run_stop_energy_with_every_summary_matched_is_an_error(tmp_path, capsys):
    root, bench = measured(tmp_path)
    for k in TRIALS:
        total = halve_run_stop(bench, k)
        for path in (bench / f"trial_{k}" / "trial.json",):
            edit_json(path, lambda d, t=total: d.update(
                total_energy_j=t, train_energy_j=t - (d["total_energy_j"] - d["train_energy_j"])))

        def summary(records, t=total):
            v = record(records, mllog.TRIAL_RESULT)["value"]
            v["train_energy_j"] = t - (v["total_energy_j"] - v["train_energy_j"])
            v["total_energy_j"] = t
        edit_records(bench / f"result_{k}.txt", summary)
    rc, report = check(root, capsys)
    assert rc == 1 and "ENERGY-005" in error_codes(report)   # the reading goes back from the last eval_stop's


def test_every_energy_figure_scaled_by_half_is_caught_by_the_power_telemetry(tmp_path, capsys):
    root = example(tmp_path, BENCH)
    bench = bench_dir(root, BENCH)
    for k in TRIALS:
        measure_trial(bench, k, scale=0.5)       # readings, windows, summaries all halved; power left true
    rc, report = check(root, capsys)
    assert rc == 1 and error_codes(report) == {"ENERGY-006"}


def test_power_integrating_to_23_times_the_logged_energy_is_an_error(tmp_path, capsys):
    """The power column multiplied by 23 (~1,380 W in training: about 170 kJ beside the 7.3 kJ the meter logged)."""
    root, bench = measured(tmp_path)
    path = bench / "trial_1" / "telemetry.csv"
    lines = path.read_text().splitlines()
    out = [lines[0], lines[1]]
    for line in lines[2:]:
        t, watts, cpu = line.split(",")
        out.append(f"{t},{float(watts) * 23:.6g},{cpu}")
    path.write_text("\n".join(out) + "\n")
    rc, report = check(root, capsys)
    assert rc == 1 and "ENERGY-006" in error_codes(report)
    (finding,) = [f for f in report["findings"] if f["rule"] == "ENERGY-006"]
    integrated, logged = (float(x) for x in re.search(r"integrates to ([\d.]+) J .* give ([\d.]+) J",
                                                      finding["message"]).groups())
    assert "trial_1/telemetry.csv" in finding["file"] and logged == round(trial_energy(bench), 2)
    assert 22 < integrated / logged < 24, finding["message"]  # the power's own integral, 23 times the truth


def test_evaluation_working_like_training_while_training_idles_is_an_error(tmp_path, capsys):
    """The telemetry of a trial whose windows were relabelled: busy in every evaluation, idle in training."""
    root, bench = measured(tmp_path)
    for k in TRIALS:
        records = read_records(bench / f"result_{k}.txt")
        telemetry_rows(bench / f"trial_{k}" / "telemetry.csv", windows(records), records[0]["time_ms"],
                       cpu_pct={"epoch": 10.0, "eval": 95.0, None: 10.0})
    rc, report = check(root, capsys)
    assert rc == 1 and "TELEMETRY-005" in error_codes(report)


def retimeline(bench, **columns) -> None:
    for k in TRIALS:
        records = read_records(bench / f"result_{k}.txt")
        telemetry_rows(bench / f"trial_{k}" / "telemetry.csv", windows(records), records[0]["time_ms"], **columns)


def test_a_neighbour_pausing_during_evaluations_is_not_a_contradiction(tmp_path, capsys):
    """Honest, on a shared machine: the run gets a quarter of the CPUs while training and more while a
    neighbour pauses during the evaluations; as a share of what the neighbour left free it worked alike."""
    root, bench = measured(tmp_path)
    retimeline(bench, cpu_pct={"epoch": 25.0, "eval": 60.0, None: 10.0},
               other_cpu_pct={"epoch": 75.0, "eval": 30.0, None: 20.0},
               cpu_steal_pct={"epoch": 0.0, "eval": 0.0, None: 0.0})
    rc, report = check(root, capsys)
    assert rc == 0 and "TELEMETRY-005" not in {f["rule"] for f in report["findings"]}


def test_idle_training_beside_busy_evaluations_on_a_quiet_machine_is_an_error(tmp_path, capsys):
    root, bench = measured(tmp_path)
    retimeline(bench, cpu_pct={"epoch": 5.0, "eval": 90.0, None: 5.0},
               other_cpu_pct={"epoch": 5.0, "eval": 5.0, None: 5.0},
               cpu_steal_pct={"epoch": 0.0, "eval": 0.0, None: 0.0})
    rc, report = check(root, capsys)
    assert rc == 1 and error_codes(report) == {"TELEMETRY-005"}


def test_times_compressed_in_the_logs_but_not_in_the_telemetry_is_an_error(tmp_path, capsys):
    """Every MLLOG time x 0.6 from the first record (summaries recomputed would not help): the telemetry
    rows run on for 50 s after run_stop."""
    root = example(tmp_path, BENCH)
    bench = bench_dir(root, BENCH)

    def faster(records):
        t0 = records[0]["time_ms"]
        for r in records:
            r["time_ms"] = t0 + round((r["time_ms"] - t0) * 0.6)
    edit_records(bench / "result_1.txt", faster)
    rc, report = check(root, capsys)
    assert rc == 1 and "TELEMETRY-006" in error_codes(report)


def test_times_compressed_in_the_logs_and_the_telemetry_leave_too_many_rows(tmp_path, capsys):
    root = example(tmp_path, BENCH)
    bench = bench_dir(root, BENCH)
    t0 = read_records(bench / "result_1.txt")[0]["time_ms"]

    def faster(records):
        for r in records:
            r["time_ms"] = t0 + round((r["time_ms"] - t0) * 0.6)
    edit_records(bench / "result_1.txt", faster)
    path = bench / "trial_1" / "telemetry.csv"
    lines = path.read_text().splitlines()
    squeezed = [lines[0]]
    for line in lines[1:]:  # the time squeezed, every other column kept
        t, comma, rest = line.partition(",")
        squeezed.append(f"{t0 + round((int(t) - t0) * 0.6)}{comma}{rest}")
    path.write_text("\n".join(squeezed) + "\n")
    rc, report = check(root, capsys)
    assert rc == 1 and "TELEMETRY-006" in error_codes(report)
    assert any("rows in a run" in f["message"] for f in report["findings"] if f["rule"] == "TELEMETRY-006")
