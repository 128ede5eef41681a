// The dense kernel's GGUF Q8_0 weights, as the file stores them: blocks of 32 values, each
// 34 bytes (an f16 scale d, then 32 signed bytes q), rows of whole blocks back to back; a
// value is d · q (ggml's dequantize_row_q8_0). Read byte by byte from 32-bit words
// (little-endian: byte i of a word is bits 8i..8i+7).
@group(0) @binding(2) var<storage, read> w: array<u32>; // (out, in / 32) blocks of 34 bytes, padded to a word

fn weight(index: u32) -> f32 {
    let start = (index / 32u) * 34u;   // the block's first byte (even: its scale is in one word)
    let d = unpack2x16float(w[start / 4u])[(start % 4u) / 2u];
    let at = start + 2u + index % 32u; // the value's byte
    let q = extractBits(i32(w[at / 4u]), (at % 4u) * 8u, 8u); // sign-extended
    return d * f32(q);
}
