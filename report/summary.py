"""The rows every report format shares: one per benchmark, one per trial, one per finding."""
from __future__ import annotations

from trainmark.report.collect import BenchmarkView, ReportData, TrialView
from trainmark.report.fmt import num, pct, seconds

BENCHMARK_COLUMNS = ["benchmark", "system", "division", "trials", "converged", "score", "mean train time (s)",
                     "95 % CI (s)", "mean train energy (J)", "mean final metric", "errors", "warnings"]
TRIAL_COLUMNS = ["trial", "status", "epochs", "final metric", "train (s)", "evaluation (s)", "total (s)", "init (s)",
                 "train energy (J)", "total energy (J)", "samples/s", "TFLOPS (logged)", "utilization (logged)",
                 "waiting for data (logged)"]
FINDING_COLUMNS = ["rule", "severity", "file", "line", "message"]


def benchmark_row(view: BenchmarkView) -> list[str]:
    r, s = view.result, view.result.get("score") or {}
    if r["format"] == "mlperf":
        score = score_text(view)
        runs = len(r["trials"])
        return [r["benchmark"], r["system"] or "-", r["division"] or "-", str(runs),
                str(runs - sum(1 for t in r["trials"] if t.get("dropped"))), score, "-", "-", "-", "-",
                str(r["errors"]), str(r["warnings"])]
    withheld = view.withheld
    if withheld:   # figures over a trial the checker failed are not shown
        return [r["benchmark"], r["system"] or "-", r["division"] or "-", str(s.get("trials", 0)),
                str(s.get("converged", 0)), f"none ({withheld})", "-", "-", "-", "-", str(r["errors"]),
                str(r["warnings"])]
    ci = s.get("ci95_train_time_s")
    energy = num(s.get("mean_train_energy_j")) if s.get("mean_train_energy_j") is not None else "not measured"
    return [r["benchmark"], r["system"] or "-", r["division"] or "-", str(s.get("trials", 0)),
            str(s.get("converged", 0)),
            score_text(view), seconds(s.get("mean_train_time_s")),
            f"{seconds(ci[0])} to {seconds(ci[1])}" if ci else "-",
            energy, num(s.get("mean_final_metric")), str(r["errors"]), str(r["warnings"])]


def score_value(view: BenchmarkView) -> tuple[float, str] | None:
    """The score shown (value, unit), or None: none computed, or withheld over an error."""
    s = view.result.get("score") or {}
    if view.withheld:
        return None
    if view.result["format"] == "mlperf":
        return (s["score_minutes"], "min") if s.get("score_minutes") is not None else None
    return (s["score_train_time_s"], "s") if s.get("score_train_time_s") is not None else None


def score_text(view: BenchmarkView) -> str:
    """The score as one cell: '121.8 s', or 'none (why)'."""
    value = score_value(view)
    if value is not None:
        return f"{seconds(value[0]) if value[1] == 's' else num(value[0])} {value[1]}"
    s = view.result.get("score") or {}
    return f"none ({view.withheld or s.get('score_reason') or 'not scored'})"


def trial_row(t: TrialView) -> list[str]:
    s = t.summary
    status = f"failed: {', '.join(t.errors)}" if t.errors else \
        str(s.get("status") or "-") + ("" if s.get("converged") else " (target missed)")
    return [str(s["trial"]), status,
            str(s.get("epochs", "-")), num(s.get("final_metric")), seconds(s.get("train_time_s")),
            seconds(s.get("eval_time_s")), seconds(s.get("total_time_s")), seconds(s.get("init_time_s")),
            num(s.get("train_energy_j")), num(s.get("total_energy_j")), num(t.samples_per_s),
            num(t.logged.get("achieved_tflops")), pct(t.logged.get("utilization")),
            pct(t.logged.get("data_wait_share"))]


def finding_row(f: dict) -> list[str]:
    return [f["rule"], f["severity"], f["file"] or ".", "-" if f["line"] is None else str(f["line"]), f["message"]]


def loose_findings(data: ReportData) -> list[dict]:
    """Findings that belong to no benchmark folder (layout, system descriptions)."""
    paths = [v.result["path"] for v in data.benchmarks]
    return [f for f in data.report["findings"]
            if not any(not p or f["file"] == p or f["file"].startswith(p + "/") for p in paths)]
