"""Issue 32: the conventions of the tools users know (pytest, ruff, pip), and commands that don't hide failure.

Every command and subcommand parser is walked: no abbreviations, a description, examples, ``-q``, one
meaning per flag name; ``-`` as an output FILE is standard output and never a file named ``-``; a
mistyped name gets "did you mean"; ``compare`` and ``package`` refuse to hide a failing check; ``run``
says at its start that too few trials make an incomplete result.
"""
from __future__ import annotations

import argparse
import json
import shutil
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest
import synthetic

from trainmark.cli import build_parser, main
from trainmark.reference import registry
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"
BENCH = "closed/acme/results/sys1/tiny-test"


def parsers():
    """(command path, parser) of the root, every command and every subcommand."""
    def walk(parser, path):
        yield " ".join(path), parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
    yield from walk(build_parser(), ["trainmark"])


def leaves():
    """The parsers that run something (no subcommands of their own)."""
    return [(name, p) for name, p in parsers() if name != "trainmark"
            and not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


# -- every parser --------------------------------------------------------------------------------------
def test_no_parser_accepts_abbreviations():
    assert [name for name, p in parsers() if p.allow_abbrev] == []


def test_an_abbreviated_option_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["list", "--js"])
    assert exc.value.code == 2 and "unrecognized arguments: --js" in capsys.readouterr().err


def test_every_parser_has_a_description_and_examples():
    for name, p in parsers():
        assert p.description and p.description.strip(), name
        if name == "trainmark":
            continue
        assert p.epilog and p.epilog.startswith("examples:\n"), name
        examples = [line for line in p.epilog.splitlines()[1:] if line.strip().startswith("trainmark")]
        assert 2 <= len(examples) <= 3, (name, examples)
        assert isinstance(p.formatter_class, type) and issubclass(p.formatter_class,
                                                                   argparse.RawDescriptionHelpFormatter), name


def test_no_restructuredtext_backticks_anywhere_in_help():
    marked = []
    for name, p in parsers():
        texts = [p.description or "", p.epilog or ""] + [a.help or "" for a in p._actions]
        marked += [(name, t[:60]) for t in texts if "`" in t]
    assert marked == []


def test_every_help_renders_with_its_examples_last():
    for name, p in parsers():
        text = p.format_help()
        assert "`" not in text, name
        if name != "trainmark":
            assert text.rstrip().splitlines()[-1].lstrip().startswith(("trainmark ", "--config")), name


def test_every_command_takes_q_and_quiet():
    for name, p in leaves():
        (quiet,) = [a for a in p._actions if "--quiet" in a.option_strings]
        assert quiet.option_strings == ["-q", "--quiet"] and quiet.nargs == 0 and quiet.default is False, name


def test_check_help_says_what_it_reads():
    text = dict(parsers())["trainmark check"].format_help()
    assert ".tar.gz" in text and "several submitters" in text and "zip files are not read" in text
    assert "--output-file" in text and "--output-format" in text


# -- one meaning per flag name ----------------------------------------------------------------------
# Documented exceptions: the same name, a different kind of value, for a reason the help gives.
KIND_EXCEPTIONS = {
    "--data-dir": "check's is --reevaluate's, repeatable and per benchmark ([BENCHMARK=]DIR)",
    "--nproc": "ops: one rank count for --op allreduce; scale: a comma-separated list of launches",
    "--sweep": "report adds several sweeps' plots; scale reads one sweep's compute curve",
}
SAME_HELP = ("-q", "--quiet", "--json", "--rules-version", "--rules-dir", "--mlperf-ruleset")


def flag_table() -> dict[str, list[tuple[str, tuple, str]]]:
    """Every option string of every command: (command, (action, nargs, type, const), help)."""
    table = defaultdict(list)
    for name, p in leaves():
        for a in p._actions:
            for flag in a.option_strings:
                if flag not in ("-h", "--help"):
                    kind = (type(a).__name__, a.nargs, getattr(a.type, "__name__", a.type), a.const)
                    table[flag].append((name.removeprefix("trainmark "), kind, a.help))
    return table


def test_each_flag_name_is_one_kind_of_value_across_commands():
    mixed = {flag: sorted({r[1] for r in rows}, key=str) for flag, rows in flag_table().items()
             if len({r[1] for r in rows}) > 1 and flag not in KIND_EXCEPTIONS}
    assert mixed == {}


def test_shared_flags_have_one_help_text():
    table = flag_table()
    assert {flag: sorted({r[2] for r in table[flag]}) for flag in SAME_HELP
            if len({r[2] for r in table[flag]}) > 1} == {}
    assert {r[1] for r in table["--json"]} == {("_StoreAction", "?", None, "-")}  # --json [FILE] everywhere
    assert "(default: the latest shipped rules, 1.2)" in table["--rules-version"][0][2]
    assert {cmd for cmd, _, _ in table["--rules-version"]} >= {"run", "sweep", "scale", "list", "rules show"}


# -- '-' is standard output -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("conv32")
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    return root


@pytest.fixture(scope="module")
def broken(tmp_path_factory, tree):
    """The tree with one error that leaves its times alone: the system description lacks a required field."""
    root = tmp_path_factory.mktemp("broken32")
    shutil.copytree(tree, root, dirs_exist_ok=True)
    system = root / "closed/acme/systems/sys1.json"
    description = json.loads(system.read_text())
    del description["accelerator_model_name"]  # SYSTEM-002
    system.write_text(json.dumps(description))
    return root


RULES = ["--rules-dir", str(TEST_RULES)]
STDOUT_CASES = {
    "list --json -": (["list", "--json", "-"], '"benchmarks"'),
    "rules show --json -": (["rules", "show", "tiny-test", "--json", "-", *RULES], '"name"'),
    "rules compliance -o -": (["rules", "compliance", "tiny-test", "-o", "-", *RULES], "BEGIN"),
    "rules docs -o -": (["rules", "docs", "-o", "-", *RULES], "tiny-test"),
    "check --json -": (["check", "{tree}", "--json", "-", *RULES], '"schema": "trainmark-check/1"'),
    "check --csv -": (["check", "{tree}", "--csv", "-", *RULES], "olympic_total_time_s"),
    "check --output-file -": (["check", "{tree}", "--output-format", "sarif", "--output-file", "-", *RULES],
                              '"version": "2.1.0"'),
    "report -o -": (["report", "{tree}", "--format", "md", "-o", "-", *RULES], "tiny-test"),
    "table -o -": (["table", "{tree}", "-o", "-", *RULES], "tiny-test"),
    "compare --json -": (["compare", "{tree}", "{tree}", "--json", "-", *RULES], '"trainmark-compare/1"'),
    "ops --json - -q": (["ops", "--quick", "--op", "matmul", "--pass", "fwd", "--dtype", "fp32", "--shapes", "square",
                         "--repeats", "2", "--json", "-", "-q"], '"results"'),
}


@pytest.mark.parametrize("case", sorted(STDOUT_CASES))
def test_dash_is_standard_output_and_never_a_file(case, tree, tmp_path, monkeypatch, capsys):
    args, expected = STDOUT_CASES[case]
    monkeypatch.chdir(tmp_path)
    code = main([a.replace("{tree}", str(tree)) for a in args])
    out = capsys.readouterr().out
    assert code == 0 and expected in out, case
    assert list(tmp_path.iterdir()) == [], case  # no file named '-' (nor any other)
    if "--json" in args:
        json.loads(out)  # standard output is the JSON alone


def test_quiet_json_dash_still_prints_the_json(tree, capsys):
    assert main(["check", str(tree), "--quiet", "--json", "-", *RULES]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    assert main(["list", "-q", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["benchmarks"]


def test_check_quiet_prints_errors_and_the_verdict(broken, capsys):
    assert main(["check", str(broken), "-q", *RULES]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("FAIL: ") and all(line.startswith("ERROR ") for line in lines[:-1]) and lines[:-1]


# -- check: a CI report to a file, the text on the terminal ------------------------------------------
def test_output_file_keeps_the_text_report_on_the_terminal(broken, tmp_path, capsys):
    xml = tmp_path / "check.xml"
    assert main(["check", str(broken), "--output-format", "junit", "--output-file", str(xml), *RULES]) == 1
    out = capsys.readouterr().out
    assert "trainmark check" in out and "FAIL" in out and not out.lstrip().startswith("<")
    suites = ET.fromstring(xml.read_text())
    assert int(suites.get("failures")) > 0
    for case in suites.iter("testcase"):  # a warning or note is skipped, never a passing case
        assert case.find("failure") is not None or case.find("skipped") is not None or \
            case.get("name") == "no error finding"


def test_sarif_of_an_archive_points_into_the_archive_in_its_folder(broken, tmp_path, capsys):
    from trainmark.checker.pack import write_archive

    tgz, _, _ = write_archive(broken, tmp_path / "broken.tar.gz")
    assert main(["check", str(tgz), "--format", "sarif", *RULES]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    base = run["originalUriBaseIds"]["CHECKED"]["uri"]
    assert base == tmp_path.resolve().as_uri() + "/"  # a folder a viewer can open, not one inside the tarball
    archive = run["artifacts"][0]
    assert archive["location"] == {"uri": "broken.tar.gz", "uriBaseId": "CHECKED"}
    for result in run["results"]:
        where = result["locations"][0]["physicalLocation"]["artifactLocation"]
        nested = run["artifacts"][where["index"]]
        assert nested["parentIndex"] == 0 and nested["location"]["uri"] == where["uri"]
        assert not where["uri"].startswith(("/", "file:"))


# -- did you mean ----------------------------------------------------------------------------------------
def test_a_mistyped_command_gets_the_closest_one(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["chek", "submission/"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "did you mean 'check'?" in err


def test_a_mistyped_subcommand_too(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rules", "shwo", "resnet-mini"])
    assert exc.value.code == 2 and "did you mean 'show'?" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["run", "resnet-mnii"], ["rules", "show", "resnet-mnii"],
                                     ["data", "verify", "resnet-mnii"]])
def test_a_mistyped_benchmark_gets_the_closest_one(command, tmp_path, capsys):
    extra = ["--out", str(tmp_path / "out")] if command[0] == "run" else []
    assert main([*command, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'resnet-mini'?" in err and "trainmark list" in err
    assert not (tmp_path / "out").exists()


# -- compare: a failing side is said first, exit 1 ---------------------------------------------------
def test_compare_with_a_failing_side_says_so_first_and_exits_1(tree, broken, capsys):
    assert main(["compare", str(tree), str(broken), *RULES]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("CHECK FAILED: NEW ") and str(broken.resolve()) in first and "BASE" not in first
    assert main(["compare", str(broken), str(tree), "--format", "md", *RULES]) == 1
    assert capsys.readouterr().out.startswith("CHECK FAILED: BASE ")


def test_compare_ignore_check_returns_the_comparisons_status(tree, broken, capsys):
    assert main(["compare", str(tree), str(broken), "--ignore-check", *RULES]) == 0  # same times: no slowdown
    out = capsys.readouterr().out
    assert out.startswith("CHECK FAILED: NEW ") and out.rstrip().endswith("no significant slowdown")


def test_compare_json_on_stdout_stays_json_and_the_line_goes_to_stderr(tree, broken, capsys):
    assert main(["compare", str(tree), str(broken), "--json", *RULES]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["new_passed"] is False and err.startswith("CHECK FAILED: NEW ")


# -- package: a failing folder is refused ----------------------------------------------------------------
def test_package_refuses_a_failing_folder(broken, tmp_path, capsys):
    out = tmp_path / "x.tar.gz"
    assert main(["package", str(broken), "-o", str(out), *RULES]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fails its check: 1 error(s)" in err and f"trainmark check {broken}" in err
    assert not out.exists() and not (tmp_path / "SHA256SUMS").exists()
    assert main(["package", str(broken), "-o", str(out), "--allow-failing", "-q", *RULES]) == 0
    std = capsys.readouterr()
    assert out.is_file() and "warning" in std.err and std.out.count("\n") == 1  # -q: the SHA256SUMS line only


def test_package_of_a_passing_folder(tree, tmp_path, capsys):
    assert main(["package", str(tree), "-o", str(tmp_path / "ok.tar.gz"), *RULES]) == 0
    assert "fails" not in capsys.readouterr().err and (tmp_path / "ok.tar.gz").is_file()


def test_package_output_dash_is_refused(tree, capsys):
    assert main(["package", str(tree), "-o", "-", *RULES]) == 2
    assert "name the file" in capsys.readouterr().err


# -- run: too few trials are said at the start ------------------------------------------------------------
def test_run_warns_at_the_start_when_trials_are_below_the_rules(tmp_path, capsys):
    code = main(["run", "tiny-test", *RULES, "--trials", "1", "--out", str(tmp_path / "out"), "--seed", "3",
                 "--submitter", "ci", "--system-name", "box", "-q"])
    err = capsys.readouterr().err
    assert code == 0
    (line,) = [x for x in err.splitlines() if "--trials" in x]
    assert line == ("trainmark run: warning: --trials 1 is below the 3 trials of tiny-test's rules 1.2: "
                    "'trainmark check' will count the result as incomplete")
    assert err.splitlines()[0] == line  # before anything else
