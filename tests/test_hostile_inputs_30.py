"""Issue 30, "hostile input still open": each input the issue reproduced, answered fast and in one line.

A 64 MiB epochs.log of one-character lines, a folder named with byte 0xFF, names that are HTML,
an archive member that expands past a ratio, FIFOs and sparse files in a dataset folder.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import signal
import tarfile
from pathlib import Path

import pytest
import synthetic
import yaml

from trainmark.checker.check import CheckOptions, check_path
from trainmark.checker.checks import epochs
from trainmark.checker.read import archive
from trainmark.checker.verdict.findings import Findings
from trainmark.cli import main
from trainmark.format import epochlog
from trainmark.reference import registry
from trainmark.rules import get_rules

BENCH = "closed/acme/results/sys1/resnet-mini"
TINY = CheckOptions(reference_builder=lambda rules: synthetic.tiny_reference_model())
TEST_RULES = Path(__file__).parent / "rules"
HTML_NAME = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def root(submission_copy):
    return submission_copy  # conftest: a private copy of the clean synthetic submission


# -- 1. epochs.log: bounded lines, bounded malformed lines, linear time -------------------------------
def test_epochs_log_of_64_mib_one_character_lines_is_checked_in_bounded_work(root, monkeypatch):
    """Bounded by a count, not by seconds: of 32 Mi lines only MAX_MALFORMED are parsed (the time it takes is
    benchmarks/hostile_epochs_log.py's: 138 s before the bound)."""
    calls = []
    real = epochlog.parse_line
    monkeypatch.setattr(epochlog, "parse_line", lambda text: calls.append(text) or real(text))
    log = root / BENCH / "epochs.log"
    log.write_bytes(b"a\n" * (32 << 20))  # 64 MiB, the checker's cap for logs
    report = check_path(root, TINY)
    assert report.exit_code == 1
    (stop,) = [f for f in report.findings if f.rule == "EPOCHLOG-007"]
    assert stop.file == f"{BENCH}/epochs.log" and stop.line == epochs.MAX_MALFORMED + 1
    assert f"{(32 << 20) - epochs.MAX_MALFORMED} more line(s) not read" in stop.message
    assert len(calls) == epochs.MAX_MALFORMED


def test_epochs_log_parses_no_line_after_the_bounded_number_of_malformed_ones(monkeypatch):
    calls = []
    real = epochlog.parse_line
    monkeypatch.setattr(epochlog, "parse_line", lambda text: calls.append(text) or real(text))
    findings = Findings()
    assert epochs.check_epochs_log(b"x\n" * 100_000, "b/epochs.log", None, findings) == []
    assert len(calls) == epochs.MAX_MALFORMED
    (stop,) = [f for f in findings if f.rule == "EPOCHLOG-007"]
    assert f"{100_000 - epochs.MAX_MALFORMED} more line(s) not read" in stop.message


def test_epochs_log_reads_at_most_max_lines(monkeypatch):
    monkeypatch.setattr(epochs, "MAX_LINES", 50)
    lines = [epochlog.format_line(1_790_000_000 + 60 * e, 1, e, 0.5) for e in range(1, 61)]
    findings = Findings()
    parsed = epochs.check_epochs_log("".join(f"{ln}\n" for ln in lines).encode(), "b/epochs.log", None, findings)
    assert len(parsed) == 50 and parsed[-1].entry.epoch == 50
    (stop,) = [f for f in findings if f.rule == "EPOCHLOG-007"]
    assert "10 more line(s) not read" in stop.message and stop.line == 51


def test_truncated_epochs_log_still_names_its_last_line():
    findings = Findings()
    line = epochlog.format_line(1_790_000_000, 1, 1, 0.5)
    parsed = epochs.check_epochs_log(f"{line}\n{line[:20]}".encode(), "b/epochs.log", None, findings)
    assert len(parsed) == 1
    truncated = [f for f in findings if f.rule == "EPOCHLOG-006"]
    assert truncated and truncated[0].line == 2 and truncated[0].seen == repr(line[:20].encode())


# -- 2. a folder named with byte 0xFF: the report and the table are written, the byte shown escaped -----------
def tiny_submission(root: Path, system: bytes) -> Path:
    """A clean tiny-test submission whose system folder (results and description) is named ``system``."""
    rules = get_rules("tiny-test", rules_root=TEST_RULES)
    sub = synthetic.write_submission(root, rules, registry.for_rules(rules).build_model())
    results, systems = os.fsencode(sub / "results"), os.fsencode(sub / "systems")
    os.rename(os.path.join(results, b"sys1"), os.path.join(results, system))
    os.rename(os.path.join(systems, b"sys1.json"), os.path.join(systems, system + b".json"))
    return root


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_of_a_folder_named_with_byte_0xff_is_written(tmp_path, fmt, capsys):
    root = tiny_submission(tmp_path / "s", b"sys\xff")
    out = tmp_path / f"r.{fmt}"
    assert main(["report", str(root), "--format", fmt, "-o", str(out), "--rules-dir", str(TEST_RULES)]) == 0
    text = out.read_bytes().decode("utf-8")  # strict: was UnicodeEncodeError while writing, nothing written
    assert ("sys\\udcff" if fmt == "html" else "sys\\\\udcff") in text  # Markdown escapes the backslash too
    assert "Traceback" not in capsys.readouterr().err


def test_table_of_a_folder_named_with_byte_0xff_is_written(tmp_path):
    root = tiny_submission(tmp_path / "s", b"sys\xff")
    for fmt in ("md", "csv", "json"):
        out = tmp_path / f"t.{fmt}"
        assert main(["table", str(root), "--format", fmt, "-o", str(out), "--rules-dir", str(TEST_RULES)]) == 0
        assert "udcff" in out.read_bytes().decode("utf-8")


def test_renderers_alone_never_emit_a_lone_surrogate(tmp_path):
    from trainmark.cli.checked import collect
    from trainmark.report.markdown import render_markdown
    from trainmark.report.page import render_html

    data = collect(tiny_submission(tmp_path / "s", b"sys\xff"), CheckOptions(rules_root=TEST_RULES))
    for text in (render_html(data), render_markdown(data)):
        text.encode("utf-8")  # strict: every field is escaped where it is rendered, not only by the net under it


# -- 3. names that are HTML or Markdown are shown as text ---------------------------------------------
def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_table_and_report_markdown_show_html_names_as_text(tmp_path, capsys):
    root = tiny_submission(tmp_path / "s", HTML_NAME.encode())
    assert main(["table", str(root), "--format", "md", "--rules-dir", str(TEST_RULES)]) == 0
    table = capsys.readouterr().out
    assert main(["report", str(root), "--format", "md", "--rules-dir", str(TEST_RULES)]) == 0
    report = capsys.readouterr().out
    for text in (table, report):
        assert "<img" not in text and "<" not in text.replace("&lt;", "")
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in text


def test_markdown_cells_escape_what_markdown_would_render():
    from trainmark.format.text import markdown_text
    from trainmark.report.markdown import cell, table

    assert cell is markdown_text  # one escaping for report, table and compare
    name = "a|b *bold* _em_ [link](http://x) `code` ~del~ $x$ \\ <b>&amp;"
    shown = markdown_text(name)
    assert shown == ("a\\|b \\*bold\\* \\_em\\_ \\[link\\](http://x) \\`code\\` \\~del\\~ \\$x\\$ \\\\ "
                     "&lt;b&gt;&amp;amp;")
    assert markdown_text("line\nbreak\x1b[2J") == "line\\\\nbreak\\\\x1b\\[2J"
    rows = table(["system", "score"], [[name, "1.0"]]).splitlines()
    assert {unescaped_pipes(line) for line in rows} == {3}  # the name stays one cell


def test_html_report_escapes_every_name(tmp_path):
    from trainmark.cli.checked import collect
    from trainmark.report.page import render_html

    root = tiny_submission(tmp_path / "s", HTML_NAME.encode())
    html = render_html(collect(root, CheckOptions(rules_root=TEST_RULES)))
    assert "<img" not in html and "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html


# -- 4. an archive member (or the archive) expanding past 100:1 is refused, nothing written --------------
def zeros_tar(path: Path, sizes: dict[str, int], mode: str = "w:gz") -> Path:
    """``path``: a small text member, then one member of zeros per entry of ``sizes``."""
    with tarfile.open(path, mode) as tar:
        for name, size in {"closed/ok.txt": 0, **sizes}.items():
            info = tarfile.TarInfo(name)
            data = bytes(size) if size else b"hello\n"
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz"])
def test_a_member_expanding_past_the_ratio_is_refused_before_anything_is_written(tmp_path, mode):
    path = zeros_tar(tmp_path / f"bomb.tar.{mode[2:]}", {"closed/acme/zeros.bin": 64 << 20}, mode)
    assert path.stat().st_size < (64 << 20) // 100
    (tmp_path / "dest").mkdir()
    findings = Findings()
    assert not archive.unpack(path, tmp_path / "dest", findings)
    (finding,) = findings
    assert finding.rule == "ARCHIVE-008" and f"{path.name}: closed/acme/zeros.bin: {64 << 20} bytes" in finding.message
    assert "at most 100:1" in finding.message
    assert list((tmp_path / "dest").iterdir()) == []  # was: all 64 MiB extracted


def test_an_archive_of_many_small_bombs_is_refused_by_its_total_ratio(tmp_path):
    sizes = {f"closed/acme/z{i}.bin": 4 << 20 for i in range(20)}  # each below what one member is judged at
    path = zeros_tar(tmp_path / "many.tar.gz", sizes)
    (tmp_path / "dest").mkdir()
    findings = Findings()
    assert not archive.unpack(path, tmp_path / "dest", findings)
    (finding,) = findings
    assert finding.rule == "ARCHIVE-008" and f"{20 * (4 << 20) + 6} bytes in all" in finding.message  # and hello
    assert list((tmp_path / "dest").iterdir()) == []


def test_an_archive_that_compresses_like_results_is_unpacked(tmp_path):
    text = b"".join(b":::MLLOG {\"key\": \"eval_accuracy\", \"value\": 0.%04d}\n" % i for i in range(300_000))
    path = tmp_path / "ok.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("closed/acme/result_1.txt")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    (tmp_path / "dest").mkdir()
    findings = Findings()
    assert archive.unpack(path, tmp_path / "dest", findings) and len(findings) == 0
    assert (tmp_path / "dest" / "closed/acme/result_1.txt").stat().st_size == len(text)


def test_check_of_a_bomb_is_one_finding_and_exit_1(tmp_path, capsys):
    path = zeros_tar(tmp_path / "bomb.tar.gz", {"closed/acme/zeros.bin": 64 << 20})
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr()
    assert "ARCHIVE-008" in out.out and "closed/acme/zeros.bin" in out.out and "Traceback" not in out.err


# -- 5. data prepare and verify: never open a FIFO, never hash a sparse file ------------------------------
@contextlib.contextmanager
def no_hang(seconds: int = 20):
    """A blocked open() ends in a failure here, never in a hung test run."""
    def stop(_signum, _frame):
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_prepare_refuses_a_fifo_source(tmp_path, capsys):
    os.mkfifo(tmp_path / "kjv.txt")
    with no_hang():  # was: blocked forever in read_text
        code = main(["data", "prepare", "lstm-mini", "--source", str(tmp_path / "kjv.txt"),
                     "--data-dir", str(tmp_path / "out")])
    assert code == 2
    line = one_error_line(capsys)
    assert f"--source {tmp_path / 'kjv.txt'}: not a regular file or folder (a FIFO)" in line
    assert not (tmp_path / "out").exists()


def test_prepare_refuses_a_fifo_inside_the_source_folder(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "web.osis").write_text("x")
    os.mkfifo(tmp_path / "src" / "kjv.osis")
    with no_hang():
        code = main(["data", "prepare", "transformer-mini", "--source", str(tmp_path / "src"),
                     "--data-dir", str(tmp_path / "out")])
    assert code == 2 and "src/kjv.osis: not a regular file or folder (a FIFO)" in one_error_line(capsys)


def test_prepare_refuses_a_fifo_where_it_would_write(tmp_path, capsys):
    (tmp_path / "kjv.txt").write_text("")
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / "kjv.train.txt")
    with no_hang():  # writing into a FIFO blocks until someone reads it
        code = main(["data", "prepare", "lstm-mini", "--source", str(tmp_path / "kjv.txt"),
                     "--data-dir", str(tmp_path / "out")])
    assert code == 2 and "--data-dir" in one_error_line(capsys)


@pytest.fixture
def pinned_data(rules_copy, tmp_path):
    """tiny-test's rules pinning a.bin by sha256 and two archives (one with its size, one by md5 alone)."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"reference bytes")
    path = rules_copy / "1.2" / "tiny-test.yaml"
    rule = yaml.safe_load(path.read_text())
    rule["dataset"]["files"] = {"a.bin": hashlib.sha256(b"reference bytes").hexdigest()}
    rule["dataset"]["archives"] = {"sized.tgz": {"bytes": 1000, "sha256": "0" * 64}, "plain.tar": {"md5": "0" * 32}}
    rule["dataset"]["default_dir"] = str(data)
    path.write_text(yaml.safe_dump(rule))
    return rules_copy, data


def sparse(path: Path, size: int) -> None:
    """``truncate -s SIZE PATH``: a file of ``size`` bytes with none of them on disk."""
    path.touch()
    os.truncate(path, size)


def verify(rules_dir: Path, *framework: str) -> int:
    return main(["data", "verify", "tiny-test", "--rules-dir", str(rules_dir), *framework])


def never_hashed(monkeypatch):
    """Hashing any file fails the test: a refused file is refused before it is read."""
    from trainmark.rules import datasets

    def refuse(path, *args, **kwargs):
        raise AssertionError(f"{path} was hashed")
    monkeypatch.setattr(datasets, "sha256_file", refuse)
    monkeypatch.setattr(datasets, "file_digests", refuse)


def test_verify_refuses_a_20_gb_sparse_file_without_hashing_it(pinned_data, capsys, monkeypatch):
    rules_dir, data = pinned_data
    sparse(data / "a.bin", 20 << 30)  # was: 174 s of hashing zeros (8.7 s per GiB on this machine)
    never_hashed(monkeypatch)
    assert verify(rules_dir) == 1
    line = one_error_line(capsys)
    assert f"a.bin: {20 << 30} bytes of which" in line and "sparse file" in line and "not hashed" in line


def test_verify_refuses_a_fifo_in_place_of_a_pinned_file(pinned_data, capsys):
    rules_dir, data = pinned_data
    (data / "a.bin").unlink()
    os.mkfifo(data / "a.bin")
    with no_hang():
        assert verify(rules_dir) == 1
    assert "a.bin: not a regular file (a FIFO); never opened" in one_error_line(capsys)


def test_a_file_pinned_by_sha256_alone_is_bounded_by_size(tmp_path):
    from trainmark.rules import datasets

    (tmp_path / "f").write_bytes(b"x" * 100)
    assert datasets.unhashable(tmp_path / "f", 99).endswith("no such file is larger than 99 bytes; not hashed")
    assert datasets.unhashable(tmp_path / "f", 100) is None
    assert datasets.PINNED_FILE_MAX_BYTES >= 64 << 20  # the largest pinned today: 26 MB


def test_tensorflow_verify_says_fifo_not_missing_and_compares_sizes_first(pinned_data, capsys, monkeypatch):
    rules_dir, data = pinned_data
    os.mkfifo(data / "plain.tar")
    sparse(data / "sized.tgz", 20 << 30)
    never_hashed(monkeypatch)
    with no_hang():
        assert verify(rules_dir, "--framework", "tensorflow") == 1
    line = one_error_line(capsys)
    assert "plain.tar: not a regular file (a FIFO); never opened" in line and "plain.tar: missing" not in line
    assert f"sized.tgz: {20 << 30} bytes, rules say 1000" in line
    (data / "plain.tar").unlink()
    sparse(data / "plain.tar", 20 << 30)  # pinned by md5 alone: its holes give it away
    assert verify(rules_dir, "--framework", "tensorflow") == 1
    assert "plain.tar: 21474836480 bytes of which" in one_error_line(capsys)
