//! The encoder-decoder path of the engine: cross-attention computed as its formula says, the
//! same numbers as the trainer's own (candle) forward pass, every step traced with the
//! encoder's pass inside the decoder's, saved and loaded in the engine's format, and bad
//! input refused with a typed error.

use ndarray::{Array2, Axis};
use transformer_viz::checkpoints::generic;
use transformer_viz::checkpoints::lecture;
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::config::{ModelConfig, NormPlace};
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::forward::{decode, encode_source, Logits};
use transformer_viz::trace::{NoRecorder, Op};
use transformer_viz::train::network::{id_tensor, Network};
use transformer_viz::train::reversal;
use transformer_viz::train::reversal_run::as_model;
use transformer_viz::{Transformer, VizError};

fn random_reverser(seed: u64, place: NormPlace) -> (Network, Transformer) {
    let mut config = lecture::reverse_config(reversal::vocab().tokens.len());
    config.norm_place = place;
    let net = Network::init(&config, seed).unwrap();
    let model = as_model(&net).unwrap();
    (net, model)
}

fn max_abs(a: &Array2<f32>, b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The engine's logits and candle's, on random weights, for sources and targets of several
/// lengths (T = 1 included; source and target of different lengths).
#[test]
fn engine_and_trainer_agree_on_an_encoder_decoder() {
    for (seed, place) in [(1, NormPlace::Post), (2, NormPlace::Pre)] {
        let (net, model) = random_reverser(seed, place);
        for (source, target) in [
            (vec![27u32, 3, 4, 5], vec![27u32]),
            (vec![27, 0, 26, 25, 1, 2, 3, 4, 5, 6], vec![27, 6, 5, 4]),
            (vec![27, 9], vec![27, 9, 8, 7, 6, 5, 4]),
        ] {
            let candle = net
                .seq2seq_logits(
                    &id_tensor(std::slice::from_ref(&source)).unwrap(),
                    &id_tensor(std::slice::from_ref(&target)).unwrap(),
                )
                .unwrap(); // (T, V)
            let candle: Vec<f32> = candle.flatten_all().unwrap().to_vec1().unwrap();
            let memory = on_cpu(encode_source(
                &Cpu,
                &source,
                &model.weights,
                &model.config,
                &mut NoRecorder,
            ))
            .expect("the CPU never fails"); // (S, d)
            let engine = on_cpu(decode(
                &Cpu,
                &target,
                memory.view(),
                &model.weights,
                &model.config,
                &mut NoRecorder,
                Logits::All,
                transformer_viz::model::edits::Edits::NONE,
            ))
            .expect("the CPU never fails")
            .logits
            .unwrap(); // (T, V)
            let size = engine.iter().fold(0f32, |m, v| m.max(v.abs()));
            let diff = max_abs(&engine, &candle);
            assert!(
                diff <= 1e-4 * size.max(1.0),
                "seed {seed}, S = {}, T = {}: logits differ by {diff} (largest {size})",
                source.len(),
                target.len()
            );
        }
    }
}

/// Every cross-attention step of the trace against its formula, computed here from the
/// trace's inputs with plain loops: Q from the decoder's stream, K and V from the encoder's
/// output, softmax(Q K^T / sqrt(d_k)) per head, rows summing to 1.
#[test]
fn cross_attention_is_softmax_of_decoder_queries_against_encoder_keys() {
    for place in [NormPlace::Post, NormPlace::Pre] {
        cross_attention_follows_its_formula(place);
    }
}

fn cross_attention_follows_its_formula(place: NormPlace) {
    let (_, model) = random_reverser(3, place);
    let t = model.translate("hello world").unwrap();
    let trace = &t.trace;
    let source = trace
        .source
        .as_ref()
        .expect("the encoder's pass is inside the decoder's");
    let c: &ModelConfig = &model.config;
    let (s, tt) = (source.len(), trace.len());
    assert!(!source.config.causal, "the encoder sees both ways");
    assert_eq!(source.config.n_layers, c.encoder_layers);
    // The encoder's output, as the decoder's trace holds it, is the encoder trace's last step.
    let memory = trace
        .find(Op::EncoderOutput, None)
        .unwrap()
        .tensor
        .view2()
        .unwrap();
    let last = source.steps.last().unwrap().tensor.view2().unwrap();
    assert_eq!(memory, last);
    assert_eq!(memory.dim(), (s, c.d_model));
    let (hd, heads) = (c.head_dim, c.n_heads);
    for layer in 0..c.n_layers {
        let lw = model.weights.layers[layer].cross.as_ref().unwrap();
        // Post-LN: cross-attention reads the stream after the self-attention's norm; pre-LN:
        // its own norm of the stream.
        let read = if place == NormPlace::Post {
            Op::AttentionNorm
        } else {
            Op::CrossNorm
        };
        let x = trace
            .find(read, Some(layer))
            .unwrap()
            .tensor
            .view2()
            .unwrap(); // (T, d)
        let wq = lw.attention.query.weight.to_dense(); // (heads * hd, d)
        let wk = lw.attention.key.weight.to_dense();
        let (bq, bk) = (
            lw.attention.query.bias.as_ref().unwrap(),
            lw.attention.key.bias.as_ref().unwrap(),
        );
        let weights = trace.cross_attention_layer(layer).unwrap(); // (heads, T, S)
        assert_eq!(weights.dim(), (heads, tt, s));
        for h in 0..heads {
            for i in 0..tt {
                let mut scores = vec![0f64; s];
                for (j, score) in scores.iter_mut().enumerate() {
                    let mut dot = 0f64;
                    for k in 0..hd {
                        let o = h * hd + k;
                        let q: f64 = bq[o] as f64
                            + (0..c.d_model)
                                .map(|e| x[[i, e]] as f64 * wq[[o, e]] as f64)
                                .sum::<f64>();
                        let kk: f64 = bk[o] as f64
                            + (0..c.d_model)
                                .map(|e| memory[[j, e]] as f64 * wk[[o, e]] as f64)
                                .sum::<f64>();
                        dot += q * kk;
                    }
                    *score = dot / (hd as f64).sqrt();
                }
                let max = scores.iter().copied().fold(f64::MIN, f64::max);
                let sum: f64 = scores.iter().map(|v| (v - max).exp()).sum();
                for j in 0..s {
                    let expected = (scores[j] - max).exp() / sum;
                    let got = weights[[h, i, j]] as f64;
                    assert!(
                        (got - expected).abs() < 1e-5,
                        "layer {layer} head {h} row {i} column {j}: {got} against {expected}"
                    );
                }
            }
        }
        // Each row is a distribution over the source.
        for row in weights.lanes(Axis(2)) {
            assert!((row.sum() - 1.0).abs() < 1e-5);
        }
    }
}

/// The decoder's trace holds each cross-attention step once a layer, in the order of the
/// pass, with the shapes the stepper shows, and the residual stream has a cross point.
#[test]
fn the_trace_walks_the_cross_attention_sublayer() {
    let (_, model) = random_reverser(4, NormPlace::Post);
    let trace = model.translate("abc").unwrap().trace;
    let (s, t) = (trace.source.as_ref().unwrap().len(), trace.len());
    assert_eq!(s, 4, "start token and three letters");
    let c = &model.config;
    for layer in 0..c.n_layers {
        let order: Vec<Op> = trace
            .steps
            .iter()
            .filter(|st| st.layer == Some(layer))
            .map(|st| st.op)
            .collect();
        let at = |op: Op| {
            order
                .iter()
                .position(|&o| o == op)
                .unwrap_or_else(|| panic!("{op:?} missing in layer {layer}"))
        };
        assert!(
            at(Op::AttentionNorm) < at(Op::CrossQuery)
                && at(Op::CrossOutput) < at(Op::CrossResidual)
                && at(Op::CrossNorm) < at(Op::FfnUp)
        );
        let shape = |op: Op| trace.find(op, Some(layer)).unwrap().tensor.shape.clone();
        assert_eq!(shape(Op::CrossQuery), vec![c.n_heads, t, c.head_dim]);
        assert_eq!(shape(Op::CrossKey), vec![c.n_kv_heads, s, c.head_dim]);
        assert_eq!(shape(Op::CrossScores), vec![c.n_heads, t, s]);
        assert_eq!(shape(Op::CrossOutput), vec![t, c.d_model]);
        let step = trace.find(Op::CrossKey, Some(layer)).unwrap();
        assert_eq!(
            step.inputs,
            vec!["encoder_output".to_string()],
            "keys are read from the encoder's output"
        );
    }
    let labels: Vec<String> = trace
        .residual_stream()
        .into_iter()
        .map(|p| p.label)
        .collect();
    assert!(labels.contains(&"L0 cross".to_string()), "{labels:?}");
    assert_eq!(
        trace.norms.len(),
        3 * c.n_layers,
        "three norms a decoder layer, post-LN"
    );
    // Its JSON (the CLI's trace) round-trips with the source inside.
    let json = serde_json::to_string(&trace).unwrap();
    let back: transformer_viz::Trace = serde_json::from_str(&json).unwrap();
    assert_eq!(back.source.unwrap().tokens.len(), s);
}

/// Saved in the engine's format and loaded again: the same weights, the same output.
#[test]
fn an_encoder_decoder_round_trips_through_the_generic_format() {
    let (_, model) = random_reverser(5, NormPlace::Post);
    let bytes = generic::to_safetensors(&model.weights).unwrap();
    let names = generic::named_tensors(&model.weights);
    assert!(names.contains_key("encoder.layers.1.ffn.down.weight"));
    assert!(names.contains_key("layers.0.cross_attention.key.bias"));
    assert!(names.contains_key("layers.1.cross_norm.gamma"));
    let config_json = serde_json::to_string(&model.config).unwrap();
    let again = lecture::from_bytes(
        lecture::REVERSE,
        &config_json,
        &reversal::vocab().to_json(),
        &bytes,
    )
    .unwrap();
    let (a, b) = (
        model.translate("transformer").unwrap(),
        again.translate("transformer").unwrap(),
    );
    assert_eq!(a.output, b.output);
    assert_eq!(
        a.trace.cross_attention(1, 2).unwrap(),
        b.trace.cross_attention(1, 2).unwrap()
    );
    // A decoder layer without its cross-attention is a missing tensor, named.
    let mut tensors = generic::named_tensors(&model.weights);
    tensors.retain(|name, _| !name.starts_with("layers.1.cross_attention.value"));
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .into_iter()
        .map(|(n, (shape, v))| (n, shape, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView)> = data
        .iter()
        .map(|(n, shape, bytes)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
                    .unwrap(),
            )
        })
        .collect();
    let broken = safetensors::serialize(views, None).unwrap();
    let err = generic::from_safetensors(&broken, &model.config).unwrap_err();
    assert!(
        err.to_string().contains("layers.1.cross_attention.value"),
        "{err}"
    );
}

/// Text the vocabulary cannot spell, empty text, a model with no encoder, and continuing an
/// encoder-decoder as if it were a plain decoder: typed errors, no panic.
#[test]
fn bad_input_is_refused_with_a_typed_error() {
    let (_, model) = random_reverser(6, NormPlace::Post);
    match model.translate("Hello, world!") {
        Err(VizError::Unspellable { dropped, allowed }) => {
            assert!(
                dropped.contains('H') && dropped.contains('!') && dropped.contains(','),
                "{dropped}"
            );
            assert!(
                allowed.contains("a b c") && allowed.contains("space"),
                "{allowed}"
            );
        }
        other => panic!("expected Unspellable, got {other:?}"),
    }
    assert!(
        matches!(model.translate(""), Err(VizError::EmptyText)),
        "{:?}",
        model.translate("").err()
    );
    for text in ["日本語", "🐋", "a\u{0}b", "\u{202e}abc"] {
        assert!(
            matches!(model.translate(text), Err(VizError::Unspellable { .. })),
            "{text:?}"
        );
    }
    // Past the context: the source is cut, the decoder stops at the context, and says so.
    let long = "ab".repeat(40);
    let t = model.translate(&long).unwrap();
    assert!(t.trace.source.as_ref().unwrap().truncated.is_some());
    assert!(t.trace.len() <= model.config.context);
    let mut cache = transformer_viz::model::kv_cache::KvCache::new();
    assert!(matches!(
        model.next_logits(&[27, 1], &mut cache),
        Err(VizError::BadConfig(_))
    ));
    let fixture = transformer_viz::checkpoints::fixture::fixture(
        transformer_viz::checkpoints::fixture::decoder_config(),
        1,
    )
    .unwrap();
    assert!(matches!(
        fixture.translate("abc"),
        Err(VizError::NotEncoderDecoder)
    ));
    assert!(matches!(
        fixture.trace("abc").unwrap().cross_attention(0, 0),
        Err(VizError::NoCrossAttention)
    ));
}

/// A config that asks for an encoder in front of a model with no causal decoder and head.
#[test]
fn an_encoder_needs_a_causal_decoder_with_a_head() {
    let mut c = lecture::reverse_config(28);
    c.causal = false;
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("encoder_layers"));
    let mut c = lecture::reverse_config(28);
    c.encoder_layers = 5000;
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .contains("encoder_layers"));
}
