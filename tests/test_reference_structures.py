"""The released reference structures are shipped as data, so checking a folder never imports torch."""
import subprocess
import sys
from pathlib import Path

from trainmark.rules import get_rules, known_versions, reference_structures

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_structures_are_those_the_references_build():
    """Stale means a reference model changed without `trainmark rules code-hashes`."""
    from trainmark.cli.rules import structure_table

    for version in known_versions():
        path = reference_structures.structure_file(version)
        assert path.read_text(encoding="utf-8") == reference_structures.render(structure_table(version)), \
            f"{path} is stale: run `trainmark rules code-hashes --rules-version {version}`"


def test_checker_uses_the_shipped_structure_and_imports_no_torch():
    code = ("import sys; from trainmark.checker.check import check_path; r = check_path(sys.argv[1]); "
            "print(r.exit_code, sum(f.severity == 'error' for f in r.findings), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "submissions")], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "0", "False"]


def test_a_benchmark_missing_from_the_file_is_built_as_before(tmp_path):
    """Rules without a structure file (a --rules-dir of one's own) fall back to building the model."""
    from trainmark.checker.checks.conformity import ReferenceStructures

    rules = get_rules("tiny-test", rules_root=ROOT / "tests" / "rules")
    assert reference_structures.shipped(rules) is None
    desc, why = ReferenceStructures().describe(rules)
    assert why == "" and desc["parameter_count"] == 8 * 16 + 16 + 16 * 2 + 2
