"""tensorflow-datasets builders of ours (reference/tfds_builders/: kjv, bible_parallel, fsdd for the sequence
minis, wikitext103 for the full-size lstm): on small fixtures in the real formats, read back through tfds
they are exactly what the PyTorch loaders return; a file whose checksum is not the pinned one is refused
and leaves nothing built; a missing file is a one-line error that says where it belongs.

Without TensorFlow these tests are skipped; scripts/install.sh and CI install it.
"""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trainmark.digest import sha256_file
from trainmark.errors import UserError

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="TensorFlow not installed (pip install -e '.[tensorflow]')")
pytestmark = needs_tf


def _pins(folder: Path) -> dict[str, str]:
    """The folder's files and their SHA-256, as a rule file's ``dataset.files`` pins them."""
    return {p.name: sha256_file(p) for p in sorted(folder.iterdir())}


def _built(data_dir: Path, name: str, config) -> Path:
    return data_dir / name / config.name / "1.0.0"


def _split_counts(built: Path) -> dict[str, int]:
    info = json.loads((built / "dataset_info.json").read_text())
    assert info["disableShuffling"] is True
    return {s["name"]: sum(int(n) for n in s["shardLengths"]) for s in info["splits"]}


def _nothing_built(data_dir: Path, name: str, config) -> bool:
    root = data_dir / name / config.name
    return not _built(data_dir, name, config).exists() and not any(
        "incomplete" in p.name for p in (root.iterdir() if root.is_dir() else ()))


# --- fixtures in the real formats, made by the same code that prepares the real data -----------------


def kjv_folder(root: Path) -> Path:
    """kjv.prepare on a fake `bible -f` listing, cut to 300 training and 40 validation verses, plus an
    empty line, a line with stray spaces and a non-ASCII word (every line counts, <eos> included)."""
    from test_sequence_lstm import fake_listing

    from trainmark.reference import kjv

    folder = root / "kjv"
    kjv.prepare(folder, _write(root / "listing.txt", "".join(v + "\n" for v in fake_listing())))
    for name, keep, extra in ((kjv.TRAIN_FILE, 300, "\n  and the  lord's   café ,\n"), (kjv.VALID_FILE, 40, "\n")):
        lines = (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)[:keep]
        _write(folder / name, "".join(lines) + extra)
    return folder


def bible_folder(root: Path) -> Path:
    """train/valid .kjv/.web, one verse per line, and a 60-subword spm.model trained on them as
    `trainmark data prepare transformer-mini` does; some training pairs too long, one empty."""
    from test_sequence_transformer import _lines

    from trainmark.reference import bible_parallel, parallel_text

    folder = root / "bible"
    folder.mkdir(parents=True)
    src = _lines(120) + ["", " ".join(["the cat sat on a mat"] * 6)]
    tgt = [s.replace("the", "thee").replace("cat", "kitten") for s in src[:-2]] + ["a lone line", "short"]
    (train_src, train_tgt), (valid_src, valid_tgt) = bible_parallel.FILES["train"], bible_parallel.FILES["valid"]
    for name, rows in ((train_src, src), (train_tgt, tgt), (valid_src, src[:15]), (valid_tgt, tgt[:15])):
        _write(folder / name, "".join(r + "\n" for r in rows))
    parallel_text.train_spm(src + tgt, 60, folder / parallel_text.SPM_FILE)
    return folder


def fsdd_folder(root: Path) -> Path:
    """fsdd.prepare on tests/test_sequence_ds2.py's miniature FSDD checkout (60 WAV files)."""
    from test_sequence_ds2 import write_fsdd_fixture

    from trainmark.reference import fsdd

    write_fsdd_fixture(root / "src")
    fsdd.prepare(root / "fsdd", root / "src")
    return root / "fsdd"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- kjv: lstm-mini ----------------------------------------------------------------------------------


def test_tfds_kjv_is_the_reference_corpus(tmp_path):
    from trainmark.reference import kjv, text_corpus
    from trainmark.reference.tfds_builders import kjv as tfds_kjv

    folder = kjv_folder(tmp_path)
    files = _pins(folder)
    for vocab_size in (10, None):   # capped (the rest is <unk>) and whole
        ours = tfds_kjv.load(folder, files, vocab_size, tmp_path / "tfds")
        ref = text_corpus.load(folder / kjv.TRAIN_FILE, folder / kjv.VALID_FILE, vocab_size)
        assert ours.vocab == ref.vocab
        assert torch.equal(ours.train, ref.train) and torch.equal(ours.valid, ref.valid)
    assert "café" in ref.vocab and ref.unk_rate == ours.unk_rate
    built = _built(tmp_path / "tfds", "trainmark_kjv", tfds_kjv.config_for(files))
    assert _split_counts(built) == {"train": 302, "validation": 41}


def test_a_build_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """tfds makes an empty temporary folder for GCS metadata whenever an unbuilt builder is made and
    never removes it; a trial must not leave one behind in the machine's temporary folder."""
    import tempfile

    from trainmark.reference import kjv
    from trainmark.reference.tfds_builders import kjv as tfds_kjv

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    folder = kjv_folder(tmp_path)
    ours = tfds_kjv.load(folder, _pins(folder), None, tmp_path / "tfds")
    assert len(ours.vocab) > 2 and (folder / kjv.TRAIN_FILE).is_file()
    assert list(scratch.iterdir()) == [] and tempfile.tempdir == str(scratch)


def test_tfds_kjv_refuses_a_file_the_rules_do_not_pin(tmp_path):
    from trainmark.reference import kjv
    from trainmark.reference.tfds_builders import kjv as tfds_kjv

    folder = kjv_folder(tmp_path)
    files = _pins(folder)
    with open(folder / kjv.VALID_FILE, "a", encoding="utf-8") as f:
        f.write("and a verse more\n")
    with pytest.raises(UserError, match=r"kjv\.valid\.txt: sha256 .*rules say "):
        tfds_kjv.load(folder, files, 40, tmp_path / "tfds")
    assert _nothing_built(tmp_path / "tfds", "trainmark_kjv", tfds_kjv.config_for(files))


def test_tfds_kjv_missing_file_is_one_line(tmp_path):
    from trainmark.reference import kjv
    from trainmark.reference.tfds_builders import kjv as tfds_kjv

    folder = kjv_folder(tmp_path)
    files = _pins(folder)
    (folder / kjv.TRAIN_FILE).unlink()
    with pytest.raises(UserError) as err:
        tfds_kjv.load(folder, files, 40, tmp_path / "tfds")
    message = str(err.value)
    assert message.startswith(f"{folder / kjv.TRAIN_FILE}: missing: run `trainmark data prepare lstm-mini`")
    assert "\n" not in message
    with pytest.raises(UserError, match="needs the rules' SHA-256 of kjv.valid.txt"):
        tfds_kjv.load(folder, {kjv.TRAIN_FILE: files[kjv.TRAIN_FILE]}, 40, tmp_path / "tfds")


# --- bible_parallel: transformer-mini -----------------------------------------------------------------


def _parallel_load(folder: Path, max_tokens: int, how: str):
    from trainmark.reference import bible_parallel, parallel_text

    return parallel_text.load(folder, bible_parallel.FILES["train"], bible_parallel.FILES["valid"], max_tokens, how)


def test_tfds_bible_parallel_is_the_reference_corpus(tmp_path):
    import dataclasses

    from trainmark.reference.tfds_builders import bible_parallel as tfds_bible

    folder = bible_folder(tmp_path)
    files = _pins(folder)
    for max_tokens in (12, 1000):
        ours = tfds_bible.load(folder, files, max_tokens, "how", tmp_path / "tfds")
        ref = _parallel_load(folder, max_tokens, "how")
        for field in dataclasses.fields(ref):
            assert getattr(ours, field.name) == getattr(ref, field.name), field.name
    assert 0 < len(_parallel_load(folder, 12, "how").train_src) < len(ref.train_src) == 121  # filtered; empty: never
    built = _built(tmp_path / "tfds", "trainmark_bible_parallel", tfds_bible.config_for(files))
    assert _split_counts(built) == {"train": 122, "validation": 15}
    assert not (built / "spm.model").exists()   # the model is in the metadata, not beside it


def test_tfds_bible_parallel_refuses_a_file_the_rules_do_not_pin(tmp_path):
    from trainmark.reference.tfds_builders import bible_parallel as tfds_bible

    folder = bible_folder(tmp_path)
    files = _pins(folder)
    (folder / "spm.model").write_bytes((folder / "spm.model").read_bytes() + b"\0")
    with pytest.raises(UserError, match=r"spm\.model: sha256 .*rules say "):
        tfds_bible.load(folder, files, 1000, "how", tmp_path / "tfds")
    assert _nothing_built(tmp_path / "tfds", "trainmark_bible_parallel", tfds_bible.config_for(files))


def test_tfds_bible_parallel_missing_file_is_one_line(tmp_path):
    from trainmark.reference.tfds_builders import bible_parallel as tfds_bible

    folder = bible_folder(tmp_path)
    files = _pins(folder)
    (folder / "valid.web").unlink()
    with pytest.raises(UserError) as err:
        tfds_bible.load(folder, files, 1000, "run `trainmark data prepare transformer-mini`", tmp_path / "tfds")
    assert str(err.value) == f"{folder / 'valid.web'}: missing: run `trainmark data prepare transformer-mini`"


# --- fsdd: ds2-mini ----------------------------------------------------------------------------------


def test_tfds_fsdd_is_the_reference_data(tmp_path):
    from trainmark.reference import fsdd
    from trainmark.reference.tfds_builders import fsdd as tfds_fsdd

    folder = fsdd_folder(tmp_path)
    files = _pins(folder)
    ours, ref = tfds_fsdd.load(folder, files, tmp_path / "tfds"), fsdd.load(folder)
    for field in ("audio", "offset", "length", "digit", "held_out"):
        a, b = getattr(ours.recordings, field), getattr(ref.recordings, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert ours.recordings.names == ref.recordings.names
    assert np.array_equal(ours.train_pool, ref.train_pool)
    assert ours.eval_utterances == ref.eval_utterances and len(ref.eval_utterances) == fsdd.EVAL_UTTERANCES
    built = _built(tmp_path / "tfds", "trainmark_fsdd", tfds_fsdd.config_for(files))
    assert _split_counts(built) == {"recordings": 60}
    # a second load reads the built dataset, not the folder
    for name in files:
        (folder / name).unlink()
    assert tfds_fsdd.load(folder, files, tmp_path / "tfds").eval_utterances == ref.eval_utterances


def test_tfds_fsdd_refuses_a_file_the_rules_do_not_pin(tmp_path):
    from trainmark.reference import fsdd
    from trainmark.reference.tfds_builders import fsdd as tfds_fsdd

    folder = fsdd_folder(tmp_path)
    files = _pins(folder)
    lines = (folder / fsdd.EVAL_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / fsdd.EVAL_FILE).write_text("".join(lines[:-1]), encoding="utf-8")
    with pytest.raises(UserError, match=r"fsdd\.eval\.tsv: sha256 .*rules say "):
        tfds_fsdd.load(folder, files, tmp_path / "tfds")
    assert _nothing_built(tmp_path / "tfds", "trainmark_fsdd", tfds_fsdd.config_for(files))


def test_tfds_fsdd_missing_file_is_one_line(tmp_path):
    from trainmark.reference import fsdd
    from trainmark.reference.tfds_builders import fsdd as tfds_fsdd

    folder = tmp_path / "empty"
    folder.mkdir()   # tfds itself refuses an empty manual folder with a multi-line AssertionError
    files = {fsdd.PCM_FILE: "1" * 64, fsdd.INDEX_FILE: "2" * 64, fsdd.EVAL_FILE: "3" * 64}
    with pytest.raises(UserError) as err:
        tfds_fsdd.load(folder, files, tmp_path / "tfds")
    assert str(err.value) == f"{folder / fsdd.EVAL_FILE}: missing: {fsdd.HOW_TO_GET}"


# --- wikitext103: lstm ---------------------------------------------------------------------------------


def wikitext_zip(root: Path, copies: int = 1) -> tuple[Path, Path]:
    """(a folder holding wikitext-103-v1.zip in the published layout, the same files unzipped): WikiText's
    blank lines, ``= heading =`` lines, <unk> and a non-ASCII word; a line ending in a bare carriage return.
    ``copies`` repeats the training and validation text (a trial needs whole windows and 64 streams)."""
    import zipfile

    text = {"wiki.train.tokens": " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 : <unk> Chronicles "
                                 "( Japanese : 戦場のヴァルキュリア3 ) \n the game began development in 2010 , "
                                 "carrying over a large portion \r the work done on Valkyria Chronicles II . \n"
                                 * 5 * copies,
            "wiki.valid.tokens": " \n = Homarus gammarus = \n \n Homarus gammarus , known as the European lobster "
                                 "or common lobster , is a species of <unk> lobster \n" * copies,
            "wiki.test.tokens": " \n = Robert Boulter = \n"}
    unzipped, folder = root / "wikitext-103", root / "zip"
    unzipped.mkdir(parents=True)
    folder.mkdir()
    with zipfile.ZipFile(folder / "wikitext-103-v1.zip", "w") as archive:
        for name, body in text.items():
            archive.writestr(f"wikitext-103/{name}", body.encode("utf-8"))
            (unzipped / name).write_bytes(body.encode("utf-8"))
    return folder, unzipped


def _md5_pin(folder: Path) -> dict[str, dict]:
    import hashlib

    return {"wikitext-103-v1.zip": {"md5": hashlib.md5((folder / "wikitext-103-v1.zip").read_bytes()).hexdigest()}}


def test_tfds_wikitext103_is_the_reference_corpus(tmp_path):
    """Read back from tfds, the zip's text is `text_corpus.load`'s corpus of the unzipped files: the vocabulary
    capped, whole and padded to a reference's size, and every token id."""
    from trainmark.reference import text_corpus
    from trainmark.reference.tfds_builders import wikitext103

    folder, unzipped = wikitext_zip(tmp_path)
    archives = _md5_pin(folder)
    for vocab_size in (10, None, 300):
        ours = wikitext103.load(folder, archives, vocab_size, tmp_path / "tfds")
        ref = text_corpus.load(unzipped / "wiki.train.tokens", unzipped / "wiki.valid.tokens", vocab_size)
        assert ours.vocab == ref.vocab
        assert torch.equal(ours.train, ref.train) and torch.equal(ours.valid, ref.valid)
    assert "戦場のヴァルキュリア3" in ref.vocab and len(ref.vocab) == 300
    built = _built(tmp_path / "tfds", "trainmark_wikitext103", wikitext103.config_for(archives))
    assert _split_counts(built) == {"train": 30, "validation": 4}  # 5 lines, one split at its \r too: 6, 5 times


def test_tfds_wikitext103_refuses_a_zip_the_rules_do_not_pin_and_a_missing_one(tmp_path):
    from trainmark.reference.tfds_builders import wikitext103

    folder, _ = wikitext_zip(tmp_path)
    archives = {"wikitext-103-v1.zip": {"md5": "0" * 32}}
    with pytest.raises(UserError, match="wikitext-103-v1.zip: md5 [0-9a-f]{32}, rules say 0{32}"):
        wikitext103.load(folder, archives, None, tmp_path / "tfds")
    assert _nothing_built(tmp_path / "tfds", "trainmark_wikitext103", wikitext103.config_for(archives))
    (folder / "wikitext-103-v1.zip").unlink()
    with pytest.raises(UserError) as error:
        wikitext103.load(folder, archives, None, tmp_path / "tfds")
    assert len(str(error.value).splitlines()) == 1 and "wikitext-103-v1.zip: missing: put" in str(error.value)
    with pytest.raises(UserError, match="needs the rules' MD5"):
        wikitext103.load(folder, {}, None, tmp_path / "tfds")
