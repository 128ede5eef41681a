// SwiGLU's gating, one invocation a value: y = up · SiLU(gate) = up · gate / (1 + exp(-gate)).

struct Params {
    count: u32, // values
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> up: array<f32>;       // (T, d_ff)
@group(0) @binding(2) var<storage, read> gate: array<f32>;     // (T, d_ff)
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // (T, d_ff)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane;
    if (i >= p.count) { return; }
    let g = gate[i];
    y[i] = up[i] * (g / (1.0 + exp(-g)));
}
