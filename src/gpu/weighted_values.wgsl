// Each head's average of the value vectors, weighted by its attention row:
//   out[h, i, c] = Σ_j weights[h, i, j] · v[h / group, j, c]
// One invocation an output value.

struct Params {
    heads: u32,    // query heads
    queries: u32,  // Tq
    keys: u32,     // Tk
    head_dim: u32, // hd
    group: u32,    // query heads per value head
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> weights: array<f32>;   // (heads, Tq, Tk)
@group(0) @binding(2) var<storage, read> v: array<f32>;         // (kv_heads, Tk, hd)
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (heads, Tq, hd)

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let c = id.x; // feature within the head
    let i = id.y; // query
    let h = id.z; // head
    if (c >= p.head_dim || i >= p.queries || h >= p.heads) { return; }
    let w_base = (h * p.queries + i) * p.keys;
    let v_base = (h / p.group) * p.keys * p.head_dim + c;
    var sum = 0.0;
    for (var j = 0u; j < p.keys; j++) { sum += weights[w_base + j] * v[v_base + j * p.head_dim]; }
    out[(h * p.queries + i) * p.head_dim + c] = sum;
}
