// A pass's change (`crate::model::edits`), one invocation a value: y = x where `take` is 0,
// the replacement where it is 1.

struct Params {
    count: u32, // values
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // the pass's values, any shape
@group(0) @binding(2) var<storage, read> values: array<f32>;   // the replacement, the same shape
@group(0) @binding(3) var<storage, read> take: array<f32>;     // 1 where it replaces, else 0
@group(0) @binding(4) var<storage, read_write> y: array<f32>;  // the same shape

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane;
    if (i >= p.count) { return; }
    y[i] = select(x[i], values[i], take[i] > 0.5);
}
