"""The HTML report opened in a real browser: headless Chromium (Debian `chromium` + `chromium-driver`)
driven by selenium, 1,400 px wide. No console error, no network request; folded, the page is short
and its first screen holds the contents and the overview; every link to an anchor lands on an
element; opened, every figure is drawn with data and no legend covers any data.

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
WIDTH, SCREEN = 1400, 900          # a reviewer's window: the first screen is the top 900 px
MAX_FOLDED_HEIGHT = 12_000         # the example submissions' page with every section folded
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


# Links to anchors that land nowhere, and ids given twice.
ANCHORS_JS = """
const ids = Array.from(document.querySelectorAll('[id]')).map(e => e.id);
const seen = new Set(), twice = new Set();
ids.forEach(i => { if (seen.has(i)) twice.add(i); seen.add(i); });
const links = Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute('href').slice(1));
return {links: links.length, unresolved: links.filter(i => !document.getElementById(i)), twice: Array.from(twice)};
"""

# Per figure with a legend: the data elements whose box on screen intersects the legend's box.
# Per figure: the texts (labels, ticks) that stick out of the drawing, i.e. are cut off.
CLIPPED_JS = """
return Array.from(document.querySelectorAll('figure.plot svg')).flatMap(svg => {
  const box = svg.getBoundingClientRect();
  return Array.from(svg.querySelectorAll('text')).filter(t => { const b = t.getBoundingClientRect();
    return b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1; })
    .map(t => svg.id + ': ' + t.textContent);
});
"""

OVERLAP_JS = """
const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
                      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
return Array.from(document.querySelectorAll('figure.plot')).flatMap(f => {
  const legend = f.querySelector('.legend');
  if (!legend) return [];
  const box = legend.getBoundingClientRect();
  const data = Array.from(f.querySelectorAll('[id*="-data-"]'));
  return [{legend: legend.id, width: box.width, data: data.length,
           covered: data.filter(el => hit(box, el.getBoundingClientRect())).map(el => el.id)}];
});
"""

# Where things are with every section folded: the page's height and the boxes of the top parts.
LAYOUT_JS = """
const box = sel => { const e = document.querySelector(sel); if (!e) return null;
  const b = e.getBoundingClientRect(); return {top: b.top + scrollY, bottom: b.bottom + scrollY, width: b.width}; };
return {height: document.documentElement.scrollHeight, width: document.documentElement.clientWidth,
        contents: box('#contents'), overview: box('#overview'), matrix: box('#overview table'),
        charts: box('#overview .charts'), open: document.querySelectorAll('details[open]').length,
        sections: document.querySelectorAll('details.section').length};
"""


def open_sections(driver) -> None:
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={WIDTH},{SCREEN}", "--disable-background-networking", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def open_page(driver, html_path: Path) -> dict:
    """Load the page; its layout folded; then, every section opened, its figures, anchors and overlaps."""
    driver.get_log("browser"), driver.get_log("performance")  # start from empty logs
    driver.get(html_path.as_uri())
    layout = driver.execute_script(LAYOUT_JS)
    open_sections(driver)
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    return {"console": [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
            "requests": [u for u in requests if u != html_path.as_uri()],
            "figures": driver.execute_script(FIGURES_JS), "anchors": driver.execute_script(ANCHORS_JS),
            "overlaps": driver.execute_script(OVERLAP_JS), "clipped": driver.execute_script(CLIPPED_JS),
            "layout": layout}


def assert_clean(page: dict) -> None:
    assert page["console"] == [], page["console"]
    assert page["requests"] == [], f"the page asked the network for {page['requests']}"
    assert page["figures"], "no figure in the page"
    for fig in page["figures"]:
        assert fig["width"] > 100 and fig["height"] > 50, fig
        assert fig["series"] > 0 and fig["drawn"] == fig["series"], f"a figure without drawn data: {fig}"
    assert page["anchors"]["unresolved"] == [], f"links to no element: {page['anchors']['unresolved']}"
    assert page["anchors"]["twice"] == [], f"ids given twice: {page['anchors']['twice']}"
    for legend in page["overlaps"]:
        assert legend["covered"] == [], f"a legend covers data: {legend}"
    assert page["clipped"] == [], f"texts cut off at a figure's edge: {page['clipped'][:5]}"


def assert_first_screen(layout: dict) -> None:
    """Folded: every section closed, the contents and the overview's table on the first screen."""
    assert layout["open"] == 0 and layout["sections"] > 0, layout
    assert layout["contents"]["bottom"] < SCREEN and layout["matrix"]["bottom"] < SCREEN, layout
    assert layout["overview"]["top"] < SCREEN and layout["charts"]["top"] < SCREEN, layout


def test_example_submissions_report_in_chromium(browser, tmp_path):
    data = collect(EXAMPLES)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(data), encoding="utf-8")
    browser.execute_script("window.scrollTo(0, 0)")
    page = open_page(browser, page_file)
    assert_clean(page)
    layout = page["layout"]
    assert_first_screen(layout)
    assert layout["height"] < MAX_FOLDED_HEIGHT, layout
    systems = {v.result["system"] for v in data.benchmarks}
    shipped = {p.name for p in (EXAMPLES / "closed" / "trainmark" / "results").iterdir() if p.is_dir()}
    assert len(data.benchmarks) == 12 and systems == shipped  # six minis under PyTorch and under TensorFlow
    assert layout["sections"] == 12 + len(systems)  # a section per benchmark and one per system (its description once)
    # figures fill the content column at 1,400 px: the content is 1,168 px wide (75rem less padding)
    wide = [f for f in page["figures"] if f["kind"] != "overview-score"]
    assert min(f["width"] for f in wide) > 1000, [f["width"] for f in wide]
    assert len([f for f in page["figures"] if f["kind"] == "overview-score"]) == 6  # one chart per benchmark
    assert page["anchors"]["links"] >= 12 * 3 + len(systems) * 2  # contents, overview table and charts, system links
    assert len(page["overlaps"]) == 12 * 3 and all(o["data"] > 0 for o in page["overlaps"])
    # every benchmark: one curve per trial on the time axis, its band on the epoch axis where the rules carry one
    curves = [f for f in page["figures"] if f["kind"] == "metric-time"]
    assert [f["series"] for f in curves] == [len(v.trials) for v in data.benchmarks]
    banded = [any(i.endswith("-data-band") for i in f["ids"]) for f in page["figures"] if f["kind"] == "metric-epoch"]
    assert banded == [bool(v.rules.data.get("curve_band")) for v in data.benchmarks]
    # every example folder (the six minis under PyTorch and under TensorFlow, each drawn with its own
    # implementation's band): each calibration recorded its curves
    assert all(banded) and len(banded) == 12
    assert [v.trials[0].framework for v in data.benchmarks].count("tensorflow") == 6
    # the examples measured no energy: no energy figure, and each benchmark says why, once
    assert not [f for f in page["figures"] if f["kind"] == "energy"]
    assert browser.find_element("tag name", "body").text.count("energy not measured:") == 12
    browser.get(page_file.as_uri())   # folded again, at the top: the screenshot is the reviewer's first screen
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
    assert kinds == ["overview-score", "metric-time", "metric-epoch", "time", "energy", "sweep-samples_per_s",
                     "sweep-tflops", "sweep-j_per_sample"]
    assert_first_screen(page["layout"])
    # the time and energy bars carry a legend above them: none covers trial 1's bar (nor any other)
    bars = {o["legend"].split("-bars-")[0] for o in page["overlaps"] if "-bars-" in o["legend"]}
    assert len(bars) == 1 and all(o["data"] > 0 and not o["covered"] for o in page["overlaps"])
    energy = page["figures"][4]
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


def test_the_browser_checks_catch_a_dead_link_and_a_legend_over_a_bar(browser, tmp_path):
    """A link to no anchor, an id given twice, a legend drawn over trial 1's bar and a label cut off at the
    figure's edge are each caught."""
    bars = ('<svg id="f-svg" width="400" height="100"><rect id="f-data-time-1" x="0" y="0" width="200" height="20"/>'
            '<rect id="f-data-time-2" x="0" y="40" width="150" height="20"/><text x="-30" y="90">trial 1</text>'
            '<g id="f-legend" class="legend"><rect x="150" y="5" width="60" height="10"/></g></svg>')
    page_file = tmp_path / "bad.html"
    page_file.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>bad</title></head><body>'
                         '<a href="#nowhere">x</a><p id="twice">a</p><p id="twice">b</p>'
                         f'<figure class="plot" data-kind="time">{bars}</figure></body></html>', encoding="utf-8")
    page = open_page(browser, page_file)
    assert page["anchors"]["unresolved"] == ["nowhere"] and page["anchors"]["twice"] == ["twice"]
    assert [o["covered"] for o in page["overlaps"]] == [["f-data-time-1"]]
    assert page["clipped"] == ["f-svg: trial 1"]
    with pytest.raises(AssertionError, match="links to no element"):
        assert_clean(page)
    page["anchors"] = {"links": 0, "unresolved": [], "twice": []}
    with pytest.raises(AssertionError, match="a legend covers data"):
        assert_clean(page)
    page["overlaps"] = []
    with pytest.raises(AssertionError, match="texts cut off"):
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


@pytest.fixture(scope="module")
def resnet_profile():
    """A real profile (issue 37): resnet-mini's step under torch.profiler, batch 8, one step after one warm-up."""
    import torch

    from trainmark.harness.profile import session
    from trainmark.reference import registry

    rules = get_rules("resnet-mini")
    settings = session.ProfileSettings(batch_size=8, steps=1, warmup_steps=1)
    return session.profile_benchmark(rules, registry.for_rules(rules), torch.device("cpu"), settings)


def test_a_report_with_a_profile_shows_the_roofline(browser, tmp_path, resnet_profile):
    """A benchmark folder holding profile.json: its section draws the roofline (every operator with FLOPs a
    dot, the step a diamond, both roofs) and the top operators; the checker does not flag the file; the
    profile's own page is clean too."""
    from trainmark.format.layout import PROFILE_JSON
    from trainmark.report.profile_page import render_page

    rules = get_rules("resnet-mini")
    synthetic.write_submission(tmp_path / "sub", rules, synthetic.tiny_reference_model())
    (folder,) = {p.parent for p in (tmp_path / "sub").rglob("epochs.log")}
    (folder / PROFILE_JSON).write_text(json.dumps(resnet_profile), encoding="utf-8")
    data = collect(tmp_path / "sub", TINY)
    assert not [f for f in data.report["findings"] if PROFILE_JSON in f["file"]]
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(data), encoding="utf-8")
    page = open_page(browser, page_file)
    assert_clean(page)
    (roofline,) = [f for f in page["figures"] if f["kind"] == "roofline"]
    with_flops = [o for o in resnet_profile["operators"] if o["flops"] and o["intensity"] and o["achieved_flops"]]
    assert len(with_flops) >= 5
    assert sum("-data-op-" in i for i in roofline["ids"]) == len(with_flops)
    assert any(i.endswith("-data-step") for i in roofline["ids"])
    assert browser.find_element("tag name", "body").text.count("aten::") >= 10   # the top operators' table
    alone = tmp_path / "profile.html"
    alone.write_text(render_page(resnet_profile), encoding="utf-8")
    own = open_page(browser, alone)
    assert_clean(own)
    assert [f["kind"] for f in own["figures"]] == ["roofline"]
