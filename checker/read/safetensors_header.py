"""Read the tensor table of a ``.safetensors`` file without loading any tensor.

The format: an 8-byte little-endian header length N, N bytes of JSON
(``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``),
then the raw data. Only the header is read (at most ``MAX_HEADER`` bytes: the safetensors
library allows 100 MB, which took 94 s and 2.1 GB to check; a reference model needs far
less); offsets are checked against the file size so a
truncated or padded file is noticed. A pickle or ``torch.save`` archive in its place is
recognised by its first bytes and never opened further.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from trainmark.checker.read.safefs import SafeTree
from trainmark.checker.verdict.registry import ERROR, rule
from trainmark.format.layout import MODEL_FILE

HOSTILE_004 = rule(
    "HOSTILE-004", ERROR, "a pickle or torch.save archive where safetensors is required (never loaded)",
    fix="save weights with safetensors.torch.save_file; pickles can run code and are never accepted",
    why="A pickle (torch.save) can run arbitrary code when loaded, so the checker never loads one; weights must be "
    "safetensors, whose header is plain JSON. It recognises the pickle by its bytes and proves nothing about the "
    "weights inside.",
    bad="trial_1/model.safetensors that is a torch.save zip",
    good="trial_1/model.safetensors written by safetensors.torch.save_file", module=__name__)
CONFORM_004 = rule(
    "CONFORM-004", ERROR, "model.safetensors is not a valid safetensors file",
    fix="save the state_dict with safetensors.torch.save_file",
    why="The weights are the evidence a trial trained this model; a header that is not valid safetensors (bad length, "
    "malformed JSON, offsets outside the file) cannot be matched to structure.json or re-evaluated. Only the header "
    "and tensor spans are read; a valid header does not prove the values were trained.",
    bad="model.safetensors truncated after 100 bytes",
    good="the model.safetensors the harness wrote after the last evaluation", module=__name__)

# The largest reference header is inception-v3's, 67,096 bytes (580 tensors; measured by building every
# registered reference on the meta device and writing its safetensors header): 1 MiB leaves 15x.
MAX_HEADER = 1 << 20
# Opcodes a protocol 0 or 1 pickle starts with (MARK, GLOBAL, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, INT, LONG,
# FLOAT, NONE, STRING, UNICODE, BININT*, BINSTRING, BINUNICODE...): read as a safetensors length, such bytes
# give an absurd header size, so the file was once reported as "a huge header" instead of as a pickle.
_OLD_PICKLE_OPCODES = frozenset(b"(c}])IKLFNSVXGJMUT")

# safetensors dtype -> (torch dtype name as trainmark.format.structure writes it, bytes per element)
DTYPES = {
    "BOOL": ("bool", 1), "U8": ("uint8", 1), "I8": ("int8", 1), "F8_E4M3": ("float8_e4m3fn", 1),
    "F8_E5M2": ("float8_e5m2", 1), "I16": ("int16", 2), "U16": ("uint16", 2), "F16": ("float16", 2),
    "BF16": ("bfloat16", 2), "I32": ("int32", 4), "U32": ("uint32", 4), "F32": ("float32", 4),
    "I64": ("int64", 8), "U64": ("uint64", 8), "F64": ("float64", 8), "C64": ("complex64", 8),
}


class HeaderError(Exception):
    def __init__(self, rule: str, message: str, seen: str = ""):
        super().__init__(message)
        self.rule, self.message, self.seen = rule, message, seen


def sniff_pickle(head: bytes) -> str | None:
    """What serialisation that can run code ``head`` starts with, if any."""
    if head[:4] == b"PK\x03\x04":
        return "a zip archive (torch.save format)"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return f"a pickle (protocol {head[1]})"
    if head[:6] == b"\x93NUMPY":
        return "a NumPy .npy file"
    if len(head) >= 8 and head[0] in _OLD_PICKLE_OPCODES and int.from_bytes(head[:8], "little") > MAX_HEADER:
        return "a pickle (protocol 0 or 1)"
    return None


@dataclass(frozen=True)
class Header:
    """A validated safetensors header: the tensor table, where the data section starts, and each tensor's bytes."""
    table: dict[str, dict]          # {name: {"dtype": torch name, "shape": [...]}}
    data_start: int                 # 8 + the header's length
    spans: list[tuple[str, str, int, int, int]]  # (name, dtype, begin, end, dimensions), offsets in the data


def read_tensor_table(tree: SafeTree, rel: str) -> dict[str, dict]:
    """``{name: {"dtype": torch name, "shape": [...]}}`` of the file; ``HeaderError`` otherwise."""
    return read_header(tree, rel).table


def read_header(tree: SafeTree, rel: str) -> Header:
    """The file's header, read once and validated against the file's size; ``HeaderError`` otherwise."""
    head, size = tree.read_head(rel, 8)
    kind = sniff_pickle(head)
    if kind is not None:
        raise HeaderError(HOSTILE_004, f"{rel} is {kind}, not safetensors; it was not loaded", kind)
    if len(head) < 8:
        raise HeaderError(CONFORM_004, f"{rel} has {size} bytes, fewer than the 8-byte header length",
                          f"{size} bytes")
    length = int.from_bytes(head, "little")
    if length > MAX_HEADER:
        raise HeaderError(CONFORM_004, f"{rel} declares a {length}-byte header (at most {MAX_HEADER})",
                          f"{length} bytes")
    if 8 + length > size:
        raise HeaderError(CONFORM_004, f"{rel} declares a {length}-byte header but has {size} bytes",
                          f"{size} bytes")
    data, _ = tree.read_head(rel, 8 + length)
    table = parse_header(data[8:], size - 8 - length, rel)
    header = json.loads(data[8:].decode("utf-8"))
    spans = [(name, info["dtype"], *info["data_offsets"], len(info["shape"])) for name, info in header.items()
             if name != "__metadata__"]
    return Header(table, 8 + length, sorted(spans, key=lambda s: s[2]))


def parse_header(raw: bytes, data_size: int, rel: str = MODEL_FILE) -> dict[str, dict]:
    """Validate the JSON header against the data section's size."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise HeaderError(CONFORM_004, f"{rel}: header JSON nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeaderError(CONFORM_004, f"{rel}: header is not UTF-8 JSON ({exc})", raw[:60]) from None
    if not isinstance(header, dict):
        raise HeaderError(CONFORM_004, f"{rel}: header is not a JSON object", type(header).__name__)
    table: dict[str, dict] = {}
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise HeaderError(CONFORM_004, f"{rel}: __metadata__ must map strings to strings")
            continue
        dtype, shape, offsets = _entry(name, info, rel)
        table[name] = {"dtype": DTYPES[dtype][0], "shape": shape}
        spans.append((offsets[0], offsets[1], name, math.prod(shape) * DTYPES[dtype][1]))
    position = 0
    for begin, end, name, nbytes in sorted(spans):
        if end - begin != nbytes:
            raise HeaderError(CONFORM_004, f"{rel}: tensor {name!r} spans {end - begin} bytes, its dtype and "
                              f"shape need {nbytes}", f"{end - begin} bytes")
        if begin != position:
            raise HeaderError(CONFORM_004, f"{rel}: tensor {name!r} starts at byte {begin}, expected {position} "
                              "(gap or overlap)", f"offset {begin}")
        position = end
    if position != data_size:
        raise HeaderError(CONFORM_004, f"{rel}: tensors cover {position} bytes of a {data_size}-byte data section",
                          f"{data_size} bytes")
    return table


def _entry(name: str, info, rel: str):
    if not isinstance(info, dict):
        raise HeaderError(CONFORM_004, f"{rel}: entry {name!r} is not an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise HeaderError(CONFORM_004, f"{rel}: tensor {name!r} has unknown dtype {dtype!r}", str(dtype)[:40])
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise HeaderError(CONFORM_004, f"{rel}: tensor {name!r} has an invalid shape", str(shape)[:60])
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]):
        raise HeaderError(CONFORM_004, f"{rel}: tensor {name!r} has invalid data_offsets", str(offsets)[:60])
    return dtype, shape, offsets


def tensor_spans(tree: SafeTree, rel: str) -> tuple[int, list[tuple[str, str, int, int, int]]]:
    """Where each tensor's bytes lie: the data section's start and ``(name, dtype, begin, end, dimensions)`` per
    tensor, offsets relative to it, after ``read_tensor_table`` validated them (``HeaderError`` otherwise)."""
    header = read_header(tree, rel)
    return header.data_start, header.spans
