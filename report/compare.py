"""``trainmark compare BASE NEW``: is NEW slower than BASE, and is it significant?

Per benchmark both folders hold: the ratio NEW/BASE of the scores, of the mean training times
and of the mean training energy; Welch's t-test on the logarithms of the trials' times (times
are positive and spread multiplicatively, so a ratio becomes a difference; ``scipy.stats.ttest_ind``
with ``equal_var=False``), one-sided for "NEW is slower"; and a 95 % bootstrap confidence interval of
the ratio of mean times (``scipy.stats.bootstrap``, percentile method, fixed seed: the same inputs
give the same interval). A benchmark *regressed* when the ratio of means exceeds ``1 + threshold``
and the one-sided p-value is below ``alpha``; CI gates on the exit status (1 when any regressed).

The times are the checker's recomputation: trainmark trials that reached the target (training
time without evaluation), MLPerf runs that were not dropped (run_stop - run_start, as MLPerf scores).
"""
from __future__ import annotations

import inspect
import math
import statistics
import warnings
from typing import Any

from trainmark.errors import UserError

SCHEMA = "trainmark-compare/1"
BOOT_SEED = 20261201


def results_by_benchmark(report: dict) -> dict[str, list[dict]]:
    """The checker's benchmark entries grouped by name."""
    out: dict[str, list[dict]] = {}
    for b in report["benchmarks"]:
        out.setdefault(b["benchmark"], []).append(b)
    return out


def _one(results: list[dict], label: str) -> dict:
    if len(results) > 1:
        systems = ", ".join(sorted(str(b["system"]) for b in results))
        raise UserError(f"{label} holds {results[0]['benchmark']} for several systems ({systems}): "
                        "pass one system's folder")
    return results[0]


def times_of(result: dict) -> list[float]:
    """The per-trial times (s) the comparison is about."""
    if result["format"] == "mlperf":
        return [r["minutes"] * 60 for r in result["trials"] if not r.get("dropped") and _finite(r.get("minutes"))]
    return [t["train_time_s"] for t in result["trials"] if t.get("converged") and _finite(t.get("train_time_s"))
            and t["train_time_s"] > 0]


def score_of(result: dict) -> float | None:
    s = result.get("score") or {}
    if result["format"] == "mlperf":
        return s["score_minutes"] * 60 if _finite(s.get("score_minutes")) else None
    return s.get("score_train_time_s") if _finite(s.get("score_train_time_s")) else None


def energy_of(result: dict) -> tuple[float | None, str]:
    s = result.get("score") or {}
    if _finite(s.get("mean_train_energy_j")):
        return s["mean_train_energy_j"], ""
    return None, s.get("energy_reason") or ("MLPerf folders carry no energy in this format"
                                            if result["format"] == "mlperf" else "not measured")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def welch_log(base: list[float], new: list[float]) -> dict[str, Any]:
    """Welch's t on log times: p (two-sided) and p (one-sided, NEW slower); None with a reason below 2 trials."""
    if len(base) < 2 or len(new) < 2:
        return {"p_two_sided": None, "p_slower": None, "p_faster": None,
                "reason": f"needs 2 timed trials on each side (BASE {len(base)}, NEW {len(new)})"}
    from scipy import stats

    lb, ln = [math.log(x) for x in base], [math.log(x) for x in new]
    if statistics.pstdev(lb) == 0 and statistics.pstdev(ln) == 0:
        same = statistics.fmean(lb) == statistics.fmean(ln)
        return {"p_two_sided": 1.0 if same else 0.0, "p_slower": 1.0 if statistics.fmean(ln) <= statistics.fmean(lb)
                else 0.0, "p_faster": 1.0 if statistics.fmean(ln) >= statistics.fmean(lb) else 0.0,
                "reason": "no spread on either side: the comparison is exact"}
    with warnings.catch_warnings():  # one side without spread: scipy warns of precision loss, the test holds
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        two = stats.ttest_ind(ln, lb, equal_var=False)
        slower = stats.ttest_ind(ln, lb, equal_var=False, alternative="greater")
        faster = stats.ttest_ind(ln, lb, equal_var=False, alternative="less")
    return {"p_two_sided": float(two.pvalue), "p_slower": float(slower.pvalue), "p_faster": float(faster.pvalue),
            "t": float(two.statistic), "reason": ""}


def bootstrap_ratio(base: list[float], new: list[float], level: float = 0.95) -> list[float] | None:
    """Percentile bootstrap interval of mean(NEW) / mean(BASE); None below 2 trials on a side."""
    if len(base) < 2 or len(new) < 2:
        return None
    import numpy as np
    from scipy import stats

    def ratio(n, b, axis):
        return np.mean(n, axis=axis) / np.mean(b, axis=axis)

    seed = {"rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state":
            np.random.default_rng(BOOT_SEED)}
    res = stats.bootstrap((np.asarray(new, float), np.asarray(base, float)), ratio, vectorized=True,
                          n_resamples=9999, confidence_level=level, method="percentile", **seed)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return [low, high] if math.isfinite(low) and math.isfinite(high) else None


def compare_benchmark(name: str, base: dict, new: dict, threshold: float, alpha: float) -> dict[str, Any]:
    tb, tn = times_of(base), times_of(new)
    mean_b = statistics.fmean(tb) if tb else None
    mean_n = statistics.fmean(tn) if tn else None
    e_b, why_b = energy_of(base)
    e_n, why_n = energy_of(new)
    test = welch_log(tb, tn)
    mean_ratio = _ratio(mean_n, mean_b)
    verdict = "not comparable"
    if mean_ratio is not None:
        verdict = "no significant change"
        if test["p_slower"] is not None and mean_ratio > 1 + threshold and test["p_slower"] < alpha:
            verdict = "slower"
        elif test["p_faster"] is not None and mean_ratio < 1 / (1 + threshold) and test["p_faster"] < alpha:
            verdict = "faster"
    return {
        "benchmark": name, "verdict": verdict,
        "base_system": base["system"], "new_system": new["system"],
        "base_trials": len(tb), "new_trials": len(tn),
        "base_score_s": score_of(base), "new_score_s": score_of(new),
        "score_ratio": _ratio(score_of(new), score_of(base)),
        "base_mean_time_s": mean_b, "new_mean_time_s": mean_n, "mean_time_ratio": mean_ratio,
        "ci95_mean_time_ratio": bootstrap_ratio(tb, tn),
        "base_energy_j": e_b, "new_energy_j": e_n, "energy_ratio": _ratio(e_n, e_b),
        "energy_reason": "" if e_b is not None and e_n is not None else
        "; ".join(f"{side}: {why}" for side, why, e in (("BASE", why_b, e_b), ("NEW", why_n, e_n)) if e is None),
        "welch_log_time": test,
    }


def compare_reports(base: dict, new: dict, *, threshold: float = 0.05, alpha: float = 0.05) -> dict[str, Any]:
    """The comparison of two checker reports (``Report.to_dict()``); UserError when nothing is in common."""
    rb, rn = results_by_benchmark(base), results_by_benchmark(new)
    common = sorted(rb.keys() & rn.keys())
    if not common:
        raise UserError(f"BASE ({', '.join(sorted(rb)) or 'no benchmark'}) "
                        f"and NEW ({', '.join(sorted(rn)) or 'no benchmark'}) "
                        "have no benchmark in common")
    rows = [compare_benchmark(name, _one(rb[name], "BASE"), _one(rn[name], "NEW"), threshold, alpha)
            for name in common]
    return {"schema": SCHEMA, "base": base["path"], "new": new["path"], "threshold": threshold, "alpha": alpha,
            "base_passed": base["passed"], "new_passed": new["passed"],
            "benchmarks": rows, "only_in_base": sorted(rb.keys() - rn.keys()),
            "only_in_new": sorted(rn.keys() - rb.keys()),
            "regressed": [r["benchmark"] for r in rows if r["verdict"] == "slower"]}


COLUMNS = ["benchmark", "verdict", "trials BASE/NEW", "score ratio", "mean time ratio", "95 % CI of ratio",
           "p (NEW slower)", "energy ratio"]


def rows_for_table(result: dict) -> list[list[str]]:
    from trainmark.format.numbers import display

    def num(x: Any, digits: int = 4) -> str:
        return display(x, significant=digits)

    out = []
    for r in result["benchmarks"]:
        ci = r["ci95_mean_time_ratio"]
        out.append([r["benchmark"], r["verdict"], f"{r['base_trials']}/{r['new_trials']}", num(r["score_ratio"]),
                    num(r["mean_time_ratio"]), f"{num(ci[0])} to {num(ci[1])}" if ci else "-",
                    num(r["welch_log_time"]["p_slower"], 3), num(r["energy_ratio"]) if r["energy_ratio"] is not None
                    else "not measured"])
    return out


def render_markdown(result: dict) -> str:
    from trainmark.report.markdown import cell, table

    regressed = ", ".join(map(cell, result["regressed"]))
    head = (f"## trainmark compare: {'REGRESSION in ' + regressed if regressed else 'no significant slowdown'}\n\n"
            f"NEW/BASE; slower means mean time ratio > {1 + result['threshold']:g} with one-sided Welch p < "
            f"{result['alpha']:g} on log times.\n\n")
    tail = ""
    for key, label in (("only_in_base", "only in BASE"), ("only_in_new", "only in NEW")):
        if result[key]:
            tail += f"\n{label}: {', '.join(map(cell, result[key]))}\n"
    return head + table(COLUMNS, rows_for_table(result)) + tail


def render_text(result: dict) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows_for_table(result))) for i, c in enumerate(COLUMNS)]
    lines = [f"BASE {result['base']}", f"NEW  {result['new']}",
             "  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows_for_table(result)]
    for key, label in (("only_in_base", "only in BASE"), ("only_in_new", "only in NEW")):
        if result[key]:
            lines.append(f"{label}: {', '.join(result[key])}")
    lines.append(f"REGRESSION: {', '.join(result['regressed'])} slower than BASE beyond {result['threshold']:g} "
                 f"(p < {result['alpha']:g})" if result["regressed"] else "no significant slowdown")
    return "\n".join(lines) + "\n"
