"""Issue 18: the command line as people expect it, and hostile names answered clearly.

Every test drives ``trainmark`` the way a user does (``main([...])`` or a subprocess) and
asserts the exit status, the one-line error or the output a CI system or spreadsheet reads.
"""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import synthetic

from trainmark.cli import build_parser, main
from trainmark.reference import registry
from trainmark.rules import get_rules

TEST_RULES = Path(__file__).parent / "rules"
BENCH = "closed/acme/results/sys1/tiny-test"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli18")
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    return root


def check(capsys, *args):
    code = main(["check", *map(str, args), "--rules-dir", str(TEST_RULES)])
    out, err = capsys.readouterr()
    return code, out, err


# -- one meaning for output flags ---------------------------------------------------------------
def test_json_takes_a_file_or_dash_for_stdout(tree, capsys, tmp_path):
    code, out, _ = check(capsys, tree, "--json", tmp_path / "r.json", "--quiet")
    assert code == 0 and out.startswith("PASS: 0 error(s)") and out.count("\n") == 1  # -q: the verdict line
    assert json.loads((tmp_path / "r.json").read_text())["passed"] is True
    code, out, _ = check(capsys, tree, "--json", "-")
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = check(capsys, tree, "--json")
    assert json.loads(out)["schema"] == "trainmark-check/1"


def test_json_before_the_folder_still_means_the_folder(tree, capsys):
    code = main(["check", "--json", str(tree), "--rules-dir", str(TEST_RULES)])
    assert code == 0 and json.loads(capsys.readouterr().out)["passed"] is True


def test_csv_dash_is_stdout_not_a_file_named_dash(tree, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = check(capsys, tree, "--csv", "-")
    assert code == 0 and not (tmp_path / "-").exists()
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["benchmark"] == "tiny-test" and rows[0]["olympic_total_time_s"]


def test_two_claims_on_stdout_are_a_usage_error(tree, capsys):
    code, out, err = check(capsys, tree, "--csv", "-", "--format", "sarif")
    assert code == 2 and out == "" and "standard output" in err


def test_unwritable_output_is_refused_before_checking(tree, capsys):
    code, out, err = check(capsys, tree, "--csv", "/proc/no/such/x.csv")
    assert code == 2 and err.count("\n") == 1 and "--csv" in err


# -- CI formats ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broken(tmp_path_factory, tree):
    import shutil
    root = tmp_path_factory.mktemp("broken18")
    shutil.copytree(tree, root, dirs_exist_ok=True)
    (root / BENCH / "epochs.log").write_bytes(b"junk\n" * 30)
    return root


def test_junit_lists_errors_as_failures(broken, capsys):
    code, out, _ = check(capsys, broken, "--format", "junit")
    assert code == 1
    suites = ET.fromstring(out)
    failures = suites.findall(".//testcase/failure")
    assert int(suites.get("failures")) == len(failures) > 0
    assert any(f.get("type") == "EPOCHLOG-001" for f in failures)


def test_junit_of_a_passing_folder_skips_its_warnings(tree, capsys):
    """A warning is a skipped case, never a passed one; one passing case says no error was found."""
    code, out, _ = check(capsys, tree, "--format", "junit")
    suites = ET.fromstring(out)
    cases = suites.findall(".//testcase")
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert code == 0 and suites.get("failures") == "0" and suites.get("skipped") == str(len(skipped)) == "1"
    assert skipped[0].find("skipped").get("message").startswith("warning CONVERGE-002")
    assert [c.get("name") for c in cases if c.find("skipped") is None] == ["no error finding"]


def test_sarif_has_rules_results_and_locations(broken, capsys):
    code, out, _ = check(capsys, broken, "--format", "sarif")
    sarif = json.loads(out)
    assert code == 1 and sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    result = next(r for r in run["results"] if r["ruleId"] == "EPOCHLOG-001")
    assert ids[result["ruleIndex"]] == "EPOCHLOG-001" and result["level"] == "error"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == f"{BENCH}/epochs.log" and location["region"]["startLine"] == 1


# -- hostile names -----------------------------------------------------------------------------------
def test_escape_sequences_in_names_never_reach_the_terminal(tree, tmp_path, capsys):
    import shutil
    root = tmp_path / "sub"
    shutil.copytree(tree, root)
    (root / "closed/acme/results" / "\x1b[2J\x1b[32mPASS\x1b]0;x\x07\nfake").mkdir()
    for fmt in ("text", "json", "junit", "sarif"):
        code, out, _ = check(capsys, root, "--format", fmt)
        assert code == 1 and "\x1b" not in out and "\x07" not in out, fmt
        assert "\\x1b[2J" in out or "\\\\x1b[2J" in out, fmt


def test_csv_neutralises_formulas_in_submitted_names(tree, tmp_path, capsys):
    import shutil
    root = tmp_path / "sub"
    shutil.copytree(tree, root)
    name = '=HYPERLINK("x","y")'
    os.rename(root / "closed/acme/results/sys1", root / "closed/acme/results" / name)
    os.rename(root / "closed/acme/systems/sys1.json", root / "closed/acme/systems" / f"{name}.json")
    code, out, _ = check(capsys, root, "--csv", "-")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and rows[0]["system"] == "'" + name  # shown, but as text, not as a formula
    assert not any(c.startswith(("=", "+", "@")) for row in rows for c in row.values())


def test_a_0xff_folder_name_under_strict_utf8_stdout(tree, tmp_path):
    import shutil
    root = tmp_path / "sub"
    shutil.copytree(tree, root)
    os.mkdir(os.fsencode(root / "closed/acme/results") + b"/sys\xff")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONPATH": str(Path(__file__).parent)}
    for extra in ([], ["--csv", str(tmp_path / "s.csv")]):
        proc = subprocess.run([sys.executable, "-c", "import conftest, sys; from trainmark.cli import main; "
                               "sys.exit(main(sys.argv[1:]))", "check", str(root), "--rules-dir", str(TEST_RULES),
                               *extra], capture_output=True, env=env, timeout=300)
        assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert b"sys\\xff" in proc.stdout or b"sys\\udcff" in proc.stdout
    text = (tmp_path / "s.csv").read_bytes().decode("utf-8")  # strict: no lone surrogate was written
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["system"] for r in rows] == ["sys1"]  # the empty sys\xff folder holds no benchmark, so no row


def test_path_longer_than_path_max_is_exit_2(capsys):
    code, out, err = check(capsys, "/" + "a/" * 3000)
    assert code == 2 and err.startswith("trainmark check: error:") and err.count("\n") == 1


def test_missing_system_schema_is_exit_2(tree, capsys, tmp_path):
    code, out, err = check(capsys, tree, "--system-schema", tmp_path / "none.json")
    assert code == 2 and "--system-schema" in err


# -- harness arguments: one line, exit 2, before anything runs -----------------------------------------
@pytest.mark.parametrize("args,says", [
    (["run", "tiny-test", "--trials", "0"], "--trials 0"),
    (["run", "tiny-test", "--energy-estimate-watts", "nan"], "--energy-estimate-watts"),
    (["run", "tiny-test", "--energy-estimate-watts", "-100"], "--energy-estimate-watts"),
    (["run", "tiny-test", "--submitter", ".."], "--submitter"),
    (["run", "tiny-test", "--system-name", ".."], "--system-name"),
    (["run", "tiny-test", "--system-name", "a/b"], "--system-name"),
    (["run", "tiny-test", "--division", "open", "--hparam", "lr=NaN"], "--hparam"),
    (["run", "tiny-test", "--batch-size", "0"], "--batch-size"),
    (["sweep", "tiny-test", "--batch-sizes", ""], "--batch-sizes"),
    (["sweep", "tiny-test", "--min-seconds", "nan"], "--min-seconds"),
    (["sweep", "tiny-test", "--energy-estimate-watts", "inf"], "--energy-estimate-watts"),
    (["ops", "--dtype", ""], "--dtype"),
    (["ops", "--json", "/proc/nope/x.json"], "--json"),
    (["rules", "list", "--rules-dir", "{missing}"], "--rules-dir"),
    (["rules", "show", "tiny-test", "--rules-dir", "{file}"], "--rules-dir"),
    (["data", "verify", "tiny-test", "--rules-dir", "{missing}"], "--rules-dir"),
    (["list", "--rules-dir", "{file}"], "--rules-dir"),
    (["run", "tiny-test", "--rules-dir", "{missing}"], "--rules-dir"),
    (["run", "tiny-test", "--rules-dir", "{file}"], "--rules-dir"),
])
def test_bad_arguments_are_one_line_errors(args, says, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    args = [a.format(missing=tmp_path / "none", file=tmp_path / "afile") for a in args]
    if args[0] in ("run", "sweep") and "--rules-dir" not in args:
        args += ["--rules-dir", str(TEST_RULES), "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_sweep_out_unwritable_is_refused_before_measuring(capsys):
    assert main(["sweep", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", "/proc/nope/sweep"]) == 2
    assert "cannot write results there" in capsys.readouterr().err


def test_missing_dataset_says_where_to_get_it(tmp_path, capsys):
    assert main(["data", "verify", "resnet-mini", "--data-dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "dataset-fashion-mnist" in err and "--data-dir" in err


def test_data_verify_calls_a_fifo_what_it_is(rules_copy, tmp_path, capsys):
    import hashlib

    import yaml
    path = rules_copy / "1.2" / "tiny-test.yaml"
    rule = yaml.safe_load(path.read_text())
    rule["dataset"]["files"] = {"a.bin": hashlib.sha256(b"x").hexdigest()}
    path.write_text(yaml.safe_dump(rule))
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "a.bin")
    assert main(["data", "verify", "tiny-test", "--rules-dir", str(rules_copy), "--data-dir", str(tmp_path / "d")]) == 1
    assert "not a regular file" in capsys.readouterr().err


# -- tables, lists, help ---------------------------------------------------------------------------------
def test_list_piped_keeps_every_name_whole_and_has_json():
    proc = subprocess.run([sys.executable, "-m", "trainmark", "list"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "40"})
    assert proc.returncode == 0 and "inception-mini" in proc.stdout and "…" not in proc.stdout
    for cmd in (["list", "--json"], ["rules", "list", "--json", "-"]):
        proc = subprocess.run([sys.executable, "-m", "trainmark", *cmd], capture_output=True, text=True, timeout=120)
        names = {b["benchmark"] for b in json.loads(proc.stdout)["benchmarks"]}
        assert {"inception-mini", "resnet-mini"} <= names


def test_run_summary_table_never_cuts_status_or_metric():
    from types import SimpleNamespace

    from rich.console import Console

    from trainmark.cli.run import summary_table
    result = SimpleNamespace(status="converged", epochs=3, final_metric=0.91234, train_time_s=1.0, total_time_s=2.0,
                             train_energy_j=None, train_samples_per_s=10.0, achieved_tflops=0.1, utilization=0.5)
    summary = SimpleNamespace(bench_dir="x", results=[result], all_results=[result], first_trial=1)
    out = io.StringIO()
    Console(file=out, width=50).print(summary_table(summary))
    assert "…" not in out.getvalue()  # rich's default overflow cut these to 'conv…' and '0.91…'


def test_every_option_has_help_and_no_rst_backticks():
    parser = build_parser()
    assert "``" not in parser.format_help() and "developer" not in parser.format_help()
    mine = {"run", "list", "calibrate", "rules", "data", "check", "ops", "sweep"}
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    pending = [(name, p) for name, p in sub.choices.items() if name in mine]
    while pending:
        name, p = pending.pop()
        assert "``" not in p.format_help(), name
        for action in p._actions:
            if action.__class__.__name__ == "_SubParsersAction":  # others' subcommands are theirs to check
                pending.extend((f"{name} {n}", c) for n, c in action.choices.items()
                               if n in ("list", "show", "docs", "verify", "prepare"))
            elif action.dest != "help":
                assert action.help, f"trainmark {name} {'/'.join(action.option_strings) or action.dest}: no help"


def test_rules_docs_default_output_is_the_package_docs(tmp_path, monkeypatch):
    from trainmark.cli.rules import default_docs_path
    monkeypatch.chdir(tmp_path)
    from trainmark.checker.verdict.codes_docs import default_path as checker_docs_path
    assert default_docs_path() == Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert checker_docs_path() == Path(__file__).resolve().parents[1] / "docs" / "checker.md"  # its code table
    assert main(["rules", "docs", "--output", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text().startswith("#") and not (tmp_path / "docs").exists()


def test_mllog_metadata_has_no_absolute_source_path(tmp_path):
    from trainmark.format.mllog import TrialLogWriter
    log = TrialLogWriter(tmp_path / "r.txt")
    log.event("seed", 1, 5)
    log.close()
    record = json.loads((tmp_path / "r.txt").read_text().split(":::MLLOG ", 1)[1])
    assert not record["metadata"]["file"].startswith("/"), record["metadata"]


# -- leftovers ----------------------------------------------------------------------------------------
def test_sigterm_removes_the_checkers_temporary_folder(tree, tmp_path):
    """SIGTERM once the checker's temporary folder exists: it exits 130 and the folder is gone. The folder's
    removal waits 10 s in the child (a stand-in for a long check), so the signal always finds it running
    (before, a check that ended first passed with exit 0 and no signal sent); SIGTERM's default (death
    without unwinding) would leave the folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(Path(__file__).parent)}
    slow_removal = ("import tempfile, time\nreal = tempfile.TemporaryDirectory.__exit__\n"
                    "def slow(self, *exc):\n    try:\n"
                    "        time.sleep(10 if 'trainmark-check-' in self.name else 0)\n"
                    "    finally:\n        real(self, *exc)\ntempfile.TemporaryDirectory.__exit__ = slow\n")
    proc = subprocess.Popen([sys.executable, "-c", slow_removal + "import conftest, sys; from trainmark.cli import "
                             "main; sys.exit(main(sys.argv[1:]))", "check", str(tree), "--rules-dir", str(TEST_RULES),
                             "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sent = False
    try:
        while proc.poll() is None and not any(p.name.startswith("trainmark-check-") for p in tmp.iterdir()):
            time.sleep(0.01)  # polling for the folder, not timing anything
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            sent = True
        out, err = proc.communicate(timeout=120)  # read the pipes: a full one would block the child's exit
    finally:
        proc.kill()
    assert sent and proc.returncode == 130, (out[-2000:], err[-2000:])  # -q: the findings are on stdout
    assert not [p for p in tmp.iterdir() if p.name.startswith("trainmark-check-")]


def test_a_signal_swallowed_inside_the_check_still_ends_it_with_130(tree, monkeypatch, capsys):
    """A SIGTERM whose KeyboardInterrupt some code inside the check swallows (mlperf-logging's engine has bare
    ``except:``) must not let the check go on to a verdict: exit 130, no verdict printed."""
    import trainmark.checker.check as check_module

    real = check_module.check_path

    def swallowing(path, options):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here (not timing anything)
        except:  # noqa: E722 - the bare except under test
            pass
        return real(path, options)

    monkeypatch.setattr(check_module, "check_path", swallowing)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = main(["check", str(tree), "--rules-dir", str(TEST_RULES), "--no-reevaluate", "-q"])
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    out, err = capsys.readouterr()
    assert code == 130, (out, err)
    assert "PASS" not in out and "interrupted" in err


def test_no_empty_torchinductor_folder_is_left_behind(tmp_path):
    """Building a reference imports torch._dynamo, which creates $TMPDIR/torchinductor_<user> at import."""
    for preexisting in (False, True):
        tmp = tmp_path / f"tmp{preexisting}"
        tmp.mkdir()
        if preexisting:  # someone's real cache: never touched
            (tmp / "keep").mkdir()
        code = ("import os, sys; from trainmark.cli import main; from trainmark.leftovers import inductor_cache_dir; "
                "from trainmark.reference import registry; main(['list', '--json', os.devnull]); "
                "registry.get('resnet-mini').build_model(); "
                "assert os.path.isdir(inductor_cache_dir()), 'torch no longer creates it: drop trainmark.leftovers'; "
                "print(inductor_cache_dir())")
        env = {**os.environ, "TMPDIR": str(tmp)}
        env.pop("TORCHINDUCTOR_CACHE_DIR", None)
        if preexisting:
            env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "keep")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        left = sorted(p.name for p in tmp.iterdir())
        assert left == (["keep"] if preexisting else []), left


def test_disk_full_during_a_run_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    from trainmark.harness import run as run_module

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "x"))
    monkeypatch.setattr(run_module, "write_json_atomic", full)
    code = main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(tmp_path / "out"), "--quiet",
                 "--trials", "1"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "No space left on device" in err, err


def test_disk_full_writing_the_csv_is_one_line(tree, tmp_path, capsys, monkeypatch):
    import errno

    from trainmark import files

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(files, "write_text_atomic", full)
    code, out, err = check(capsys, tree, "--csv", tmp_path / "s.csv", "--quiet")
    assert code == 2 and err.count("\n") == 1 and "No space left on device" in err
    assert not (tmp_path / "s.csv").exists()  # no empty file left behind


def test_an_output_flag_never_replaces_a_device(tree, capsys):
    code, out, err = check(capsys, tree, "--json", "/dev/null")
    assert code == 2 and "not a regular file" in err and os.path.exists("/dev/null")
    assert not os.path.isfile("/dev/null")


def test_batch_size_above_the_training_set_is_refused(tmp_path, capsys):
    code = main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(tmp_path / "out"), "--quiet",
                 "--division", "open", "--batch-size", "100000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "larger than the" in err, err
    assert not list((tmp_path / "out").rglob("result_*.txt"))


def test_progress_goes_to_a_terminal_only():
    from rich.console import Console

    from trainmark.checker.progress import progress_for
    with progress_for(quiet=False, console=Console(file=io.StringIO())) as progress:
        assert progress is None  # not a terminal: a pipe or CI log gets no bar
    with progress_for(quiet=True, console=Console(file=io.StringIO(), force_terminal=True)) as progress:
        assert progress is None
    shown = io.StringIO()
    with progress_for(quiet=False, console=Console(file=shown, force_terminal=True, width=100)) as progress:
        progress(3, 7, "closed/acme/results/\x1b[2Jsys")
    assert "3/7" in shown.getvalue() and "\x1b[2J" not in shown.getvalue()


def test_check_table_shows_the_olympic_total(tree, capsys):
    code, out, _ = check(capsys, tree)
    assert code == 0 and "olympic total s" in out


def test_error_lines_escape_what_they_quote(capsys, tmp_path):
    code, out, err = check(capsys, tmp_path / "no\x1b[2Jsuch\nfolder")
    assert code == 2 and err.count("\n") == 1 and "\x1b" not in err and "\\x1b[2J" in err
