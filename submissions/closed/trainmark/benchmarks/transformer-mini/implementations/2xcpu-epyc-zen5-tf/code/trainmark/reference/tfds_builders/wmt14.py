"""WMT14 English -> German through tensorflow-datasets' own ``wmt14_translate/de-en`` builder, from statmt's archives.

tfds builds ``wmt14_translate/de-en`` from four archives: Europarl v7, Common Crawl and News Commentary v9
for training, and statmt's ``dev.tgz`` for newstest2013 (its validation split) and newstest2014 (its
test split, the benchmark's evaluation set). Nothing is downloaded: the archives come from a local folder,
checked against the rules' checksums (``dataset.archives`` in rules/1.0/transformer.yaml, copied from
tfds's own ``url_checksums/wmt14_translate.txt``), as reference/tfds_builders/archives.py hands them to
tfds.

One thing is changed besides the checksums: tfds would shuffle the records by a hash of their keys, and
the records hold nothing of the files' order to put it back; here they keep the order tfds generates them
in (``disable_shuffling``): Europarl, Common Crawl, then News Commentary, line by line, and newstest2014 in
its SGML's order. That is the order of the plain text a PyTorch run reads (``train.en`` is the three
corpora concatenated in that order), so both frameworks draw the same batches for a seed. What tfds does
and the plain text may not (docs/frameworks.md): it drops a pair with an empty side (as the reference's
length filter does), splits lines at ``\\n`` only (Python's text files also split at ``\\r``), and reads
newstest2014 from the SGML ``<seg>`` lines, entities left as they are. The subword model is the folder's
``spm.model``, as for a PyTorch run (``trainmark data prepare transformer --framework tensorflow`` trains
one from tfds's training pairs).

Imports TensorFlow: only the Transformer twin (reference/keras_twins/transformer.py) imports this module.
"""
from __future__ import annotations

from pathlib import Path

import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402
from tensorflow_datasets.core.download import checksums as tfds_checksums  # noqa: E402
from tensorflow_datasets.translate import wmt14 as tfds_wmt14  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import parallel_text  # noqa: E402
from trainmark.reference.tfds_builders import archives as tfds_archives  # noqa: E402
from trainmark.reference.tfds_builders import pinned
from trainmark.reference.tfds_builders.translation import encoded_corpus  # noqa: E402

CONFIG = "de-en"                 # tfds's one German-English config: the Translation feature holds both sides
SOURCE, TARGET = "en", "de"      # the benchmark's direction
EVAL_SPLIT = "test"              # tfds's test split of wmt14_translate is newstest2014
HOW_TO_GET = ("tensorflow-datasets' wmt14_translate builder reads training-parallel-europarl-v7.tgz, "
              "training-parallel-commoncrawl.tgz, training-parallel-nc-v9.tgz (https://www.statmt.org/wmt14/) "
              "and dev.tgz (http://data.statmt.org/wmt19/translation-task/dev.tgz) from --data-dir DIR")


def url_infos(archives: dict[str, dict]) -> dict[str, tfds_checksums.UrlInfo]:
    """tfds's registered URLs of the archives the rules name, each with the rules' SHA-256 and size.
    A UserError names a rules' archive that tfds's wmt14_translate does not read, or one it needs that the
    rules leave out."""
    registered = tfds_wmt14.Wmt14Translate.url_infos
    needed = {i.filename for i in registered.values()} - {"wiki-titles.tgz"}  # wiki headlines: Hindi and Russian
    return tfds_archives.url_infos(registered, archives, needed, "WMT14")


def builder_class(infos: dict[str, tfds_checksums.UrlInfo]) -> type:
    """tfds's ``Wmt14Translate``, unregistered, its checksums replaced by ``infos`` and its records kept in the
    order it generates them (everything else is tfds's)."""

    class Wmt14Translate(tfds_wmt14.Wmt14Translate, skip_registration=True):
        name = "wmt14_translate"
        url_infos = infos

        def _info(self) -> tfds.core.DatasetInfo:
            info = super()._info()
            info.as_proto.disable_shuffling = True  # the files' order: the plain text's, a PyTorch run's
            return info

    return Wmt14Translate


def prepared(folder: Path, archives: dict[str, dict], data_dir: Path | None = None) -> tfds.core.DatasetBuilder:
    """tfds's wmt14_translate/de-en built from the archives in ``folder`` (checked against ``archives``, the rules'
    {name: {sha256, bytes}}) into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or data/tfds)/archives-<key>, unless
    it is built already."""
    infos = url_infos(archives)
    return tfds_archives.prepared(builder_class(infos), folder, archives, infos, HOW_TO_GET, data_dir, config=CONFIG)


def pairs(builder: tfds.core.DatasetBuilder, split: str) -> tuple[list[str], list[str]]:
    """(English sentences, German sentences) of a split, in the files' order."""
    src, tgt = [], []
    for example in pinned.examples(builder, split):
        src.append(example[SOURCE].decode("utf-8"))
        tgt.append(example[TARGET].decode("utf-8"))
    return src, tgt


def load(folder: Path, archives: dict[str, dict], max_tokens: int, how_to_get: str,
         data_dir: Path | None = None) -> parallel_text.ParallelCorpus:
    """WMT14 through tfds, as ``parallel_text.load`` returns a corpus: the training pairs of 1 to ``max_tokens``
    subwords a side, newstest2014 to evaluate, encoded with the folder's ``spm.model``."""
    model_path = Path(folder) / parallel_text.SPM_FILE
    if not model_path.is_file():
        raise UserError(f"{model_path}: missing: {how_to_get}")
    builder = prepared(Path(folder), archives, data_dir)
    src, tgt = pairs(builder, "train")
    valid_src, valid_refs = pairs(builder, EVAL_SPLIT)
    try:
        corpus = encoded_corpus(model_path.read_bytes(), src, tgt, valid_src, valid_refs, max_tokens)
    except RuntimeError as exc:
        raise UserError(f"{model_path}: not a sentencepiece model ({exc})") from None
    return corpus


def training_lines(folder: Path, archives: dict[str, dict], data_dir: Path | None = None) -> list[str]:
    """Every training sentence, English then German, as ``TransformerFull.prepare_data`` trains the subword
    model on ``train.en`` then ``train.de``."""
    src, tgt = pairs(prepared(Path(folder), archives, data_dir), "train")
    return src + tgt
