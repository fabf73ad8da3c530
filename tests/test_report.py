"""`trainmark report`: what the page and the Markdown say, for good and bad folders."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.cli import main
from trainmark.cli.checked import collect
from trainmark.format.mllog_read import read_records
from trainmark.format.text import html_text as escape
from trainmark.reference import registry
from trainmark.report.collect import ReportData, gather, trial_curve
from trainmark.report.markdown import render_markdown
from trainmark.report.page import render_html
from trainmark.rules import get_rules

ROOT = Path(__file__).resolve().parents[1]
TEST_RULES = Path(__file__).parent / "rules"
MLPERF = ROOT.parent / "shared" / "fixtures" / "mlperf-training-v4.0"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())
RULES = get_rules("resnet-mini")
EPOCHS = len(synthetic.default_plans(RULES)[0].metrics)  # each synthetic trial's epochs, the reference's (1.2: 3)
BENCH = "closed/acme/results/sys1/resnet-mini"


def write(root: Path, plans=None) -> Path:
    synthetic.write_submission(root, RULES, synthetic.tiny_reference_model(), plans=plans)
    return root


def test_curve_points_are_the_training_time_and_energy_before_each_evaluation(clean_submission):
    # default plans: trial k trains 30 + 1.5 k s and 1500 J per epoch, evaluates 3 s and 120 J
    data = (clean_submission / BENCH / "result_2.txt").read_bytes()
    curve, samples = trial_curve(read_records(data, strict=True))
    epochs = range(1, EPOCHS + 1)
    assert [p.epoch for p in curve] == list(epochs)
    assert [p.train_s for p in curve] == pytest.approx([33.0 * e for e in epochs])
    assert [p.train_energy_j for p in curve] == pytest.approx([1500.0 * e for e in epochs])
    assert [p.total_s for p in curve] == pytest.approx([36.0 * e for e in epochs])
    assert [p.eval_s for p in curve] == pytest.approx([3.0] * EPOCHS)
    assert samples == EPOCHS * 60000


def test_clean_folder_page_has_every_section(clean_submission):
    data = collect(clean_submission, TINY)
    (view,) = data.benchmarks
    assert view.missing == []
    assert [t.samples_per_s for t in view.trials] == pytest.approx([60000 / (30 + 1.5 * k) for k in range(1, 6)],
                                                                  rel=1e-3)
    html = render_html(data)
    assert html.count('<figure class="plot"') == 5  # overview score, metric/time, metric/epoch, time, energy
    for kind in ("overview-score", "metric-time", "metric-epoch", "time", "energy"):
        assert f'data-kind="{kind}"' in html
    assert "Content-Security-Policy" in html and "<script" not in html
    assert html.count("synthetic CPU") == 1  # the system description, once, in the system's own section
    assert "PASS" in html
    # the overview's table cell links to the benchmark's folded section, which links to its system's section
    assert '<a class="pass" href="#bench-sys1-resnet-mini">' in html
    assert '<details class="section benchmark" id="bench-sys1-resnet-mini">' in html
    assert 'system <a href="#system-sys1">sys1</a>' in html
    assert '<details class="section system" id="system-sys1">' in html
    assert html.index('id="contents"') < html.index('id="overview"') < html.index('id="bench-sys1-resnet-mini"')
    assert "<details open" not in html  # every section folded; the contents and the overview are not sections
    md = render_markdown(data)
    assert md.startswith("## trainmark report: PASS")
    assert "| resnet-mini | sys1 | closed | 5 | 5 |" in md


def test_failing_trials_render_and_say_so(tmp_path):
    plans = [synthetic.TrialPlan(seed=10 + k, metrics=[0.5, 0.6]) for k in range(5)]  # none reaches 0.91
    data = collect(write(tmp_path / "s", plans), TINY)
    (view,) = data.benchmarks
    assert any(m.startswith("no score:") for m in view.missing)
    assert "trials that did not reach the target: 1, 2, 3, 4, 5" in view.missing
    html = render_html(data)
    assert "FAIL" in html and "TARGET-003" in html
    assert "trial 3 (missed target)" in html  # the time bars label the trials that missed
    assert "| none (" in render_markdown(data)


def test_missing_energy_and_a_single_trial(tmp_path):
    plans = [synthetic.TrialPlan(seed=7, metrics=[0.8, 0.92], train_energy_j=None, eval_energy_j=None)]
    data = collect(write(tmp_path / "s", plans), TINY)
    (view,) = data.benchmarks
    assert "a single trial: no spread, no confidence interval" in view.missing
    assert any(m.startswith("energy not measured:") for m in view.missing)
    html = render_html(data)
    assert 'data-kind="energy"' not in html and 'data-kind="metric-time"' in html
    reason = data.benchmarks[0].result["score"]["energy_reason"]
    assert html.count("energy not measured") == 1 and html.count(escape(reason)) == 1  # the reason said once


@pytest.mark.skipif(not MLPERF.is_dir(), reason=f"no MLPerf fixture at {MLPERF}")
def test_mlperf_folder_renders_run_times():
    data = collect(MLPERF)
    assert {v.result["format"] for v in data.benchmarks} == {"mlperf"}
    html = render_html(data)
    assert html.count('data-kind="mlperf-runs"') == len(data.benchmarks)
    assert not NOISE.findall(html)  # run minutes such as 28.280450000000002 are shown as 28.28
    assert "MLPerf result folder: per-run times and the score only" in html
    assert "NVIDIA H100-SXM5-80GB" in html  # the system description
    assert " min |" in render_markdown(data)


NOISE = re.compile(r"\d\.\d{7,}")   # float noise such as 28.280450000000002 or 0.9222400000000001


def test_a_tampered_trial_fails_its_benchmark_and_no_score_is_shown(tmp_path):
    """A trial whose times were edited: the check's JSON withholds the score (figures null, the reason said) while
    the trial's own summary still says 'success'; the page shows no score, names the trial and its rules, and
    its row does not say success."""
    sub = write(tmp_path / "s")
    result = sub / BENCH / "result_3.txt"
    lines = result.read_text().splitlines()
    lines[-3] = lines[-3].replace('"time_ms": 1', '"time_ms": 2', 1)   # eval_stop moved 10^12 ms on
    result.write_text("\n".join(lines) + "\n")
    data = collect(sub, TINY)
    (view,) = data.benchmarks
    score = view.result["score"]
    assert score["score_train_time_s"] is None and score["mean_train_time_s"] is None
    assert score["score_reason"].startswith("withheld: ") and score["trials"] == 5
    assert [t.summary["status"] for t in view.trials] == ["success"] * 5
    assert [t.summary["trial"] for t in view.trials if t.failed] == [3]
    assert "MLLOG-005" in view.trials[2].errors and "TRIALJSON-003" in view.trials[2].errors
    html = render_html(data)
    assert "<strong>No score:</strong>" in html
    assert "failing trial(s): 3" in html and "FAIL: no score" in html
    rows = re.findall(r"<tr class=\"(\w*)\"><td>(\d+)</td><td>([^<]*)</td>", html)
    assert [(cls, trial, status.split(":")[0]) for cls, trial, status in rows] == \
        [("", "1", "success"), ("", "2", "success"), ("failed", "3", "failed"), ("", "4", "success"),
         ("", "5", "success")]
    assert "trial 3 (failed: MLLOG-005" in html  # the time bars label it too, and do not draw its edited times:
    bars = re.search(r'<svg[^>]*id="b1-bars-svg".*?</svg>', html).group(0)   # the scale is the other trials'
    assert max(float(t) for t in re.findall(r'class="xt"[^>]*>([-\d.]+)<', bars)) <= 250
    md = render_markdown(data)
    assert "| none (7 errors in this benchmark (trial 3: MLLOG-005" in md


def test_a_lone_benchmark_folder_names_itself_and_its_system_description(clean_submission):
    """The command layer reads ../../../systems/<system>.json the checker's way (SafeTree on the ancestor)."""
    folder = clean_submission / BENCH
    html = render_html(collect(folder, TINY))
    assert "Folder: ." not in html and "No readable system description" not in html
    assert f"<code>{escape(str(folder))}</code> (the checked folder itself: a lone benchmark folder)" in html
    assert html.count("synthetic CPU") == 1 and "Description: <code>../../../systems/sys1.json</code>" in html


def test_a_lone_benchmark_folders_description_is_refused_through_a_link(clean_submission, tmp_path):
    """Above the checked folder the checker's rules hold too: a system description that is a symbolic link
    (to a file anywhere) is not read."""
    import shutil

    root = tmp_path / "sub"
    shutil.copytree(clean_submission, root)
    system = root / BENCH.split("/results/")[0] / "systems" / "sys1.json"
    secret = tmp_path / "secret.json"
    secret.write_text(system.read_text().replace("synthetic CPU", "SECRET CPU"))
    system.unlink()
    system.symlink_to(secret)
    html = render_html(collect(root / BENCH, TINY))
    assert "SECRET CPU" not in html and "synthetic CPU" not in html
    assert "its description (<code>../../../systems/sys1.json</code> in the layout) lies outside it" in html


def test_a_lone_folder_outside_the_layout_says_none_was_given(clean_submission, tmp_path):
    import shutil

    shutil.copytree(clean_submission / BENCH, tmp_path / "resnet-mini")
    html = render_html(collect(tmp_path / "resnet-mini", TINY))
    assert "No system description was given: a lone benchmark folder outside the layout" in html


def test_no_float_noise_in_any_output(tmp_path):
    plans = [synthetic.TrialPlan(seed=20 + k, metrics=[0.8, 0.9, 0.92224000000000001], epoch_s=10.1 + 0.2 * k,
                                 eval_s=0.1 + 0.2) for k in range(5)]
    data = collect(write(tmp_path / "s", plans), TINY)
    html, md = render_html(data), render_markdown(data)
    assert not NOISE.findall(html) and not NOISE.findall(md)


def test_five_thousand_trials_render_with_unique_anchors(clean_submission):
    """Issue 32: 1,000 copies of a 5-trial benchmark on 1,000 systems render as one page whose ids are unique and
    whose links resolve. How fast is measured side by side by benchmarks/report_scale.py, not asserted here."""
    import copy

    data = collect(clean_submission, TINY)
    (view,) = data.benchmarks
    views = []
    for k in range(1000):
        v = copy.copy(view)
        v.result = dict(view.result, system=f"sys{k}", path=view.result["path"].replace("/sys1/", f"/sys{k}/"))
        views.append(v)
    html = render_html(ReportData(data.report, views, data.systems))
    assert sum(len(v.trials) for v in views) == 5000 and html.count('data-kind="metric-time"') == 1000
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)) and set(re.findall(r'href="#([^"]+)"', html)) <= set(ids)


def test_hostile_text_is_escaped(tmp_path):
    sub = write(tmp_path / "s")
    desc_file = sub / "closed" / "acme" / "systems" / "sys1.json"
    desc = json.loads(desc_file.read_text())
    desc["host_processor_model_name"] = "<script>alert(1)</script> | x"
    desc_file.write_text(json.dumps(desc))
    data = collect(tmp_path / "s", TINY)
    html = render_html(data)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_cli_writes_html_and_markdown(tmp_path, capsys):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(tmp_path / "s", rules, registry.for_rules(rules).build_model())
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "s"), "-o", str(out), "--rules-dir", str(TEST_RULES)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".r.html")] == []  # no temporary left
    assert main(["report", str(tmp_path / "s"), "--format", "md", "--rules-dir", str(TEST_RULES)]) == 0
    assert "| tiny-test | sys1 | closed | 3 | 3 |" in capsys.readouterr().out


def test_cli_unreadable_input_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "a.txt").write_bytes(b"x")
    assert main(["report", str(tmp_path / "a.txt")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_an_archive_is_reported_like_its_folder(clean_submission, tmp_path):
    from trainmark.checker.pack import write_archive

    tgz, _, _ = write_archive(clean_submission, tmp_path / "sub.tar.gz")
    data = collect(tgz, TINY)
    (view,) = data.benchmarks
    assert data.report["path"] == str(tgz.resolve()) and data.report["passed"]
    assert [len(t.curve) for t in view.trials] == [EPOCHS] * 5
    assert data.systems and "synthetic CPU" in render_html(data)  # read before the unpacked folder went away
    (tmp_path / "bad.tar.gz").write_bytes(b"not a tar")
    refused = collect(tmp_path / "bad.tar.gz", TINY)
    assert refused.benchmarks == [] and not refused.report["passed"]
    assert "No benchmark result could be read" in render_html(refused)


def test_the_report_reads_only_what_the_command_hands_it(clean_submission):
    """report/ gets the check's JSON and the folder's files from the command layer (cli/checked.py);
    a file it is refused shows as missing, and report/ imports neither the checker nor the harness."""
    class Refused:
        def log_file(self, rel):
            return None

        def json_file(self, rel):
            return None

    report = check_path(clean_submission, TINY).to_dict()
    (view,), systems = gather(report, Refused())
    assert [t.curve for t in view.trials] == [[]] * 5 and systems == {report["systems"][0]["file"]: {}}
    assert "trial 1: its result file cannot be read" in view.missing
    code = ("import sys, trainmark.report.page, trainmark.report.markdown, trainmark.report.table, "
            "trainmark.report.compare, trainmark.report.sweeps; "
            "print(sorted(m for m in sys.modules if m.startswith(('trainmark.checker', 'trainmark.harness'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def sweep_file(tmp_path: Path) -> Path:
    points = [{"status": "ok", "precision": "fp32", "precision_used": "fp32", "batch_size": b, "samples_per_s": s,
               "tflops": s * 1e-4, "j_per_sample": None} for b, s in ((32, 900.0), (64, 1500.0), (128, 1700.0))]
    points += [{"status": "ok", "precision": "amp", "precision_used": "amp-bf16", "batch_size": 64,
                "samples_per_s": 2100.0, "tflops": 0.21, "j_per_sample": None},
               {"status": "oom", "precision": "fp32", "batch_size": 256, "samples_per_s": None}]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"format": "trainmark-sweep/1", "benchmark": "tiny-test", "points": points}))
    return path


def test_sweep_plots_are_added_and_bad_sweep_files_refused(tmp_path, capsys):
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(tmp_path / "s", rules, registry.for_rules(rules).build_model())
    out = tmp_path / "r.html"
    args = ["report", str(tmp_path / "s"), "-o", str(out), "--rules-dir", str(TEST_RULES)]
    assert main([*args, "--sweep", str(sweep_file(tmp_path))]) == 0
    capsys.readouterr()
    html = out.read_text(encoding="utf-8")
    # throughput and TFLOPS drawn (one line per precision); no energy was measured, so no J/sample figure
    assert 'data-kind="sweep-samples_per_s"' in html and 'data-kind="sweep-tflops"' in html
    assert 'data-kind="sweep-j_per_sample"' not in html
    assert html.count("-data-sweep-samples_per_s-") == 2 and "amp-bf16" in html
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else", "points": []}')
    assert main([*args, "--sweep", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a sweep result" in err and err.count("\n") == 1
