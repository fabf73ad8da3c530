"""The encoder-decoder Transformer of Vaswani et al. (2017) around ``torch.nn.Transformer``.

What ``nn.Transformer`` leaves to its user: one embedding shared by source, target and output
projection (a joint subword vocabulary, the paper's three-way tying), embeddings scaled by
sqrt(d_model), sinusoidal positions, the masks, and greedy decoding. Attention runs through
``nn.MultiheadAttention``, which calls ``F.scaled_dot_product_attention``.
"""
from __future__ import annotations

import math

import torch
from torch import nn

PAD, UNK, BOS, EOS = 0, 1, 2, 3   # the ids the sentencepiece model is trained with


def sinusoids(length: int, dim: int) -> torch.Tensor:
    """[length, dim] position encodings: sin on even, cos on odd channels (Vaswani et al. 2017, 3.5)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, heads: int, encoder_layers: int, decoder_layers: int,
                 ff_dim: int, dropout: float, norm_first: bool, max_len: int = 1024):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)   # as fairseq, so the x sqrt(d) scale gives unit size
        self.register_buffer("positions", sinusoids(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

        def norm() -> nn.LayerNorm | None:
            return nn.LayerNorm(d_model) if norm_first else None  # pre-norm stacks end with a norm

        enc = nn.TransformerEncoderLayer(d_model, heads, ff_dim, dropout, batch_first=True, norm_first=norm_first)
        dec = nn.TransformerDecoderLayer(d_model, heads, ff_dim, dropout, batch_first=True, norm_first=norm_first)
        self.transformer = nn.Transformer(
            d_model, heads, batch_first=True,
            custom_encoder=nn.TransformerEncoder(enc, encoder_layers, norm=norm(), enable_nested_tensor=False),
            custom_decoder=nn.TransformerDecoder(dec, decoder_layers, norm=norm()))

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) * math.sqrt(self.d_model) + self.positions[:tokens.shape[1]]
        return self.dropout(x)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pad = src == PAD
        return self.transformer.encoder(self._embed(src), src_key_padding_mask=pad), pad

    def _decoder_states(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool, device=tgt_in.device).triu(1)
        return self.transformer.decoder(self._embed(tgt_in), memory, tgt_mask=causal,
                                        tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor) -> torch.Tensor:
        return self._decoder_states(tgt_in, memory, src_pad) @ self.embed.weight.t()   # tied output projection

    def next_logits(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor,
                    seen: list[torch.Tensor] | None = None) -> torch.Tensor:
        """[B, vocab] logits of the last position only: greedy decoding reads nothing else, and projecting
        every position onto the vocabulary at every step (rules 1.1) took a fifth of its time
        (benchmarks/greedy_decoding.py). With ``seen`` (a list the caller starts empty and keeps while the prefix
        grows a token per call), the decoder computes the last position alone (``_last_state``)."""
        if seen is None:
            return self._decoder_states(tgt_in, memory, src_pad)[:, -1] @ self.embed.weight.t()
        return self._last_state(tgt_in, memory, src_pad, seen) @ self.embed.weight.t()

    def _last_state(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor,
                    seen: list[torch.Tensor]) -> torch.Tensor:
        """[B, d] decoder output at the prefix's last position, from that position's token alone. Causal
        attention never lets a position see a later one, so what each layer's self-attention reads of the
        earlier positions stays the same as the prefix grows: ``seen[i]`` keeps layer i's, and a step costs one
        position instead of the whole prefix. The layers' own modules compute it in the order of
        ``nn.TransformerDecoderLayer.forward``; for evaluation only (dropout is off)."""
        position = tgt_in.shape[1] - 1
        x = (self.embed(tgt_in[:, -1]) * math.sqrt(self.d_model) + self.positions[position])[:, None]
        pad = tgt_in == PAD
        for i, layer in enumerate(self.transformer.decoder.layers):
            attend = layer.norm1(x) if layer.norm_first else x     # what the self-attention reads
            if i == len(seen):
                seen.append(attend)              # the first step: the prefix is BOS alone
            else:
                seen[i] = torch.cat([seen[i], attend], 1)
            sa = layer.self_attn(attend, seen[i], seen[i], key_padding_mask=pad, need_weights=False)[0]
            if layer.norm_first:
                x = x + sa
                x = x + layer.multihead_attn(layer.norm2(x), memory, memory, key_padding_mask=src_pad,
                                             need_weights=False)[0]
                x = x + layer._ff_block(layer.norm3(x))
            else:
                x = layer.norm1(x + sa)
                x = layer.norm2(x + layer.multihead_attn(x, memory, memory, key_padding_mask=src_pad,
                                                         need_weights=False)[0])
                x = layer.norm3(x + layer._ff_block(x))
        norm = self.transformer.decoder.norm
        return (norm(x) if norm is not None else x)[:, 0]

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Logits [B, T, vocab] for each target position given the target shifted right."""
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, max_len: int) -> list[list[int]]:
        """Greedy decoding (no beam): token ids of each output, up to EOS or ``max_len`` tokens."""
        memory, src_pad = self.encode(src)
        out = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        seen: list[torch.Tensor] = []   # what next_logits keeps of the prefix (a Keras twin keeps nothing)
        for _ in range(max_len):
            nxt = self.next_logits(out, memory, src_pad, seen).argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            out = torch.cat([out, nxt[:, None]], 1)
            done |= nxt == EOS
            if bool(done.all()):
                break
        rows = []
        for row in out[:, 1:].tolist():
            row = row[:row.index(EOS)] if EOS in row else row
            rows.append([t for t in row if t != PAD])
        return rows
