"""The ImageNet folder loader on a fixture in the standard layout, and inception-v3 through the harness.

The fixture: ``train/<wnid>/*.JPEG`` (4 per class) and ``val/<wnid>/*.JPEG`` (2 per class), three
wnids created out of sorted order, every image a solid colour chosen by the wnid's *sorted*
position (red, green, blue), so a label can be checked from any crop's pixels.
"""
import json
from pathlib import Path

import pytest
import torch
from conftest import TEST_RULES
from PIL import Image

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import imagenet, registry
from trainmark.rules.datasets import listing, verify_dataset
from trainmark.rules.ruleset import BenchmarkRules

WNIDS = ["n03000134", "n01440764", "n02102040"]  # created in this order; sorted: 1440764, 2102040, 3000134
COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]  # by sorted position
SIZES = [(320, 240), (200, 360), (500, 375), (260, 260)]


def write_fixture(root: Path) -> Path:
    for wnid in WNIDS:
        colour = COLOURS[sorted(WNIDS).index(wnid)]
        for split, count in (("train", 4), ("val", 2)):
            folder = root / split / wnid
            folder.mkdir(parents=True)
            for i in range(count):
                Image.new("RGB", SIZES[i], colour).save(folder / f"{wnid}_{i}.JPEG", quality=95)
    return root


@pytest.fixture
def fixture_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(imagenet.WORKERS_ENV, "0")
    return write_fixture(tmp_path / "imagenet")


def colour_class(images: torch.Tensor) -> torch.Tensor:
    """Index of the dominant channel of each uint8 image [N, 3, H, W]."""
    return images.float().mean((2, 3)).argmax(1)


def test_labels_follow_the_sorted_wnids(fixture_dir):
    data = imagenet.load(fixture_dir, 224, 256, 224)
    assert data.classes == sorted(WNIDS)
    assert len(data.train) == 12 and len(data.val) == 6
    for split in (data.train, data.val):
        for path, label in zip(split.paths, split.labels):
            assert data.classes[label] == path.decode().split("/")[0]


def test_train_batches_are_augmented_crops_with_the_right_labels(fixture_dir, monkeypatch):
    ref = registry.get("resnet50")
    data = ref.load_data(fixture_dir)
    monkeypatch.setenv(imagenet.WORKERS_ENV, "1")  # one worker process: the path a GPU run takes
    batches = list(ref.train_batches(data, 1, 5, torch.Generator().manual_seed(0)))
    assert len(batches) == 2  # 12 // 5, the ragged batch dropped
    for images, labels in batches:
        assert images.dtype == torch.uint8 and images.shape == (5, 3, 224, 224)
        assert torch.equal(colour_class(images), labels)
    seen = torch.cat([labels for _, labels in batches])
    assert len(set(seen.tolist())) > 1  # shuffled across classes


def test_epochs_reshuffle_and_ranks_split_the_data(fixture_dir):
    ref = registry.get("resnet50")
    data = ref.load_data(fixture_dir)
    g = torch.Generator().manual_seed(0)
    order = lambda rank, world: [tuple(lbl.tolist()) for _, lbl in ref.train_batches(data, 1, 2, g, rank, world)]  # noqa: E731
    first, second = order(0, 1), order(0, 1)
    assert first != second  # the same generator moves on: a new permutation each epoch
    assert len(order(0, 2)) == len(order(1, 2)) == 3  # 12 // 2 ranks // batch 2


def test_eval_transform_resizes_then_center_crops(fixture_dir):
    for name, crop in (("resnet50", 224), ("inception-v3", 299)):
        data = registry.get(name).load_data(fixture_dir)
        image, label = data.val[0]
        assert image.shape == (3, crop, crop) and image.dtype == torch.uint8
        assert torch.equal(image, data.val[0][0])  # no randomness in evaluation
    # A 512x256 image, black left and right quarters: resize 256 -> 512x256, center crop 224 keeps only the middle.
    img = Image.new("RGB", (512, 256), (0, 0, 0))
    img.paste((255, 255, 255), (128, 0, 384, 256))
    out = imagenet.eval_transform(256, 224)(img)
    assert out.shape == (3, 224, 224) and out.float().mean() > 250


def test_to_device_normalises_channels_last(fixture_dir):
    ref = registry.get("inception-v3")
    images, labels = ref.synthetic_batch(2)
    assert images.dtype == torch.uint8 and images.shape == (2, 3, 299, 299)
    x, y = ref.to_device((images, labels), torch.device("cpu"), train=True)
    assert x.dtype == torch.float32 and x.is_contiguous(memory_format=torch.channels_last)
    mean, std = torch.tensor(imagenet.MEAN).view(1, 3, 1, 1), torch.tensor(imagenet.STD).view(1, 3, 1, 1)
    assert torch.allclose(x, (images.float() / 255 - mean) / std, atol=1e-5)
    assert torch.equal(y, labels)


def test_evaluate_counts_each_rank_share(fixture_dir):
    ref = registry.get("resnet50")
    data = ref.load_data(fixture_dir)
    by_colour = lambda x: torch.nn.functional.pad(x.mean((2, 3)), (0, 997))  # noqa: E731  (1000 logits)
    assert ref.evaluate(by_colour, data, torch.device("cpu")) == (6.0, 6.0)
    shares = [ref.evaluate(by_colour, data, torch.device("cpu"), rank, 4) for rank in range(4)]
    assert sum(c for _, c in shares) == 6.0 and all(c == n for c, n in shares)


def test_layout_errors_say_what_is_wrong(fixture_dir):
    with pytest.raises(UserError, match="does not exist"):
        imagenet.load(fixture_dir / "nope", 224, 256, 224)
    (fixture_dir / "val" / WNIDS[0]).rename(fixture_dir / "val" / "n09999999")
    with pytest.raises(UserError, match="class folders differ"):
        imagenet.load(fixture_dir, 224, 256, 224)


def _rules_with_listing(splits: dict) -> BenchmarkRules:
    return BenchmarkRules({"dataset": {"files": {}, "listing": {"scheme": "x", "source": "x", "splits": splits}}},
                          Path("x.yaml"))


def test_listing_pins_counts_and_digest(fixture_dir, capsys):
    assert main(["data", "verify", "inception-v3", "--rules-dir", str(TEST_RULES), "--data-dir", str(fixture_dir)]) == 0
    assert "18 files" in capsys.readouterr().out  # the test rules pin the fixture's counts
    classes, files, digest = listing(fixture_dir / "train")
    assert (classes, files) == (3, 12)
    pin = {"train": {"classes": 3, "files": 12, "sha256": digest}, "val": {"classes": 3, "files": 6, "sha256": None}}
    assert verify_dataset(_rules_with_listing(pin), fixture_dir) == []
    victim = next((fixture_dir / "train" / WNIDS[0]).iterdir())
    victim.write_bytes(victim.read_bytes() + b"\0")  # same name, one byte longer
    assert "listing sha256" in verify_dataset(_rules_with_listing(pin), fixture_dir)[0]
    victim.unlink()
    assert "11 files" in verify_dataset(_rules_with_listing(pin), fixture_dir)[0]


def test_inception_v3_trains_on_the_fixture_through_the_harness_and_passes_the_checker(fixture_dir, tmp_path, capsys):
    out = tmp_path / "sub"
    rc = main(["run", "inception-v3", "--rules-dir", str(TEST_RULES), "--data-dir", str(fixture_dir),
               "--out", str(out), "--submitter", "ci", "--system-name", "ci-box", "--seed", "1", "--quiet"])
    assert rc == 0
    d = out / "closed" / "ci" / "results" / "ci-box" / "inception-v3"
    trial = json.loads((d / "trial_1" / "trial.json").read_text())
    assert trial["status"] == "converged" and trial["steps"] == 3  # 12 images / batch 4
    assert trial["flops_per_step"] > 4 * 3 * 5.7e9 * 2  # at least the forward of 4 images at 299 px (5.7 GMAC)
    capsys.readouterr()
    assert main(["check", str(out), "--rules-dir", str(TEST_RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and [f for f in report["findings"] if f["severity"] == "error"] == []
