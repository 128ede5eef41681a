// A residual connection, one invocation a value: y = x + r.

struct Params {
    count: u32, // values
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (T, d) the stream
@group(0) @binding(2) var<storage, read> r: array<f32>;        // (T, d) the sublayer's output
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // (T, d)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane;
    if (i >= p.count) { return; }
    y[i] = x[i] + r[i];
}
