"""WikiText-103 (word level) as a tensorflow-datasets dataset, built from Salesforce's ``wikitext-103-v1.zip``.

tensorflow-datasets has no WikiText builder, so this is one of ours. It reads the zip from tfds's
manual-download folder (the folder a TensorFlow trial is given), checks it against the MD5 the rules pin
(``dataset.archives`` in rules/1.0/lstm.yaml, as torchtext pins it) before reading it, and writes one
example per line of ``wikitext-103/wiki.train.tokens`` and ``wiki.valid.tokens``, the line's text as it
is (a ``Text`` feature), in file order (``disable_shuffling``), splits ``train`` and ``validation``. The
config is named after the MD5, so another zip (a test's miniature one) builds a dataset of its own.

The vocabulary and the token ids are not stored: ``load`` makes them from the lines read back with
``text_corpus``'s own ``build_vocab`` and ``encode``, so the corpus equals ``text_corpus.load``'s on the
unzipped files, token for token (a test proves it). The lines are read as ``text_corpus.lines`` reads a
file: UTF-8, universal newlines.

Imports TensorFlow: only the TensorFlow backend imports this module.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402

from trainmark.digest import file_digests  # noqa: E402
from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import text_corpus  # noqa: E402
from trainmark.reference.tfds_builders import pinned  # noqa: E402

ARCHIVE = "wikitext-103-v1.zip"
MEMBERS = {"train": "wikitext-103/wiki.train.tokens", "validation": "wikitext-103/wiki.valid.tokens"}
HOW_TO_GET = (f"put {ARCHIVE} (Salesforce's WikiText-103, word level, CC BY-SA 3.0; the zip as published, "
              "not unzipped) in --data-dir DIR")


def config_for(archives: dict[str, dict]) -> pinned.PinnedFiles:
    """The config of the zip the rules pin by MD5 (``dataset.archives``)."""
    md5 = (archives.get(ARCHIVE) or {}).get("md5")
    if not md5:
        raise UserError(f"WikiText-103 through tensorflow-datasets needs the rules' MD5 of {ARCHIVE}")
    return pinned.PinnedFiles(name=f"zip-{md5[:16]}", description=f"built from {ARCHIVE}", files=((ARCHIVE, md5),))


class TrainmarkWikitext103(tfds.core.GeneratorBasedBuilder):
    """WikiText-103's training and validation text, read from the zip, one example per line, in file order."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": f"wiki.train.tokens and wiki.valid.tokens from {ARCHIVE}, checked against the rules' MD5"}
    MANUAL_DOWNLOAD_INSTRUCTIONS = HOW_TO_GET

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            description="WikiText-103 (Merity et al. 2016), word level: 28,475 Good and Featured Wikipedia "
                        "articles, tokenised, rare words as <unk>; one example per line of the files.",
            features=tfds.features.FeaturesDict({"text": tfds.features.Text()}),
            homepage="https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/",
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        ((name, md5),) = self.builder_config.files
        path = Path(dl_manager.manual_dir) / name
        if not path.is_file():
            raise UserError(f"{path}: missing: {HOW_TO_GET}")
        if (actual := file_digests(path, ("md5",))["md5"]) != md5:
            raise UserError(f"{path}: md5 {actual}, rules say {md5}")
        return {split: self._generate_examples(path, member) for split, member in MEMBERS.items()}

    def _generate_examples(self, path: Path, member: str):
        try:
            with zipfile.ZipFile(path) as archive, archive.open(member) as raw:
                for index, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8")):
                    yield index, {"text": line.removesuffix("\n")}
        except (OSError, KeyError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise UserError(f"{path}: cannot read {member} ({exc})") from None


def _token_lines(builder: tfds.core.DatasetBuilder, split: str):
    """Each line's tokens and ``<eos>``, as ``text_corpus.lines`` yields them, one line at a time (the
    training text's 103 M tokens as Python lists would take gigabytes)."""
    for example in pinned.examples(builder, split):
        yield example["text"].decode("utf-8").split() + [text_corpus.EOS]


def load(folder: Path, archives: dict[str, dict], vocab_size: int | None,
         data_dir: Path | None = None) -> text_corpus.Corpus:
    """The rules' WikiText-103 through tfds: built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or
    data/tfds), then read back, as ``text_corpus.load(wiki.train.tokens, wiki.valid.tokens, vocab_size)``
    returns it from the unzipped folder (two passes over the training split, as there)."""
    builder = pinned.prepared(TrainmarkWikitext103, folder, config_for(archives), data_dir, HOW_TO_GET)
    vocab = text_corpus.build_vocab(_token_lines(builder, "train"), vocab_size)
    return text_corpus.Corpus(vocab, text_corpus.encode(_token_lines(builder, "train"), vocab),
                              text_corpus.encode(_token_lines(builder, "validation"), vocab))
