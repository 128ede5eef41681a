//! Runs under `cargo test --target wasm32-unknown-unknown` (in Node.js, through
//! wasm-bindgen-test-runner): one forward pass of the real MiniLM in WebAssembly must give
//! the same numbers as the native build. The native numbers come from
//! `target/parity/native-trace.json`, written by `scripts/test.sh` with the native CLI.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

#[wasm_bindgen(module = "fs")]
extern "C" {
    #[wasm_bindgen(js_name = readFileSync, catch)]
    fn read_file_sync(path: &str) -> Result<Vec<u8>, JsValue>;
}

fn read(relative: &str) -> Vec<u8> {
    let path = format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"));
    read_file_sync(&path)
        .unwrap_or_else(|_| panic!("cannot read {path}: run scripts/test.sh, which prepares it"))
}

pub const PARITY_SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

#[wasm_bindgen_test]
fn minilm_forward_pass_in_wasm_matches_native() {
    let config = String::from_utf8(read("models/minilm-l6/config.json")).unwrap();
    let tokenizer = String::from_utf8(read("models/minilm-l6/tokenizer.json")).unwrap();
    let weights = read("models/minilm-l6/model.safetensors");
    let model = transformer_viz::checkpoints::minilm::from_bytes(
        "minilm-l6",
        &config,
        &tokenizer,
        &weights,
    )
    .unwrap();
    let trace = model.trace(PARITY_SENTENCE).unwrap();

    let native: serde_json::Value =
        serde_json::from_slice(&read("target/parity/native-trace.json")).unwrap();
    let native_tokens: Vec<&str> = native["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(trace.token_texts(), native_tokens);
    let mut worst = 0f64;
    for layer in 0..6 {
        let ours = trace.attention_layer(layer).unwrap();
        let theirs: Vec<f64> = native["layers"][layer]["attention"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| {
                h.as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
            })
            .collect();
        assert_eq!(theirs.len(), ours.len());
        for (a, b) in ours.iter().zip(&theirs) {
            worst = worst.max((*a as f64 - b).abs());
        }
    }
    assert!(
        worst < 1e-5,
        "wasm attention differs from native by {worst}"
    );
    // Rows still sum to one in wasm.
    let a = trace.attention(3, 7).unwrap();
    for row in a.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-5);
    }
}

#[wasm_bindgen_test]
fn vectorised_gelu_in_wasm_matches_the_exact_erf() {
    // Every 1/1000 from -12 to 12, plus the far tails and zero.
    let mut xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 / 1000.0).collect();
    xs.extend([-80.0, -30.0, -0.0, 0.0, 30.0, 80.0]);
    let mut fast = xs.clone();
    transformer_viz::model::ffn::gelu_in_place(&mut fast);
    let mut worst = 0f64;
    for (&x, &y) in xs.iter().zip(&fast) {
        // The exact value in float64: 0.5 x (1 + erf(x / sqrt 2)).
        let exact = 0.5 * x as f64 * (1.0 + libm::erf(x as f64 / std::f64::consts::SQRT_2));
        let err = (y as f64 - exact).abs() / (x.abs() as f64).max(1.0);
        worst = worst.max(err);
        assert!(y.is_finite(), "gelu({x}) = {y}");
    }
    // Abramowitz and Stegun's erf is within 1.5e-7; float32 arithmetic adds a few ulp.
    assert!(
        worst < 5e-7,
        "vectorised GELU is off by {worst} (relative to max(1, |x|))"
    );
    // Sign and shape: GELU(0) = 0, GELU(x) ~ x for large x, ~ 0 for very negative x.
    assert_eq!(fast[12_000], 0.0);
    assert!((fast[24_000] - 12.0).abs() < 1e-5);
    assert!(fast[0].abs() < 1e-6);
}

#[wasm_bindgen_test]
fn vectorised_exp_in_wasm_matches_float64_and_masks_exactly() {
    // Every 1/1000 from -100 to 0 (softmax's scores minus their largest), an odd length so
    // that the last values take the tail's path, and -inf (a masked score) among them.
    let mut ys: Vec<f32> = (-100_000..=0).map(|i| i as f32 / 1000.0).collect();
    ys[5] = f32::NEG_INFINITY;
    let mut fast = ys.clone();
    transformer_viz::model::simd_exp::exp_in_place(&mut fast);
    let mut worst = 0f64;
    for (&y, &e) in ys.iter().zip(&fast) {
        let exact = (y as f64).exp();
        if y < -87.0 {
            assert_eq!(e, 0.0, "exp({y}) below the normal floats is exactly 0");
            continue;
        }
        worst = worst.max((e as f64 - exact).abs() / exact);
    }
    // The polynomial is within 1.3e-7 relative; float32 steps add a few ulp.
    assert!(worst < 5e-7, "vectorised exp is off by {worst} relative");
    assert_eq!(*fast.last().unwrap(), 1.0, "exp(0) = 1 exactly");
    // A value's exp does not depend on where it falls (the last values take the tail's path).
    let mut alone = [ys[ys.len() - 1], ys[ys.len() - 2], ys[ys.len() - 3]];
    transformer_viz::model::simd_exp::exp_in_place(&mut alone);
    assert_eq!(
        alone,
        [fast[ys.len() - 1], fast[ys.len() - 2], fast[ys.len() - 3]]
    );
}

#[wasm_bindgen_test]
fn wasm_matrix_kernel_matches_a_plain_sum_on_awkward_shapes() {
    use ndarray::Array2;
    use transformer_viz::model::linear::Linear;
    let mut seed = 7u32;
    let mut next = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / 16_777_216.0 - 0.5
    };
    // Token counts around the kernel's blocks (4) and chunks (64); widths not multiples of 4.
    for (t, inp, out) in [
        (1, 3, 1),
        (5, 13, 7),
        (64, 8, 6),
        (70, 37, 11),
        (131, 20, 9),
    ] {
        let weight = Array2::from_shape_fn((out, inp), |_| next()); // (out, in)
        let layer = Linear {
            weight: weight.clone().into(),
            bias: Some(ndarray::Array1::from_shape_fn(out, |_| next())),
        };
        let x = Array2::from_shape_fn((t, inp), |_| next()); // (T, in)
        let y = layer.forward(x.view()); // (T, out)
        assert_eq!(y.dim(), (t, out));
        for tok in 0..t {
            for o in 0..out {
                let exact: f64 = (0..inp)
                    .map(|i| x[[tok, i]] as f64 * weight[[o, i]] as f64)
                    .sum::<f64>()
                    + layer.bias.as_ref().unwrap()[o] as f64;
                assert!(
                    (y[[tok, o]] as f64 - exact).abs() < 1e-5,
                    "T={t} in={inp} out={out}: y[{tok},{o}] = {} but the sum is {exact}",
                    y[[tok, o]]
                );
            }
        }
    }
}

pub const SMOLLM2_PARITY_TEXT: &str = "The capital of France is";

/// SmolLM2's quantized weights through the WebAssembly SIMD kernel give the native build's
/// next-token probabilities (`target/parity/native-smollm2.json`, written by scripts/test.sh
/// with `transformer-viz predict --model smollm2-135m --top 20`).
#[wasm_bindgen_test]
fn smollm2_quantized_pass_in_wasm_matches_native() {
    let gguf = read("models/smollm2-135m/model.Q4_1.gguf");
    let model =
        transformer_viz::checkpoints::smollm2::from_gguf_bytes("smollm2-135m", &gguf).unwrap();
    drop(gguf);
    let trace = model.trace(SMOLLM2_PARITY_TEXT).unwrap();
    let probs = trace.next_token_probabilities().unwrap();
    let native: serde_json::Value =
        serde_json::from_slice(&read("target/parity/native-smollm2.json")).unwrap();
    let next = native["next"].as_array().unwrap();
    assert_eq!(next.len(), 20);
    for entry in next {
        let (id, p) = (
            entry["id"].as_u64().unwrap() as usize,
            entry["prob"].as_f64().unwrap() as f32,
        );
        assert!(
            (probs[id] - p).abs() < 1e-4,
            "token {id}: wasm {} native {p}",
            probs[id]
        );
    }
    assert_eq!(next[0]["token"], " Paris");
}

/// The WebAssembly SIMD block kernels (`quantized::simd128`, which generation and a typed word use)
/// against dequantize-then-multiply summed in f64, on random Q8_0 and Q4_1 rows.
#[wasm_bindgen_test]
fn wasm_block_dot_products_equal_dequantize_then_multiply() {
    use transformer_viz::model::quantized::{dequantize_row, dot_q4_1, dot_q8_0, GgmlType};
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 // [0, 1)
    };
    let mut worst = 0f64;
    for trial in 0..400 {
        let kind = if trial % 2 == 0 {
            GgmlType::Q8_0
        } else {
            GgmlType::Q4_1
        };
        let blocks = 1 + trial % 40;
        let mut row = Vec::new();
        for _ in 0..blocks {
            row.extend(half::f16::from_f32((next() - 0.5) * 0.2).to_le_bytes());
            if kind == GgmlType::Q4_1 {
                row.extend(half::f16::from_f32((next() - 0.5) * 2.0).to_le_bytes());
            }
            let quants = if kind == GgmlType::Q4_1 { 16 } else { 32 };
            row.extend((0..quants).map(|_| (next() * 256.0) as u8));
        }
        let x: Vec<f32> = (0..blocks * 32).map(|_| (next() - 0.5) * 6.0).collect();
        let mut w = vec![0f32; x.len()];
        dequantize_row(kind, &row, &mut w).unwrap();
        let exact: f64 = w.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
        let scale: f64 = w
            .iter()
            .zip(&x)
            .map(|(&a, &b)| (a as f64 * b as f64).abs())
            .sum();
        let got = if kind == GgmlType::Q8_0 {
            dot_q8_0(&row, &x)
        } else {
            dot_q4_1(&row, &x)
        };
        let rel = (got as f64 - exact).abs() / scale.max(f64::MIN_POSITIVE);
        assert!(
            rel <= 1e-5,
            "{kind:?}, {blocks} blocks: {got} vs {exact} (relative {rel:.2e})"
        );
        worst = worst.max(rel);
    }
    console_log!("worst wasm block dot product difference {worst:.2e} relative to Σ|w·x|");
}

/// One token through SmolLM2's KV cache in WebAssembly (the block kernels) gives the
/// prediction of the whole text traced from scratch (the panel kernel).
#[wasm_bindgen_test]
fn smollm2_one_token_through_the_cache_in_wasm_matches_the_pass_from_scratch() {
    use transformer_viz::model::kv_cache::KvCache;
    let gguf = read("models/smollm2-135m/model.Q4_1.gguf");
    let model =
        transformer_viz::checkpoints::smollm2::from_gguf_bytes("smollm2-135m", &gguf).unwrap();
    drop(gguf);
    let ids = model.encode(SMOLLM2_PARITY_TEXT).unwrap().ids();
    let traced = model.trace(SMOLLM2_PARITY_TEXT).unwrap();
    let scratch = traced.next_token_probabilities().unwrap();
    let mut cache = KvCache::new();
    model
        .next_logits(&ids[..ids.len() - 1], &mut cache)
        .unwrap();
    let logits = model
        .next_logits(&ids[ids.len() - 1..], &mut cache)
        .unwrap();
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|&l| (l - top).exp()).sum();
    let mut worst = 0f32;
    for (l, p) in logits.iter().zip(scratch.iter()) {
        worst = worst.max((((l - top).exp() / total) - p).abs());
    }
    assert!(
        worst < 1e-4,
        "cached and from-scratch probabilities differ by {worst}"
    );
}
