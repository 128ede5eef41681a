"""Reference byte-level BPE: Hugging Face `tokenizers` built from the vocabulary and merges that
tests/reference/gguf_vocab.py read out of a GGUF file, configured as SmolLM2's tokenizer.json
is (no normaliser; pre-tokeniser Digits(individual_digits) then ByteLevel with the GPT-2 regex and
no prefix space; BPE with no unknown token; the control tokens matched as special tokens; no
template, as the GGUF's add_bos_token is false).

Usage: bpe_reference.py VOCAB.json encode [PRE] < ["text", ...]      -> [[id, ...], ...]
       bpe_reference.py VOCAB.json decode [PRE] < [[id, ...], ...]    -> ["text", ...]
PRE overrides the file's pre-tokenizer: "gpt2" is ByteLevel alone (GPT-2's tokenizer.json).
"""

import json
import sys

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CONTROL = 3  # llama.cpp's token type of special (control) tokens


def build(vocab_path, pre=None):
    with open(vocab_path, encoding="utf-8") as f:
        v = json.load(f)
    pre = pre or v["pre"]
    if v["model"] != "gpt2" or pre not in ("smollm", "gpt2"):
        sys.exit(f"this reference knows byte-level BPE with the smollm or gpt2 pre-tokenizer, not {v['model']}/{pre}")
    vocab = {token: i for i, token in enumerate(v["tokens"])}
    merges = [tuple(m.split(" ")) for m in v["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = None
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    if pre == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, kind in zip(v["tokens"], v["token_types"]) if kind == CONTROL]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    if v.get("add_bos") or v.get("add_eos"):
        sys.exit("this reference adds no BOS/EOS, but the GGUF asks for them")
    return tok


def main():
    tok = build(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
    mode = sys.argv[2]
    items = json.load(sys.stdin)
    if mode == "encode":
        out = [tok.encode(text, add_special_tokens=True).ids for text in items]
    elif mode == "decode":
        out = [tok.decode(ids, skip_special_tokens=False) for ids in items]
    else:
        sys.exit(f"unknown mode {mode}")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
