"""Writes MiniLM-L6 (models/minilm-l6/model.safetensors, f32) as an ONNX graph, the way a web
developer would run it with ONNX Runtime Web: input_ids (1, T) int64 -> last_hidden_state
(1, T, 384). Standard ONNX ops (opset 17: Gather, MatMul, Softmax, LayerNormalization, Erf),
which ONNX Runtime fuses into its attention and GELU kernels. Then checks the graph with
ONNX Runtime (Python) against the numpy reference the Rust tests use (tests/reference), on
one sentence, and prints the largest difference.

    .venv/bin/python scripts/onnx-side-by-side/export_minilm.py OUT.onnx
"""

import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
from reference import bert, read_safetensors  # noqa: E402

MODEL = os.path.join(ROOT, "models", "minilm-l6")
HEADS, D, LAYERS, EPS = 12, 384, 6, 1e-12


def build(out_path):
    w = {k: v.astype(np.float32) for k, v in read_safetensors(os.path.join(MODEL, "model.safetensors")).items() if v.dtype.kind == "f"}
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x, prefix, out):
        y = node("MatMul", [x, const(prefix + ".wT", w[prefix + ".weight"].T.copy())], out + "_mm")  # (1, T, out)
        return node("Add", [y, const(prefix + ".b", w[prefix + ".bias"])], out)

    def layer_norm(x, prefix, out):
        return node("LayerNormalization", [x, const(prefix + ".g", w[prefix + ".weight"]), const(prefix + ".beta", w[prefix + ".bias"])], out, axis=-1, epsilon=EPS)

    # Embeddings: word + position (0..T-1) + token type 0, then LayerNorm.
    words = node("Gather", [const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids"], "words")  # (1, T, D)
    shape = node("Shape", ["input_ids"], "ids_shape")
    t = node("Gather", [shape, const("one", np.array(1, dtype=np.int64))], "T")
    positions = node("Range", [const("zero", np.array(0, dtype=np.int64)), t, const("step", np.array(1, dtype=np.int64))], "positions")
    pos = node("Gather", [const("position_embeddings", w["embeddings.position_embeddings.weight"]), positions], "pos")  # (T, D)
    x = node("Add", [words, pos], "emb_wp")
    x = node("Add", [x, const("token_type_0", w["embeddings.token_type_embeddings.weight"][0])], "emb")
    x = layer_norm(x, "embeddings.LayerNorm", "emb_ln")
    heads_shape = const("heads_shape", np.array([0, -1, HEADS, D // HEADS], dtype=np.int64))
    merged_shape = const("merged_shape", np.array([0, -1, D], dtype=np.int64))
    scale = const("scale", np.array(1 / math.sqrt(D // HEADS), dtype=np.float32))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        split = lambda v, perm, n: node("Transpose", [node("Reshape", [v, heads_shape], n + "_r")], n, perm=perm)
        q = split(linear(x, p + "attention.self.query", f"l{i}_q_lin"), [0, 2, 1, 3], f"l{i}_q")  # (1, H, T, hd)
        kt = split(linear(x, p + "attention.self.key", f"l{i}_k_lin"), [0, 2, 3, 1], f"l{i}_kt")  # (1, H, hd, T)
        v = split(linear(x, p + "attention.self.value", f"l{i}_v_lin"), [0, 2, 1, 3], f"l{i}_v")  # (1, H, T, hd)
        scores = node("Mul", [node("MatMul", [q, kt], f"l{i}_qk"), scale], f"l{i}_scores")  # (1, H, T, T)
        probs = node("Softmax", [scores], f"l{i}_probs", axis=-1)
        z = node("MatMul", [probs, v], f"l{i}_z")  # (1, H, T, hd)
        z = node("Reshape", [node("Transpose", [z], f"l{i}_zt", perm=[0, 2, 1, 3]), merged_shape], f"l{i}_concat")  # (1, T, D)
        a = linear(z, p + "attention.output.dense", f"l{i}_attn_out")
        x = layer_norm(node("Add", [x, a], f"l{i}_res1"), p + "attention.output.LayerNorm", f"l{i}_ln1")
        h = linear(x, p + "intermediate.dense", f"l{i}_up")  # (1, T, 1536)
        # GELU with the exact erf, as BERT's "gelu": 0.5 h (1 + erf(h / sqrt 2)).
        erf = node("Erf", [node("Div", [h, const(f"sqrt2_{i}", np.array(math.sqrt(2), dtype=np.float32))], f"l{i}_hs")], f"l{i}_erf")
        g = node("Mul", [node("Mul", [h, const(f"half_{i}", np.array(0.5, dtype=np.float32))], f"l{i}_hh"), node("Add", [erf, const(f"one_{i}", np.array(1, dtype=np.float32))], f"l{i}_1erf")], f"l{i}_gelu")
        f = linear(g, p + "output.dense", f"l{i}_down")
        x = layer_norm(node("Add", [x, f], f"l{i}_res2"), p + "output.LayerNorm", f"l{i}_ln2" if i < LAYERS - 1 else "last_hidden_state")
    graph = helper.make_graph(
        nodes,
        "minilm-l6",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "T"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, "T", D])],
        inits,
    )
    # IR version 8 (ONNX 1.12): what every ONNX Runtime from 1.12 on, ONNX Runtime Web 1.30 included, reads.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="transformer-viz", ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


def check(path):
    import onnxruntime as ort

    text = "The quick brown fox jumps over the lazy dog."
    ref = bert(MODEL, [text])[0]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (hidden,) = session.run(None, {"input_ids": np.array([ref["ids"]], dtype=np.int64)})
    gap = float(np.abs(hidden[0] - np.array(ref["hidden"])).max())
    print(f"ONNX Runtime against the numpy reference on {len(ref['ids'])} tokens: largest difference {gap:.2e}")
    if not gap < 1e-4:
        sys.exit("the ONNX graph does not compute MiniLM")


if __name__ == "__main__":
    out = sys.argv[1]
    build(out)
    check(out)
