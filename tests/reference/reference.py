#!/usr/bin/env python3
"""Independent reference forward pass in numpy (float64), for parity tests of the Rust engine.

It shares no code with the engine: it parses safetensors itself, tokenizes MiniLM with the
Hugging Face `tokenizers` library, and implements attention, norms, FFNs and positions
from their textbook definitions.

  reference.py bert    MODEL_DIR  < sentences.json   (BERT layout: config.json, tokenizer.json, model.safetensors)
  reference.py generic MODEL_DIR  < ids.json         (this project's format: config.json = ModelConfig, model.safetensors;
                                                     an item may carry edits: heads and FFNs switched off, patching)
  reference.py tokenize MODEL_DIR < sentences.json   (token ids only, from tokenizer.json)

Prints JSON: one record per input with ids, attention (layers, heads, T, T), hidden (T, d),
and logits (T, vocab) when the model has a head.
"""
import json
import math
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        arr = np.frombuffer(raw[base + start : base + end], dtype=dtype).reshape(info["shape"])
        out[name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    return out


def softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def rms_norm(x, g, eps):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * g


_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def bert(model_dir, sentences):
    from tokenizers import Tokenizer

    cfg = json.load(open(f"{model_dir}/config.json"))
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    w = read_safetensors(f"{model_dir}/model.safetensors")
    H = cfg["num_attention_heads"]
    d = cfg["hidden_size"]
    hd = d // H
    eps = cfg["layer_norm_eps"]
    results = []
    for text in sentences:
        enc = tok.encode(text)
        ids = enc.ids
        T = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:T]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        attn_all = []
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            lin = lambda name, v: v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            q = lin("attention.self.query", x).reshape(T, H, hd).transpose(1, 0, 2)
            k = lin("attention.self.key", x).reshape(T, H, hd).transpose(1, 0, 2)
            v = lin("attention.self.value", x).reshape(T, H, hd).transpose(1, 0, 2)
            a = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(hd))
            attn_all.append(a.tolist())
            z = (a @ v).transpose(1, 0, 2).reshape(T, d)
            x = layer_norm(
                x + lin("attention.output.dense", z),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            h = gelu(lin("intermediate.dense", x))
            x = layer_norm(x + lin("output.dense", h), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        results.append({"text": text, "ids": ids, "tokens": enc.tokens, "attention": attn_all, "hidden": x.tolist()})
    return results


def rotate(x, base, adjacent):
    """x: (heads, T, hd); rotate feature pairs by position * base^(-2i/hd)."""
    heads, T, hd = x.shape
    out = x.copy()
    for i in range(hd // 2):
        theta = base ** (-2.0 * i / hd)
        a, b = (2 * i, 2 * i + 1) if adjacent else (i, i + hd // 2)
        ang = np.arange(T) * theta
        c, s = np.cos(ang), np.sin(ang)
        out[:, :, a] = x[:, :, a] * c - x[:, :, b] * s
        out[:, :, b] = x[:, :, a] * s + x[:, :, b] * c
    return out


def generic(model_dir, id_lists):
    c = json.load(open(f"{model_dir}/config.json"))
    w = read_safetensors(f"{model_dir}/model.safetensors")
    d, H, KV, hd = c["d_model"], c["n_heads"], c["n_kv_heads"], c["head_dim"]
    eps = c["norm_eps"]
    pos = c["position"]
    bias = c["linear_bias"]

    def norm(x, name):
        if c["norm"] == "Layer":
            return layer_norm(x, w[name + ".gamma"], w[name + ".beta"], eps)
        return rms_norm(x, w[name + ".gamma"], eps)

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias else y

    def attention(x, p, layer, e, cap):
        T = x.shape[0]
        q = lin(x, p + "attention.query").reshape(T, H, hd).transpose(1, 0, 2)
        k = lin(x, p + "attention.key").reshape(T, KV, hd).transpose(1, 0, 2)
        v = lin(x, p + "attention.value").reshape(T, KV, hd).transpose(1, 0, 2)
        if isinstance(pos, dict) and "Rotary" in pos and not e.get("no_position"):
            q = rotate(q, pos["Rotary"]["base"], pos["Rotary"]["adjacent_pairs"])
            k = rotate(k, pos["Rotary"]["base"], pos["Rotary"]["adjacent_pairs"])
        k = np.repeat(k, H // KV, axis=0)
        v = np.repeat(v, H // KV, axis=0)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        if c["causal"] and not e.get("no_mask"):
            s = s + np.triu(np.full((T, T), -np.inf), 1)
        a = softmax(s)
        heads = a @ v  # (H, T, hd)
        cap["heads"].append(heads.copy())
        for l, h in e.get("zero_heads", []):
            if l == layer:
                heads[h] = 0.0
        for l, h in e.get("mean_heads", []):
            if l == layer:
                heads[h] = e["intact"]["heads"][l][h].mean(0)
        for l, h in e.get("patch_heads", []):
            if l == layer:
                heads[h] = e["from"]["heads"][l][h]
        z = heads.transpose(1, 0, 2).reshape(T, H * hd)
        return lin(z, p + "attention.output"), a

    def ffn(x, p, layer, e, cap):
        up = lin(x, p + "ffn.up")
        if c["activation"] == "Relu":
            h = np.maximum(0, up)
        elif c["activation"] == "Gelu":
            h = gelu(up)
        else:
            g = lin(x, p + "ffn.gate")
            h = g / (1 + np.exp(-g)) * up
        out = lin(h, p + "ffn.down")
        cap["ffn"].append(out.copy())
        if layer in e.get("zero_ffn", []):
            out = np.zeros_like(out)
        if layer in e.get("mean_ffn", []):
            out = np.broadcast_to(e["intact"]["ffn"][layer].mean(0), out.shape).copy()
        return out

    def run(ids, e):
        """One pass with the edits `e` (see `generic`); returns the record and what it saw."""
        cap = {"heads": [], "stream": [], "ffn": []}
        T = len(ids)
        x = w["token_embedding"][ids] * c.get("embedding_scale", 1.0)
        if c["token_types"] > 0:
            x += w["segment_embedding"][0]
        if e.get("no_position"):
            pass
        elif pos == "Learned":
            x += w["position_embedding"][:T]
        elif pos == "Sinusoidal":
            pe = np.zeros((T, d))
            for p_ in range(T):
                for i in range(d // 2):
                    pe[p_, 2 * i] = math.sin(p_ / 10000 ** (2 * i / d))
                    pe[p_, 2 * i + 1] = math.cos(p_ / 10000 ** (2 * i / d))
            x += pe
        if c["embedding_norm"]:
            x = norm(x, "embedding_norm")
        attn_all = []
        for i in range(c["n_layers"]):
            p = f"layers.{i}."
            cap["stream"].append(x.copy())
            for l, at in e.get("patch_stream", []):
                if l == i:
                    x = x.copy()
                    x[at] = e["from"]["stream"][l][at]
            if c["norm_place"] == "Post":
                o, a = attention(x, p, i, e, cap)
                x = norm(x + o, p + "attention_norm")
                x = norm(x + ffn(x, p, i, e, cap), p + "ffn_norm")
            else:
                o, a = attention(norm(x, p + "attention_norm"), p, i, e, cap)
                x = x + o
                x = x + ffn(norm(x, p + "ffn_norm"), p, i, e, cap)
            attn_all.append(a.tolist())
        if c["norm_place"] == "Pre":
            x = norm(x, "final_norm")
        rec = {"ids": ids, "attention": attn_all, "hidden": x.tolist()}
        if c["lm_head"] != "None":
            u = w["token_embedding"] if c["lm_head"] == "Tied" else w["lm_head"]
            rec["logits"] = (x @ u.T).tolist()
        return rec, cap

    results = []
    for item in id_lists:
        # A list of ids, or {"ids": [...], "edits": {...}}: zero_heads / mean_heads [[layer,
        # head]], zero_ffn / mean_ffn [layer] (means over the tokens of the intact pass),
        # no_position, no_mask, and patch_heads [[layer,
        # head]] / patch_stream [[layer, position]] with "patch_from": ids of the run whose
        # head outputs (or stream entering the layer) replace this run's.
        if isinstance(item, dict):
            e = dict(item.get("edits", {}))
            # Means are the intact pass's, over the sentence's tokens.
            _, e["intact"] = run(item["ids"], {})
            if "patch_from" in item:
                _, e["from"] = run(item["patch_from"], {})
            rec, _ = run(item["ids"], e)
        else:
            rec, _ = run(item, {})
        results.append(rec)
    return results


def tokenize(model_dir, sentences):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    return [tok.encode(s).ids for s in sentences]


def main():
    mode, model_dir = sys.argv[1], sys.argv[2]
    inputs = json.load(sys.stdin)
    out = {"bert": bert, "generic": generic, "tokenize": tokenize}[mode](model_dir, inputs)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
