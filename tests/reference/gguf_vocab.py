"""Reads a GGUF file's tokenizer (vocabulary, merges, special ids) with llama.cpp's own `gguf`
reader and writes it as JSON, so the tests can build an independent reference tokenizer from
exactly the data the engine reads.

Usage: gguf_vocab.py MODEL.gguf OUT.json
"""

import json
import sys

from gguf import GGUFReader


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def main():
    model_path, out_path = sys.argv[1], sys.argv[2]
    reader = GGUFReader(model_path)
    vocab = {
        "model": field(reader, "tokenizer.ggml.model"),
        "pre": field(reader, "tokenizer.ggml.pre"),
        "tokens": field(reader, "tokenizer.ggml.tokens"),
        "merges": field(reader, "tokenizer.ggml.merges"),
        # llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
        "token_types": field(reader, "tokenizer.ggml.token_type"),
        "bos": field(reader, "tokenizer.ggml.bos_token_id"),
        "eos": field(reader, "tokenizer.ggml.eos_token_id"),
        "unk": field(reader, "tokenizer.ggml.unknown_token_id"),
        "add_bos": field(reader, "tokenizer.ggml.add_bos_token", False),
        "add_eos": field(reader, "tokenizer.ggml.add_eos_token", False),
    }
    if vocab["tokens"] is None or vocab["merges"] is None:
        sys.exit(f"{model_path} has no tokenizer.ggml.tokens or tokenizer.ggml.merges")
    with open(out_path, "w", encoding="utf-8") as out:
        json.dump(vocab, out, ensure_ascii=False)


if __name__ == "__main__":
    main()
