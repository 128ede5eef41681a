// The dense kernel's f16 weights: two a 32-bit word, the lower-indexed in the low half (as
// they lie in memory, little-endian), widened exactly to f32.
@group(0) @binding(2) var<storage, read> w: array<u32>; // (out, in) f16 pairs: (out · in + 1) / 2 words

fn weight(index: u32) -> f32 {
    return unpack2x16float(w[index / 2u])[index % 2u];
}
