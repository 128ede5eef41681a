//! Bad input gives a typed error, never a panic: empty or oversized text, any Unicode,
//! missing, truncated or corrupt files, and configs that do not match the weights.

use crate::common;
use common::*;
use transformer_viz::checkpoints::{load_named, minilm, WeightPrecision};
use transformer_viz::VizError;

fn files() -> (String, String, Vec<u8>) {
    let dir = minilm_dir();
    (
        std::fs::read_to_string(dir.join("config.json")).unwrap(),
        std::fs::read_to_string(dir.join("tokenizer.json")).unwrap(),
        std::fs::read(dir.join("model.f16.safetensors")).unwrap(),
    )
}

#[test]
fn empty_and_blank_text_are_errors() {
    let m = minilm();
    assert_eq!(m.trace("").unwrap_err(), VizError::EmptyText);
    assert_eq!(m.trace("  \t\n ").unwrap_err(), VizError::EmptyText);
    assert_eq!(m.trace("\u{0}\u{7}\u{1b}").unwrap_err(), VizError::NoTokens);
    assert!(m.trace("").unwrap_err().to_string().contains("empty"));
}

#[test]
fn text_longer_than_the_context_is_truncated_and_says_so() {
    let m = minilm();
    let long = "word ".repeat(700);
    let trace = m.trace(&long).unwrap();
    assert_eq!(trace.len(), 512);
    let t = trace
        .truncated
        .as_ref()
        .expect("the trace records the truncation");
    assert_eq!(t.original_tokens, 702);
    assert_eq!(t.kept_tokens, 512);
    assert_eq!(trace.tokens.first().unwrap().text, "[CLS]");
    assert_eq!(trace.tokens.last().unwrap().text, "[SEP]");
    assert_eq!(trace.attention(5, 11).unwrap().dim(), (512, 512));
    assert!(m.trace("short").unwrap().truncated.is_none());
}

#[test]
fn any_unicode_traces_without_panicking() {
    let m = minilm();
    let nasty = [
        "\u{202e}reversed\u{202c} text",
        "\u{301}\u{301}\u{301} lone combining marks",
        "🏳️‍🌈👩🏽‍🔬🧑‍🤝‍🧑",
        "\u{fffd}\u{fffd} replacement chars",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝟙𝟚𝟛",
        "\u{e000} private use \u{10ffff}",
        "a".repeat(150).as_str(),
        "İstanbul ǅ ß ΐ",
    ]
    .map(String::from);
    for text in &nasty {
        let trace = m.trace(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(trace.len() >= 3, "{text:?}");
        for layer in 0..6 {
            assert!(trace
                .attention_layer(layer)
                .unwrap()
                .iter()
                .all(|v| v.is_finite()));
        }
    }
    // A word longer than 100 characters becomes a single [UNK], as in the original BERT.
    let trace = m.trace(&"a".repeat(150)).unwrap();
    assert_eq!(trace.token_texts(), vec!["[CLS]", "[UNK]", "[SEP]"]);
}

#[test]
fn missing_model_files_name_the_fix() {
    let err = load_named(
        std::path::Path::new("/nonexistent"),
        "minilm-l6",
        WeightPrecision::F16,
    )
    .unwrap_err();
    match &err {
        VizError::MissingFile { path, hint } => {
            assert!(path.ends_with("config.json"));
            assert!(hint.contains("fetch-models"));
        }
        other => panic!("expected MissingFile, got {other:?}"),
    }
    let err = load_named(&models_dir(), "gpt-17", WeightPrecision::F16).unwrap_err();
    assert!(matches!(err, VizError::UnknownModel(..)));
}

#[test]
fn truncated_and_corrupt_weights_are_rejected() {
    let (config, tokenizer, weights) = files();
    for cut in [0, 7, 100, weights.len() / 2, weights.len() - 1] {
        let err = minilm::from_bytes("minilm-l6", &config, &tokenizer, &weights[..cut])
            .err()
            .unwrap();
        assert!(
            matches!(err, VizError::CorruptWeights(_)),
            "cut at {cut}: {err:?}"
        );
    }
    let mut garbage = weights.clone();
    garbage[8..40].copy_from_slice(&[0xFF; 32]);
    assert!(matches!(
        minilm::from_bytes("m", &config, &tokenizer, &garbage)
            .err()
            .unwrap(),
        VizError::CorruptWeights(_)
    ));
    let err = minilm::from_bytes("m", &config, &tokenizer, b"not a model at all")
        .err()
        .unwrap();
    assert!(err.to_string().contains("safetensors"));
}

#[test]
fn configs_that_do_not_match_the_weights_are_rejected() {
    let (config, tokenizer, weights) = files();
    let edit = |from: &str, to: &str| config.replace(from, to);
    // Each wrong number is reported by the config.json field that holds it.
    let field_of = |err: VizError| {
        err.config_field_name()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{err:?}"))
    };
    let err = minilm::from_bytes(
        "m",
        &edit("\"hidden_size\": 384", "\"hidden_size\": 768"),
        &tokenizer,
        &weights,
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "hidden_size");
    let err = minilm::from_bytes(
        "m",
        &edit("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 7"),
        &tokenizer,
        &weights,
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "num_hidden_layers");
    let err = minilm::from_bytes(
        "m",
        &edit("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 5"),
        &tokenizer,
        &weights,
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "num_hidden_layers");
    let err = minilm::from_bytes(
        "m",
        &edit("\"num_attention_heads\": 12", "\"num_attention_heads\": 7"),
        &tokenizer,
        &weights,
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "num_attention_heads");
    let err = minilm::from_bytes(
        "m",
        &edit("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"swish\""),
        &tokenizer,
        &weights,
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "hidden_act");
    let err = minilm::from_bytes("m", "{not json", &tokenizer, &weights)
        .err()
        .unwrap();
    assert!(matches!(err, VizError::BadConfig(_)), "{err:?}");
    let err = minilm::from_bytes("m", &config, "{\"model\": {}}", &weights)
        .err()
        .unwrap();
    assert!(matches!(err, VizError::BadTokenizer(_)), "{err:?}");
}

#[test]
fn out_of_range_heads_are_errors() {
    let trace = minilm().trace("hello").unwrap();
    assert!(matches!(
        trace.attention(6, 0),
        Err(VizError::OutOfRange { .. })
    ));
    assert!(matches!(
        trace.attention(0, 12),
        Err(VizError::OutOfRange { .. })
    ));
    assert!(matches!(
        trace.next_token_probabilities(),
        Err(VizError::NoLmHead)
    ));
}

/// Finite but huge weights (a norm's gamma of 1e38) make the pass overflow: a typed error in
/// plain words, every time it is asked (the model stays usable: no panic, no poisoned state),
/// never a trace of NaN for the charts to choke on.
#[test]
fn a_pass_that_overflows_is_a_typed_error_not_a_trace_of_nan() {
    use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, random_weights};
    use transformer_viz::tokenize::bytes::ByteTokenizer;
    use transformer_viz::Transformer;
    for config in [decoder_config(), encoder_config()] {
        let mut weights = random_weights(&config, 3);
        weights.layers[0].ffn_norm.gamma.mapv_inplace(|g| g * 1e38);
        let model = Transformer::new(config, weights, Box::new(ByteTokenizer::default())).unwrap();
        for _ in 0..2 {
            match model.trace("a sentence") {
                Err(VizError::NotFinite(place)) => assert!(place.contains("output")),
                other => panic!(
                    "expected NotFinite, got {:?}",
                    other.map(|t| t.tokens.len())
                ),
            }
        }
        let message = model.trace("again").unwrap_err().to_string();
        assert!(message.contains("not finite"), "{message}");
    }
}
