"""lstm-mini / lstm: the KJV preparation, PTB-format loading, the model, perplexity, and one
short real trial through `trainmark data prepare`, `trainmark run` and `trainmark check`.

The trial uses test-only rules (tests/rules/1.2/lstm-mini.yaml: the first 4,000 training and
400 validation verses of the real prepared files, pinned by checksum, a lower perplexity target)
in the closed division, so preparation, verification, training and checking all run.
"""
import math
import shutil

import pytest
import torch
from conftest import check_passes, one_trial

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import kjv, registry, text_corpus
from trainmark.reference.lstm import EVAL_STREAMS
from trainmark.reference.lstm_model import LSTMLanguageModel
from trainmark.rules import get_rules

HAVE_BIBLE = shutil.which("bible") is not None
needs_bible = pytest.mark.skipif(not HAVE_BIBLE, reason="Debian bible-kjv not installed (apt-get install bible-kjv)")


def fake_listing(verses_per_chapter=26):
    """A `bible -f` listing of the KJV's verse count; chapter c's verses say 'chapter c'."""
    lines, chapter = [], 0
    for i in range(kjv.EXPECTED_VERSES):
        if i % verses_per_chapter == 0:
            chapter += 1
        lines.append(f"Ge{chapter}:{i % verses_per_chapter + 1} In chapter {chapter}, the LORD's word.")
    return lines


def test_tokenize_lowercases_and_splits_punctuation_and_possessives():
    assert kjv.tokenize("And God said, Let there be light: and there was light.") == \
        "and god said , let there be light : and there was light .".split()
    assert kjv.tokenize("the LORD's house, the sons' (twelve)") == \
        ["the", "lord", "'s", "house", ",", "the", "sons", "'", "(", "twelve", ")"]


def test_every_tenth_chapter_is_held_out():
    train, valid = kjv.split_verses(fake_listing())
    assert len(train) + len(valid) == kjv.EXPECTED_VERSES
    held = {int(v.split()[2]) for v in valid}
    assert held and all(c % 10 == 0 for c in held)
    assert not any(int(t.split()[2]) % 10 == 0 for t in train)
    assert valid[0] == "in chapter 10 , the lord 's word ."


def test_a_truncated_listing_is_refused(tmp_path):
    source = tmp_path / "kjv.txt"
    source.write_text("\n".join(fake_listing()[:-1]) + "\n")
    with pytest.raises(UserError, match="31101 verses, expected 31102"):
        kjv.prepare(tmp_path / "out", source)


def test_vocabulary_order_cap_and_padding():
    lines = [["b", "a", "b"], ["c", "b", "a"], []]
    vocab = text_corpus.build_vocab([x + [text_corpus.EOS] for x in lines])
    assert vocab == ["<unk>", "<eos>", "b", "a", "c"]          # by count, then spelling
    assert text_corpus.build_vocab([["z", "y"]], size=3) == ["<unk>", "<eos>", "y"]
    assert text_corpus.build_vocab([["z"]], size=5) == ["<unk>", "<eos>", "z", "<unused0>", "<unused1>"]


def test_ptb_and_wikitext_files_load_with_eos_per_line(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text(" = Title = \n\n the cat sat \n the cat @-@ ran \n")
    (tmp_path / "wiki.valid.tokens").write_text(" the dog sat \n")
    corpus = text_corpus.load(tmp_path / "wiki.train.tokens", tmp_path / "wiki.valid.tokens", None)
    v = {t: i for i, t in enumerate(corpus.vocab)}
    assert corpus.train.tolist() == [v["="], v["Title"], v["="], v["<eos>"], v["<eos>"],
                                      v["the"], v["cat"], v["sat"], v["<eos>"], v["the"], v["cat"], v["@-@"],
                                      v["ran"], v["<eos>"]]
    assert corpus.valid.tolist() == [v["the"], 0, v["sat"], v["<eos>"]]   # 'dog' is unknown
    assert corpus.unk_rate == pytest.approx(0.25)

    ptb = tmp_path / "ptb"
    ptb.mkdir()
    (ptb / "ptb.train.txt").write_text(" the cat sat \n")
    (ptb / "ptb.valid.txt").write_text(" the cat \n")
    full = registry.get("lstm")
    data = full.load_data(ptb)
    assert len(data.vocab) == full.vocab_size and data.valid.tolist()[-1] == 1
    with pytest.raises(UserError, match="wiki.train.tokens"):
        full.load_data(tmp_path / "nowhere")


def test_tied_embedding_is_the_adaptive_softmax_weights():
    torch.manual_seed(0)
    model = LSTMLanguageModel(vocab_size=50, hidden=16, layers=1, cutoffs=[10], div_value=4.0)
    emb = model.embedding_matrix()
    assert emb.shape == (50, 16)
    assert torch.equal(emb[:10], model.softmax.head.weight[:10])
    tail = model.softmax.tail[0]
    assert torch.allclose(emb[10:], tail[1].weight @ tail[0].weight)
    names = {n for n, _ in model.named_parameters()}
    assert not any("embed" in n for n in names)                 # no separate input table


def test_perplexity_is_exp_of_mean_nll():
    ref = registry.get("lstm-mini")
    assert ref.finalize_metric(1000 * math.log(100.0), 1000) == pytest.approx(100.0)
    assert ref.finalize_metric(1e6, 10) == float("inf")
    assert math.isnan(ref.finalize_metric(0.0, 0.0))


def test_evaluation_carries_state_and_splits_across_ranks():
    """Chunked evaluation equals one pass over each stream, and two ranks sum to one."""
    torch.manual_seed(0)
    ref = registry.get("lstm-mini")
    ref.vocab_size, ref.hidden, ref.cutoffs = 60, 16, [20]
    model = LSTMLanguageModel(60, 16, 1, [20]).eval()
    g = torch.Generator().manual_seed(1)
    data = text_corpus.Corpus([str(i) for i in range(60)], torch.zeros(0, dtype=torch.long),
                              torch.randint(0, 60, (EVAL_STREAMS * 40 + 5,), generator=g))
    ref.eval_chunk = 7
    total, count = ref.evaluate(model, data, torch.device("cpu"))
    assert count == EVAL_STREAMS * 40 == ref.eval_samples(data)
    ref.eval_chunk = 1000
    whole, _ = ref.evaluate(model, data, torch.device("cpu"))
    assert total == pytest.approx(whole, rel=1e-5)
    halves = [ref.evaluate(model, data, torch.device("cpu"), rank=r, world=2) for r in (0, 1)]
    assert sum(h[0] for h in halves) == pytest.approx(total, rel=1e-5) and sum(h[1] for h in halves) == count


def test_training_windows_cover_the_stream_and_shift_by_one():
    ref = registry.get("lstm-mini")
    data = text_corpus.Corpus([], torch.arange(1000), torch.zeros(0, dtype=torch.long))
    g = torch.Generator().manual_seed(0)
    batches = list(ref.train_batches(data, 1, 4, g))
    assert len(batches) == ref.train_samples(data) // 4
    x, y = batches[0]
    assert x.shape == (4, ref.bptt) and torch.equal(y[:, :-1], x[:, 1:])
    starts = torch.cat([b[0][:, 0] for b in batches])
    assert len(set(starts.tolist())) == len(starts)                    # no window twice
    assert len({int(s) % ref.bptt for s in starts}) == 1                # one offset per epoch
    rank_starts = [torch.cat([b[0][:, 0] for b in ref.train_batches(data, 1, 2, torch.Generator().manual_seed(0),
                                                                      rank=r, world=2)]) for r in (0, 1)]
    assert not set(rank_starts[0].tolist()) & set(rank_starts[1].tolist())


@needs_bible
def test_prepare_matches_the_rules_checksums(tmp_path, capsys):
    assert main(["data", "prepare", "lstm-mini", "--data-dir", str(tmp_path)]) == 0
    assert "2 files" in capsys.readouterr().out
    rules = get_rules("lstm-mini")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(rules.dataset["files"])
    (tmp_path / kjv.VALID_FILE).write_text("tampered\n")
    assert main(["data", "verify", "lstm-mini", "--data-dir", str(tmp_path)]) == 1


def test_prepare_is_refused_for_a_downloaded_dataset(capsys):
    assert main(["data", "prepare", "resnet-mini", "--data-dir", "/nonexistent"]) == 2
    assert "nothing to prepare" in capsys.readouterr().err


def prepare_test_cut(tmp_path):
    """The test rules' cut of the prepared KJV (the first 4,000 training and 400 validation verses)."""
    full, data = tmp_path / "full", tmp_path / "data"
    assert main(["data", "prepare", "lstm-mini", "--data-dir", str(full)]) == 0
    data.mkdir()
    for name, keep in ((kjv.TRAIN_FILE, 4000), (kjv.VALID_FILE, 400)):   # the test rules pin these cuts
        lines = (full / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (data / name).write_text("".join(lines[:keep]), encoding="utf-8")
    return data


@needs_bible
def test_one_short_trial_then_check(tmp_path, capsys):
    data = prepare_test_cut(tmp_path)
    out, t, target = one_trial(tmp_path, "lstm-mini", data, seed=7)
    d = out / "closed" / "ci" / "results" / "ci-box" / "lstm-mini"
    assert t["status"] == "converged" and 1.0 < t["final_metric"] <= target
    assert t["flops_per_step"] > 0 and t["epochs"] == 1
    assert (d / "trial_1" / "model.safetensors").stat().st_size < 8_000_000
    report = check_passes(out, capsys)
    (bench,) = report["benchmarks"]
    assert bench["score"]["trials"] == 1 and bench["score"]["converged"] == 1
