// Softmax of each row: exp(x - max) / sum, so large scores do not overflow and -inf (a
// masked key) gives exactly 0. One workgroup of 64 a row.

struct Params {
    rows: u32,  // every row of every head: heads · Tq
    width: u32, // Tk
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // (rows, width)
@group(0) @binding(2) var<storage, read_write> y: array<f32>;  // (rows, width)

const LANES: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let row = group.x + group.y * groups.x;
    if (row >= p.rows) { return; }
    let base = row * p.width;

    var m = x[base]; // every lane starts from the row's first value, so no infinity is written
    for (var i = lane; i < p.width; i += LANES) { m = max(m, x[base + i]); }
    partial[lane] = m;
    workgroupBarrier();
    for (var half = LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) { partial[lane] = max(partial[lane], partial[lane + half]); }
        workgroupBarrier();
    }
    let row_max = partial[0];
    workgroupBarrier();

    var s = 0.0;
    for (var i = lane; i < p.width; i += LANES) {
        let e = exp(x[base + i] - row_max);
        y[base + i] = e;
        s += e;
    }
    partial[lane] = s;
    workgroupBarrier();
    for (var half = LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) { partial[lane] += partial[lane + half]; }
        workgroupBarrier();
    }
    let total = partial[0];
    for (var i = lane; i < p.width; i += LANES) { y[base + i] = y[base + i] / total; }
}
