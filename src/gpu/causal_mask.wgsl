// The causal mask on scores already computed, one invocation a score: query row r (at
// position first + r) keeps keys 0..=first + r; later keys get -inf.

struct Params {
    heads: u32,
    queries: u32, // Tq
    keys: u32,    // Tk
    first: u32,   // the first query's position
    hidden: f32,  // -inf, passed in (WGSL has no infinity literal)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> scores: array<f32>;   // (heads, Tq, Tk)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;  // (heads, Tq, Tk)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane;
    if (i >= p.heads * p.queries * p.keys) { return; }
    let key = i % p.keys;
    let query = (i / p.keys) % p.queries;
    y[i] = select(scores[i], p.hidden, key > p.first + query);
}
