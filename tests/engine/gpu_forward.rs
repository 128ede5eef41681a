//! The whole forward pass on the GPU backend against the CPU, for every model the engine
//! reads: the same trace (steps, names, shapes) with attention weights within 1e-4 and every
//! other step (hidden states, norms, logits) within 1e-3 relative. Also the `trace` command's
//! JSON from both backends, and the fallback: a device lost before a pass leaves the CPU to
//! compute it, with the same numbers, and says so. A pass through the KV cache kept on the
//! GPU, and attention's core (`attend`) on random shapes.
//! On lavapipe (Mesa's CPU Vulkan driver) here; see `tests/engine/gpu_kernels.rs`.

use crate::common;
use std::process::Command;

use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::gpu::{GpuBackend, GpuContext};
use transformer_viz::model::backend::Backend;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::trace::{Op, Readback, Trace};
use transformer_viz::Transformer;

const TEXT: &str = "The quick brown fox jumps over the lazy dog, and the dog sleeps on.";

use common::gpu_context;

/// Largest gaps between two traces of one text: (attention weights, absolute; every other
/// step, |gpu - cpu| / max(1, |cpu|)), after checking they hold the same steps.
fn gaps(cpu: &Trace, gpu: &Trace) -> (f32, f32) {
    assert_eq!(cpu.tokens, gpu.tokens);
    let names = |t: &Trace| {
        t.steps
            .iter()
            .map(|s| (s.name.clone(), s.tensor.view().shape().to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(cpu),
        names(gpu),
        "the same steps, in the same order, of the same shapes"
    );
    let (mut attention, mut other) = (0f32, 0f32);
    for (c, g) in cpu.steps.iter().zip(&gpu.steps) {
        let is_attention = matches!(c.op, Op::Softmax | Op::CrossSoftmax);
        for (&a, &b) in c.tensor.view().iter().zip(g.tensor.view().iter()) {
            if a.is_infinite() || b.is_infinite() {
                assert_eq!(a, b, "{}: masked scores are -inf on both", c.name);
                continue;
            }
            if is_attention {
                attention = attention.max((a - b).abs());
            } else {
                other = other.max((a - b).abs() / a.abs().max(1.0));
            }
        }
    }
    (attention, other)
}

/// Checks the model's GPU trace against its CPU one and returns the bytes of weights the GPU
/// holds after the pass.
fn check_model(model: &Transformer, ctx: GpuContext) -> u64 {
    let cpu = common::passes::every_step(model, &Cpu, TEXT).expect("cpu trace");
    let gpu_backend = GpuBackend::new(ctx, &model.weights);
    let gpu = common::passes::every_step(model, &gpu_backend, TEXT).expect("gpu trace");
    assert_eq!(
        gpu_backend.failure(),
        None,
        "{}: every operation ran on the GPU",
        model.config.name
    );
    let (attention, other) = gaps(&cpu, &gpu);
    eprintln!(
        "{}: attention within {attention:.2e}, other steps within {other:.2e} relative",
        model.config.name
    );
    assert!(
        attention < 1e-4,
        "{}: attention weights differ by {attention}",
        model.config.name
    );
    assert!(
        other < 1e-3,
        "{}: a step differs by {other} relative",
        model.config.name
    );
    // The page's "largest difference" line computes the same two figures.
    let said = cpu.largest_difference(&gpu).expect("comparable traces");
    assert_eq!((said.attention, said.other), (attention, other));
    // The CPU's own traced pass (the one the page shows) agrees with every step kept on the CPU.
    let page = model.trace(TEXT).expect("trace");
    let last = |t: &Trace| {
        t.find(Op::Softmax, Some(model.config.n_layers - 1))
            .expect("last layer's attention")
            .tensor
            .view()
            .to_owned()
    };
    assert_eq!(last(&page), last(&cpu));
    gpu_backend.weight_bytes()
}

#[test]
fn minilm_runs_on_the_gpu_as_on_the_cpu() {
    check_model(common::minilm(), gpu_context());
}

#[test]
fn the_lecture_decoders_run_on_the_gpu_as_on_the_cpu() {
    for name in ["lecture-post-ln", "lecture-pre-ln"] {
        let model =
            load_named(&common::models_dir(), name, WeightPrecision::F32).expect("committed model");
        check_model(&model, gpu_context());
    }
}

#[test]
fn smollm2_runs_on_the_gpu_as_on_the_cpu() {
    // The GGUF file's Q4_1 and Q8_0 blocks go to the GPU as they are and are dequantized
    // inside the dense kernel; rotary, RMSNorm and SwiGLU's gating run on the GPU too.
    if let Some(model) = common::smollm2() {
        let held = check_model(model, gpu_context());
        // Widened to f32, the matrices alone would be ~540 MB; as blocks, about the file's size.
        let w = &model.weights;
        let mut blocks = w.token_embedding.bytes_in_memory()
            + w.lm_head.as_ref().map_or(0, |m| m.bytes_in_memory());
        for layer in &w.layers {
            let (a, f) = (&layer.attention, &layer.ffn);
            for linear in [&a.query, &a.key, &a.value, &a.output, &f.up, &f.down]
                .into_iter()
                .chain(f.gate.as_ref())
            {
                blocks += linear.weight.bytes_in_memory();
            }
        }
        eprintln!(
            "smollm2: the GPU holds {:.0} MB of weights; the CPU {:.0} MB of matrices",
            held as f64 / 1e6,
            blocks as f64 / 1e6
        );
        assert!(held < blocks as u64 + (4 << 20), "the GPU holds {held} bytes of weights, more than the {blocks} bytes of blocks (and small vectors)");
    }
}

#[test]
fn the_encoder_decoder_decodes_on_the_gpu_as_on_the_cpu() {
    // Every pass of the greedy decoding (the encoder's once, the decoder's a token) and the
    // traced passes run on the GPU: the same output, and the same numbers within the bounds,
    // the encoder's trace and the cross-attention included.
    let model = load_named(
        &common::models_dir(),
        "lecture-reverse",
        WeightPrecision::F32,
    )
    .expect("committed model");
    let source = "gpu reads this";
    let cpu = model.translate(source).expect("cpu translation");
    let gpu_backend = GpuBackend::new(gpu_context(), &model.weights);
    let gpu = common::passes::translation(&model, &gpu_backend, source, Readback::Everything)
        .expect("gpu translation");
    assert_eq!(
        gpu_backend.failure(),
        None,
        "every operation ran on the GPU"
    );
    assert_eq!(gpu.output, cpu.output);
    assert_eq!(
        cpu.output,
        source.chars().rev().collect::<String>(),
        "the model reverses its source"
    );
    let (attention, other) = gaps(&cpu.trace, &gpu.trace);
    let (source_cpu, source_gpu) = (
        cpu.trace.source.as_deref().expect("encoder pass"),
        gpu.trace.source.as_deref().expect("encoder pass"),
    );
    let (encoder_attention, encoder_other) = gaps(source_cpu, source_gpu);
    eprintln!("lecture-reverse: decoder attention within {attention:.2e}, other {other:.2e}; encoder {encoder_attention:.2e}, {encoder_other:.2e}");
    assert!(attention.max(encoder_attention) < 1e-4 && other.max(encoder_other) < 1e-3);
    assert!(
        cpu.trace.find(Op::CrossSoftmax, Some(0)).is_some(),
        "cross-attention is in the trace"
    );
    // The page's line compares both passes, the encoder's too.
    let said = cpu
        .trace
        .largest_difference(&gpu.trace)
        .expect("comparable");
    assert_eq!(
        (said.attention, said.other),
        (attention.max(encoder_attention), other.max(encoder_other))
    );
    // A pass keeping every step gives the translation's trace.
    let traced = common::passes::every_step(&model, &gpu_backend, source).expect("trace");
    assert_eq!(traced.text, cpu.output);
}

#[test]
fn a_lost_device_hands_the_pass_to_the_cpu_with_the_same_numbers() {
    let model = common::minilm();
    let cpu = common::passes::every_step(model, &Cpu, TEXT).expect("cpu trace");
    let backend = GpuBackend::new(gpu_context(), &model.weights);
    backend.lose_device();
    let fallen_back = common::passes::every_step(model, &backend, TEXT).expect("the pass finishes");
    let failure = backend.failure().expect("the loss is reported");
    assert!(backend.name().starts_with("cpu"), "{}", backend.name());
    eprintln!("reported: {failure}");
    let (attention, other) = gaps(&cpu, &fallen_back);
    assert_eq!(
        (attention, other),
        (0.0, 0.0),
        "after the loss every number is the CPU's"
    );
}

#[test]
fn the_trace_command_prints_the_same_json_from_both_backends() {
    let run = |backend: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_transformer-viz"))
            .args([
                "trace",
                "--models-dir",
                common::models_dir().to_str().unwrap(),
                "--model",
                "minilm-l6",
                "--backend",
                backend,
                "--text",
                TEXT,
            ])
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json"),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let ((cpu, _), (gpu, said)) = (run("cpu"), run("gpu"));
    assert!(said.contains("ran on the GPU"), "{said}");
    let (mut gap, mut numbers) = (0f64, 0usize);
    fn walk(a: &serde_json::Value, b: &serde_json::Value, gap: &mut f64, numbers: &mut usize) {
        use serde_json::Value::*;
        match (a, b) {
            (Object(x), Object(y)) => {
                assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
                x.iter().for_each(|(k, v)| walk(v, &y[k], gap, numbers));
            }
            (Array(x), Array(y)) => {
                assert_eq!(x.len(), y.len());
                x.iter().zip(y).for_each(|(u, v)| walk(u, v, gap, numbers));
            }
            (Number(x), Number(y)) => {
                *gap = gap.max((x.as_f64().unwrap() - y.as_f64().unwrap()).abs());
                *numbers += 1;
            }
            _ => assert_eq!(a, b),
        }
    }
    walk(&cpu, &gpu, &mut gap, &mut numbers);
    assert!(
        numbers > 1000,
        "the summary holds every head's attention ({numbers} numbers)"
    );
    assert!(gap < 1e-4, "attention in the JSON differs by {gap}");
}

#[test]
fn attention_in_one_call_on_the_gpu_matches_the_cpu_steps() {
    // `Backend::attend` on the GPU runs its three kernels on the device; against the CPU's:
    // T = 1, a cache offset (the KV cache's passes), grouped-query heads, sizes off the
    // workgroups' 16, with and without the mask. The heads are split on each backend from the
    // same rows (the GPU's `swap_heads` kernel against the CPU's `split_heads`).
    use ndarray::Array2;
    let model = common::minilm();
    let gpu = GpuBackend::new(gpu_context(), &model.weights);
    let mut seed = 7u32;
    let mut values = |shape: (usize, usize)| {
        Array2::from_shape_simple_fn(shape, || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
        })
    };
    // (heads, kv_heads, queries, first, head_dim, causal)
    for (heads, kv_heads, queries, first, hd, causal) in [
        (1, 1, 1, 0, 1, true),
        (12, 12, 32, 0, 32, false),
        (9, 3, 1, 31, 64, true),
        (4, 4, 17, 5, 16, true),
        (8, 2, 33, 0, 20, true),
        (6, 2, 3, 40, 17, true),
    ] {
        let keys = if causal { first + queries } else { queries };
        let (q, k, v) = (
            values((queries, heads * hd)),
            values((keys, kv_heads * hd)),
            values((keys, kv_heads * hd)),
        ); // rows
        let (group, scale, mask) = (
            heads / kv_heads,
            1.0 / (hd as f32).sqrt(),
            causal.then_some(first),
        );
        let split = |b: &Cpu, x: &Array2<f32>, h| b.split_heads(x.clone(), h, hd);
        let (cq, ck, cv) = (
            split(&Cpu, &q, heads),
            split(&Cpu, &k, kv_heads),
            split(&Cpu, &v, kv_heads),
        );
        let (cpu_weights, cpu_out) = Cpu.attend(&cq, &ck, &cv, group, scale, mask);
        let gsplit = |x: &Array2<f32>, h| gpu.split_heads(gpu.rows(x.clone()), h, hd);
        let (gq, gk, gv) = (
            gsplit(&q, heads),
            gsplit(&k, kv_heads),
            gsplit(&v, kv_heads),
        );
        let (weights, out) = gpu.attend(&gq, &gk, &gv, group, scale, mask);
        let (gpu_weights, gpu_out) = (gpu.trace_heads(&weights), gpu.trace_heads(&out));
        assert!(
            pollster::block_on(gpu.finish()),
            "ran on the GPU: {:?}",
            gpu.failure()
        );
        let (gpu_weights, gpu_out) = (gpu_weights.into_array(), gpu_out.into_array());
        assert_eq!(
            (gpu_weights.shape(), gpu_out.shape()),
            (cpu_weights.shape(), cpu_out.shape())
        );
        let what = format!(
            "heads {heads}/{kv_heads}, Tq {queries}, first {first}, hd {hd}, causal {causal}"
        );
        let weights_gap = cpu_weights
            .iter()
            .zip(&gpu_weights)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        let out_gap = cpu_out
            .iter()
            .zip(&gpu_out)
            .map(|(a, b)| (a - b).abs() / a.abs().max(1.0))
            .fold(0f32, f32::max);
        assert!(weights_gap < 1e-4, "weights, {what}: {weights_gap}");
        assert!(out_gap < 1e-4, "head outputs, {what}: {out_gap}");
        if let Some(first) = mask {
            // Masked keys get no weight at all on either.
            for ((h, i, j), &w) in cpu_weights.indexed_iter() {
                if j > first + i {
                    assert_eq!(
                        (w, gpu_weights[[h, i, j]]),
                        (0.0, 0.0),
                        "{what}: key {j} is after query {i}"
                    );
                }
            }
        }
        // The heads merged back into rows: the CPU's `merge_heads` exactly (a copy).
        let merged = gpu.trace_rows(&gpu.merge_heads(gq));
        assert!(pollster::block_on(gpu.finish()));
        assert_eq!(
            merged.into_array(),
            q.into_dyn(),
            "{what}: split then merged gives the rows back"
        );
    }
}

/// The passes of `ids` on `backend`: the first `split` tokens, then the rest through the KV
/// cache (kept where the backend keeps its tensors). Returns the second pass's trace and
/// logits.
fn cached_passes<B: Backend>(
    backend: &B,
    model: &Transformer,
    ids: &[u32],
    split: usize,
) -> (Vec<(String, ndarray::ArrayD<f32>)>, ndarray::Array2<f32>) {
    use transformer_viz::model::edits::Edits;
    use transformer_viz::model::forward::{forward_with, Logits};
    use transformer_viz::model::kv_cache::KvCache;
    use transformer_viz::trace::{NoRecorder, TraceRecorder};
    let (w, c) = (&model.weights, &model.config);
    let mut cache = KvCache::<B::Heads>::new();
    pollster::block_on(forward_with(
        backend,
        &ids[..split],
        Some(&mut cache),
        w,
        c,
        &mut NoRecorder,
        Logits::Last,
        Edits::NONE,
    ))
    .expect("the first pass");
    assert_eq!(cache.len(), split);
    let mut rec = TraceRecorder::new(c);
    let out = pollster::block_on(forward_with(
        backend,
        &ids[split..],
        Some(&mut cache),
        w,
        c,
        &mut rec,
        Logits::All,
        Edits::NONE,
    ))
    .expect("the pass through the cache");
    assert_eq!(cache.len(), ids.len());
    let (steps, _) = rec.into_parts();
    (
        steps
            .into_iter()
            .map(|s| (s.name, s.tensor.into_array()))
            .collect(),
        out.logits.expect("a decoder's logits"),
    )
}

#[test]
fn the_kv_cache_stays_on_the_gpu_and_gives_the_cpus_numbers() {
    // A causal model's pass through the cache on the GPU: the cached keys and values are
    // joined on the device (`append_tokens`), the new queries see them at their positions
    // (rotary and the causal mask from the cache's length, the mask as its own kernel), and
    // every step and logit agrees with the CPU's pass through its own cache.
    let lecture = load_named(
        &common::models_dir(),
        "lecture-pre-ln",
        WeightPrecision::F32,
    )
    .expect("committed model");
    let mut models = vec![&lecture];
    models.extend(common::smollm2());
    for model in models {
        let ids = model.encode(TEXT).expect("tokens").ids();
        let split = ids.len() / 2;
        let gpu = GpuBackend::new(gpu_context(), &model.weights);
        let (cpu_steps, cpu_logits) = cached_passes(&Cpu, model, &ids, split);
        let (gpu_steps, gpu_logits) = cached_passes(&gpu, model, &ids, split);
        assert_eq!(
            gpu.failure(),
            None,
            "{}: every operation ran on the GPU",
            model.config.name
        );
        assert_eq!(cpu_steps.len(), gpu_steps.len());
        let mut worst = 0f32;
        for ((name, a), (gname, b)) in cpu_steps.iter().zip(&gpu_steps) {
            assert_eq!(
                (name, a.shape()),
                (gname, b.shape()),
                "the same steps of the same shapes"
            );
            let masked = a
                .iter()
                .zip(b)
                .filter(|(x, y)| x.is_infinite() || y.is_infinite())
                .count();
            assert!(
                a.iter()
                    .zip(b)
                    .all(|(x, y)| x.is_infinite() == y.is_infinite()),
                "{name}: the same keys masked"
            );
            let bound = if name.ends_with(".attention") {
                1e-4
            } else {
                1e-3
            };
            let gap = a
                .iter()
                .zip(b)
                .filter(|(x, _)| x.is_finite())
                .map(|(x, y)| (x - y).abs() / if bound < 1e-3 { 1.0 } else { x.abs().max(1.0) })
                .fold(0f32, f32::max);
            assert!(
                gap < bound,
                "{}: {name} differs by {gap} ({masked} masked)",
                model.config.name
            );
            worst = worst.max(gap);
        }
        let logit_gap = cpu_logits
            .iter()
            .zip(&gpu_logits)
            .map(|(x, y)| (x - y).abs() / x.abs().max(1.0))
            .fold(0f32, f32::max);
        eprintln!(
            "{}: through the cache, steps within {worst:.2e}, logits within {logit_gap:.2e}",
            model.config.name
        );
        assert!(logit_gap < 1e-3);
        assert!(
            cpu_steps
                .iter()
                .any(|(n, a)| n.ends_with(".attention") && a.shape()[2] == ids.len()),
            "the new queries attend over every token"
        );
    }
}
