"""Archives: `trainmark package` writes one, `trainmark check ARCHIVE` unpacks it safely or refuses it."""
from __future__ import annotations

import hashlib
import io
import os
import signal
import tarfile
import tempfile
from pathlib import Path

import pytest
import synthetic

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.pack import write_archive
from trainmark.checker.read import archive
from trainmark.checker.read.archive import ArchiveLimits
from trainmark.checker.verdict.findings import Findings
from trainmark.cli import main
from trainmark.interrupts import signals_interrupt

TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Temporary folders of the code under test go here, so a test can see they were removed."""
    where = tmp_path / "tmpdir"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def build_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = b"x", linkname: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o644
    return info, (data if kind == tarfile.REGTYPE else None)


def test_package_then_check_the_archive(clean_submission, tmp_path, private_tmp, capsys):
    out = tmp_path / "acme.tar.gz"
    # the synthetic model is not the shipped resnet-mini's: its check fails without TINY's reference builder
    assert main(["package", str(clean_submission), "-o", str(out), "--allow-failing"]) == 0
    assert "fails its check" in capsys.readouterr().err
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert (tmp_path / "SHA256SUMS").read_text() == f"{digest}  acme.tar.gz\n"
    with tarfile.open(out) as tar:
        names = tar.getnames()
        assert all(m.uid == 0 and m.uname == "" and (m.isfile() or m.isdir()) for m in tar.getmembers())
    assert "closed/acme/results/sys1/resnet-mini/epochs.log" in names
    report = check_path(out, TINY)
    assert [f.rule for f in report.findings] == [] and report.exit_code == 0
    assert report.benchmarks[0].benchmark == "resnet-mini" and report.path == str(out.resolve())
    assert any("unpacked into a temporary folder" in n for n in report.notes)
    assert list(private_tmp.iterdir()) == []  # the temporary folder is gone
    # the same archive again: byte-identical (sorted members, no owner, gzip time 0)
    again = tmp_path / "again.tar.gz"
    write_archive(clean_submission, again)
    assert again.read_bytes() == out.read_bytes()
    assert len((tmp_path / "SHA256SUMS").read_text().splitlines()) == 2


def test_package_of_a_submitter_folder_keeps_the_division(clean_submission, tmp_path):
    out, _, _ = write_archive(clean_submission / "closed" / "acme", tmp_path / "s.tar.gz")
    with tarfile.open(out) as tar:
        assert all(n.startswith("closed/acme") for n in tar.getnames())


def test_package_refuses_links(clean_submission, tmp_path):
    import shutil

    sub = tmp_path / "sub"
    shutil.copytree(clean_submission, sub)
    (sub / "closed" / "acme" / "link").symlink_to("/etc/passwd")
    assert main(["package", str(sub), "-o", str(tmp_path / "x.tar.gz")]) == 1  # its check fails first
    assert main(["package", str(sub), "-o", str(tmp_path / "x.tar.gz"), "--allow-failing"]) == 2
    assert not (tmp_path / "x.tar.gz").exists() and not list(tmp_path.glob(".x.tar.gz*"))


HOSTILE = {
    "traversal": ([member("closed/../../evil.txt")], "ARCHIVE-002"),
    "absolute": ([member("/tmp/evil-b12.txt")], "ARCHIVE-002"),
    "symlink out": ([member("closed/acme/x", tarfile.SYMTYPE, linkname="/etc/passwd")], "ARCHIVE-003"),
    "hard link out": ([member("closed/acme/x", tarfile.LNKTYPE, linkname="../../etc/passwd")], "ARCHIVE-003"),
    "char device": ([member("closed/acme/null", tarfile.CHRTYPE)], "ARCHIVE-004"),
    "block device": ([member("closed/acme/sda", tarfile.BLKTYPE)], "ARCHIVE-004"),
    "fifo": ([member("closed/acme/pipe", tarfile.FIFOTYPE)], "ARCHIVE-004"),
    "duplicate": ([member("closed/a.txt"), member("closed/a.txt", data=b"y")], "ARCHIVE-007"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_nothing_is_written(case, tmp_path, private_tmp):
    members, rule = HOSTILE[case]
    (tmp_path / "in").mkdir()
    path = build_tar(tmp_path / "in" / "bad.tar.gz", [member("closed/ok.txt"), *members])
    report = check_path(path, TINY)
    assert rule in [f.rule for f in report.findings] and report.exit_code == 1
    assert report.benchmarks == [] and any("nothing was unpacked" in n for n in report.notes)
    assert list(private_tmp.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil-b12.txt").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["in", "bad.tar.gz", "tmpdir"])


def test_ten_gigabyte_member_is_refused_without_reading_it(tmp_path, private_tmp):
    info = tarfile.TarInfo("closed/acme/huge.bin")
    info.size = 10 * 10 ** 9
    raw = info.tobuf(tarfile.PAX_FORMAT)  # the header alone: its data is never read
    path = tmp_path / "huge.tar"
    path.write_bytes(raw)
    report = check_path(path, TINY)
    (finding,) = report.findings
    assert finding.rule == "ARCHIVE-005" and "10000000000 bytes" in finding.message
    assert list(private_tmp.iterdir()) == []


def test_huge_pax_header_is_refused_before_it_is_read(tmp_path):
    info = tarfile.TarInfo("././@PaxHeader")
    info.type = tarfile.XHDTYPE
    info.size = 3 * 2 ** 30  # tarfile would read (allocate) the whole header at once
    path = tmp_path / "pax.tar"
    path.write_bytes(info.tobuf(tarfile.USTAR_FORMAT))
    findings = Findings()
    assert not archive.unpack(path, tmp_path / "dest", findings)
    (finding,) = findings
    assert finding.rule == "ARCHIVE-005" and "3221225472" in finding.message


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_every_compression_unpacks(tmp_path, mode):
    path = build_tar(tmp_path / "a.tar", [member("closed/a.txt", data=b"hello")], mode)
    (tmp_path / "dest").mkdir()
    findings = Findings()
    assert archive.unpack(path, tmp_path / "dest", findings) and len(findings) == 0
    assert (tmp_path / "dest" / "closed" / "a.txt").read_bytes() == b"hello"


def test_member_count_and_total_size_limits(tmp_path):
    path = build_tar(tmp_path / "many.tar", [member(f"closed/f{i}.txt", data=b"12345") for i in range(11)], "w")
    findings = Findings()
    assert not archive.unpack(path, tmp_path / "dest1", findings, ArchiveLimits(max_members=10))
    assert [f.rule for f in findings] == ["ARCHIVE-006"]
    findings = Findings()
    assert not archive.unpack(path, tmp_path / "dest2", findings, ArchiveLimits(max_total_bytes=50))
    assert [f.rule for f in findings] == ["ARCHIVE-006"]
    assert not (tmp_path / "dest1").exists() and not (tmp_path / "dest2").exists()
    findings = Findings()
    (tmp_path / "dest3").mkdir()
    assert archive.unpack(path, tmp_path / "dest3", findings, ArchiveLimits(max_members=11, max_total_bytes=55))
    assert len(list((tmp_path / "dest3" / "closed").iterdir())) == 11


def test_not_an_archive_and_a_truncated_one(tmp_path, private_tmp):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x1f\x8b" + os.urandom(200))
    assert [f.rule for f in check_path(junk, TINY).findings] == ["ARCHIVE-001"]
    good = build_tar(tmp_path / "good.tar.gz", [member("closed/a.txt", data=os.urandom(100_000))])
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[:2000])
    assert [f.rule for f in check_path(cut, TINY).findings] == ["ARCHIVE-001"]
    assert list(private_tmp.iterdir()) == []


def test_sigterm_while_checking_removes_the_temporary_folder(tmp_path):
    made = []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with signals_interrupt(), tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
            made.append(Path(tmp))
            (Path(tmp) / "f").write_text("x")
            os.kill(os.getpid(), signal.SIGTERM)
    assert made and not made[0].exists()
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back


def test_cli_exit_status_and_json_for_a_refused_archive(tmp_path, capsys):
    import json

    import jsonschema

    from trainmark.checker.verdict.result import REPORT_SCHEMA

    path = build_tar(tmp_path / "bad.tar.gz", [member("../evil.txt")])
    assert main(["check", str(path)]) == 1
    assert "ARCHIVE-002" in capsys.readouterr().out
    assert main(["check", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["level"] == "archive" and [f["rule"] for f in report["findings"]] == ["ARCHIVE-002"]
    assert report["notes"][0].endswith("refused; nothing was unpacked")  # no MLPerf ruleset: none was needed
