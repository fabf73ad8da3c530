"""ds2-mini / ds2: WER and greedy CTC decoding on known values, FSDD packing and LibriSpeech
reading on fixtures written with soundfile, the model's padding invariance, length bucketing,
and one short real ds2-mini trial through `trainmark run` and `trainmark check`.
"""
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from conftest import check_passes, one_trial

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import ctc, fsdd, librispeech, registry
from trainmark.reference.batching import length_buckets
from trainmark.reference.ds2_model import ConvSpec, DeepSpeech2
from trainmark.rules import get_rules

FSDD = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "fsdd"
needs_fsdd = pytest.mark.skipif(not (FSDD / "recordings").is_dir(),
                                reason="FSDD not at ../shared/datasets/fsdd "
                                       "(clone Jakobovski/free-spoken-digit-dataset)")


def test_wer_on_known_strings():
    # one substitution (sat -> sit) and one deletion (the) over six reference words
    assert ctc.corpus_wer(["the cat sit on mat"], ["the cat sat on the mat"]) == (2, 6)
    assert ctc.corpus_wer(["a b c", ""], ["a b c", "x y"]) == (2, 5)
    assert ctc.word_errors("one two three four".split(), "one two".split()) == 2   # two insertions


def test_greedy_decoding_merges_repeats_and_drops_blanks():
    frames = [[1, 1, 0, 1, 2, 2, 0, 0, 3, 3], [4, 0, 4, 4, 0, 0, 5, 5, 5, 5]]
    log_probs = torch.full((10, 2, 6), -10.0)
    for b, seq in enumerate(frames):
        for t, c in enumerate(seq):
            log_probs[t, b, c] = 0.0
    assert ctc.greedy_decode(log_probs, torch.tensor([10, 6])) == [[1, 1, 2, 3], [4, 4]]


def write_fsdd_fixture(root: Path, rate: int = 8000, takes: int = 6) -> dict[str, np.ndarray]:
    """A miniature FSDD checkout: 10 digits x 1 speaker x ``takes`` takes of distinct noise."""
    (root / "recordings").mkdir(parents=True)
    rng = np.random.default_rng(0)
    written = {}
    for digit in range(10):
        for take in range(takes):
            wave = (rng.standard_normal(800 + 40 * digit + take) * 3000).astype(np.int16)
            name = f"{digit}_tester_{take}.wav"
            sf.write(root / "recordings" / name, wave, rate, subtype="PCM_16")
            written[name] = wave
    return written


def test_fsdd_packing_split_and_evaluation_utterances(tmp_path):
    written = write_fsdd_fixture(tmp_path / "src")
    files = fsdd.prepare(tmp_path / "out", tmp_path / "src")
    data = fsdd.load(tmp_path / "out")
    rec = data.recordings
    assert len(rec.names) == 60 and sorted(rec.names) == sorted(written)
    for i, name in enumerate(rec.names):
        assert np.array_equal(rec.wave(i), written[name])
        assert rec.held_out[i] == (int(name.split("_")[2][:-4]) < 5)       # takes 0-4 held out
    assert [rec.names[i] for i in data.train_pool] == [f"{d}_tester_5.wav" for d in range(10)]
    assert len(data.eval_utterances) == fsdd.EVAL_UTTERANCES
    for u in data.eval_utterances:
        assert 3 <= len(u.recordings) <= 6 and all(rec.held_out[i] for i in u.recordings)
        assert all(400 <= g <= 1200 for g in u.gaps)                       # 50-150 ms at 8 kHz
        assert u.transcript(rec).split() == [fsdd.WORDS[rec.digit[i]] for i in u.recordings]
        assert len(u.render(rec)) == u.samples(rec)
    again = fsdd.prepare(tmp_path / "again", tmp_path / "src")
    assert [f.read_bytes() for f in files] == [f.read_bytes() for f in again]   # deterministic


def test_fsdd_refuses_other_sample_rates(tmp_path):
    write_fsdd_fixture(tmp_path / "src", rate=16000, takes=1)
    with pytest.raises(UserError, match="16000 Hz"):
        fsdd.prepare(tmp_path / "out", tmp_path / "src")


@needs_fsdd
def test_real_fsdd_prepares_to_the_rules_checksums(tmp_path, capsys):
    assert main(["data", "prepare", "ds2-mini", "--source", str(FSDD), "--data-dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(get_rules("ds2-mini").dataset["files"])


def test_prepare_needs_to_be_told_where_fsdd_is(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TRAINMARK_FSDD", raising=False)
    assert main(["data", "prepare", "ds2-mini", "--data-dir", str(tmp_path)]) == 2
    assert "free-spoken-digit-dataset" in capsys.readouterr().err
    with pytest.raises(UserError, match="no FSDD recordings"):
        fsdd.prepare(tmp_path / "out", tmp_path)


def write_librispeech_fixture(root: Path) -> dict[str, tuple[np.ndarray, str]]:
    rng = np.random.default_rng(1)
    out = {}
    for subset in (*librispeech.TRAIN_SUBSETS, librispeech.EVAL_SUBSET):
        for speaker, chapter in ((84, 121123), (174, 50561)):
            folder = root / subset / str(speaker) / str(chapter)
            folder.mkdir(parents=True)
            lines = []
            for k in range(2):
                utt = f"{speaker}-{chapter}-{k:04d}"
                wave = (rng.standard_normal(1600 * (k + 1)) * 2000).astype(np.int16)
                text = f"HELLO WORLD IT'S {('ONE', 'TWO')[k]} OF {subset.split('-')[0].upper()}"
                sf.write(folder / f"{utt}.flac", wave, 16000, format="FLAC", subtype="PCM_16")
                lines.append(f"{utt} {text}")
                out[f"{subset}/{utt}"] = (wave, text)
            (folder / f"{speaker}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    return out


def test_librispeech_reader_on_a_flac_fixture(tmp_path):
    written = write_librispeech_fixture(tmp_path)
    dev = librispeech.read_subset(tmp_path, "dev-clean")
    assert len(dev) == 4 and dev.paths[0].name == "174-50561-0000.flac"   # sorted by speaker folder name
    for path, text, n in zip(dev.paths, dev.transcripts, dev.samples):
        wave, ref_text = written[f"dev-clean/{path.stem}"]
        assert text == ref_text.lower() and n == len(wave)
        assert np.allclose(librispeech.read_audio(path), wave / 32768.0)   # FLAC is lossless
    ids = librispeech.encode("it's a test")
    assert min(ids) > 0 and librispeech.decode(ids) == "it's a test"
    with pytest.raises(ValueError, match="not in the LibriSpeech alphabet"):
        librispeech.encode("naïve")
    ref = registry.get("ds2")
    data = ref.load_data(tmp_path)
    assert ref.train_samples(data) == 12 and ref.eval_samples(data) == 4
    batches = list(ref.train_batches(data, 1, 4, torch.Generator().manual_seed(0)))
    assert len(batches) == 3
    ref.prefetch_batches = 0                                               # read-ahead changes nothing
    in_loop = list(ref.train_batches(data, 1, 4, torch.Generator().manual_seed(0)))
    assert all(torch.equal(a, b) for x, y in zip(batches, in_loop) for a, b in zip(x, y))
    waves, samples, targets, target_lens = batches[0]
    assert waves.shape == (4, int(samples.max())) and targets.shape[0] == 4 and int(target_lens.min()) > 10
    with pytest.raises(UserError, match="openslr"):
        ref.load_data(tmp_path / "nowhere")


def test_the_rate_warms_up_holds_its_peak_then_decays_to_the_final_factor():
    from trainmark.reference.ds2 import hold_then_decay

    f = [hold_then_decay(s, 4, 10, 20, 0.0) for s in range(24)]
    assert f[:4] == [0.25, 0.5, 0.75, 1.0]                        # warm-up over 4 steps
    assert f[4:11] == [1.0] * 7                                   # the peak held to step 10
    assert all(a > b for a, b in zip(f[10:21], f[11:21]))          # then strictly down ...
    assert f[15] == 0.5 and f[20:] == [0.0] * 4                    # ... linearly, to 0 at step 20, and stays
    assert hold_then_decay(25, 0, 10, 20, 0.25) == 0.25            # a final factor is kept after the decay


def test_ds2_mini_optimizer_follows_the_rules_schedule():
    ref = registry.get("ds2-mini")
    hp = get_rules("ds2-mini").defaults()
    model = torch.nn.Linear(2, 2)
    steps = 2000 // hp["global_batch_size"]  # 62: an epoch of 2,000 utterances
    opt, sched = ref.make_optimizer(model, hp, steps_per_epoch=steps)
    rates = []
    for _ in range(steps * hp["opt_learning_rate_decay_epochs"] + 2):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    peak, hold = hp["opt_base_learning_rate"], steps * hp["opt_learning_rate_decay_start_epochs"]
    assert rates[0] < peak / 10 and max(rates) == pytest.approx(peak)   # warmed up, never above the peak
    assert rates[hold - 1] == pytest.approx(peak)
    assert rates[-1] == pytest.approx(peak * hp["opt_learning_rate_final_factor"])
    assert rates[hold + 1] < peak


def test_length_buckets_cover_each_item_once_and_group_similar_lengths():
    lengths = torch.randint(100, 10_000, (1000,), generator=torch.Generator().manual_seed(0))
    per_rank = [length_buckets(lengths, 8, r, 2, torch.Generator().manual_seed(3), group_batches=10) for r in (0, 1)]
    items = torch.cat([b for batches in per_rank for b in batches])
    assert len(items) == 1000 - 1000 % 16 and len(set(items.tolist())) == len(items)
    spread = np.mean([float(lengths[b].max() - lengths[b].min()) for b in per_rank[0]])
    assert spread < 0.1 * float(lengths.max() - lengths.min())          # batches hold similar lengths
    for b0, b1 in zip(*per_rank):                                        # ranks step through the same global batch
        assert abs(float(lengths[b0].float().mean() - lengths[b1].float().mean())) < 1500


def test_model_output_does_not_depend_on_padding():
    torch.manual_seed(0)
    model = DeepSpeech2(40, 11, [ConvSpec(8, (11, 11), (2, 2), (5, 5)), ConvSpec(8, (5, 5), (1, 2), (2, 2))],
                        rnn_hidden=16, rnn_layers=2).eval()
    feats = torch.randn(2, 40, 120)
    lengths = torch.tensor([120, 70])
    feats[1, :, 70:] = 0.0
    log_probs, out_lens = model(feats, lengths)
    assert out_lens.tolist() == [30, 18] and log_probs.shape == (30, 2, 11)
    alone, _ = model(feats[1:, :, :70], lengths[1:])
    assert torch.allclose(alone[:, 0], log_probs[:18, 1], atol=1e-5)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(30, 2), atol=1e-4)


def test_frontend_ignores_padding():
    ref = registry.get("ds2-mini")
    front = ref.frontend(torch.device("cpu"))
    wave = torch.randn(1, 8000)
    padded = torch.cat([wave, torch.zeros(1, 4000)], 1)
    a, na = front(wave, torch.tensor([8000]))
    b, nb = front(padded, torch.tensor([8000]))
    assert na.tolist() == nb.tolist() == [(8000 - 256) // 80 + 1]
    assert torch.allclose(a, b[..., :a.size(-1)], atol=1e-4) and float(b[..., int(na):].abs().max()) == 0.0


@needs_fsdd
def test_one_short_trial_then_check(tmp_path, capsys):
    data = tmp_path / "data"
    assert main(["data", "prepare", "ds2-mini", "--source", str(FSDD), "--data-dir", str(data)]) == 0
    out, t, target = one_trial(tmp_path, "ds2-mini", data, seed=3)
    d = out / "closed" / "ci" / "results" / "ci-box" / "ds2-mini"
    assert t["status"] == "converged" and 0.0 <= t["final_metric"] <= target
    assert t["flops_per_step"] > 0
    assert (d / "trial_1" / "model.safetensors").stat().st_size < 4_000_000
    report = check_passes(out, capsys)
    (bench,) = report["benchmarks"]
    assert bench["score"]["trials"] == 1 and bench["score"]["converged"] == 1
