// Scaled dot products of every query with every key, per head, with the causal mask:
//   scores[h, i, j] = scale · q[h, i] · k[h / group, j], or -inf where key j lies after query i
// (query i sits at position first + i; keys at 0, 1, ...). One invocation a score.

struct Params {
    heads: u32,      // query heads
    queries: u32,    // Tq
    keys: u32,       // Tk
    head_dim: u32,   // hd
    group: u32,      // query heads per key head (grouped-query attention)
    causal: u32,     // 0 or 1
    first: u32,      // position of query 0
    scale: f32,      // 1 / sqrt(hd)
    minus_infinity: f32, // -inf, passed in: WGSL cannot write the constant
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;              // (heads, Tq, hd)
@group(0) @binding(2) var<storage, read> k: array<f32>;              // (kv_heads, Tk, hd)
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;   // (heads, Tq, Tk)

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let j = id.x; // key
    let i = id.y; // query
    let h = id.z; // head
    if (j >= p.keys || i >= p.queries || h >= p.heads) { return; }
    let out = (h * p.queries + i) * p.keys + j;
    if (p.causal == 1u && j > p.first + i) {
        scores[out] = p.minus_infinity;
        return;
    }
    let q_base = (h * p.queries + i) * p.head_dim;
    let k_base = ((h / p.group) * p.keys + j) * p.head_dim;
    var dot = 0.0;
    for (var c = 0u; c < p.head_dim; c++) { dot += q[q_base + c] * k[k_base + c]; }
    scores[out] = p.scale * dot;
}
