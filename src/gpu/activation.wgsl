// The feed-forward network's pointwise nonlinearity, one invocation a value:
//   0: ReLU  max(x, 0)
//   1: GELU  x · Φ(x) = x/2 · (1 + erf(x/√2)), erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7;
//      WGSL has no erf), the same approximation as the CPU's WebAssembly path
//   2: SiLU  x · sigmoid(x)

struct Params {
    count: u32, // values
    kind: u32,  // 0 ReLU, 1 GELU, 2 SiLU
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (n)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;  // (n)

fn erf(z: f32) -> f32 {
    let a = abs(z);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = t * (0.2548296 + t * (-0.28449674 + t * (1.4214137 + t * (-1.4531521 + t * 1.0614054))));
    return sign(z) * (1.0 - poly * exp(-a * a));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let i = (group.x + group.y * groups.x) * 256u + lane;
    if (i >= p.count) { return; }
    let v = x[i];
    if (p.kind == 0u) {
        y[i] = max(v, 0.0);
    } else if (p.kind == 1u) {
        y[i] = 0.5 * v * (1.0 + erf(v * 0.70710678));
    } else {
        y[i] = v / (1.0 + exp(-v));
    }
}
