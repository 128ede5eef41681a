// The dense kernel's GGUF Q4_1 weights, as the file stores them: blocks of 32 values, each
// 20 bytes (f16 scale d and minimum m in the first word, then 16 bytes whose byte j holds
// value j in its low four bits and value j + 16 in its high four), rows of whole blocks back
// to back; a value is d · q + m (ggml's dequantize_row_q4_1).
@group(0) @binding(2) var<storage, read> w: array<u32>; // (out, in / 32) blocks of 5 words

fn weight(index: u32) -> f32 {
    let block = (index / 32u) * 5u;    // the block's first word
    let dm = unpack2x16float(w[block]); // (d, m)
    let j = index % 32u;
    let byte = j % 16u;                // the byte holding value j
    let shift = (byte % 4u) * 8u + (j / 16u) * 4u;
    let q = extractBits(w[block + 1u + byte / 4u], shift, 4u);
    return dm.x * f32(q) + dm.y;
}
