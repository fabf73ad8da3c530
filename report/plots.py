"""The report's figures as inline SVG text, drawn with matplotlib.

Why matplotlib SVG (docs/report.md says more): it is already a dependency, it needs no
JavaScript (so the page is static, prints, and works with scripts off), the SVG is vector
(sharp at any zoom) and stays small when text is kept as text (``svg.fonttype: none``). Every
data series carries an ``id`` starting ``data-`` so that a test can find it in the page.
"""
from __future__ import annotations

import io
import re

from trainmark.rules.convergence import band_for

WIDTH, HEIGHT = 6.4, 3.2     # inches at 72 dpi in the SVG: 460 x 230 px
_RC = {"svg.fonttype": "none", "svg.hashsalt": "trainmark", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3}


def _figure(left: float = 0.12):
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(WIDTH, HEIGHT))  # fixed margins: a layout engine would draw every figure twice
    fig.subplots_adjust(left=left, right=0.97, bottom=0.16, top=0.96)
    return fig, fig.add_subplot()


def _svg(fig) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]                         # drop the XML declaration and DOCTYPE for inline use
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)


def _target(ax, rules) -> None:
    if rules is not None:
        ax.axhline(rules.target, color="black", linestyle="--", linewidth=1, label=f"target {rules.target:g}",
                   gid="target")


def metric_vs_time(view) -> str | None:
    """Every trial's metric against its training time (evaluation excluded)."""
    trials = [t for t in view.trials if t.curve]
    if not trials:
        return None
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig, ax = _figure()
        for t in trials:
            ax.plot([p.train_s for p in t.curve], [p.metric for p in t.curve], marker="o", markersize=3,
                    label=f"trial {t.summary['trial']}", gid=f"data-time-trial-{t.summary['trial']}")
        _target(ax, view.rules)
        ax.set_xlabel("training time so far, evaluation excluded (s)")
        ax.set_ylabel(_metric_name(view))
        ax.legend(fontsize=7, ncols=2)
        return _svg(fig)


def metric_vs_epoch(view) -> tuple[str | None, bool]:
    """Every trial's metric per epoch beside the rules' reference band; (svg, band drawn)."""
    trials = [t for t in view.trials if t.curve]
    if not trials:
        return None, False
    import matplotlib

    first = trials[0]
    band = band_for(view.rules, first.global_batch_size, first.precision, first.framework)  # its implementation's
    with matplotlib.rc_context(_RC):
        fig, ax = _figure()
        if band:
            epochs = sorted(band)
            ax.fill_between(epochs, [band[e][0] for e in epochs], [band[e][1] for e in epochs], color="tab:gray",
                            alpha=0.25, label="reference band (calibration trials)", gid="data-band")
        for t in trials:
            ax.plot([p.epoch for p in t.curve], [p.metric for p in t.curve], marker="o", markersize=3,
                    label=f"trial {t.summary['trial']}", gid=f"data-epoch-trial-{t.summary['trial']}")
        _target(ax, view.rules)
        ax.set_xlabel("epoch")
        ax.set_ylabel(_metric_name(view))
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=7, ncols=2)
        return _svg(fig), bool(band)


def time_bars(view) -> str | None:
    """Per trial: training time and evaluation time side by side, stacked (the windows shown apart)."""
    rows = [t.summary for t in view.trials if t.summary.get("train_time_s") is not None]
    return _stacked(rows, "train_time_s", "eval_time_s", "time (s)", "training", "evaluation", "data-time")


def energy_bars(view) -> str | None:
    """Per trial: training energy and evaluation energy, when measured."""
    rows = [dict(t.summary, eval_energy_j=t.summary["total_energy_j"] - t.summary["train_energy_j"])
            for t in view.trials
            if t.summary.get("train_energy_j") is not None and t.summary.get("total_energy_j") is not None]
    return _stacked(rows, "train_energy_j", "eval_energy_j", "energy (J)", "training", "evaluation", "data-energy")


def _stacked(rows, first, second, xlabel, first_label, second_label, gid) -> str | None:
    if not rows:
        return None
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig, ax = _figure(left=0.25)
        names = [f"trial {r['trial']}" + ("" if r.get("converged") else " (missed target)") for r in rows]
        a = [r[first] for r in rows]
        b = [r[second] or 0.0 for r in rows]
        for values, left, color, label in ((a, None, "tab:blue", first_label), (b, a, "tab:orange", second_label)):
            bars = ax.barh(names, values, left=left, color=color, label=label)
            for i, bar in enumerate(bars, start=1):
                bar.set_gid(f"{gid}-{label}-{i}")
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=7)
        return _svg(fig)


def mlperf_runs(result: dict) -> str | None:
    """An MLPerf benchmark's runs in minutes; dropped runs are shown at 0 and labelled."""
    runs = result["trials"]
    if not runs:
        return None
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig, ax = _figure(left=0.25)
        names = [str(r.get("file", "")).rsplit("/", 1)[-1] + (" (dropped)" if r.get("dropped") else "") for r in runs]
        bars = ax.barh(names, [r.get("minutes") or 0.0 for r in runs], color="tab:blue")
        for i, bar in enumerate(bars, start=1):
            bar.set_gid(f"data-mlperf-run-{i}")
        ax.invert_yaxis()
        ax.set_xlabel("run_stop - run_start (minutes)")
        return _svg(fig)


def _metric_name(view) -> str:
    return view.rules.metric["name"] if view.rules is not None else "metric"
