"""ImageNet under --framework tensorflow (issue 17): tfds's imagenet2012 built from the two tars, read in the
PyTorch loader's order and numbering, and the full-size Keras twins trained by the same harness.

The fixture is ImageNet's two archives in miniature, as image-net.org hands them out: a train tar of
per-class tars (``<wnid>.tar`` of ``<wnid>_<i>.JPEG``) and a val tar of ``ILSVRC2012_val_<8 digits>.JPEG``,
whose classes tfds takes, by position, from its own validation_labels.txt. The same images are also
written as the extracted folders the PyTorch loader reads, so the two paths can be compared image for image.
"""
import importlib.resources
import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from test_tensorflow import needs_tf

from trainmark.cli import main
from trainmark.reference import imagenet

VAL_IMAGES = 6   # their classes: the first 6 lines of tfds's validation_labels.txt (6 distinct wnids)
TRAIN_PER_CLASS = 2


def _jpeg(seed: int, size: tuple[int, int]) -> bytes:
    """A noise image (every pixel matters when two loaders are compared), JPEG-encoded."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90)
    return out.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_archives(tars: Path, folders: Path) -> list[str]:
    """The two tars in ``tars`` and the same images extracted in ``folders``; returns the wnids, sorted."""
    labels_file = importlib.resources.files("tensorflow_datasets.datasets.imagenet2012") / "validation_labels.txt"
    val_wnids = labels_file.read_text().split()[:VAL_IMAGES]
    tars.mkdir(parents=True)
    with tarfile.open(tars / "ILSVRC2012_img_val.tar", "w") as val:
        for i, wnid in enumerate(val_wnids, start=1):
            name, data = f"ILSVRC2012_val_{i:08d}.JPEG", _jpeg(1000 + i, (300 + 10 * i, 260))
            _add(val, name, data)
            (folders / "val" / wnid).mkdir(parents=True, exist_ok=True)
            (folders / "val" / wnid / name).write_bytes(data)
    with tarfile.open(tars / "ILSVRC2012_img_train.tar", "w") as train:
        for c, wnid in enumerate(val_wnids):
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w") as per_class:
                for i in range(TRAIN_PER_CLASS):
                    name, data = f"{wnid}_{i}.JPEG", _jpeg(10 * c + i, (280, 320 + 20 * i))
                    _add(per_class, name, data)
                    (folders / "train" / wnid).mkdir(parents=True, exist_ok=True)
                    (folders / "train" / wnid / name).write_bytes(data)
            _add(train, f"{wnid}.tar", inner.getvalue())
    return sorted(val_wnids)


@pytest.fixture
def archives(tmp_path, monkeypatch):
    """(folder of the two tars, folder of the same images extracted, wnids), data read in this process."""
    monkeypatch.setenv(imagenet.WORKERS_ENV, "0")
    monkeypatch.setenv("TRAINMARK_TFDS_DIR", str(tmp_path / "tfds"))
    wnids = write_archives(tmp_path / "tars", tmp_path / "folders")
    return tmp_path / "tars", tmp_path / "folders", wnids


@needs_tf
def test_tfds_imagenet2012_is_the_folder_loaders_data_in_its_order(archives):
    from trainmark.reference.tfds_builders import imagenet2012

    tars, folders, wnids = archives
    ours, theirs = imagenet2012.load(tars, 224, 256, 224), imagenet.load(folders, 224, 256, 224)
    assert ours.classes == theirs.classes == wnids
    for split in ("train", "val"):
        a, b = getattr(ours, split), getattr(theirs, split)
        assert len(a) == len(b) == (len(wnids) * TRAIN_PER_CLASS if split == "train" else VAL_IMAGES)
        for i in range(len(b)):
            torch.manual_seed(i)  # the train transform draws its crop and flip from torch's generator
            image_a, label_a = a[i]
            torch.manual_seed(i)
            image_b, label_b = b[i]
            assert label_a == label_b and torch.equal(image_a, image_b), (split, i)
    # the order is kept beside tfds's files: a second load reads it instead of every record
    kept = sorted(p.name for p in Path(imagenet2012.prepared(tars).data_dir).glob("trainmark-order-*"))
    assert kept == ["trainmark-order-train.npz", "trainmark-order-validation.npz"]


@needs_tf
def test_tfds_imagenet2012_is_read_by_worker_processes(archives, monkeypatch):
    """A real run decodes in DataLoader workers. Forked from a process that has run TensorFlow and
    array_record's readers, a worker dies of a segmentation fault; the split's workers are spawned instead,
    and their batches are the folder loader's."""
    from trainmark.reference.tfds_builders import imagenet2012

    tars, folders, _ = archives
    ours, theirs = imagenet2012.load(tars, 224, 256, 224), imagenet.load(folders, 224, 256, 224)
    monkeypatch.setenv(imagenet.WORKERS_ENV, "1")
    order = list(range(VAL_IMAGES))[::-1]
    got = list(imagenet.loader(ours.val, order, 4, seed=0, drop_last=False))
    monkeypatch.setenv(imagenet.WORKERS_ENV, "0")
    want = list(imagenet.loader(theirs.val, order, 4, seed=0, drop_last=False))
    assert len(got) == len(want) == 2
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(got, want))


@needs_tf
def test_tfds_imagenet2012_missing_archive_is_one_line(archives):
    from trainmark.errors import UserError
    from trainmark.reference.tfds_builders import imagenet2012

    tars, _, _ = archives
    (tars / "ILSVRC2012_img_val.tar").unlink()
    with pytest.raises(UserError) as error:
        imagenet2012.load(tars, 224, 256, 224)
    message = str(error.value)
    assert len(message.splitlines()) == 1 and "ILSVRC2012_img_val.tar: missing" in message


def _rules_pinning(tmp_path, tars: Path) -> Path:
    """The test rules, with inception-v3's archives pinned by the fixture's MD5s, its listing by the folders'
    counts, and the released hashes generated."""
    import hashlib
    import shutil

    import yaml
    from conftest import TEST_RULES
    from test_implementation_record import _rules_with_hashes

    src = tmp_path / "src"
    shutil.copytree(TEST_RULES, src)
    rule_file = src / "1.2" / "inception-v3.yaml"
    rule = yaml.safe_load(rule_file.read_text())
    rule["dataset"]["archives"] = {p.name: {"md5": hashlib.md5(p.read_bytes()).hexdigest()}
                                   for p in sorted(tars.iterdir())}
    classes = VAL_IMAGES  # the extracted folders' counts, for the PyTorch path's listing
    rule["dataset"]["listing"]["splits"] = {"train": {"classes": classes, "files": classes * TRAIN_PER_CLASS},
                                            "val": {"classes": classes, "files": VAL_IMAGES}}
    rule_file.write_text(yaml.safe_dump(rule))
    return _rules_with_hashes(tmp_path / "rules", src)


@needs_tf
@pytest.mark.slow
def test_inception_v3_trains_under_tensorflow_on_the_archives_then_passes_the_checker(archives, tmp_path, capsys,
                                                                                     monkeypatch):
    """The full-size twin (auxiliary classifier included) through `trainmark run` on tfds's imagenet2012, then
    `trainmark check`; the weights, in the PyTorch reference, give the twin's accuracy; a changed archive is
    refused before anything trains."""
    from test_tensorflow import _trial_under_tensorflow

    tars, folders, _ = archives
    rules = _rules_pinning(tmp_path, tars)
    t, target, ref, model = _trial_under_tensorflow("inception-v3", rules, tars, 5, "imagenet2012", tmp_path,
                                                    capsys, monkeypatch)
    assert t["steps"] == 3 and t["flops_per_step"] > 4 * 3 * 5.7e9 * 2  # 12 images / batch 4; > the forward
    assert target <= t["final_metric"] <= 1
    correct, seen = ref.evaluate(model, imagenet.load(folders, ref.train_crop, ref.eval_resize, ref.eval_crop), "cpu")
    assert seen == VAL_IMAGES and correct / seen == pytest.approx(t["final_metric"], abs=1e-9)

    with open(tars / "ILSVRC2012_img_val.tar", "ab") as f:
        f.write(b"\0" * 512)
    capsys.readouterr()
    assert main(["run", "inception-v3", "--framework", "tensorflow", "--rules-dir", str(rules), "--data-dir",
                 str(tars), "--out", str(tmp_path / "again"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "ILSVRC2012_img_val.tar: md5" in err
    assert not (tmp_path / "again" / "closed" / "anonymous" / "results").exists()


@needs_tf
def test_a_pytorch_run_reads_the_folders_not_the_archives(archives, tmp_path, capsys):
    """PyTorch reads the extracted folders: its closed run checks the listing, which the tars do not satisfy."""
    tars, _, _ = archives
    rules = _rules_pinning(tmp_path, tars)
    assert main(["run", "inception-v3", "--rules-dir", str(rules), "--data-dir", str(tars),
                 "--out", str(tmp_path / "sub"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "does not match rules" in err and f"{tars / 'train'}: missing" in err


@needs_tf
def test_data_verify_checks_what_the_framework_reads(archives, tmp_path, capsys):
    """`trainmark data verify --framework tensorflow` checks the archives, as a TensorFlow run does; without
    it, the extracted folders, as a PyTorch run does."""
    tars, folders, _ = archives
    rules = _rules_pinning(tmp_path, tars)
    verify = ["data", "verify", "inception-v3", "--rules-dir", str(rules), "--data-dir"]
    assert main([*verify, str(tars), "--framework", "tensorflow"]) == 0
    assert f"inception-v3: 2 files in {tars} match" in capsys.readouterr().out
    assert main([*verify, str(folders)]) == 0
    assert main([*verify, str(folders), "--framework", "tensorflow"]) != 0
    assert f"{folders / 'ILSVRC2012_img_train.tar'}: missing" in capsys.readouterr().err
    victim = tars / "ILSVRC2012_img_train.tar"
    victim.write_bytes(victim.read_bytes()[:-512])
    assert main([*verify, str(tars), "--framework", "tensorflow"]) != 0
    assert f"{victim}: md5" in capsys.readouterr().err
