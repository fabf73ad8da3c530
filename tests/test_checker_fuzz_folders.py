"""Issue 18: whole folders mutated the way files get damaged or forged, checked through the CLI.

Lines dropped, duplicated, reordered and truncated, a record's value replaced by every JSON
type, bytes flipped, in a clean trainmark folder and in a real MLPerf v4.0 result folder.
Whatever the mutation: an exit status of 0, 1 or 2, a JSON report valid against its schema,
no traceback and no CHECKER-001 (a checker bug), and a bounded number of findings.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import synthetic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainmark.checker.verdict.findings import MAX_PER_RULE_AND_FILE
from trainmark.checker.verdict.result import REPORT_SCHEMA
from trainmark.cli import main
from trainmark.reference import registry
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"
BENCH = "closed/acme/results/sys1/tiny-test"
FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "mlperf-training-v4.0"

JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@st.composite
def damaged(draw, original: bytes) -> bytes:
    """``original`` after 1-4 line-, value- or byte-level edits."""
    lines = original.split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["drop", "dup", "swap", "truncate", "value", "flip", "cut_line"]))
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "truncate":
            del lines[i:]
        elif kind == "cut_line":
            lines[i] = lines[i][: draw(st.integers(0, max(len(lines[i]) - 1, 0)))]
        elif kind == "value":
            at = lines[i].find(b":::MLLOG ")
            try:
                record = json.loads(lines[i][at + 9:]) if at >= 0 else None
            except ValueError:
                record = None
            if isinstance(record, dict):
                field = draw(st.sampled_from(["value", "time_ms", "key", "metadata", "event_type"]))
                record[field] = draw(JSON_VALUES)
                lines[i] = lines[i][:at + 9] + json.dumps(record).encode()
        elif lines[i]:
            line = bytearray(lines[i])
            line[draw(st.integers(0, len(line) - 1))] = draw(st.integers(0, 255))
            lines[i] = bytes(line)
    return b"\n".join(lines)


def check_via_cli(path: Path, capsys, *extra: str) -> tuple[int, dict | None]:
    code = main(["check", str(path), "--json", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and code in (0, 1, 2), err
    if code == 2:
        assert err.startswith("trainmark check: error:") and err.count("\n") == 1
        return code, None
    report = json.loads(out)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert not [f for f in report["findings"] if f["rule"] == "CHECKER-001"], report["findings"]
    per: dict[tuple[str, str], int] = {}
    for f in report["findings"]:
        per[f["rule"], f["file"]] = per.get((f["rule"], f["file"]), 0) + 1
    assert max(per.values(), default=0) <= MAX_PER_RULE_AND_FILE
    return code, report


FOLDERS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean18")
    synthetic.write_submission(root, get_rules("tiny-test", rules_root=TEST_RULES),
                               registry.for_rules(get_rules("tiny-test", rules_root=TEST_RULES)).build_model())
    return root


@FOLDERS
@given(data=st.data())
def test_mutated_trainmark_folder(clean, tmp_path_factory, capsys, data):
    root = tmp_path_factory.mktemp("mut18")
    shutil.copytree(clean, root, dirs_exist_ok=True)
    bench = root / BENCH
    targets = sorted(p for p in bench.rglob("*") if p.is_file()) + [root / "closed/acme/systems/sys1.json"]
    for path in data.draw(st.lists(st.sampled_from(targets), min_size=1, max_size=3, unique=True)):
        path.write_bytes(data.draw(damaged(path.read_bytes()[:20_000])))
    check_via_cli(root, capsys, "--rules-dir", str(TEST_RULES))


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="needs ../shared/fixtures/mlperf-training-v4.0")
@FOLDERS
@given(data=st.data())
def test_mutated_mlperf_result_folder(tmp_path_factory, capsys, data):
    root = tmp_path_factory.mktemp("mlperf18") / "training_results_v4.0"
    system = "XE8640x4H100-SXM-80GB"
    shutil.copytree(FIXTURE / "Dell/results" / system / "resnet", root / "Dell/results" / system / "resnet")
    (root / "Dell/systems").mkdir(parents=True)
    shutil.copy(FIXTURE / "Dell/systems" / f"{system}.json", root / "Dell/systems")
    files = sorted((root / "Dell/results" / system / "resnet").glob("result_*.txt"))
    for path in data.draw(st.lists(st.sampled_from(files), min_size=1, max_size=2, unique=True)):
        path.write_bytes(data.draw(damaged(path.read_bytes())))
    code, report = check_via_cli(root, capsys)
    assert code == 2 or report["benchmarks"][0]["benchmark"] == "resnet"
