"""LibriSpeech through tensorflow-datasets' own librispeech builder (reference/tfds_builders/librispeech.py).

OpenSLR's archives are written in miniature (``<subset>.tar.gz`` holding ``LibriSpeech/<subset>/...`` and
the corpus's SPEAKERS.TXT and CHAPTERS.TXT, as published), beside the same files extracted, the folder a
PyTorch run reads. Read through tfds, the full-size ds2's data are the PyTorch manifests: the same
utterances in the same order, lengths, transcripts and audio, and the same batches for a seed; a changed
or missing archive is one line; a closed TensorFlow run of ds2 trains on them and passes the checker.
"""
import hashlib
import importlib.util
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import librispeech

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="TensorFlow not installed (pip install -e '.[tensorflow]')")
pytestmark = needs_tf

SPEAKERS = ";ID  |SEX| SUBSET           |MINUTES| NAME\n84   | F | dev-clean        | 8.02 | Christie Nowak\n" \
           "174  | M | dev-clean        | 8.04 | Peter Eastman\n"
CHAPTERS = (";ID    |READER|MINUTES| SUBSET           | PROJ.|BOOK ID| CH. TITLE | PROJECT TITLE\n"
            "121123|    84| 8.02 | dev-clean        | 6067 | 2    | Chapter 1 | A Tale\n"
            "50561 |   174| 8.04 | dev-clean        | 5934 | 3    | Chapter 2 | Another Tale\n")


def write_archives(root: Path) -> tuple[Path, Path, dict]:
    """(a folder holding the four archives, the extracted LibriSpeech folder, what was written per utterance)."""
    from test_sequence_ds2 import write_librispeech_fixture

    extracted, folder = root / "LibriSpeech", root / "archives"
    written = write_librispeech_fixture(extracted)
    (extracted / "SPEAKERS.TXT").write_text(SPEAKERS)
    (extracted / "CHAPTERS.TXT").write_text(CHAPTERS)
    folder.mkdir()
    for subset in (*librispeech.TRAIN_SUBSETS, librispeech.EVAL_SUBSET):
        with tarfile.open(folder / f"{subset}.tar.gz", "w:gz") as tar:
            for name in ("SPEAKERS.TXT", "CHAPTERS.TXT", subset):
                tar.add(extracted / name, arcname=f"LibriSpeech/{name}")
    return folder, extracted, written


def pins(folder: Path) -> dict[str, dict]:
    """The archives' sizes and SHA-256, as the rules' ``dataset.archives`` pins them."""
    return {p.name: {"bytes": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
            for p in sorted(folder.iterdir())}


@pytest.fixture
def archived(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    return write_archives(tmp_path)


def test_tfds_librispeech_gives_the_pytorch_manifests_and_batches(archived, tmp_path):
    from trainmark.reference import registry
    from trainmark.reference.tfds_builders import librispeech as tfds_librispeech

    folder, extracted, written = archived
    ref = registry.get("ds2")
    ours = tfds_librispeech.load(folder, pins(folder), ref.train_subsets())
    theirs = ref.load_data(extracted)
    for part in ("train", "eval"):
        assert ours[part].transcripts == theirs[part].transcripts and len(ours[part]) == len(theirs[part])
        assert np.array_equal(ours[part].samples, theirs[part].samples) and not ours[part].paths
        for i in range(len(theirs[part])):
            assert np.array_equal(ours[part].audio(i), theirs[part].audio(i))
    assert len(theirs["train"]) == 12 and theirs["eval"].transcripts[0] == "hello world it's one of dev"
    for data in (ours, theirs):  # the reference's own length buckets and read-ahead threads, one seed
        data["batches"] = list(ref.train_batches(data, 1, 4, torch.Generator().manual_seed(0)))
    assert all(torch.equal(a, b) for x, y in zip(ours["batches"], theirs["batches"]) for a, b in zip(x, y))
    built = list((tmp_path / "tfds").glob("archives-*/librispeech/lazy_decode/*/"))
    assert len(built) == 1 and list(built[0].glob("*.array_record*"))
    assert sorted(p.name for p in built[0].glob("trainmark-utterances-*.npz")) == [
        "trainmark-utterances-dev_clean.npz", "trainmark-utterances-train_clean100.npz",
        "trainmark-utterances-train_clean360.npz", "trainmark-utterances-train_other500.npz"]
    again = tfds_librispeech.load(folder, pins(folder), ref.train_subsets())  # read back, not built again
    assert again["eval"].transcripts == theirs["eval"].transcripts


def test_a_changed_missing_or_unpinned_archive_is_one_line(archived, tmp_path):
    from trainmark.reference import registry
    from trainmark.reference.tfds_builders import librispeech as tfds_librispeech

    folder, _, _ = archived
    subsets, pinned = registry.get("ds2").train_subsets(), pins(folder)
    with open(folder / "dev-clean.tar.gz", "ab") as f:
        f.write(b"\0")
    with pytest.raises(UserError) as changed:
        tfds_librispeech.load(folder, pinned, subsets)
    assert str(changed.value).startswith(f"{folder / 'dev-clean.tar.gz'}: ") and "\n" not in str(changed.value)
    (folder / "dev-clean.tar.gz").unlink()
    with pytest.raises(UserError, match="dev-clean.tar.gz: missing"):
        tfds_librispeech.load(folder, pinned, subsets)
    del pinned["train-other-500.tar.gz"]
    with pytest.raises(UserError, match=r"missing: \['train-other-500.tar.gz'\]"):
        tfds_librispeech.load(folder, pinned, subsets)
    assert not list((tmp_path / "tfds").glob("archives-*/librispeech/lazy_decode/*/dataset_info.json"))


@pytest.mark.slow
def test_ds2_trains_under_tensorflow_from_the_archives_then_passes_the_checker(archived, tmp_path, capsys):
    """`trainmark data verify ds2 --framework tensorflow` checks the four archives; a closed TensorFlow run of
    the full-size ds2 (batch 4) reads them through tfds, trains, and passes the checker with no code finding
    against the released ``ds2@tensorflow``; its weights in the PyTorch reference, reading the extracted files,
    give the same WER. The miniature's utterances are shorter than their transcripts (no CTC alignment):
    PyTorch's loss counts them 0 (``zero_infinity``), and so must the twin's, where TensorFlow's kernel alone
    refuses the batch (the trial crashed before the twin handled it). The step's FLOPs are counted at the
    reference's 12 s synthetic utterances (the unrolled GRUs traced on two short cuts, then extrapolated: traced
    whole, 6,010 cells had not finished after 10 minutes; docs/frameworks.md)."""
    from tf_trials import checked_trial, one_short_trial, rules_with_shipped

    folder, extracted, _ = archived
    rules = rules_with_shipped(tmp_path, "ds2", one_short_trial(pins(folder), 100.0))  # the miniature is noise
    assert main(["data", "verify", "ds2", "--framework", "tensorflow", "--rules-dir", str(rules),
                 "--data-dir", str(folder)]) == 0
    out = tmp_path / "sub"
    assert main(["run", "ds2", "--framework", "tensorflow", "--rules-dir", str(rules), "--data-dir", str(folder),
                 "--batch-size", "4", "--out", str(out), "--submitter", "ci", "--system-name", "ci-box",
                 "--seed", "3", "--quiet"]) == 0
    t, ref, model = checked_trial(out, rules, "ds2", capsys)
    assert t["status"] == "converged" and t["flops_per_step"] == 739_407_820_800  # PyTorch's count at 12 s, x 2
    wer = ref.finalize_metric(*ref.evaluate(model, ref.load_data(extracted), torch.device("cpu")))
    print(f"ds2 under TensorFlow: WER {t['final_metric']:.4f}; the same weights in PyTorch {wer:.4f}")
    assert abs(wer - t["final_metric"]) <= 0.01
