//! Code paths that MiniLM does not use (pre-LN, RMSNorm, SwiGLU, grouped-query and rotary
//! attention, sinusoidal positions, ReLU, tied unembedding), checked against the numpy
//! reference on random-weight fixtures saved in this project's own checkpoint format.

use crate::common;
use common::*;
use serde_json::json;
use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, random_weights};
use transformer_viz::checkpoints::generic;
use transformer_viz::model::config::{Activation, ModelConfig, NormKind, NormPlace, Position};
use transformer_viz::tokenize::bytes::ByteTokenizer;
use transformer_viz::Transformer;

fn check(config: ModelConfig, seed: u64) {
    let dir = std::env::temp_dir().join(format!(
        "tviz-{}-{seed}-{}",
        config.name,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let weights = random_weights(&config, seed);
    std::fs::write(
        dir.join("model.safetensors"),
        generic::to_safetensors(&weights).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string(&config).unwrap(),
    )
    .unwrap();
    // Load back through the file format, as a trained checkpoint would be.
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let loaded = generic::from_safetensors(&bytes, &config).unwrap();
    let model =
        Transformer::new(config.clone(), loaded, Box::new(ByteTokenizer::default())).unwrap();
    let texts = ["hi", "grouped query attention", "ünïcödé ✓"];
    let ids: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| model.encode(t).unwrap().ids())
        .collect();
    let expected = reference("generic", &dir, &json!(ids));
    for (text, want) in texts.iter().zip(expected.as_array().unwrap()) {
        let trace = model.trace(text).unwrap();
        for layer in 0..config.n_layers {
            let a = trace.attention_layer(layer).unwrap();
            let d = max_abs_diff(
                &want["attention"][layer],
                a.as_standard_layout().as_slice().unwrap(),
            );
            assert!(
                d < 1e-5,
                "{}: layer {layer} attention differs by {d}",
                config.name
            );
        }
        let h = trace.final_hidden().unwrap();
        let d = max_abs_diff(&want["hidden"], h.as_standard_layout().as_slice().unwrap());
        assert!(d < 1e-4, "{}: hidden differs by {d}", config.name);
        if config.has_lm_head() {
            let logits = trace.find(transformer_viz::Op::Unembed, None).unwrap();
            let d = max_abs_diff(&want["logits"], &logits.tensor.data);
            assert!(d < 1e-3, "{}: logits differ by {d}", config.name);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn post_ln_sinusoidal_relu_encoder_matches_reference() {
    check(encoder_config(), 11);
}

#[test]
fn llama_style_decoder_matches_reference() {
    check(decoder_config(), 12);
}

#[test]
fn other_combinations_match_reference() {
    // Pre-LN LayerNorm, learned positions, GELU, half-split rotary is exercised separately below.
    let mut c = encoder_config();
    c.name = "fixture-gpt2ish".into();
    c.norm_place = NormPlace::Pre;
    c.position = Position::Learned;
    c.activation = Activation::Gelu;
    c.causal = true;
    c.lm_head = transformer_viz::model::config::LmHead::Separate;
    check(c, 13);

    let mut c = decoder_config();
    c.name = "fixture-hf-rotary".into();
    c.position = Position::Rotary {
        base: 500.0,
        adjacent_pairs: false,
    };
    c.n_kv_heads = 1;
    c.norm = NormKind::Layer;
    c.linear_bias = true;
    check(c, 14);

    let mut c = encoder_config();
    c.name = "fixture-nopos".into();
    c.position = Position::None;
    c.token_types = 2;
    c.embedding_norm = true;
    check(c, 15);
}
