//! Every GPU kernel against its CPU twin on random shapes: T = 1, sizes that are not multiples
//! of the workgroups' 16 or 64, grouped-query heads, the causal mask from a cache offset.
//! Runs on the first adapter wgpu finds (here lavapipe, Mesa's CPU Vulkan driver, installed by
//! the test command): attention within 1e-4, hidden states within 1e-3 relative.

use std::sync::OnceLock;

use crate::common;

use ndarray::{Array, Array1, Array2, Array3, ArrayD, Axis, Dimension, ShapeBuilder};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use transformer_viz::gpu::{self, GpuContext, GpuDtype, GpuError, GpuTensor};
use transformer_viz::model::attention::{
    apply_causal_mask_from, scaled_scores, softmax_rows, weighted_values,
};
use transformer_viz::model::config::{Activation, NormKind};
use transformer_viz::model::ffn::{gated, gelu, silu};
use transformer_viz::model::linear::Linear;
use transformer_viz::model::matrix::Matrix;
use transformer_viz::model::norm::{self, row_mean_std};
use transformer_viz::model::position::apply_rotary_from;
use transformer_viz::model::quantized::{GgmlType, GgufTensor, QK};
use transformer_viz::model::weights::NormWeights;

fn context() -> &'static GpuContext {
    static CONTEXT: OnceLock<GpuContext> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        let ctx = common::gpu_context();
        eprintln!("GPU kernels run on {}", ctx.adapter_description());
        ctx
    })
}

struct Random(ChaCha8Rng);

impl Random {
    fn new(seed: u64) -> Self {
        Random(ChaCha8Rng::seed_from_u64(seed))
    }
    /// Uniform in [lo, hi).
    fn below(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.0.next_u32() as usize) % (hi - lo)
    }
    /// Roughly normal values of scale `scale` (the sum of four uniforms).
    fn values<D: Dimension, S: ShapeBuilder<Dim = D>>(
        &mut self,
        shape: S,
        scale: f32,
    ) -> Array<f32, D> {
        Array::from_shape_simple_fn(shape, || {
            let s: f32 = (0..4)
                .map(|_| (self.0.next_u32() as f32 / u32::MAX as f32) - 0.5)
                .sum();
            s * scale * 1.7
        })
    }
}

fn upload<D: Dimension>(a: &Array<f32, D>) -> GpuTensor {
    let values: Vec<f32> = a.iter().copied().collect();
    GpuTensor::upload(context(), &values, a.shape(), "test input").expect("fits the device")
}

fn read(t: &GpuTensor) -> ArrayD<f32> {
    let values = pollster::block_on(context().read(t)).expect("readback");
    ArrayD::from_shape_vec(t.shape().to_vec(), values).expect("shape")
}

/// Largest |gpu - cpu| / max(1, |cpu|), with -inf required in the same places.
fn relative_gap<D: Dimension>(gpu: &ArrayD<f32>, cpu: &Array<f32, D>) -> f32 {
    assert_eq!(gpu.shape(), cpu.shape());
    gpu.iter()
        .zip(cpu.iter())
        .map(|(&g, &c)| {
            if c.is_infinite() || g.is_infinite() {
                assert_eq!(g, c, "masked entries must be -inf on both");
                0.0
            } else {
                (g - c).abs() / c.abs().max(1.0)
            }
        })
        .fold(0.0, f32::max)
}

#[test]
fn dense_matches_linear_forward() {
    let mut r = Random::new(1);
    let mut shapes = vec![
        (1, 1, 1),
        (1, 384, 1536),
        (32, 128, 2048),
        (17, 33, 47),
        (16, 16, 16),
    ];
    for _ in 0..12 {
        shapes.push((r.below(1, 70), r.below(1, 300), r.below(1, 300)));
    }
    for (i, &(t, inputs, outputs)) in shapes.iter().enumerate() {
        let x = r.values((t, inputs), 1.0);
        let w = r.values((outputs, inputs), 0.1);
        let b = r.values(outputs, 0.5);
        let with_bias = i % 3 != 1;
        let linear = Linear {
            weight: w.clone().into(),
            bias: with_bias.then(|| b.clone()),
        };
        let cpu = linear.forward(x.view()); // (T, out)
        let (gx, gw, gb) = (upload(&x), upload(&w), upload(&b));
        let y = gpu::dense(context(), &gx, &gw, with_bias.then_some(&gb)).expect("dense");
        let gap = relative_gap(&read(&y), &cpu);
        assert!(
            gap < 1e-3,
            "dense ({t}, {inputs}) x ({outputs}, {inputs}), bias {with_bias}: gap {gap}"
        );
    }
}

#[test]
fn dense_with_f16_weights_matches_linear_forward_on_the_same_values() {
    let mut r = Random::new(5);
    // Odd weight counts end in half a word.
    for &(t, inputs, outputs) in &[
        (1, 1, 1),
        (3, 7, 5),
        (32, 576, 192),
        (19, 64, 129),
        (1, 33, 1),
    ] {
        let x = r.values((t, inputs), 1.0);
        let halves: Vec<half::f16> = r
            .values(outputs * inputs, 0.1)
            .iter()
            .map(|&v| half::f16::from_f32(v))
            .collect();
        // The CPU twin reads the same f16 values widened exactly, as the loaders widen them.
        let w = Array2::from_shape_vec(
            (outputs, inputs),
            halves.iter().map(|h| h.to_f32()).collect(),
        )
        .expect("shape");
        let b = r.values(outputs, 0.5);
        let cpu = Linear {
            weight: w.into(),
            bias: Some(b.clone()),
        }
        .forward(x.view()); // (T, out)
        let gw = GpuTensor::upload_f16(context(), &halves, &[outputs, inputs], "f16 weight")
            .expect("fits");
        let y = gpu::dense(context(), &upload(&x), &gw, Some(&upload(&b))).expect("dense f16");
        let gap = relative_gap(&read(&y), &cpu);
        assert!(
            gap < 1e-3,
            "dense f16 ({t}, {inputs}) x ({outputs}, {inputs}): gap {gap}"
        );
    }
    // f16 is for weights only: an f16 input is refused, as is reading f16 back.
    let h = GpuTensor::upload_f16(context(), &[half::f16::ONE; 4], &[2, 2], "f16").expect("fits");
    assert!(matches!(
        gpu::dense(context(), &h, &h, None),
        Err(GpuError::Shape { .. })
    ));
    assert!(matches!(
        pollster::block_on(context().read(&h)),
        Err(GpuError::Readback(_))
    ));
}

/// GGUF blocks of `kind` for a (rows, cols) matrix: random bytes for the quants (every bit
/// pattern, negative Q8_0 ones included) under scales and minimums like a checkpoint's.
fn gguf_blocks(r: &mut Random, kind: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..rows * cols / QK {
        let scale = 0.005 + 0.03 * (r.0.next_u32() as f32 / u32::MAX as f32);
        bytes.extend(half::f16::from_f32(scale).to_le_bytes());
        let quants = match kind {
            GgmlType::Q8_0 => QK,
            _ => {
                let minimum = -0.2 * (r.0.next_u32() as f32 / u32::MAX as f32);
                bytes.extend(half::f16::from_f32(minimum).to_le_bytes());
                QK / 2
            }
        };
        bytes.extend((0..quants).map(|_| r.0.next_u32() as u8));
    }
    bytes
}

#[test]
fn dense_with_gguf_blocks_matches_the_quantized_cpu_product() {
    let mut r = Random::new(6);
    // Rows of one and of many blocks; outputs and tokens that are not multiples of 16; T = 1.
    let mut shapes = vec![
        (1, 32, 1),
        (1, 576, 192),
        (17, 64, 47),
        (32, 96, 129),
        (3, 1536, 40),
    ];
    for _ in 0..6 {
        shapes.push((r.below(1, 40), QK * r.below(1, 12), r.below(1, 200)));
    }
    for kind in [GgmlType::Q8_0, GgmlType::Q4_1] {
        for (i, &(t, inputs, outputs)) in shapes.iter().enumerate() {
            let blocks = gguf_blocks(&mut r, kind, outputs, inputs);
            let matrix = Matrix::quantized(
                GgufTensor::new("w", vec![outputs, inputs], kind, blocks.clone())
                    .expect("whole blocks"),
            )
            .expect("2-D");
            assert_eq!(
                matrix.storage(),
                kind.name(),
                "the CPU keeps the blocks too"
            );
            let x = r.values((t, inputs), 1.0);
            let b = r.values(outputs, 0.5);
            let with_bias = i % 2 == 0;
            let cpu = Linear {
                weight: matrix,
                bias: with_bias.then(|| b.clone()),
            }
            .forward(x.view()); // (T, out)
            let gw =
                GpuTensor::upload_blocks(context(), kind, &blocks, [outputs, inputs], "blocks")
                    .expect("fits");
            assert_eq!(
                gw.dtype(),
                if kind == GgmlType::Q8_0 {
                    GpuDtype::Q8_0
                } else {
                    GpuDtype::Q4_1
                }
            );
            let y = gpu::dense(
                context(),
                &upload(&x),
                &gw,
                with_bias.then(|| upload(&b)).as_ref(),
            )
            .expect("dense on blocks");
            let gap = relative_gap(&read(&y), &cpu);
            assert!(gap < 1e-3, "dense {kind:?} ({t}, {inputs}) x ({outputs}, {inputs}), bias {with_bias}: gap {gap}");
        }
    }
    // Blocks that do not make whole rows, or a byte count that is not the shape's, are refused
    // before anything is allocated; blocks are weights, never read back.
    let blocks = gguf_blocks(&mut r, GgmlType::Q4_1, 2, 64);
    for (bytes, shape) in [
        (&blocks[..], [3, 32]),
        (&blocks[..], [2, 64 + 1]),
        (&blocks[..blocks.len() - 1], [2, 64]),
        (&blocks[..], [1, 32]),
    ] {
        let refused =
            GpuTensor::upload_blocks(context(), GgmlType::Q4_1, bytes, shape, "bad blocks");
        assert!(
            matches!(refused, Err(GpuError::Shape { .. })),
            "{} bytes as {shape:?} must be refused",
            bytes.len()
        );
    }
    assert!(matches!(
        GpuTensor::upload_blocks(context(), GgmlType::F16, &[0; 64], [1, 32], "f16"),
        Err(GpuError::Shape { .. })
    ));
    let q = GpuTensor::upload_blocks(
        context(),
        GgmlType::Q8_0,
        &gguf_blocks(&mut r, GgmlType::Q8_0, 1, 32),
        [1, 32],
        "q8",
    )
    .expect("fits");
    assert!(matches!(
        pollster::block_on(context().read(&q)),
        Err(GpuError::Readback(_))
    ));
}

#[test]
fn layer_norm_matches_norm_apply_and_its_statistics() {
    let mut r = Random::new(2);
    let mut shapes = vec![(1, 1), (1, 128), (32, 384), (5, 576), (3, 65), (70, 63)];
    for _ in 0..8 {
        shapes.push((r.below(1, 40), r.below(2, 700)));
    }
    for (i, &(t, d)) in shapes.iter().enumerate() {
        for kind in [NormKind::Layer, NormKind::Rms] {
            // Some rows far from zero, as a post-LN residual stream is.
            let x = r.values((t, d), 3.0) + (i as f32 - 2.0);
            let gamma = r.values(d, 0.3) + 1.0;
            let beta = (kind == NormKind::Layer && i % 2 == 0).then(|| r.values(d, 0.2));
            let weights = NormWeights {
                gamma: gamma.clone(),
                beta: beta.clone(),
            };
            let cpu = norm::apply(kind, &weights, x.view(), 1e-5); // (T, d)
            let (in_mean, in_std) = row_mean_std(x.view()); // (T), (T)
            let (out_mean, out_std) = row_mean_std(cpu.view()); // (T), (T)
            let gb = beta.as_ref().map(upload);
            let out = gpu::layer_norm(
                context(),
                kind,
                &upload(&x),
                &upload(&gamma),
                gb.as_ref(),
                1e-5,
            )
            .expect("norm");
            let gap = relative_gap(&read(&out.y), &cpu);
            assert!(gap < 1e-3, "{kind:?} ({t}, {d}): output gap {gap}");
            let stats = read(&out.stats); // (T, 4)
            for (column, expected) in [in_mean, in_std, out_mean, out_std].iter().enumerate() {
                let gap = relative_gap(
                    &stats.index_axis(Axis(1), column).to_owned().into_dyn(),
                    expected,
                );
                assert!(
                    gap < 1e-3,
                    "{kind:?} ({t}, {d}): statistic {column} gap {gap}"
                );
            }
        }
    }
}

#[test]
fn attention_matches_scores_mask_softmax_and_weighted_values() {
    let mut r = Random::new(3);
    // (heads, kv_heads, queries, first, head_dim, causal): T = 1, a cache offset, GQA.
    let mut cases = vec![
        (1, 1, 1, 0, 1, true),
        (12, 12, 32, 0, 32, false),
        (9, 3, 1, 31, 64, true),
        (4, 4, 17, 5, 16, true),
        (8, 2, 33, 0, 20, true),
    ];
    for _ in 0..10 {
        let kv = r.below(1, 4);
        let first = if r.below(0, 2) == 0 {
            0
        } else {
            r.below(0, 40)
        };
        cases.push((
            kv * r.below(1, 4),
            kv,
            r.below(1, 50),
            first,
            r.below(1, 70),
            r.below(0, 2) == 0,
        ));
    }
    for &(heads, kv_heads, queries, first, hd, causal) in &cases {
        let keys = if causal { first + queries } else { queries };
        let q = r.values((heads, queries, hd), 1.0);
        let k = r.values((kv_heads, keys, hd), 1.0);
        let v = r.values((kv_heads, keys, hd), 1.0);
        let scale = 1.0 / (hd as f32).sqrt();
        let mut scores: Array3<f32> = scaled_scores(q.view(), k.view(), heads / kv_heads, scale); // (heads, Tq, Tk)
        if causal {
            apply_causal_mask_from(&mut scores, first);
        }
        let mut weights = scores.clone(); // (heads, Tq, Tk)
        for mut head in weights.outer_iter_mut() {
            softmax_rows(head.view_mut());
        }
        let head_out = weighted_values(weights.view(), v.view(), heads / kv_heads); // (heads, Tq, hd)

        let ctx = context();
        let (gq, gk, gv) = (upload(&q), upload(&k), upload(&v));
        let what = format!(
            "heads {heads}/{kv_heads}, Tq {queries}, first {first}, hd {hd}, causal {causal}"
        );
        let gs = gpu::attention_scores(ctx, &gq, &gk, scale, causal, first).expect("scores");
        let gap = relative_gap(&read(&gs), &scores);
        assert!(gap < 1e-4, "scores, {what}: gap {gap}");
        let gw = gpu::softmax_rows(ctx, &gs).expect("softmax");
        let weights_gpu = read(&gw);
        let gap = relative_gap(&weights_gpu, &weights);
        assert!(gap < 1e-4, "weights, {what}: gap {gap}");
        let go = gpu::weighted_values(ctx, &gw, &gv).expect("weighted values");
        let gap = relative_gap(&read(&go), &head_out);
        assert!(gap < 1e-4, "head outputs, {what}: gap {gap}");
    }
}

#[test]
fn rotary_matches_apply_rotary_from_at_any_position() {
    let mut r = Random::new(6);
    // SmolLM2's base and head size, T = 1 deep into a cache, odd numbers of pairs.
    for &(heads, rows, hd, first, base) in &[
        (1, 1, 2, 0, 10_000.0),
        (9, 1, 64, 8_000, 100_000.0),
        (3, 33, 6, 5, 10_000.0),
        (4, 17, 64, 0, 10_000.0),
    ] {
        for adjacent in [false, true] {
            let x: Array3<f32> = r.values((heads, rows, hd), 1.0);
            let mut cpu = x.clone();
            apply_rotary_from(&mut cpu, base, adjacent, first); // (heads, T, hd)
            let y = gpu::rotary(context(), &upload(&x), base, adjacent, first).expect("rotary");
            let gap = relative_gap(&read(&y), &cpu);
            assert!(
                gap < 1e-5,
                "rotary ({heads}, {rows}, {hd}) from {first}, adjacent {adjacent}: gap {gap}"
            );
        }
    }
}

#[test]
fn swiglu_gate_matches_gated() {
    let mut r = Random::new(7);
    // One value, workgroup edges (256), SmolLM2's width at T = 1 and at 5 tokens, and more
    // values than one row of workgroups holds.
    for (t, d) in [
        (1usize, 1usize),
        (1, 255),
        (1, 257),
        (1, 1536),
        (5, 1536),
        (70, 1537),
    ] {
        let up = r.values((t, d), 2.0);
        let gate = r.values((t, d), 4.0);
        let cpu = gated(up.view(), gate.view()); // (T, d_ff)
        let y = gpu::swiglu_gate(context(), &upload(&up), &upload(&gate)).expect("gate");
        let gap = relative_gap(&read(&y), &cpu);
        assert!(gap < 1e-5, "gate ({t}, {d}): gap {gap}");
    }
    let mismatched = gpu::swiglu_gate(
        context(),
        &upload(&r.values((2, 3), 1.0)),
        &upload(&r.values((3, 2), 1.0)),
    );
    assert!(matches!(mismatched, Err(GpuError::Shape { .. })));
}

#[test]
fn activations_match_their_formulas() {
    let mut r = Random::new(4);
    for n in [1usize, 255, 256, 257, 100_003] {
        let x: Array1<f32> = r.values(n, 4.0);
        let gx = upload(&x);
        for (kind, f) in [
            (Activation::Relu, (|v: f32| v.max(0.0)) as fn(f32) -> f32),
            (Activation::Gelu, gelu),
            (Activation::SwiGlu, silu),
        ] {
            let cpu = x.mapv(f);
            let y = gpu::activation(context(), kind, &gx).expect("activation");
            let gap = relative_gap(&read(&y), &cpu);
            assert!(gap < 1e-5, "{kind:?} on {n} values: gap {gap}");
        }
    }
}

#[test]
fn bad_shapes_and_oversized_buffers_are_typed_errors() {
    let ctx = context();
    let x = upload(&Array2::<f32>::zeros((3, 4)));
    let w = upload(&Array2::<f32>::zeros((5, 6)));
    assert!(matches!(
        gpu::dense(ctx, &x, &w, None),
        Err(GpuError::Shape { .. })
    ));
    assert!(matches!(
        GpuTensor::upload(ctx, &[1.0; 3], &[2, 2], "x"),
        Err(GpuError::Shape { .. })
    ));
    // A shape whose product overflows, and one past the device's binding limit, are refused
    // before anything is allocated.
    assert!(matches!(
        GpuTensor::upload(ctx, &[], &[usize::MAX, 2], "x"),
        Err(GpuError::Shape { .. })
    ));
    let column = upload(&Array2::<f32>::zeros((1 << 16, 1)));
    let outputs = gpu::dense(ctx, &column, &column, None).err(); // (65536, 65536): 16 GiB
    assert!(
        matches!(outputs, Some(GpuError::TooLarge { .. })),
        "{outputs:?}"
    );
    let err = gpu::softmax_rows(ctx, &upload(&ndarray::arr0(1.0f32))).err();
    assert!(matches!(err, Some(GpuError::Shape { .. })), "{err:?}");
}

#[test]
fn the_moves_between_operations_match_their_cpu_twins() {
    // The kernels that keep a pass on the device between its products: the residual sum, the
    // heads split and merged (a copy: exact), and the causal mask on scores already computed.
    use transformer_viz::model::attention::{merge_heads, split_heads};
    let mut r = Random::new(11);
    for _ in 0..12 {
        let (t, heads, hd) = (r.below(1, 40), r.below(1, 13), r.below(1, 70));
        let x: ndarray::Array2<f32> = r.values((t, heads * hd), 1.0);
        let y: ndarray::Array2<f32> = r.values((t, heads * hd), 1.0);
        let sum = gpu::residual_add(context(), &upload(&x), &upload(&y)).expect("add");
        assert_eq!(
            read(&sum),
            (&x + &y).into_dyn(),
            "({t}, {heads} x {hd}): x + y exactly"
        );
        let split = gpu::swap_heads(context(), &upload(&x), [t, heads, hd], &[heads, t, hd])
            .expect("split");
        let cpu_split = split_heads(x.clone(), heads, hd); // (heads, T, hd)
        assert_eq!(
            read(&split),
            cpu_split.clone().into_dyn(),
            "({t}, {heads} x {hd}): split_heads exactly"
        );
        let merged =
            gpu::swap_heads(context(), &split, [heads, t, hd], &[t, heads * hd]).expect("merge");
        assert_eq!(
            read(&merged),
            merge_heads(cpu_split).into_dyn(),
            "({t}, {heads} x {hd}): merge_heads exactly"
        );
        let (tq, first) = (r.below(1, 20), r.below(0, 20));
        let scores: ndarray::Array3<f32> = r.values((heads, tq, first + tq), 3.0);
        let masked = gpu::causal_mask(context(), &upload(&scores), first).expect("mask");
        let mut cpu = scores.clone();
        apply_causal_mask_from(&mut cpu, first);
        assert_eq!(
            read(&masked),
            cpu.into_dyn(),
            "({heads}, {tq}, {}) from {first}: the same keys hidden",
            first + tq
        );
    }
    let mismatched = gpu::residual_add(
        context(),
        &upload(&r.values((2, 3), 1.0)),
        &upload(&r.values((3, 2), 1.0)),
    );
    assert!(matches!(mismatched, Err(GpuError::Shape { .. })));
    let wrong = gpu::swap_heads(
        context(),
        &upload(&r.values((2, 6), 1.0)),
        [2, 4, 2],
        &[4, 2, 2],
    );
    assert!(
        matches!(wrong, Err(GpuError::Shape { .. })),
        "12 values are not (2, 4, 2)"
    );
}
