#!/usr/bin/env python3
"""Independent GGUF v3 reader and dequantizer in numpy, for parity tests of src/formats/gguf.rs.

Written from the GGUF specification (ggml's docs/gguf.md) and ggml's reference dequantizers
(`dequantize_row_q8_0`, `dequantize_row_q4_1` in ggml-quants.c); it shares no code with the
Rust reader.

  gguf_reference.py FILE.gguf < request.json

request.json:
  {"keys": ["llama.block_count", ...],                     metadata values to report
   "array_lengths": ["tokenizer.ggml.tokens", ...],        lengths of array values
   "array_items": {"tokenizer.ggml.tokens": [0, 1, 2]},    chosen items of array values
   "tensors": [{"name": "blk.0.attn_q.weight", "rows": [0, 7]}, ...],
   "dots": [{"name": "...", "row": 3, "x": [f32, ...]}, ...]}

Prints JSON:
  {"version": 3, "alignment": 32, "data_start": N, "tensor_count": N,
   "kinds": {name: "Q4_1", ...}, "shapes": {name: [rows, cols], ...},
   "keys": {key: value}, "array_lengths": {...}, "array_items": {...},
   "tensors": {name: {"shape": [...], "kind": "...", "rows": {"0": [...]}, "sum": s, "sum_sq": q}},
   "dots": [float, ...]}

Shapes are row-major: GGUF lists dimensions innermost first (ne[0] is the contiguous one, the
number of columns), so the row-major shape is the dimension list reversed.
Dequantized values are computed in float32 with ggml's operation order (x = d*q for Q8_0,
x = d*q + m for Q4_1); sums and dot products are accumulated in float64.
"""
import json
import struct
import sys

import numpy as np

# GGUF metadata value types (spec: enum gguf_metadata_value_type).
SCALARS = {
    0: ("<B", 1),  # uint8
    1: ("<b", 1),  # int8
    2: ("<H", 2),  # uint16
    3: ("<h", 2),  # int16
    4: ("<I", 4),  # uint32
    5: ("<i", 4),  # int32
    6: ("<f", 4),  # float32
    10: ("<Q", 8),  # uint64
    11: ("<q", 8),  # int64
    12: ("<d", 8),  # float64
}
BOOL, STRING, ARRAY = 7, 8, 9

# ggml tensor types this reference understands: name, elements per block, bytes per block.
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 3: ("Q4_1", 32, 20), 8: ("Q8_0", 32, 34)}


class Cursor:
    def __init__(self, raw):
        self.raw = raw
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.raw):
            raise ValueError(f"truncated at byte {self.pos} (wanted {n} more)")
        out = self.raw[self.pos : self.pos + n]
        self.pos += n
        return out

    def scalar(self, fmt, size):
        return struct.unpack(fmt, self.take(size))[0]

    def string(self):
        n = self.scalar("<Q", 8)
        return self.take(n).decode("utf-8")

    def value(self, vtype):
        if vtype in SCALARS:
            return self.scalar(*SCALARS[vtype])
        if vtype == BOOL:
            b = self.scalar("<B", 1)
            assert b in (0, 1), f"bool byte {b}"
            return bool(b)
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            item_type = self.scalar("<I", 4)
            n = self.scalar("<Q", 8)
            return [self.value(item_type) for _ in range(n)]
        raise ValueError(f"unknown metadata value type {vtype}")


def parse(raw):
    c = Cursor(raw)
    assert c.take(4) == b"GGUF", "not a GGUF file"
    version = c.scalar("<I", 4)
    assert version == 3, f"GGUF version {version}"
    n_tensors = c.scalar("<Q", 8)
    n_kv = c.scalar("<Q", 8)
    meta = {}
    for _ in range(n_kv):
        key = c.string()
        meta[key] = c.value(c.scalar("<I", 4))
    infos = []
    for _ in range(n_tensors):
        name = c.string()
        n_dims = c.scalar("<I", 4)
        ne = [c.scalar("<Q", 8) for _ in range(n_dims)]
        ggml_type = c.scalar("<I", 4)
        offset = c.scalar("<Q", 8)
        infos.append((name, ne, ggml_type, offset))
    alignment = meta.get("general.alignment", 32)
    data_start = (c.pos + alignment - 1) // alignment * alignment
    return version, meta, infos, alignment, data_start


def f16_at(blocks, byte):
    """The float16 at byte offset `byte` of every block, as float32."""
    return blocks[:, byte : byte + 2].copy().view("<f2").astype(np.float32)[:, 0]


def dequantize(raw, data_start, info):
    """All of a tensor's values, float32, row-major shape (ne reversed)."""
    name, ne, ggml_type, offset = info
    kind, block_len, block_bytes = GGML_TYPES[ggml_type]
    count = int(np.prod(ne))
    n_bytes = count // block_len * block_bytes
    start = data_start + offset
    buf = np.frombuffer(raw, dtype=np.uint8, count=n_bytes, offset=start)
    if kind == "F32":
        flat = buf.view("<f4").astype(np.float32)
    elif kind == "F16":
        flat = buf.view("<f2").astype(np.float32)
    elif kind == "Q8_0":
        blocks = buf.reshape(-1, 34)  # (blocks, 2 bytes f16 scale + 32 int8)
        d = f16_at(blocks, 0)[:, None]  # (blocks, 1)
        q = blocks[:, 2:].view(np.int8).astype(np.float32)  # (blocks, 32)
        flat = (d * q).reshape(-1)
    elif kind == "Q4_1":
        blocks = buf.reshape(-1, 20)  # (blocks, f16 d, f16 m, 16 bytes of nibbles)
        d = f16_at(blocks, 0)[:, None]  # (blocks, 1)
        m = f16_at(blocks, 2)[:, None]  # (blocks, 1)
        nibbles = blocks[:, 4:]  # (blocks, 16)
        # ggml: element j is the low nibble of byte j, element j+16 the high nibble.
        q = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)  # (blocks, 32)
        flat = (d * q + m).reshape(-1)
    shape = list(reversed(ne))
    return kind, shape, flat.reshape(shape)


def jsonable(v):
    if isinstance(v, float):
        return v
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def main():
    path = sys.argv[1]
    request = json.load(sys.stdin)
    with open(path, "rb") as f:
        raw = f.read()
    version, meta, infos, alignment, data_start = parse(raw)
    by_name = {info[0]: info for info in infos}
    out = {
        "version": version,
        "alignment": alignment,
        "data_start": data_start,
        "tensor_count": len(infos),
        "kinds": {
            name: GGML_TYPES[t][0] if t in GGML_TYPES else f"type {t}" for name, _, t, _ in infos
        },
        "shapes": {name: list(reversed(ne)) for name, ne, _, _ in infos},
        "keys": {k: jsonable(meta[k]) for k in request.get("keys", []) if k in meta},
        "array_lengths": {k: len(meta[k]) for k in request.get("array_lengths", [])},
        "array_items": {k: [meta[k][i] for i in idx] for k, idx in request.get("array_items", {}).items()},
        "tensors": {},
        "dots": [],
    }
    cache = {}

    def values(name):
        if name not in cache:
            cache[name] = dequantize(raw, data_start, by_name[name])
        return cache[name]

    for t in request.get("tensors", []):
        kind, shape, arr = values(t["name"])
        rows = arr.reshape(-1, shape[-1])  # (rows, cols)
        wide = arr.astype(np.float64)
        out["tensors"][t["name"]] = {
            "shape": shape,
            "kind": kind,
            "rows": {str(r): [float(v) for v in rows[r]] for r in t.get("rows", [])},
            "sum": float(wide.sum()),
            "sum_sq": float((wide * wide).sum()),
        }
    for d in request.get("dots", []):
        _, shape, arr = values(d["name"])
        row = arr.reshape(-1, shape[-1])[d["row"]].astype(np.float64)  # (cols,)
        x = np.asarray(d["x"], dtype=np.float32).astype(np.float64)  # (cols,)
        out["dots"].append(float(row @ x))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
