// LayerNorm (or RMSNorm) of each row, emitting each row's statistics for the trace.
// One workgroup of 64 a row: the row's sums are reduced in workgroup memory.
//   LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta
//   RMSNorm:   y = x / sqrt(mean(x²) + eps) * gamma

struct Params {
    rows: u32,     // T
    width: u32,    // d
    rms: u32,      // 1: RMSNorm, 0: LayerNorm
    has_beta: u32, // 0 or 1
    eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;          // (T, d)
@group(0) @binding(2) var<storage, read> gamma: array<f32>;      // (d)
@group(0) @binding(3) var<storage, read> beta: array<f32>;       // (d), or one unread value
@group(0) @binding(4) var<storage, read_write> y: array<f32>;    // (T, d)
@group(0) @binding(5) var<storage, read_write> stats: array<f32>; // (T, 4): input mean, input std, output mean, output std

const LANES: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

// The sum of every lane's `value`, returned to every lane.
fn workgroup_sum(value: f32, lane: u32) -> f32 {
    partial[lane] = value;
    workgroupBarrier();
    for (var half = LANES / 2u; half > 0u; half = half / 2u) {
        if (lane < half) { partial[lane] += partial[lane + half]; }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let row = group.x + group.y * groups.x;
    if (row >= p.rows) { return; }
    let base = row * p.width;
    let d = f32(p.width);

    var s = 0.0;
    for (var i = lane; i < p.width; i += LANES) { s += x[base + i]; }
    let mean = workgroup_sum(s, lane) / d;
    var sq = 0.0;
    var raw = 0.0;
    for (var i = lane; i < p.width; i += LANES) {
        let v = x[base + i];
        sq += (v - mean) * (v - mean);
        raw += v * v;
    }
    let variance = workgroup_sum(sq, lane) / d;
    let mean_square = workgroup_sum(raw, lane) / d;

    var inv = 1.0 / sqrt(variance + p.eps);
    var center = mean;
    if (p.rms == 1u) {
        inv = 1.0 / sqrt(mean_square + p.eps);
        center = 0.0;
    }
    var out_sum = 0.0;
    for (var i = lane; i < p.width; i += LANES) {
        var v = (x[base + i] - center) * inv * gamma[i];
        if (p.has_beta == 1u) { v += beta[i]; }
        y[base + i] = v;
        out_sum += v;
    }
    let out_mean = workgroup_sum(out_sum, lane) / d;
    var out_sq = 0.0;
    for (var i = lane; i < p.width; i += LANES) {
        let v = y[base + i];
        out_sq += (v - out_mean) * (v - out_mean);
    }
    let out_variance = workgroup_sum(out_sq, lane) / d;
    if (lane == 0u) {
        stats[row * 4u] = mean;
        stats[row * 4u + 1u] = sqrt(variance);
        stats[row * 4u + 2u] = out_mean;
        stats[row * 4u + 3u] = sqrt(out_variance);
    }
}
