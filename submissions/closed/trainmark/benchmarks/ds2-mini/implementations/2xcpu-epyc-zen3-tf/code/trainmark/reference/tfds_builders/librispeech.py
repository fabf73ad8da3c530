"""LibriSpeech through tensorflow-datasets' own ``librispeech`` builder, from OpenSLR's archives.

tfds's ``librispeech`` reads OpenSLR 12's ``<subset>.tar.gz`` archives; its ``lazy_decode`` config keeps each
utterance's FLAC file as it is (its default config decodes every file with pydub and ffmpeg when it builds).
A TensorFlow run of the full-size ds2 reads the archives from ``--data-dir``, checked against the rules'
``dataset.archives`` (sizes and SHA-256 copied from tfds 4.9.10's own ``librispeech/checksums.tsv``) as
reference/tfds_builders/archives.py hands them to tfds. Everything else is tfds's (the member paths, the
transcripts, the speaker and chapter metadata), with three changes:

- only the subsets the reference reads (``train-clean-100``, ``train-clean-360``, ``train-other-500`` and
  ``dev-clean``) are built: tfds's would download all seven, test and dev-other included;
- the records keep the PyTorch manifest's order (transcript files sorted by path, lines in file order;
  ``disable_shuffling``: tfds would shuffle them by a hash of their keys), so the reference's length buckets
  draw the same utterances for a seed in both frameworks;
- they are written as array_record files, which can be read by index: an utterance's FLAC bytes are decoded
  by the reference's own ``librispeech.read_audio`` (soundfile), batch by batch, as a PyTorch run reads them.

Once per build each split's lengths in samples (from the FLAC headers, as the PyTorch manifest takes them)
and lower-cased transcripts are kept beside tfds's files (``trainmark-utterances-<split>.npz``): the
reference buckets utterances by length before it reads any audio.

Imports TensorFlow: only the Deep Speech 2 twin (reference/keras_twins/ds2.py) imports this module.
"""
from __future__ import annotations

import io
import threading
from pathlib import Path

import numpy as np
import soundfile as sf
import torch  # noqa: F401  (before TensorFlow: see trainmark.reference.tf_import)

# isort: split

from trainmark.reference.tf_import import tf  # noqa: F401  (first: TensorFlow safely beside PyTorch)

# isort: split

import tensorflow_datasets as tfds  # noqa: E402
from tensorflow_datasets.datasets.librispeech import librispeech_dataset_builder as tfds_librispeech  # noqa: E402

from trainmark.errors import UserError  # noqa: E402
from trainmark.reference import librispeech  # noqa: E402
from trainmark.reference.tfds_builders import archives as tfds_archives  # noqa: E402

CONFIG = "lazy_decode"   # the FLAC files as they are, decoded when read
UTTERANCES_FILE = "trainmark-utterances-{split}.npz"
# subset -> tfds's split name (tfds names a split after its archive's key: train-clean-100 is train_clean100)
SPLITS = {url.rsplit("/", 1)[-1].removesuffix(".tar.gz"): split for split, url in tfds_librispeech._DL_URLS.items()}
HOW_TO_GET = ("tensorflow-datasets' librispeech builder reads train-clean-100.tar.gz, train-clean-360.tar.gz, "
              "train-other-500.tar.gz and dev-clean.tar.gz (https://www.openslr.org/12, CC BY 4.0) from "
              "--data-dir DIR, as published (not extracted)")


def builder_class(infos: dict) -> type:
    """tfds's LibriSpeech ``Builder``, unregistered: its checksums replaced by ``infos``, the subsets of ``infos``
    only, its records in the PyTorch manifest's order."""

    class Librispeech(tfds_librispeech.Builder, skip_registration=True):
        name = "librispeech"
        url_infos = infos

        @classmethod
        def get_metadata(cls):
            """tfds's own description and citation, read beside its builder (not beside this module)."""
            return tfds_librispeech.Builder.get_metadata()

        def _info(self) -> tfds.core.DatasetInfo:
            info = super()._info()
            info.as_proto.disable_shuffling = True  # the manifest's order, a PyTorch run's
            return info

        def _split_generators(self, dl_manager):
            urls = {split: url for split, url in tfds_librispeech._DL_URLS.items() if url in infos}
            extracted = dl_manager.download_and_extract(urls)
            self._populate_metadata(extracted.values())
            return {split: self._generate_examples(folder) for split, folder in extracted.items()}

        def _generate_examples(self, directory):
            # librispeech.read_subset's order: transcript files sorted by path, then their lines
            for transcripts in sorted(Path(directory).glob("LibriSpeech/*/*/*/*.trans.txt")):
                yield from tfds_librispeech._generate_librispeech_examples(str(transcripts))

    return Librispeech


def url_infos(archives: dict[str, dict], subsets: tuple[str, ...]) -> dict:
    """tfds's registered URLs of the rules' archives, with the rules' checksums; ``subsets`` must be among them."""
    needed = {f"{subset}.tar.gz" for subset in subsets}
    return tfds_archives.url_infos(tfds_librispeech.Builder.url_infos, archives, needed, "LibriSpeech")


class RecordReader:
    """Utterance ``i`` of one split, read by index from tfds's records and decoded by the reference's own
    ``read_audio``; the records are fetched one thread at a time (the reference reads ahead on threads),
    the FLAC decoding runs beside it."""

    def __init__(self, builder: tfds.core.DatasetBuilder, split: str):
        self.source = builder.as_data_source(split, decoders={"speech": tfds.decode.SkipDecoding()})
        self.lock = threading.Lock()

    def __call__(self, i: int) -> np.ndarray:
        with self.lock:
            flac = self.source[int(i)]["speech"]
        return librispeech.read_audio(io.BytesIO(flac))


def utterances(builder: tfds.core.DatasetBuilder, split: str) -> dict[str, np.ndarray]:
    """{"samples": each record's length in samples, "transcripts": lower case, "ids"}, read once from the
    records' FLAC headers and kept in ``trainmark-utterances-<split>.npz`` beside them."""
    from trainmark.files import write_atomic

    path = Path(builder.data_dir) / UTTERANCES_FILE.format(split=split)
    if not path.is_file():
        samples, texts, ids = [], [], []
        for record in RecordReader(builder, split).source:  # every record once: headers read, audio not decoded
            info = sf.info(io.BytesIO(record["speech"]))
            utterance = record["id"].decode() if isinstance(record["id"], bytes) else str(record["id"])
            if info.samplerate != librispeech.SAMPLE_RATE:
                raise UserError(f"{builder.data_dir} ({split}): {utterance} is {info.samplerate} Hz, LibriSpeech is "
                                f"{librispeech.SAMPLE_RATE} Hz")
            samples.append(info.frames)
            texts.append(record["text"].decode("utf-8").strip().lower())
            ids.append(utterance)

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:  # a file, not a name: numpy would append ".npz" to the temporary name
                np.savez(f, samples=np.asarray(samples, np.int64), transcripts=np.array(texts), ids=np.array(ids))
        write_atomic(path, write)
    with np.load(path) as saved:  # arrays of numbers and fixed-width strings: no pickle
        return {key: saved[key] for key in ("samples", "transcripts", "ids")}


def manifest(builder: tfds.core.DatasetBuilder, subset: str) -> librispeech.Manifest:
    """One subset as ``librispeech.read_subset`` returns it, its audio read from tfds's records."""
    found = utterances(builder, SPLITS[subset])
    if not len(found["samples"]):
        raise UserError(f"{builder.data_dir}: no utterances in {subset}: {HOW_TO_GET}")
    reader = RecordReader(builder, SPLITS[subset])
    return librispeech.Manifest([], found["transcripts"].tolist(), found["samples"], reader)


def load(folder: Path, archives: dict[str, dict], train_subsets: tuple[str, ...],
         data_dir: Path | None = None) -> dict[str, librispeech.Manifest]:
    """LibriSpeech through tfds, as ``DS2Full.load_data`` returns it: the training subsets in order, dev-clean
    to evaluate; built once into ``data_dir`` (or $TRAINMARK_TFDS_DIR, or data/tfds)/archives-<key>."""
    infos = url_infos(archives, (*train_subsets, librispeech.EVAL_SUBSET))
    builder = tfds_archives.prepared(builder_class(infos), folder, archives, infos, HOW_TO_GET, data_dir,
                                     config=CONFIG, file_format="array_record")
    return {"train": librispeech.concat([manifest(builder, s) for s in train_subsets]),
            "eval": manifest(builder, librispeech.EVAL_SUBSET)}
