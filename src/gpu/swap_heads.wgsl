// The first two axes of a (A, B, C) tensor swapped, one invocation a value: y[b, a, c] =
// x[a, b, c]. With (A, B, C) = (T, heads, hd) it splits a projection's rows into heads,
// (heads, T, hd); with (heads, T, hd) it merges the heads back into rows, (T, heads · hd).

struct Params {
    a: u32,
    b: u32,
    c: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (A, B, C)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;  // (B, A, C)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane; // index into y
    if (i >= p.a * p.b * p.c) { return; }
    let c = i % p.c;
    let a = (i / p.c) % p.a;
    let b = i / (p.c * p.a);
    y[i] = x[(a * p.b + b) * p.c + c];
}
