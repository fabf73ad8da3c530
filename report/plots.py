"""A benchmark's figures (curves, time and energy bars, MLPerf runs) and the overview's score charts.

Drawn by report/svg.py as SVG text (docs/report.md says why not matplotlib any more). Each function
takes the chart's id prefix, unique in the page, and returns None when there is nothing to draw.
"""
from __future__ import annotations

from trainmark.report.svg import Series, bar_chart, line_chart
from trainmark.rules.convergence import band_for


def _metric_name(view) -> str:
    return view.rules.metric["name"] if view.rules is not None else "metric"


def _target(view) -> float | None:
    return float(view.rules.target) if view.rules is not None else None


def metric_vs_time(view, prefix: str) -> str | None:
    """Every trial's metric against its training time (evaluation excluded)."""
    trials = [t for t in view.trials if t.curve]
    if not trials:
        return None
    series = [Series(f"trial {t.summary['trial']}", f"data-time-trial-{t.summary['trial']}",
                     [(p.train_s, p.metric) for p in t.curve]) for t in trials]
    return line_chart(prefix, series, "training time so far, evaluation excluded (s)", _metric_name(view),
                      "metric against training time per trial", target=_target(view))


def metric_vs_epoch(view, prefix: str) -> tuple[str | None, bool]:
    """Every trial's metric per epoch beside the rules' reference band; (svg, band drawn)."""
    trials = [t for t in view.trials if t.curve]
    if not trials:
        return None, False
    first = trials[0]
    band = band_for(view.rules, first.global_batch_size, first.precision, first.framework)  # its implementation's
    series = [Series(f"trial {t.summary['trial']}", f"data-epoch-trial-{t.summary['trial']}",
                     [(float(p.epoch), p.metric) for p in t.curve]) for t in trials]
    bounds = [(float(e), band[e][0], band[e][1]) for e in sorted(band)] if band else None
    return line_chart(prefix, series, "epoch", _metric_name(view), "metric per epoch per trial",
                      target=_target(view), band=bounds), bool(band)


def _trial_name(trial) -> str:
    s = trial.summary
    return f"trial {s['trial']}" + (f" (failed: {', '.join(trial.errors)})" if trial.errors else
                                    "" if s.get("converged") else " (missed target)")


def _trusted(trials, values: list[float]) -> list[float]:
    """A failed trial's figures are not drawn (0: its label says why): one edited time would set the scale."""
    return [0.0 if t.failed else v for t, v in zip(trials, values)]


def time_bars(view, prefix: str) -> str | None:
    """Per trial: training time and evaluation time, stacked (the windows shown apart)."""
    trials = [t for t in view.trials if t.summary.get("train_time_s") is not None]
    rows = [t.summary for t in trials]
    if not rows:
        return None
    return bar_chart(prefix, [_trial_name(t) for t in trials],
                     [("training", "time-training", _trusted(trials, [r["train_time_s"] for r in rows])),
                      ("evaluation", "time-evaluation", _trusted(trials, [r.get("eval_time_s") or 0.0 for r in rows]))],
                     "time (s)", "training and evaluation time per trial")


def energy_bars(view, prefix: str) -> str | None:
    """Per trial: training energy and evaluation energy, when measured."""
    trials = [t for t in view.trials
              if t.summary.get("train_energy_j") is not None and t.summary.get("total_energy_j") is not None]
    rows = [t.summary for t in trials]
    if not rows:
        return None
    return bar_chart(prefix, [_trial_name(t) for t in trials],
                     [("training", "energy-training", _trusted(trials, [r["train_energy_j"] for r in rows])),
                      ("evaluation", "energy-evaluation",
                       _trusted(trials, [r["total_energy_j"] - r["train_energy_j"] for r in rows]))],
                     "energy (J)", "training and evaluation energy per trial")


def mlperf_runs(result: dict, prefix: str) -> str | None:
    """An MLPerf benchmark's runs in minutes; dropped runs are shown at 0 and labelled."""
    runs = result["trials"]
    if not runs:
        return None
    names = [str(r.get("file", "")).rsplit("/", 1)[-1] + (" (dropped)" if r.get("dropped") else "") for r in runs]
    return bar_chart(prefix, names, [("minutes", "mlperf-run", [r.get("minutes") or 0.0 for r in runs])],
                     "run_stop - run_start (minutes)", "each MLPerf run's time")


def score_chart(prefix: str, rows: list[tuple[str, float, tuple[float, float] | None, str]], unit: str) -> str:
    """The overview: one bar per system (its score) with its 95 % interval; rows are (system, score, CI, anchor)."""
    return bar_chart(prefix, [r[0] for r in rows], [("score", "score", [r[1] for r in rows])], f"score ({unit})",
                     "each system's score with its 95 % confidence interval", width=440, row=22,
                     links=[r[3] for r in rows], intervals=[r[2] for r in rows])
