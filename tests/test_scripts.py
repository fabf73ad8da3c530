"""The shell scripts a new user runs first (issue 39): scripts/env.sh picks the interpreter, mini_suite.sh checks
its BENCHMARKS against the rules and prints the suite's line per trial. The install itself (minutes of pip) is
run from a fresh clone by hand, not here; its steps before pip (the room on disk) run here with stand-ins."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trainmark.rules import load_ruleset

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "scripts").glob("*.sh")) + [ROOT / ".ci" / "run"]


def _bash(script: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          env={**clean, **env}, cwd=ROOT)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_parses(script):
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0


def test_env_uses_a_python_pip_may_install_into(tmp_path):
    """$PYTHON in a virtual environment is used as it is, with -P; a PEP 668 system Python only makes .venv."""
    here = _bash('source scripts/env.sh; echo "$PY|$PY_FLAGS"', PYTHON=sys.executable)
    assert here.stdout.strip() == f"{sys.executable}|-P"
    managed = tmp_path / "managed-python"  # answers as a Python marked EXTERNALLY-MANAGED would
    managed.write_text("#!/bin/sh\nexit 1\n")
    managed.chmod(0o755)
    chosen = _bash('source scripts/env.sh; echo "$PY|$TRAINMARK_BASE_PYTHON"', PYTHON=str(managed))
    venv = ROOT / ".venv" / "bin" / "python"
    assert chosen.stdout.strip() == f"{venv if venv.exists() else ''}|{managed}"


def test_mini_suite_refuses_a_benchmark_the_rules_do_not_calibrate():
    done = _bash("bash scripts/mini_suite.sh", PYTHON=sys.executable, INSTALL="0", BENCHMARKS="resnet-mini resnet50")
    assert done.returncode == 2
    assert "resnet50 is not a calibrated mini benchmark; choose from: ds2-mini inception-mini" in done.stderr
    assert "mini suite: wall time 0:00:" in done.stderr and "no install), exit status 2" in done.stderr


def test_mini_suite_refuses_an_unknown_precision_before_any_run():
    done = _bash("bash scripts/mini_suite.sh", PYTHON=sys.executable, INSTALL="0", PRECISION="bf16")
    assert done.returncode == 2
    assert "mini suite: PRECISION=bf16: use auto, fp32 or amp" in done.stderr
    assert "trial" not in done.stderr


def _suite_lines(weights_left: int) -> subprocess.CompletedProcess:
    """suite_lines of scripts/mini_suite.sh on a fake run of 2 trials of calibrated weight 10, 100 s into a suite
    of 4 trials whose other 2 weigh ``weights_left`` seconds together."""
    fake_run = ('{ echo banner; echo "trial 1 of 2: converged after 5 epochs"; echo "  trial 2, epoch 1"; '
                'echo "trial 2 of 2: converged after 5 epochs"; } >&2; echo TABLE; exit 130')
    script = ("set -o pipefail\n"  # as mini_suite.sh runs: the run's status, not the filter's
              "hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }\n"
              "eval \"$(sed -n '/^suite_lines() {/,/^}/p' scripts/mini_suite.sh)\"\n"
              f"COUNT=$(mktemp); echo 0 0 > $COUNT; TOTAL=4; TOTAL_W={20 + weights_left}; "
              "SUITE_START=$(( $(date +%s) - 100 ))\n"
              f"rc=0; {{ ( {fake_run} ) 2>&1 1>&3 | suite_lines 10; }} 3>&1 || rc=$?; rm -f $COUNT; echo rc=$rc\n")
    return _bash(script)


def test_mini_suite_prints_the_suite_line_after_each_trial():
    """suite_lines (scripts/mini_suite.sh) passes a run's stderr on and counts its 'trial k of N:' lines."""
    done = _suite_lines(weights_left=20)
    assert done.stdout.split() == ["TABLE", "rc=130"]  # the run's stdout untouched, its exit status kept
    lines = done.stderr.splitlines()
    assert lines[:2] == ["banner", "trial 1 of 2: converged after 5 epochs"]
    assert lines[2].startswith("mini suite: 1 of 4 trials done, 0:01:4") and "ETA 0:05:" in lines[2]
    assert lines[5].startswith("mini suite: 2 of 4 trials done") and len(lines) == 6


def test_the_suites_eta_weighs_the_trials_left_by_their_calibrated_time():
    """After 1 trial of weight 10 in 100 s, 3 left weighing 10 + 2 x 80: 100 s x 170 / 10 = 28:20, not the
    5:00 that counting trials would say."""
    lines = _suite_lines(weights_left=160).stderr.splitlines()
    assert lines[2].startswith("mini suite: 1 of 4 trials done, 0:01:4") and "ETA 0:28:" in lines[2], lines[2]
    assert "ETA 0:13:" in lines[5], lines[5]   # 2 done (weight 20), 160 left: 100 s x 8


def test_mini_suite_names_each_minis_run_time_at_the_end():
    """mini_done and finish (scripts/mini_suite.sh): the last lines give each mini's run time, then the suite's."""
    script = ("hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }\n"
              "eval \"$(sed -n '/^mini_done() {/,/^}/p;/^finish() {/,/^}/p' scripts/mini_suite.sh)\"\n"
              "PER_MINI=''; COUNT=''; JOB_START=$(( $(date +%s) - 700 )); INSTALL=0\n"
              "mini_done resnet-mini $(( $(date +%s) - 539 )); mini_done lstm-mini $(( $(date +%s) - 61 ))\n"
              "trap finish EXIT; exit 3\n")
    done = _bash(script)
    assert done.returncode == 3
    lines = done.stderr.splitlines()
    assert re.fullmatch(r"mini suite: each mini's trainmark run \(h:mm:ss\): resnet-mini 0:0(8:59|9:00), "
                        r"lstm-mini 0:01:0[12]", lines[0]), lines[0]   # a second may tick between the date calls
    assert lines[1].startswith("mini suite: wall time 0:11:4") and lines[1].endswith("no install), exit status 3")


def test_the_suite_runs_each_mini_with_its_settings_and_ends_with_the_checks_verdict(tmp_path):
    """mini_suite.sh end to end with trainmark's run, data, report and check faked (a Python wrapper that answers
    them and hands everything else to the real interpreter): the rules' trials counted over two minis, each run's
    settings passed on, each mini's run time and the wall time printed, the check's exit status the job's."""
    calls = tmp_path / "calls"
    fake = tmp_path / "python"
    fake.write_text(f"""#!/usr/bin/env bash
case " $* " in
  *" -m trainmark run "*) echo "$*" >> {calls}
    for k in 1 2 3 4 5; do echo "trial $k of 5: converged after 3 epochs" >&2; done; exit 0 ;;
  *" -m trainmark data "*|*" -m trainmark report "*) exit 0 ;;
  *" -m trainmark check "*) echo "$*" >> {calls}; echo "FAIL: 1 error(s)"; exit 1 ;;
esac
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    done = _bash("bash scripts/mini_suite.sh", PYTHON=str(fake), INSTALL="0", BENCHMARKS="lstm-mini resnet-mini",
                 OUT=str(tmp_path / "out"), SEED="7", SYSTEM_NAME="box", PRECISION="fp32")
    assert done.returncode == 1, done.stderr          # the check's verdict, though every run succeeded
    runs = calls.read_text().splitlines()
    assert [line.split(" run ")[1].split()[0] for line in runs[:2]] == ["lstm-mini", "resnet-mini"]
    for line in runs[:2]:
        assert "--precision fp32" in line and "--seed 7" in line and "--system-name box" in line, line
    assert " check " in runs[2] and str(tmp_path / "out" / "submission") in runs[2]
    suite = [line for line in done.stderr.splitlines() if line.startswith("mini suite: ")]
    rules = {name: load_ruleset()[name].convergence["spread"]["train_time_s"] for name in ("lstm-mini", "resnet-mini")}
    seconds = sum(5 * round(sum(t) / 2) for t in rules.values())   # 5 trials each at the middle of the range
    expected_min = (seconds + 30) // 60
    assert suite[1].startswith(f"mini suite: about {expected_min} min of training as the rules calibrated"), suite[1]
    assert sum(" trials done, " in line for line in suite) == 10
    assert any(line.startswith("mini suite: 10 of 10 trials done") for line in suite)
    assert any(re.fullmatch(r"mini suite: each mini's trainmark run \(h:mm:ss\): lstm-mini 0:00:0\d, "
                            r"resnet-mini 0:00:0\d", line) for line in suite), suite
    assert suite[-1].startswith("mini suite: wall time 0:00:") and suite[-1].endswith("exit status 1")


def _fake_df(folder: Path, free_kib: str) -> Path:
    """A df that answers as `df -Pk` would for a file system with FREE_KIB KiB available."""
    df = folder / "df"
    df.write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                  f"echo '/dev/vda 263174212 99000000 {free_kib} 94% /'\n")
    df.chmod(0o755)
    return folder


def test_a_full_disk_stops_the_install_before_pip_naming_the_folder_and_the_room(tmp_path):
    """CI's pip once died of "[Errno 28] No space left on device" half way through a new environment: the install
    now measures first and says where, how much is free and how much it needs."""
    path = f"{_fake_df(tmp_path, str(6 * 1024 * 1024))}:{os.environ['PATH']}"  # 6 GiB free
    done = _bash('source scripts/env.sh; require_room /some/venv 10 "pip install -e .[test]"; echo went on',
                 PATH=path)
    assert done.returncode == 1 and "went on" not in done.stdout
    assert ("pip install -e .[test] needs about 10 GiB free in /some/venv; its file system has 6144 MiB free"
            in done.stderr)
    enough = _bash('source scripts/env.sh; require_room /some/venv 5 "pip"; echo went on', PATH=path)
    assert enough.returncode == 0 and enough.stdout.strip() == "went on" and enough.stderr == ""


def test_a_df_that_cannot_answer_does_not_stop_the_install(tmp_path):
    path = f"{_fake_df(tmp_path, '-')}:{os.environ['PATH']}"
    done = _bash('source scripts/env.sh; require_room /some/venv 10 "pip"; echo went on', PATH=path)
    assert done.returncode == 0 and done.stdout.strip() == "went on"
    assert "cannot read the free space of /some/venv with df; going on without the check" in done.stderr


def test_the_install_stops_before_pip_when_a_new_environment_would_not_fit(tmp_path):
    """install.sh end to end with stand-ins: a Python without torch (a new environment), dpkg saying every package
    is there, df saying 6 GiB free: it stops before pip runs; with 20 GiB free pip runs."""
    marker = tmp_path / "pip-ran"
    python = tmp_path / "python"
    python.write_text(f"""#!/bin/sh
case "$*" in
  *"pip install"*) echo ran > {marker}; exit 0;;
  *"print(sys.prefix)"*) echo {tmp_path}/prefix; exit 0;;
  *"import torch"*|*"import trainmark"*) exit 1;;
  *) exit 0;;
esac
""")
    python.chmod(0o755)
    (tmp_path / "dpkg").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "dpkg").chmod(0o755)
    for free_gib, stops in ((6, True), (20, False)):
        bin_dir = _fake_df(tmp_path, str(free_gib * 1024 * 1024))
        done = _bash("bash scripts/install.sh", PYTHON=str(python), PATH=f"{bin_dir}:{os.environ['PATH']}")
        assert (done.returncode == 1) == stops, done.stderr
        assert marker.exists() != stops
        assert (f"needs about 10 GiB free in {tmp_path}/prefix; its file system has {free_gib * 1024} MiB free"
                in done.stderr) == stops
    # torch there, TensorFlow not: about 3 GiB asked, so 2 GiB stops it, and the test extras alone (no TensorFlow) go on
    marker.unlink()
    python.write_text(python.read_text().replace('*"import torch"*|', '*"import tensorflow"*|'))
    bin_dir = _fake_df(tmp_path, str(2 * 1024 * 1024))
    done = _bash("bash scripts/install.sh", PYTHON=str(python), PATH=f"{bin_dir}:{os.environ['PATH']}")
    assert done.returncode == 1 and "needs about 3 GiB free" in done.stderr and not marker.exists()
    done = _bash("bash scripts/install.sh", PYTHON=str(python), PATH=f"{bin_dir}:{os.environ['PATH']}", EXTRAS="test")
    assert done.returncode == 0 and marker.exists(), done.stderr
