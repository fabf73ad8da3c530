"""`trainmark table FOLDER...`: one row per system, one column per benchmark, as MLPerf publishes."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions
from trainmark.cli import main
from trainmark.cli.checked import table_of_folders
from trainmark.reference import registry
from trainmark.report.table import to_csv, to_json, to_markdown
from trainmark.rules import get_rules

ROOT = Path(__file__).resolve().parents[1]
MLPERF = ROOT.parent / "shared" / "fixtures" / "mlperf-training-v4.0"
TEST_RULES = Path(__file__).parent / "rules"
RULES = get_rules("tiny-test", rules_root=TEST_RULES)


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory):
    root = tmp_path_factory.mktemp("t")
    synthetic.write_submission(root, RULES, registry.for_rules(RULES).build_model(), systems=("sysA", "sysB"),
                               plans=[synthetic.TrialPlan(seed=5 + k, metrics=[0.5, 0.95]) for k in range(3)])
    desc = root / "closed" / "acme" / "systems" / "sysB.json"
    d = json.loads(desc.read_text())
    d["host_processor_model_name"] = "=HYPERLINK(\"http://x\")"
    desc.write_text(json.dumps(d))
    return root


def test_rows_per_system_columns_per_benchmark(two_systems):
    table = table_of_folders([two_systems], CheckOptions(rules_root=TEST_RULES))
    assert [b["benchmark"] for b in table["benchmarks"]] == ["tiny-test"]
    assert table["benchmarks"][0] == {"benchmark": "tiny-test", "unit": "s", "energy": True}
    assert [r["system"] for r in table["rows"]] == ["sysA", "sysB"]
    # 2 epochs of 30 s + 5 ms per trial; olympic mean of three equal trials
    assert table["rows"][0]["scores"]["tiny-test"] == pytest.approx(60.005)
    assert table["rows"][0]["energy_j"]["tiny-test"] == pytest.approx(3000.0)
    rows = list(csv.reader(io.StringIO(to_csv(table))))
    assert rows[0][-2:] == ["tiny-test (s)", "tiny-test energy (J)"]
    assert rows[1][3] == "sysA" and rows[1][-2:] == ["60.005", "3000"]
    assert rows[2][5].startswith("'=")  # a formula in a submitted field is quoted for spreadsheets
    md = to_markdown(table)
    assert md.splitlines()[2].startswith("| closed | available | acme | sysA | 1 | synthetic CPU |")


@pytest.mark.skipif(not MLPERF.is_dir(), reason=f"no MLPerf fixture at {MLPERF}")
def test_mlperf_and_trainmark_folders_in_one_table(two_systems, capsys):
    assert main(["table", str(two_systems), str(MLPERF), "--format", "json", "--rules-dir", str(TEST_RULES)]) == 0
    table = json.loads(capsys.readouterr().out)
    units = {b["benchmark"]: b["unit"] for b in table["benchmarks"]}
    assert units["tiny-test"] == "s" and units["resnet"] == "min" and units["bert"] == "min"
    dell = [r for r in table["rows"] if r["submitter"] == "Dell"]
    assert {r["system"] for r in dell} == {"R760xax4L40S", "XE8640x4H100-SXM-80GB"}
    h100 = next(r for r in dell if r["system"] == "XE8640x4H100-SXM-80GB")
    # MLPerf writes it as text
    assert h100["accelerator"] == "NVIDIA H100-SXM5-80GB" and h100["accelerators per node"] == "4"
    assert set(h100["scores"]) == {"gnn", "resnet"}
    assert to_json(table)  # still serialisable


def test_cli_writes_a_file_and_refuses_a_missing_folder(two_systems, tmp_path, capsys):
    out = tmp_path / "t.md"
    assert main(["table", str(two_systems), "--format", "md", "-o", str(out), "--rules-dir", str(TEST_RULES)]) == 0
    assert "| tiny-test (s) |" in out.read_text(encoding="utf-8").splitlines()[0] + " |"
    assert main(["table", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_outputs_carry_no_float_noise():
    """Issue 32: a mean of 41.67 s was written 41.669999999999995 (CSV) and 28.280450000000002 (MLPerf)."""
    from trainmark.report.table import SYSTEM_COLUMNS

    row = {c: None for c in SYSTEM_COLUMNS} | {"division": "closed", "submitter": "acme", "system": "s1"}
    row |= {"scores": {"lstm-mini": 41.669999999999995, "resnet": 28.280450000000002},
            "energy_j": {"lstm-mini": 1234.5000000000002}, "reasons": {}, "passed": {}}
    table = {"schema": "trainmark-table/1", "rows": [row],
             "benchmarks": [{"benchmark": "lstm-mini", "unit": "s", "energy": True},
                            {"benchmark": "resnet", "unit": "min", "energy": False}]}
    cells = list(csv.reader(io.StringIO(to_csv(table))))[1]
    assert cells[-3:] == ["41.67", "1234.5", "28.28045"]  # 12 significant digits kept, noise gone
    assert json.loads(to_json(table))["rows"][0]["scores"] == {"lstm-mini": 41.67, "resnet": 28.28045}
    assert "| 41.67 | 1234.5 | 28.28 |" in to_markdown(table)  # people: 5 significant digits
