"""The HTML report opened in a real browser: headless Chromium (Debian `chromium` + `chromium-driver`)
driven by selenium. No console error, no network request, every figure drawn with data.

Skipped, with the reason, where Chromium, its driver or selenium is missing (scripts/install.sh
installs them, so CI runs it). With TRAINMARK_UPDATE_SCREENSHOT=1 the screenshot of the example
submissions' report is written to docs/images/report.png, which docs/report.md shows.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions
from trainmark.cli.checked import collect
from trainmark.report.page import render_html
from trainmark.rules import get_rules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "submissions"
SCREENSHOT = ROOT / "docs" / "images" / "report.png"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[test])")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no Chromium here: apt-get install chromium "
                                "chromium-driver (scripts/install.sh does)")

# Per figure: the data series drawn (elements whose id marks them as data) and their size on screen.
FIGURES_JS = """
return Array.from(document.querySelectorAll('figure.plot')).map(f => {
  const svg = f.querySelector('svg');
  const data = Array.from(f.querySelectorAll('[id*="-data-"]'));
  const drawn = data.filter(el => { const b = el.getBBox(); return b.width + b.height > 0; });
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {kind: f.dataset.kind, series: data.length, drawn: drawn.length, width: box.width, height: box.height,
          ids: data.map(el => el.id)};
});
"""


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,2000", "--disable-background-networking", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def open_page(driver, html_path: Path) -> dict:
    driver.get_log("browser"), driver.get_log("performance")  # start from empty logs
    driver.get(html_path.as_uri())
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    return {"console": [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
            "requests": [u for u in requests if u != html_path.as_uri()],
            "figures": driver.execute_script(FIGURES_JS)}


def assert_clean(page: dict) -> None:
    assert page["console"] == [], page["console"]
    assert page["requests"] == [], f"the page asked the network for {page['requests']}"
    assert page["figures"], "no figure in the page"
    for fig in page["figures"]:
        assert fig["width"] > 100 and fig["height"] > 50, fig
        assert fig["series"] > 0 and fig["drawn"] == fig["series"], f"a figure without drawn data: {fig}"


def test_example_submissions_report_in_chromium(browser, tmp_path):
    data = collect(EXAMPLES)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(data), encoding="utf-8")
    page = open_page(browser, page_file)
    assert_clean(page)
    # every benchmark: one curve per trial on the time axis, its band on the epoch axis where the rules carry one
    curves = [f for f in page["figures"] if f["kind"] == "metric-time"]
    assert [f["series"] for f in curves] == [len(v.trials) for v in data.benchmarks]
    banded = [any(i.endswith("-data-band") for i in f["ids"]) for f in page["figures"] if f["kind"] == "metric-epoch"]
    assert banded == [bool(v.rules.data.get("curve_band")) for v in data.benchmarks]
    # every example folder (the six minis under PyTorch and under TensorFlow, each drawn with its own
    # implementation's band): each calibration recorded its curves
    assert all(banded) and len(banded) == 12
    assert [v.trials[0].framework for v in data.benchmarks].count("tensorflow") == 6
    # the examples measured no energy: no energy figure, and the page says why
    assert not [f for f in page["figures"] if f["kind"] == "energy"]
    assert "Energy: not measured" in browser.find_element("tag name", "body").text
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("TRAINMARK_UPDATE_SCREENSHOT") == "1":
        shutil.copy(shot, SCREENSHOT)


def test_synthetic_report_with_energy_and_a_missed_target(browser, tmp_path):
    rules = get_rules("resnet-mini")
    plans = synthetic.default_plans(rules)
    plans[1] = synthetic.TrialPlan(seed=4242, metrics=[0.80, 0.85, 0.86], epoch_s=20.0)   # never reaches 0.91
    synthetic.write_submission(tmp_path / "sub", rules, synthetic.tiny_reference_model(), plans=plans)
    data = collect(tmp_path / "sub", TINY)
    sweep = {"file": "sweep.json", "benchmark": "resnet-mini", "points": [
        {"precision": "fp32", "batch_size": b, "samples_per_s": 10.0 * b, "tflops": 0.01 * b, "j_per_sample": 2.0}
        for b in (32, 64, 128)]}
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(data, [sweep]), encoding="utf-8")
    page = open_page(browser, page_file)
    assert_clean(page)
    kinds = [f["kind"] for f in page["figures"]]
    assert kinds == ["metric-time", "metric-epoch", "time", "energy", "sweep-samples_per_s", "sweep-tflops",
                     "sweep-j_per_sample"]
    energy = page["figures"][3]
    assert energy["series"] == 2 * len(plans)  # a training and an evaluation bar per trial
    text = browser.find_element("tag name", "body").text
    assert "trials that did not reach the target: 2" in text and "TARGET-002" in text


def test_the_browser_checks_catch_a_request_and_an_empty_figure(browser, tmp_path):
    """The checks above can fail: a page that fetches an image and draws an empty figure is caught."""
    page_file = tmp_path / "bad.html"
    page_file.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>bad</title></head><body>'
                         '<img src="http://127.0.0.1:9/x.png" alt="x"><figure class="plot" data-kind="empty">'
                         '<svg width="300" height="200"></svg></figure></body></html>', encoding="utf-8")
    page = open_page(browser, page_file)
    assert any("127.0.0.1:9" in u for u in page["requests"])
    with pytest.raises(AssertionError):
        assert_clean(page)


MLPERF = ROOT.parent / "shared" / "fixtures" / "mlperf-training-v4.0"


@pytest.mark.skipif(not MLPERF.is_dir(), reason=f"no MLPerf fixture at {MLPERF}")
def test_mlperf_folder_report_in_chromium(browser, tmp_path):
    data = collect(MLPERF)
    page_file = tmp_path / "mlperf.html"
    page_file.write_text(render_html(data), encoding="utf-8")
    page = open_page(browser, page_file)
    assert_clean(page)
    runs = [f for f in page["figures"] if f["kind"] == "mlperf-runs"]
    assert [f["series"] for f in runs] == [len(v.result["trials"]) for v in data.benchmarks]
