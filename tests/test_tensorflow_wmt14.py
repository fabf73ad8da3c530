"""WMT14 under --framework tensorflow (issue 17): tfds's own wmt14_translate/de-en, built from statmt's archives
checked against the rules' SHA-256, gives the plain-text reference's pairs.

The fixture is statmt's four archives in miniature, with the member paths tfds reads (``training/europarl-v7
.de-en.de``, ``commoncrawl.de-en.en``, ``dev/newstest2014-deen-src.de.sgm``, ...), and the plain text a PyTorch
run reads, made from the same lines as its ``how_to_get`` says (the three corpora concatenated,
newstest2014 without its SGML).
"""
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml
from test_tensorflow import needs_tf

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import parallel_text
from trainmark.reference.transformer import TransformerFull

WORDS = "the a cat dog house tree red small sees runs over under green old new big".split()
GERMAN = dict(zip(WORDS, "der ein katze hund haus baum rot klein sieht rennt uber unter grun alt neu gross".split()))


def _sentences(n: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def _german(sentences: list[str]) -> list[str]:
    return [" ".join(GERMAN[w] for w in s.split()) for s in sentences]


def _tgz(path: Path, members: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _lines(rows: list[str]) -> str:
    return "".join(r + "\n" for r in rows)


def _sgm(rows: list[str], lang: str) -> str:
    segs = "".join(f'<seg id="{i}">{r}</seg>\n' for i, r in enumerate(rows, start=1))
    head = f'<srcset setid="newstest2014" srclang="any">\n<doc sysid="ref" docid="1" origlang="{lang}">\n'
    return f"{head}<p>\n{segs}</p>\n</doc>\n</srcset>\n"


def write_archives(folder: Path) -> dict[str, list[str]]:
    """statmt's archives in ``folder`` and the same pairs as plain text beside them; returns the plain text's
    lines. One Europarl pair has an empty German side, which both readings drop."""
    folder.mkdir(parents=True)
    corpora = {"europarl": _sentences(40, 1), "commoncrawl": _sentences(30, 2), "nc": _sentences(20, 3)}
    german = {name: _german(rows) for name, rows in corpora.items()}
    german["europarl"][7] = ""
    _tgz(folder / "training-parallel-europarl-v7.tgz",
         {"training/europarl-v7.de-en.de": _lines(german["europarl"]),
          "training/europarl-v7.de-en.en": _lines(corpora["europarl"])})
    _tgz(folder / "training-parallel-commoncrawl.tgz",
         {"commoncrawl.de-en.de": _lines(german["commoncrawl"]),
          "commoncrawl.de-en.en": _lines(corpora["commoncrawl"])})
    _tgz(folder / "training-parallel-nc-v9.tgz",
         {"training/news-commentary-v9.de-en.de": _lines(german["nc"]),
          "training/news-commentary-v9.de-en.en": _lines(corpora["nc"])})
    test, dev = _sentences(12, 4), _sentences(10, 5)
    _tgz(folder / "dev.tgz", {"dev/newstest2013.de": _lines(_german(dev)), "dev/newstest2013.en": _lines(dev),
                              "dev/newstest2014-deen-src.de.sgm": _sgm(_german(test), "de"),
                              "dev/newstest2014-deen-ref.en.sgm": _sgm(test, "de")})
    plain = {"train.en": sum(corpora.values(), []), "train.de": sum(german.values(), []),
             "newstest2014.en": test, "newstest2014.de": _german(test)}
    for name, rows in plain.items():
        (folder / name).write_text(_lines(rows), encoding="utf-8")
    return plain


def archives_pinned(folder: Path) -> dict[str, dict]:
    return {p.name: {"bytes": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
            for p in sorted(folder.glob("*.tgz"))}


class SmallWMT(TransformerFull):
    vocab_size = 64  # the fixture's few words cannot train the full size's 32,768 subwords


@pytest.fixture
def wmt(tmp_path, monkeypatch):
    """(folder holding the archives, the plain text and a 64-subword spm.model; the archives' pins)."""
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    folder = tmp_path / "wmt"
    write_archives(folder)
    SmallWMT().prepare_data(folder)
    return folder, archives_pinned(folder)


@needs_tf
def test_tfds_wmt14_gives_the_plain_text_pairs(wmt):
    """The same training pairs and newstest2014 pairs (sources encoded, references as text) as the plain text,
    in the same order (the records keep the order tfds generates them in, not tfds's hash order); the pair with
    an empty side is dropped by both readings."""
    from trainmark.reference.tfds_builders import wmt14

    folder, archives = wmt
    ours = wmt14.load(folder, archives, 256, "how")
    theirs = SmallWMT().load_data(folder)
    assert len(theirs.train_src) == 89  # 90 pairs, one German side empty
    assert ours.train_src == theirs.train_src and ours.train_tgt == theirs.train_tgt
    assert ours.valid_src == theirs.valid_src and ours.valid_refs == theirs.valid_refs
    assert ours.spm_model == theirs.spm_model
    info = json.loads(next(Path(wmt14.prepared(folder, archives).data_dir).glob("dataset_info.json")).read_text())
    assert info["disableShuffling"] is True


@needs_tf
def test_tfds_wmt14_refuses_a_changed_or_missing_archive_in_one_line(wmt, tmp_path):
    from trainmark.reference.tfds_builders import wmt14

    folder, archives = wmt
    victim = folder / "training-parallel-nc-v9.tgz"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF  # the same size, other bytes: the SHA-256 check
    victim.write_bytes(bytes(data))
    with pytest.raises(UserError) as error:
        wmt14.load(folder, archives, 256, "how")
    assert len(str(error.value).splitlines()) == 1 and "training-parallel-nc-v9.tgz" in str(error.value)
    victim.unlink()
    with pytest.raises(UserError, match="training-parallel-nc-v9.tgz: missing"):
        wmt14.load(folder, archives, 256, "how")
    with pytest.raises(UserError, match="missing: .*'dev.tgz'"):  # rules that leave an archive out
        wmt14.load(folder, {k: v for k, v in archives.items() if k != "dev.tgz"}, 256, "how")
    (folder / parallel_text.SPM_FILE).unlink()
    with pytest.raises(UserError, match="spm.model: missing: how"):
        wmt14.load(folder, archives, 256, "how")


@needs_tf
def test_prepare_for_tensorflow_trains_the_subword_model_from_the_archives(wmt, tmp_path):
    """Without any plain text, the TensorFlow path's prepare trains spm.model on tfds's training sentences; the
    folder then loads, and its corpus decodes to the archives' sentences."""
    from trainmark.reference.keras_twins import transformer as twin
    from trainmark.reference.tfds_builders import wmt14
    from trainmark.rules import get_rules

    folder, archives = wmt
    bare = tmp_path / "bare"
    bare.mkdir()
    for p in folder.glob("*.tgz"):
        shutil.copy(p, bare)
    rules = get_rules("transformer", "1.2", _rules_pinning(tmp_path, archives))
    (written,) = twin.prepare_data(SmallWMT(), rules, bare)
    assert written == bare / parallel_text.SPM_FILE
    corpus = wmt14.load(bare, archives, 256, "how")
    english = set((folder / "train.en").read_text(encoding="utf-8").splitlines())
    assert len(corpus.train_src) == 89
    assert {corpus.decoder().decode(ids) for ids in corpus.train_src} <= english


def _rules_pinning(tmp_path: Path, archives: dict[str, dict]) -> Path:
    """The test rules plus the shipped transformer's, its archives pinned by the fixture's sizes and SHA-256,
    with the released hashes generated."""
    from conftest import SHIPPED_RULES, TEST_RULES
    from test_implementation_record import _rules_with_hashes

    src = tmp_path / "rules-src"
    if not src.exists():
        shutil.copytree(TEST_RULES, src)
        rule = yaml.safe_load((SHIPPED_RULES / "1.2" / "transformer.yaml").read_text())
        rule["dataset"]["archives"] = archives
        (src / "1.2" / "transformer.yaml").write_text(yaml.safe_dump(rule))
    return _rules_with_hashes(tmp_path / f"rules-{len(list(tmp_path.glob('rules-*')))}", src)


@needs_tf
def test_data_verify_and_a_tensorflow_run_check_the_archives(wmt, tmp_path, capsys):
    """`trainmark data verify transformer --framework tensorflow` checks the four archives (size and SHA-256).
    A closed TensorFlow run of the full size checks them too, builds tfds's dataset from them, and then refuses
    the fixture's 64-subword model by name; with one archive changed it refuses before reading anything."""
    folder, archives = wmt
    rules = _rules_pinning(tmp_path, archives)
    verify = ["data", "verify", "transformer", "--rules-dir", str(rules), "--data-dir", str(folder)]
    assert main([*verify, "--framework", "tensorflow"]) == 0
    assert f"transformer: 4 files in {folder} match" in capsys.readouterr().out
    run = ["run", "transformer", "--framework", "tensorflow", "--rules-dir", str(rules), "--data-dir", str(folder),
           "--quiet"]
    assert main([*run, "--out", str(tmp_path / "sub")]) != 0
    assert "64 subwords, the reference model expects 32768" in capsys.readouterr().err
    built = list((tmp_path / "tfds").glob("archives-*/wmt14_translate/de-en/1.0.0/dataset_info.json"))
    assert len(built) == 1
    with open(folder / "dev.tgz", "ab") as f:
        f.write(b"\0")
    assert main([*verify, "--framework", "tensorflow"]) != 0
    assert f"{folder / 'dev.tgz'}: " in capsys.readouterr().err
    assert main([*run, "--out", str(tmp_path / "again")]) != 0
    err = capsys.readouterr().err
    assert "dev.tgz" in err and "64 subwords" not in err
