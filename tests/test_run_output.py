"""What `trainmark run` tells its user (issue 39): a banner and a line per trial on stderr, the table on stdout,
no control character in a log, Ctrl-C's exit 130 with the exact --resume command, -q, a resume that refuses
another seed, and the exit codes its --help promises.

The tiny-test benchmark (tests/tiny_reference.py) trains in milliseconds; two tests start a real process (a
pipe is not a terminal, and SIGINT must reach Python as it does from a keyboard), the rest call main().
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import TEST_RULES

from trainmark.cli import build_parser, main

TESTS = Path(__file__).resolve().parent
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # ESC, CR, backspace ...: a tab and a newline are text
# The CLI with each training step slowed (tests/tiny_reference.py's tick hook), so that SIGINT lands mid-trial.
SLOW_CLI = ("import sys, time, tiny_reference; "
            "tiny_reference.TinyTest.tick = staticmethod(lambda: time.sleep(0.2)); "
            "from trainmark.cli import main; sys.exit(main(sys.argv[1:]))")


def _args(out: Path, *extra: str) -> list[str]:
    return ["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(out), "--submitter", "ci",
            "--system-name", "box", "--telemetry-hz", "0", *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}


def _bench(out: Path) -> Path:
    return out / "closed" / "ci" / "results" / "box" / "tiny-test"


def test_piped_output_has_no_control_characters_and_splits_table_from_messages(tmp_path):
    """Outside a terminal (CI, nohup, | tee): plain lines, the banner and trial lines on stderr, the table alone
    on stdout."""
    done = subprocess.run([sys.executable, "-P", "-m", "trainmark", *_args(tmp_path / "o", "--seed", "5")],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert not CONTROL.search(done.stdout) and not CONTROL.search(done.stderr)
    err = done.stderr
    assert "trainmark run: tiny-test (rules 1.2, closed division): target top1_accuracy >= 0.9" in err
    assert "model tiny-test (the reference; 178 parameters" in err and "framework pytorch, device cpu (" in err
    assert "precision fp32, global batch size 32" in err
    assert "3 trials, seeds 5 to 7" in err and f"results into {_bench(tmp_path / 'o')}" in err
    assert re.search(r"^trial 1 of 3: converged after \d+ epochs?, top1_accuracy 0\.\d{4}, train \d+\.\d s "
                     r"\(\d+\.\d s with evaluation\); run ETA \d:\d\d:\d\d$", err, flags=re.M), err
    assert re.search(r"^trial 3 of 3: converged .*evaluation\)$", err, flags=re.M)  # the last: no ETA
    assert "trainmark run: ok: 3 of 3 trials converged" in err
    assert "trial 1 of 3" not in done.stdout and "converged" in done.stdout and "train s" in done.stdout
    assert "train s" not in err  # the table is on stdout only


def _wait_for(stream, pattern: str, seen: list[str]) -> bool:
    for line in stream:
        seen.append(line)
        if re.search(pattern, line):
            return True
    return False


def test_ctrl_c_keeps_finished_trials_exits_130_and_prints_the_resume_command(tmp_path):
    out = tmp_path / "o"
    args = _args(out, "--trials", "3")
    proc = subprocess.Popen([sys.executable, "-P", "-c", SLOW_CLI, *args], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=_env(),
                            # a shell's background job starts with Ctrl-C ignored, and Python then installs no
                            # handler: the child gets the default, as from a terminal
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        seen: list[str] = []
        assert _wait_for(proc.stderr, r"^trial 1 of 3: ", seen), "".join(seen)
        time.sleep(1)  # trial 2 is running: each of its steps sleeps 0.2 s
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait() == 130, "".join(seen) + rest
    finally:
        watchdog.cancel()
    assert "interrupted during trial 2 of 3; trial 1 is kept in" in rest
    command = rest.rstrip().splitlines()[-1].strip()
    argv = shlex.split(command)
    assert argv[:4] == [sys.executable, "-P", "-m", "trainmark"] and argv[-1] == "--resume"
    assert argv[4:4 + len(args)] == args and argv[4 + len(args)] == "--seed"  # the random base seed, named
    assert (_bench(out) / "trial_1" / "trial.json").is_file()
    resumed = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "trials 2 to 3 of 3 (resumed: 1 to 1 are done)" in resumed.stderr
    rows = re.findall(r"^\W+(\d)\W+(converged|not_converged)", resumed.stdout, flags=re.M)
    assert [k for k, _ in rows] == ["1", "2", "3"], resumed.stdout  # the folder's whole table


def test_quiet_prints_the_folder_and_the_verdict(tmp_path, capsys):
    assert main(_args(tmp_path, "--seed", "5", "-q")) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{_bench(tmp_path)}: ok: 3 of 3 trials converged\n"
    assert captured.err == ""


def test_resume_refuses_another_seed_and_shows_the_whole_table(tmp_path, capsys):
    assert main(_args(tmp_path, "--seed", "5", "--trials", "1")) == 0
    capsys.readouterr()
    assert main(_args(tmp_path, "--seed", "6", "--trials", "2", "--resume")) == 2
    err = capsys.readouterr().err
    assert "--resume --seed 6: the finished trials ran from base seed 5" in err and "--seed 5" in err
    assert not (_bench(tmp_path) / "trial_2").exists()
    assert main(_args(tmp_path, "--seed", "5", "--trials", "2", "--resume")) == 0
    table = capsys.readouterr().out
    assert re.findall(r"^\W+(\d)\W+converged", table, flags=re.M) == ["1", "2"]


def test_too_many_missed_targets_exit_1_with_one_line_saying_so(tmp_path, capsys):
    import tiny_reference

    tiny_reference.TinyTest.metric_override = lambda: 0.0  # never reaches 0.9: every trial misses
    assert main(_args(tmp_path, "--seed", "5", "--trials", "2")) == 1
    err = capsys.readouterr().err
    assert "trainmark run: failed: 2 of 2 trials missed the target, the rules allow 1" in err
    assert re.search(r"^trial 2 of 2: missed the target after 6 epochs", err, flags=re.M)


def test_a_crash_exits_1_with_one_line_naming_the_error_and_where_its_traceback_is(tmp_path, capsys, monkeypatch):
    (tmp_path / "broken.py").write_text("def build():\n    raise RuntimeError('model code is broken')\n")
    monkeypatch.chdir(tmp_path)
    assert main(_args(tmp_path / "o", "--seed", "5", "--trials", "1", "--division", "open", "--model",
                      "broken:build", "-q")) == 1
    err = capsys.readouterr().err
    trial_json = tmp_path / "o" / "open" / "ci" / "results" / "box" / "tiny-test" / "trial_1" / "trial.json"
    assert f"trainmark run: trial 1 crashed: RuntimeError: model code is broken (traceback: {trial_json})" in err
    assert "Traceback (most recent call last)" not in err and "Traceback" in trial_json.read_text()


def test_a_wrong_call_exits_2_before_anything_is_written(tmp_path, capsys):
    assert main(_args(tmp_path, "--trials", "0")) == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "closed").exists()


def test_help_documents_the_exit_codes_that_happen():
    """The codes the tests above see (0, 1, 2, 130), each named in `trainmark run --help`."""
    (sub,) = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    text = " ".join(sub.choices["run"].description.split())
    assert re.search(r"Exit status: 0 every trial finished .*; 1 a trial crashed, or more trials missed the target "
                     r"than the rules allow .*; 2 a wrong call.*; 130 interrupted by Ctrl-C", text), text


def test_a_run_off_its_convergence_points_recipe_says_so_in_the_banner(tmp_path, capsys):
    """A closed run may set the peak rate anywhere in the rules' range, but the point its epochs are judged against
    was measured with its own: the banner names both values; a run at the point's rate is told nothing."""
    import yaml

    rules = tmp_path / "rules"
    shutil.copytree(TEST_RULES, rules)
    path = rules / "1.2" / "tiny-test.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    command = "trainmark calibrate tiny-test --batch-size 32 --hparam opt_base_learning_rate=0.8"
    data["convergence"]["points"] = [{"global_batch_size": 32, "epochs_to_target": [1] * 10, "command": command}]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    args = ["run", "tiny-test", "--rules-dir", str(rules), "--submitter", "ci", "--system-name", "box",
            "--telemetry-hz", "0", "--trials", "1"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert ("convergence point at global batch 32 was calibrated with other values (opt_base_learning_rate 0.5, the "
            "point's 0.8)") in err and "trainmark rules show tiny-test" in err
    assert main([*args, "--out", str(tmp_path / "b"), "--hparam", "opt_base_learning_rate=0.8"]) == 0
    assert "calibrated with other values" not in capsys.readouterr().err
