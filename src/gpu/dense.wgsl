// A dense layer: y = x · wᵀ + b, with the weight stored (out, in) as PyTorch keeps it, read
// through `weight(index)`: the host appends dense_f32_weights.wgsl or dense_f16_weights.wgsl,
// which declare binding 2 and that function.
// Each 16 x 16 workgroup computes a 16 x 16 tile of y, walking the inputs 16 at a time
// through two tiles in workgroup memory (one of x's rows, one of w's rows).

struct Params {
    rows: u32,     // T
    inputs: u32,   // in
    outputs: u32,  // out
    has_bias: u32, // 0 or 1
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;       // (T, in)
// binding 2: w (out, in), declared with `weight` by the weights file appended
@group(0) @binding(3) var<storage, read> b: array<f32>;       // (out), or one unread value
@group(0) @binding(4) var<storage, read_write> y: array<f32>;  // (T, out)

const TILE: u32 = 16u;
var<workgroup> x_tile: array<array<f32, 16>, 16>; // [token within tile][input within step]
var<workgroup> w_tile: array<array<f32, 16>, 16>; // [output within tile][input within step]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_id) local: vec3<u32>) {
    let row = group.y * TILE + local.y;      // the token this invocation computes
    let column = group.x * TILE + local.x;   // the output feature it computes
    let w_row = group.x * TILE + local.y;    // the weight row it loads into w_tile
    var sum = 0.0;
    let steps = (p.inputs + TILE - 1u) / TILE;
    for (var step = 0u; step < steps; step++) {
        let k = step * TILE + local.x;
        var xv = 0.0;
        if (row < p.rows && k < p.inputs) { xv = x[row * p.inputs + k]; }
        x_tile[local.y][local.x] = xv;
        var wv = 0.0;
        if (w_row < p.outputs && k < p.inputs) { wv = weight(w_row * p.inputs + k); }
        w_tile[local.y][local.x] = wv;
        workgroupBarrier();
        for (var i = 0u; i < TILE; i++) {
            sum += x_tile[local.y][i] * w_tile[local.x][i];
        }
        workgroupBarrier();
    }
    if (row < p.rows && column < p.outputs) {
        if (p.has_bias == 1u) { sum += b[column]; }
        y[row * p.outputs + column] = sum;
    }
}
