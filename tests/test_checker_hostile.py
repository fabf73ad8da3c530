"""Hostile folders: links out, pickles, special files, oversized and unreadable files become findings."""
from __future__ import annotations

import os
import pickle

import pytest
import synthetic
import torch

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.read import safefs
from trainmark.checker.read.safefs import SafeTree, UnsafeEntry
from trainmark.checker.read.safetensors_header import MAX_HEADER
from trainmark.rules import get_rules

RULES = get_rules("resnet-mini")
BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


@pytest.fixture
def root(submission_copy):
    return submission_copy  # conftest: a private copy of the clean synthetic submission


@pytest.fixture
def never_unpickle(monkeypatch):
    """Fail the test if anything tries to unpickle or torch.load."""
    def refuse(*args, **kwargs):
        raise AssertionError("the checker must never unpickle submission content")
    for target, name in ((pickle, "load"), (pickle, "loads"), (torch, "load")):
        monkeypatch.setattr(target, name, refuse)


def hit(report, rule, file):
    found = [f for f in report.findings if f.rule == rule and f.file == file]
    assert found, f"no {rule} at {file}: {[(f.rule, f.file) for f in report.findings]}"
    return found[0]


def test_hostile_001_symlink_out_of_the_folder(root, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x00" * 64)
    weights = root / BENCH / "trial_1" / "model.safetensors"
    weights.unlink()
    weights.symlink_to(secret)
    (root / "closed/acme/results/sys2").symlink_to("/")
    report = check_path(root, TINY)
    finding = hit(report, "HOSTILE-001", f"{BENCH}/trial_1/model.safetensors")
    assert "outside the checked folder" in finding.message and str(secret) in finding.message
    hit(report, "HOSTILE-001", "closed/acme/results/sys2")
    assert not any(f.file.startswith("closed/acme/results/sys2/") for f in report.findings)  # never entered


def test_hostile_001_link_inside_is_not_followed_either(root):
    log = root / BENCH / "epochs.log"
    log.rename(root / BENCH / "real.log")
    log.symlink_to("real.log")
    finding = hit(check_path(root, TINY), "HOSTILE-001", f"{BENCH}/epochs.log")
    assert "inside the checked folder" in finding.message


def test_hostile_002_oversized_log_is_not_read(root):
    log = root / BENCH / "result_2.txt"
    with open(log, "r+b") as f:
        f.truncate(safefs.LOG_CAP + 1)  # sparse: no disk used, size over the cap
    finding = hit(check_path(root, TINY), "HOSTILE-002", f"{BENCH}/result_2.txt")
    assert str(safefs.LOG_CAP + 1) in finding.seen


def test_hostile_002_oversized_json_and_safetensors_header(root):
    system = root / "closed/acme/systems/sys1.json"
    system.write_text(" " * (safefs.JSON_CAP + 1) + "{}")
    weights = root / BENCH / "trial_1" / "model.safetensors"
    weights.write_bytes((200_000_000).to_bytes(8, "little") + b"{}")
    report = check_path(root, TINY)
    hit(report, "HOSTILE-002", "closed/acme/systems/sys1.json")
    assert f"at most {MAX_HEADER}" in hit(report, "CONFORM-004", f"{BENCH}/trial_1/model.safetensors").message


def test_hostile_003_fifo_is_never_opened(root):
    log = root / BENCH / "epochs.log"
    log.unlink()
    os.mkfifo(log)  # opening it for reading would block the checker forever
    finding = hit(check_path(root, TINY), "HOSTILE-003", f"{BENCH}/epochs.log")
    assert "FIFO" in finding.message


@pytest.mark.parametrize("payload", ["pickle", "torch.save"])
def test_hostile_004_pickle_in_place_of_safetensors(root, tmp_path, payload, never_unpickle):
    path = root / BENCH / "trial_2" / "model.safetensors"
    state = synthetic.tiny_reference_model().state_dict()
    if payload == "pickle":
        path.write_bytes(pickle.dumps({k: v.numpy() for k, v in state.items()}, protocol=4))
    else:
        torch.save(state, str(path))
    report = check_path(root, TINY)
    finding = hit(report, "HOSTILE-004", f"{BENCH}/trial_2/model.safetensors")
    assert "never" in finding.fix and report.exit_code == 1


def test_hostile_005_code_files_are_reported_not_loaded(root, never_unpickle):
    (root / BENCH / "trial_1" / "optimizer.pt").write_bytes(pickle.dumps({"a": 1}))
    (root / BENCH / "helper.py").write_text("raise SystemExit('executed!')\n")
    report = check_path(root, TINY)
    hit(report, "HOSTILE-005", f"{BENCH}/trial_1/optimizer.pt")
    hit(report, "HOSTILE-005", f"{BENCH}/helper.py")
    assert report.exit_code == 0  # warnings only


def test_hostile_006_too_many_entries(root, monkeypatch):
    monkeypatch.setattr(safefs, "MAX_ENTRIES", 12)  # the benchmark folder has 11 entries
    for i in range(10):
        (root / BENCH / "trial_1" / f"junk{i}").write_text("x")
    hit(check_path(root, TINY), "HOSTILE-006", f"{BENCH}/trial_1")


def test_hostile_007_unreadable_file(root, monkeypatch):
    real_open = os.open

    def deny(path, flags, *args, **kwargs):
        if path == "structure.json":
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(safefs.os, "open", deny)
    hit(check_path(root, TINY), "HOSTILE-007", f"{BENCH}/trial_4/structure.json")


@pytest.mark.parametrize("junk", [os.urandom(4096), b"\x00" * 100, "\u2013".encode("utf-16"), b"\n" * 1000])
def test_binary_junk_in_every_file_is_findings_only(root, junk, never_unpickle):
    for path in [root / BENCH / "epochs.log", *(root / BENCH).glob("result_*.txt"),
                 *(root / BENCH).glob("trial_*/*"), root / "closed/acme/systems/sys1.json"]:
        path.write_bytes(junk)
    report = check_path(root, TINY)
    assert report.exit_code == 1
    assert report.benchmarks[0].score["score_train_time_s"] is None


def test_huge_single_line(root):
    (root / BENCH / "result_1.txt").write_bytes(b":::MLLOG " + b"x" * (2 << 20))
    (root / BENCH / "epochs.log").write_bytes(b"[" * (1 << 20) + b"\n")
    report = check_path(root, TINY)
    hit(report, "MLLOG-010", f"{BENCH}/result_1.txt")  # too long for any key: never parsed, never fed to the engine
    hit(report, "EPOCHLOG-001", f"{BENCH}/epochs.log")


def test_safe_tree_refuses_dot_dot(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(UnsafeEntry):
        SafeTree(tmp_path / "a").read_bytes("../outside.txt", 10)
