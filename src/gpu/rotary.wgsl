// Rotary position embedding: every pair of a head's features turned by the angle
// position · θ_i. The host computes each angle's cosine and sine in f64 (an angle of a few
// thousand radians has no accurate f32 sine) and passes them as a table. One invocation a pair.
//   pair i is (2i, 2i + 1) with adjacent pairs (GGUF), else (i, i + hd/2) (Hugging Face)
//   (a, b) -> (a cos - b sin, a sin + b cos)

struct Params {
    heads: u32,     // heads
    rows: u32,      // T
    head_dim: u32,  // hd (even)
    adjacent: u32,  // 1: pairs (2i, 2i + 1); 0: pairs (i, i + hd/2)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;           // (heads, T, hd)
@group(0) @binding(2) var<storage, read> angles: array<f32>;      // (T, hd/2, 2): cos, sin of row t's angle i
@group(0) @binding(3) var<storage, read_write> y: array<f32>;     // (heads, T, hd)

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x; // pair
    let t = id.y; // row
    let h = id.z; // head
    let half = p.head_dim / 2u;
    if (i >= half || t >= p.rows || h >= p.heads) { return; }
    let base = (h * p.rows + t) * p.head_dim;
    var a = base + i;
    var b = base + i + half;
    if (p.adjacent == 1u) {
        a = base + 2u * i;
        b = a + 1u;
    }
    let cos_sin = (t * half + i) * 2u;
    let c = angles[cos_sin];
    let s = angles[cos_sin + 1u];
    let xa = x[a];
    let xb = x[b];
    y[a] = xa * c - xb * s;
    y[b] = xa * s + xb * c;
}
