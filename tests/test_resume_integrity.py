"""--resume cannot mix settings, repairs a torn log line; a crashed trial fails the run (issue 16)."""
import json

import pytest
from conftest import TEST_RULES, TinyTest
from test_trial_loop import bench_dir, run_tiny

from trainmark.checker.check import CheckOptions, check_path
from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.format import epochlog


def interrupted_run(tmp_path):
    """Trial 1 finished, trial 2 interrupted in its second epoch."""
    TinyTest.metric_override = staticmethod(lambda: 0.5)
    TinyTest.interrupt_at = (101, 2)
    with pytest.raises(KeyboardInterrupt):
        run_tiny(tmp_path, trials=3)
    TinyTest.interrupt_at = TinyTest.metric_override = None


@pytest.mark.parametrize("change,named", [
    (dict(batch_size=16), "global_batch_size 32 -> 16"),
    (dict(hparams={"opt_base_learning_rate": 0.4}), "opt_base_learning_rate 0.5 -> 0.4"),
    (dict(precision="amp"), "precision 'fp32' -> 'amp'"),
])
def test_resume_refuses_other_settings(tmp_path, change, named):
    interrupted_run(tmp_path)
    with pytest.raises(UserError, match="--resume with other settings") as err:
        run_tiny(tmp_path, trials=3, resume=True, seed=None, **change)
    assert named in str(err.value)
    assert not (bench_dir(tmp_path) / "trial_3").exists()  # nothing was trained


def test_resume_with_the_same_settings_goes_on(tmp_path):
    interrupted_run(tmp_path)
    summary = run_tiny(tmp_path, trials=3, resume=True, seed=None)
    assert summary.first_trial == 2 and len(summary.results) == 2


def test_resume_cuts_a_torn_last_line(tmp_path, capsys):
    interrupted_run(tmp_path)
    log = bench_dir(tmp_path) / "epochs.log"
    with open(log, "ab") as f:
        f.write("[2026:12:01 10:00:00] \u2013 [2] \u2013 [".encode())   # SIGKILL mid-write
    run_tiny(tmp_path, trials=3, resume=True, seed=None)
    assert "removed an incomplete last line" in capsys.readouterr().err
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [epochlog.parse_line(x).trial for x in lines] == sorted(epochlog.parse_line(x).trial for x in lines)
    report = check_path(tmp_path / "out", CheckOptions(rules_root=TEST_RULES))
    assert not {f.rule for f in report.findings} & {"EPOCHLOG-001", "AGREE-001"}


def test_resume_over_a_trial_json_with_a_bad_seed_is_one_line(tmp_path):
    interrupted_run(tmp_path)
    path = bench_dir(tmp_path) / "trial_1" / "trial.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "seed": "abc"}))
    with pytest.raises(UserError, match="seed 'abc' is not an integer"):
        run_tiny(tmp_path, trials=3, resume=True, seed=None)


def test_a_crashed_trial_fails_the_run_even_with_an_allowed_miss(tmp_path, capsys, monkeypatch):
    """--trials 1 with max_not_converged 1 used to exit 0 on a crash."""
    (tmp_path / "broken.py").write_text("def build():\n    raise RuntimeError('model code is broken')\n")
    monkeypatch.chdir(tmp_path)
    code = main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(tmp_path / "out"), "--trials", "1",
                 "--division", "open", "--model", "broken:build", "--quiet", "--submitter", "acme",
                 "--system-name", "box", "--seed", "5"])
    assert code == 1
    assert "trial 1 crashed" in capsys.readouterr().err and "model code is broken" in \
        json.loads((tmp_path / "out/open/acme/results/box/tiny-test/trial_1/trial.json").read_text())["error"]
