"""`trainmark data verify` and the harness's refusal of a closed run on data that differs from the rules."""
import hashlib

import pytest
import yaml
from conftest import TEST_RULES

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.harness.run import RunOptions, run_benchmark


@pytest.fixture
def pinned(rules_copy, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"reference bytes")
    path = rules_copy / "1.2" / "tiny-test.yaml"
    rule = yaml.safe_load(path.read_text())
    rule["dataset"]["files"] = {"a.bin": hashlib.sha256(b"reference bytes").hexdigest()}
    rule["dataset"]["default_dir"] = str(data)
    path.write_text(yaml.safe_dump(rule))
    return rules_copy, data


def test_verify_passes_then_names_the_changed_file(pinned, capsys):
    rules_dir, data = pinned
    assert main(["data", "verify", "tiny-test", "--rules-dir", str(rules_dir)]) == 0
    (data / "a.bin").write_bytes(b"tampered")
    assert main(["data", "verify", "tiny-test", "--rules-dir", str(rules_dir)]) == 1
    assert "a.bin: sha256" in capsys.readouterr().err
    (data / "a.bin").unlink()
    assert main(["data", "verify", "tiny-test", "--rules-dir", str(rules_dir)]) == 1
    assert "a.bin: missing" in capsys.readouterr().err


def test_closed_run_refuses_mismatching_data_open_run_accepts(pinned, tmp_path):
    rules_dir, data = pinned
    (data / "a.bin").write_bytes(b"tampered")
    opts = dict(benchmark="tiny-test", out=tmp_path / "out", rules_dir=rules_dir, quiet=True, trials=1)
    with pytest.raises(UserError, match="does not match rules 1.2"):
        run_benchmark(RunOptions(**opts))
    assert run_benchmark(RunOptions(**opts, division="open")).results[0].status == "converged"


def test_cli_errors_are_one_line_with_nonzero_exit(tmp_path, capsys):
    assert main(["run", "no-such-benchmark", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no rules for benchmark 'no-such-benchmark'" in err[0]
    assert main(["run", "resnet-mini", "--device", "cuda:7", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device cuda:7: no cuda device here (found only the cpu)" in err[0]
    assert main(["run", "resnet-mini", "--data-dir", str(tmp_path / "nowhere"), "--division", "open",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "dataset-fashion-mnist" in err
    (tmp_path / "bad").mkdir()
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (tmp_path / "bad" / f).write_bytes(b"\x00\x00\x08\x03junk")
    assert main(["run", "resnet-mini", "--data-dir", str(tmp_path / "bad"), "--division", "open",
                 "--out", str(tmp_path / "o")]) == 2
    assert "train-images-idx3-ubyte: truncated IDX header" in capsys.readouterr().err


def test_unwritable_output_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["run", "tiny-test", "--rules-dir", str(TEST_RULES), "--out", str(blocker), "--quiet"]) == 2
    assert "cannot write results there" in capsys.readouterr().err
