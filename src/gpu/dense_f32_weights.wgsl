// The dense kernel's f32 weights.
@group(0) @binding(2) var<storage, read> w: array<f32>; // (out, in)

fn weight(index: u32) -> f32 {
    return w[index];
}
