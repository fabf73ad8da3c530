"""transformer-mini / transformer: the Bible pairing, parallel text and subwords, the model's masks
and decoding, BLEU by sacrebleu (also summed over ranks), the WMT loader on a fixture, and one
short real trial through `trainmark data prepare`, `trainmark run` and `trainmark check`.

The trial uses test-only rules (tests/rules/1.2/transformer-mini.yaml: the first 1,500 training and
50 validation pairs of the real prepared files, pinned by checksum, a lower BLEU target).
"""
import shutil

import pytest
import sacrebleu
import torch
from conftest import check_passes, one_trial

from trainmark.cli import main
from trainmark.errors import UserError
from trainmark.reference import bible_parallel, parallel_text, registry
from trainmark.reference.transformer import TransformerFull
from trainmark.reference.transformer_model import BOS, EOS, PAD
from trainmark.rules import get_rules

HAVE_SWORD = shutil.which("diatheke") is not None
needs_sword = pytest.mark.skipif(not HAVE_SWORD, reason="Debian diatheke + sword-text-kjv/-web not installed")

OSIS = """Genesis 1:1: In the <w>beginning</w>, <w>God</w><w>created</w> the heavens.<milestone type="line"/>
Genesis 1:2: The earth was formless
and empty.<milestone type="line"/>
<title canonical="true" type="psalm">A Psalm by David.</title> Psalms 3:1: Yahweh, how my adversaries have increased!
\u00b6 I Samuel 2:1: Hannah prayed.
(engWEB2015eb)
Genesis 9:9: after the module line, ignored
"""


def test_osis_parsing_keeps_words_apart_joins_lines_and_drops_titles():
    verses = bible_parallel.parse_osis(OSIS, "engWEB2015eb")
    assert verses == {
        ("Genesis", 1, 1): "In the beginning, God created the heavens.",
        ("Genesis", 1, 2): "The earth was formless and empty.",
        ("Psalms", 3, 1): "Yahweh, how my adversaries have increased!",
        ("I Samuel", 2, 1): "Hannah prayed.",
    }


def test_pairs_are_split_by_chapter_and_long_verses_dropped():
    src, tgt = {}, {}
    for ch in range(1, 41):
        src[("Book", ch, 1)], tgt[("Book", ch, 1)] = f"kjv {ch}", f"web {ch}"
        src[("Book", ch, 2)] = " ".join(["w"] * (bible_parallel.MAX_WORDS + 1))   # too long: dropped
        tgt[("Book", ch, 2)] = "short"
        src[("Book", ch, 3)] = "no partner"                                        # no WEB verse: dropped
    pairs = bible_parallel.split_pairs(src, tgt)
    assert pairs["valid"] == [("kjv 20", "web 20"), ("kjv 40", "web 40")]
    assert len(pairs["train"]) == 38 and ("kjv 1", "web 1") in pairs["train"]


def test_a_wrong_verse_count_is_refused(tmp_path):
    (tmp_path / "kjv.osis").write_text(OSIS.replace("engWEB2015eb", "engKJV2006eb"), encoding="utf-8")
    (tmp_path / "web.osis").write_text(OSIS, encoding="utf-8")
    with pytest.raises(UserError, match="4 verses, expected 31102"):
        bible_parallel.prepare(tmp_path / "out", tmp_path)


def test_parallel_files_must_align(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n")
    (tmp_path / "a.de").write_text("eins\n")
    with pytest.raises(UserError, match="a.en has 2 lines but .*a.de has 1"):
        parallel_text.read_pair(tmp_path / "a.en", tmp_path / "a.de")


def _lines(n=400):
    words = "the cat dog sat on a mat with hat and ran far from home of his own red blue big small".split()
    g = torch.Generator().manual_seed(0)
    return [" ".join(words[int(i)] for i in torch.randint(len(words), (int(k),), generator=g))
            for k in torch.randint(3, 12, (n,), generator=g)]


def test_subword_model_is_deterministic_and_has_the_fixed_ids(tmp_path):
    a = parallel_text.train_spm(_lines(), 60, tmp_path / "a.model")
    b = parallel_text.train_spm(_lines(), 60, tmp_path / "b.model")
    assert a.read_bytes() == b.read_bytes()
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(a))
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD, 1, BOS, EOS)
    assert sp.decode(sp.encode("the cat sat on a mat")) == "the cat sat on a mat"


def test_pad_pairs_shift_the_target_and_pad():
    src, tgt_in, tgt_out = parallel_text.pad_pairs([[5, 6], [7]], [[8], [9, 10, 11]])
    assert src.tolist() == [[5, 6, EOS], [7, EOS, PAD]]
    assert tgt_in.tolist() == [[BOS, 8, PAD, PAD], [BOS, 9, 10, 11]]
    assert tgt_out.tolist() == [[8, EOS, PAD, PAD], [9, 10, 11, EOS]]


def _tiny_model():
    torch.manual_seed(0)
    from trainmark.reference.transformer_model import Seq2SeqTransformer

    return Seq2SeqTransformer(50, 32, 4, 2, 2, 64, 0.0, norm_first=True).eval()


def test_padding_does_not_change_the_output_of_real_positions():
    model = _tiny_model()
    src = torch.tensor([[5, 6, 7, EOS]])
    tgt_in = torch.tensor([[BOS, 8, 9]])
    alone = model(src, tgt_in)
    padded = model(torch.tensor([[5, 6, 7, EOS, PAD, PAD]]), torch.tensor([[BOS, 8, 9, PAD]]))
    torch.testing.assert_close(padded[:, :3], alone, atol=1e-5, rtol=1e-5)


def test_decoder_is_causal_and_output_tied_to_the_embedding():
    model = _tiny_model()
    src = torch.tensor([[5, 6, EOS]])
    a = model(src, torch.tensor([[BOS, 8, 9]]))
    b = model(src, torch.tensor([[BOS, 8, 30]]))
    torch.testing.assert_close(a[:, :2], b[:, :2])          # a later token never reaches earlier positions
    assert not torch.allclose(a[:, 2], b[:, 2])
    vocab_sized = [n for n, p in model.named_parameters() if 50 in p.shape]
    assert vocab_sized == ["embed.weight"]          # one embedding for source, target and output
    h = model.transformer.decoder(model._embed(torch.tensor([[BOS]])), model.encode(src)[0])
    torch.testing.assert_close(model(src, torch.tensor([[BOS]])), h @ model.embed.weight.t())


def test_next_logits_are_the_last_position_of_the_full_projection():
    """Greedy decoding projects only the last position onto the vocabulary (rules 1.2): the same logits as
    the full projection's last row, padded batch included."""
    model = _tiny_model().eval()
    src = torch.tensor([[5, 6, 7, EOS], [8, EOS, PAD, PAD]])
    tgt_in = torch.tensor([[BOS, 9, 10], [BOS, 11, 12]])
    memory, src_pad = model.encode(src)
    last = model.next_logits(tgt_in, memory, src_pad)
    assert last.shape == (2, 50)
    torch.testing.assert_close(last, model.decode(tgt_in, memory, src_pad)[:, -1], atol=1e-6, rtol=1e-5)


def test_greedy_stops_at_eos_and_matches_step_by_step_argmax():
    model = _tiny_model()
    src = torch.tensor([[5, 6, EOS], [7, EOS, PAD]])
    out = model.greedy(src, max_len=6)
    for row, s in zip(out, src):
        prefix = [BOS]
        for tok in row:
            logits = model(s[None][:, :int((s != PAD).sum())], torch.tensor([prefix]))
            assert int(logits[0, -1].argmax()) == tok
            prefix.append(tok)
        assert EOS not in row and len(row) <= 6


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_last_position_alone_gives_the_logits_of_the_whole_prefix(norm_first):
    """Greedy decoding's cache (next_logits with ``seen``): step by step, the logits the whole prefix gives, for
    pre-norm (the minis) and post-norm stacks, with a padded source and a PAD inside a finished row's prefix."""
    from trainmark.reference.transformer_model import Seq2SeqTransformer

    torch.manual_seed(1)
    model = Seq2SeqTransformer(50, 32, 4, 2, 3, 64, 0.0, norm_first=norm_first).eval()
    src = torch.tensor([[5, 6, 7, EOS], [8, EOS, PAD, PAD], [9, 10, EOS, PAD]])
    tokens = torch.tensor([[BOS, 11, 12, 13, 14], [BOS, 15, EOS, PAD, PAD], [BOS, 16, 17, 18, EOS]])
    memory, src_pad = model.encode(src)
    seen: list[torch.Tensor] = []
    with torch.no_grad():
        for t in range(1, tokens.shape[1] + 1):
            cached = model.next_logits(tokens[:, :t], memory, src_pad, seen)
            whole = model.next_logits(tokens[:, :t], memory, src_pad)
            torch.testing.assert_close(cached, whole, atol=1e-5, rtol=1e-5)
    assert len(seen) == 3 and seen[0].shape == (3, tokens.shape[1], 32)   # a layer's inputs, every position


def test_bleu_from_summed_statistics_equals_sacrebleu_on_the_whole_corpus():
    hyps = ["the cat sat on the mat", "a dog ran home", "he saw the light", "blue hat"]
    refs = ["the cat sat on a mat", "the dog ran home", "and he saw the light", "a red hat"]
    ref = registry.get("transformer-mini")
    stats = []
    for part in ((0, 2), (2, 4)):   # two ranks, each its share
        s = sacrebleu.metrics.bleu.BLEU().corpus_score(hyps[part[0]:part[1]], [refs[part[0]:part[1]]])
        stats.append([*s.counts, *s.totals, s.sys_len, s.ref_len])
    summed = [a + b for a, b in zip(*stats)]
    assert ref.finalize_metric(*summed) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert ref.finalize_metric(*[0.0] * 10) != ref.finalize_metric(*[0.0] * 10)   # nothing evaluated: NaN
    assert ref.finalize_metric(*[0.0] * 9, 12.0) == 0.0                           # empty hypotheses: 0


def test_evaluate_returns_sacrebleu_statistics_of_greedy_output(tmp_path):
    ref = registry.get("transformer-mini")
    lines = _lines(60)
    parallel_text.train_spm(lines + lines, 60, tmp_path / "spm.model")
    import sentencepiece as spm

    model_bytes = (tmp_path / "spm.model").read_bytes()
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    corpus = parallel_text.ParallelCorpus([], [], sp.encode(lines[:10]), lines[:10], model_bytes)
    model = _tiny_model()
    model.embed = torch.nn.Embedding(60, 32, padding_idx=PAD)
    stats = ref.evaluate(model.eval(), corpus, "cpu")
    assert len(stats) == 10 and stats[9] == sum(len(r.split()) for r in lines[:10])
    shares = [ref.evaluate(model, corpus, "cpu", rank=r, world=2) for r in (0, 1)]
    assert [a + b for a, b in zip(*shares)] == stats   # ranks decode disjoint shares of the same set


def test_wmt_fixture_prepares_a_subword_model_and_loads(tmp_path):
    en = _lines(300)
    de = [s.replace("the", "die").replace("cat", "katze") for s in en]
    for name, rows in (("train.en", en), ("train.de", de), ("newstest2014.en", en[:20]),
                       ("newstest2014.de", de[:20])):
        (tmp_path / name).write_text("".join(r + "\n" for r in rows), encoding="utf-8")

    class SmallWMT(TransformerFull):
        vocab_size = 64

    ref = SmallWMT()
    (written,) = ref.prepare_data(tmp_path)
    assert written.name == parallel_text.SPM_FILE
    data = ref.load_data(tmp_path)
    assert len(data.train_src) == 300 and data.valid_refs[3] == de[3]
    assert data.decoder().decode(data.train_tgt[5]) == de[5]
    with pytest.raises(UserError, match="64 subwords, the reference model expects 32768"):
        TransformerFull().load_data(tmp_path)
    (tmp_path / "newstest2014.de").unlink()
    with pytest.raises(UserError, match="newstest2014.de not found"):
        ref.load_data(tmp_path)


def test_synthetic_batch_trains_one_step():
    ref = registry.get("transformer-mini")
    model = ref.build_model()
    batch = ref.synthetic_batch(4)
    assert [tuple(t.shape) for t in batch] == [(4, ref.synthetic_tokens + 1)] * 3
    hp = get_rules("transformer-mini").defaults()
    loss = ref.loss(model, batch, hp)
    loss.backward()
    assert torch.isfinite(loss) and model.embed.weight.grad is not None


@needs_sword
def test_prepare_matches_the_rules_checksums(tmp_path, capsys):
    assert main(["data", "prepare", "transformer-mini", "--data-dir", str(tmp_path)]) == 0
    assert "5 files" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(get_rules("transformer-mini").dataset["files"])


def prepare_test_cut(tmp_path):
    """`trainmark data prepare transformer-mini`, cut to what the test rules pin: the first 1,500
    training and 50 validation pairs, and the subword model; returns the cut folder."""
    full, data = tmp_path / "full", tmp_path / "data"
    assert main(["data", "prepare", "transformer-mini", "--data-dir", str(full)]) == 0
    data.mkdir()
    shutil.copy(full / parallel_text.SPM_FILE, data / parallel_text.SPM_FILE)
    for names, keep in ((bible_parallel.FILES["train"], 1500), (bible_parallel.FILES["valid"], 50)):
        for name in names:
            lines = (full / name).read_text(encoding="utf-8").splitlines(keepends=True)
            (data / name).write_text("".join(lines[:keep]), encoding="utf-8")
    return data


@needs_sword
def test_one_short_trial_then_check(tmp_path, capsys):
    data = prepare_test_cut(tmp_path)
    out, t, target = one_trial(tmp_path, "transformer-mini", data, seed=7)
    assert t["status"] == "converged" and target <= t["final_metric"] <= 100
    assert t["flops_per_step"] > 0
    check_passes(out, capsys)
