#!/usr/bin/env python3
"""Independent numpy reference for SmolLM2-135M (any Llama-architecture GGUF): reads the GGUF with
this directory's own reader and dequantizer (gguf_reference.py, written from the GGUF spec and
ggml's reference dequantizers), tokenizes with Hugging Face `tokenizers` built from the file's
vocabulary and merges (bpe_reference.py), and runs the forward pass in float64 from the Llama
architecture as published: pre-RMSNorm, rotary positions, grouped-query causal attention,
SwiGLU, a final RMSNorm and the tied unembedding. It shares no code with the Rust engine.

Rotary: llama.cpp's converter permutes the rows of Q and K so that the pairs rotated together are
ADJACENT features (2i, 2i+1), each turned by position * base^(-2i/head_dim).

  smollm2_reference.py MODEL.gguf VOCAB.json < request.json

request.json: {"texts": ["...", ...], "attention": [[layer, head], ...], "ids": [[id, ...], ...]}
  ("ids": token sequences given directly, for the induction test.)
Prints JSON: {"texts": [{"ids": [...], "last_logits": [vocab floats], "top5": [ids],
  "attention": {"L,H": [[T x T]]}, "losses": [per position]}, ...], "ids": [same, for "ids"]}
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference  # noqa: E402
import gguf_reference  # noqa: E402


class Llama:
    def __init__(self, path):
        with open(path, "rb") as f:
            raw = f.read()
        _, meta, infos, _, data_start = gguf_reference.parse(raw)
        by_name = {info[0]: info for info in infos}
        arch = meta["general.architecture"]
        assert arch == "llama", arch
        self.layers = meta[f"{arch}.block_count"]
        self.heads = meta[f"{arch}.attention.head_count"]
        self.kv_heads = meta[f"{arch}.attention.head_count_kv"]
        self.d = meta[f"{arch}.embedding_length"]
        self.head_dim = self.d // self.heads
        self.eps = meta[f"{arch}.attention.layer_norm_rms_epsilon"]
        self.base = meta.get(f"{arch}.rope.freq_base", 10000.0)

        def w(name):
            return gguf_reference.dequantize(raw, data_start, by_name[name])[2].astype(np.float64)

        self.embedding = w("token_embd.weight")  # (vocab, d)
        self.output = w("output.weight") if "output.weight" in by_name else self.embedding  # tied
        self.final_norm = w("output_norm.weight")  # (d)
        self.blocks = []
        for i in range(self.layers):
            p = f"blk.{i}."
            self.blocks.append({k: w(p + k + ".weight") for k in
                                ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                 "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]})

    def rms_norm(self, x, gamma):
        return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + self.eps) * gamma

    def rotate(self, x):
        """x (heads, T, head_dim): adjacent pairs (2i, 2i+1) turned by p * base^(-2i/hd)."""
        t = x.shape[1]
        theta = self.base ** (-np.arange(0, self.head_dim, 2) / self.head_dim)  # (hd/2)
        angle = np.arange(t)[:, None] * theta[None, :]  # (T, hd/2)
        cos, sin = np.cos(angle), np.sin(angle)
        a, b = x[..., 0::2], x[..., 1::2]  # (heads, T, hd/2) each
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out

    def forward(self, ids, want_attention, e=None, cap=None):
        """`e`: changes (zero_heads / mean_heads [[layer, head]], zero_ffn / mean_ffn [layer],
        patch_heads [[layer, head]] with e["from"], another run's `cap`; means from e["intact"],
        the intact run's `cap`); `cap` collects each layer's head outputs and FFN outputs."""
        e = e or {}
        cap = cap if cap is not None else {"heads": [], "ffn": []}
        t = len(ids)
        x = self.embedding[ids]  # (T, d)
        attention = {}
        causal = np.triu(np.ones((t, t), dtype=bool), k=1)  # True above the diagonal: future keys
        group = self.heads // self.kv_heads
        for i, blk in enumerate(self.blocks):
            h = self.rms_norm(x, blk["attn_norm"])  # (T, d)
            q = (h @ blk["attn_q"].T).reshape(t, self.heads, self.head_dim).transpose(1, 0, 2)  # (H, T, hd)
            k = (h @ blk["attn_k"].T).reshape(t, self.kv_heads, self.head_dim).transpose(1, 0, 2)  # (KV, T, hd)
            v = (h @ blk["attn_v"].T).reshape(t, self.kv_heads, self.head_dim).transpose(1, 0, 2)  # (KV, T, hd)
            q, k = self.rotate(q), self.rotate(k)
            k = np.repeat(k, group, axis=0)  # (H, T, hd): query head h reads kv head h // group
            v = np.repeat(v, group, axis=0)
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(self.head_dim)  # (H, T, T)
            scores[:, causal] = -np.inf
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)  # (H, T, T)
            for (layer, head) in want_attention:
                if layer == i:
                    attention[f"{layer},{head}"] = weights[head].tolist()
            per_head = weights @ v  # (H, T, hd)
            cap["heads"].append(per_head.copy())
            for layer, head in e.get("zero_heads", []):
                if layer == i:
                    per_head[head] = 0.0
            for layer, head in e.get("mean_heads", []):
                if layer == i:
                    per_head[head] = e["intact"]["heads"][layer][head].mean(0)
            for layer, head in e.get("patch_heads", []):
                if layer == i:
                    per_head[head] = e["from"]["heads"][layer][head]
            heads_out = per_head.transpose(1, 0, 2).reshape(t, self.d)  # (T, d)
            x = x + heads_out @ blk["attn_output"].T
            h = self.rms_norm(x, blk["ffn_norm"])
            gate = h @ blk["ffn_gate"].T  # (T, d_ff)
            up = h @ blk["ffn_up"].T  # (T, d_ff)
            ffn = (gate / (1.0 + np.exp(-gate)) * up) @ blk["ffn_down"].T  # (T, d)
            cap["ffn"].append(ffn.copy())
            if i in e.get("zero_ffn", []):
                ffn = np.zeros_like(ffn)
            if i in e.get("mean_ffn", []):
                ffn = np.broadcast_to(e["intact"]["ffn"][i].mean(0), ffn.shape)
            x = x + ffn
        x = self.rms_norm(x, self.final_norm)
        logits = x @ self.output.T  # (T, vocab)
        # Cross-entropy of each next token: -log softmax(logits[i])[ids[i+1]].
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        losses = [-float(log_probs[i, ids[i + 1]]) for i in range(t - 1)]
        last = logits[-1]
        return {
            "ids": [int(i) for i in ids],
            "last_logits": [float(v) for v in last],
            "top5": [int(i) for i in np.argsort(-last, kind="stable")[:5]],
            "attention": attention,
            "losses": losses,
        }


def main():
    model_path, vocab_path = sys.argv[1], sys.argv[2]
    request = json.load(sys.stdin)
    model = Llama(model_path)
    tok = bpe_reference.build(vocab_path)
    want = [tuple(a) for a in request.get("attention", [])]
    out = {
        "texts": [model.forward(tok.encode(text, add_special_tokens=True).ids, want) for text in request.get("texts", [])],
        "ids": [model.forward(ids, want) for ids in request.get("ids", [])],
    }
    # Changed passes: {"ids", "edits", "patch_from"?}, each with the intact run's means.
    changed = []
    for item in request.get("edits", []):
        e = dict(item["edits"])
        e["intact"] = {"heads": [], "ffn": []}
        model.forward(item["ids"], [], {}, e["intact"])
        if "patch_from" in item:
            e["from"] = {"heads": [], "ffn": []}
            model.forward(item["patch_from"], [], {}, e["from"])
        changed.append(model.forward(item["ids"], [], e))
    out["edits"] = changed
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
