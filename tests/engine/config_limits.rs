//! Every number of a config is checked (type, range, and against the weights) before anything
//! is allocated, and the error names the field; error messages built from a file's contents
//! stay short however large the file's names, shapes or values are.

use crate::common;
use std::sync::OnceLock;

use common::*;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Value};
use transformer_viz::checkpoints::{fixture, generic, minilm};
use transformer_viz::formats::safetensors::read_safetensors;
use transformer_viz::VizError;

/// The longest message any error about a hostile file may have.
const SHORT: usize = 500;

fn minilm_files() -> &'static (Value, String, Vec<u8>) {
    static FILES: OnceLock<(Value, String, Vec<u8>)> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = minilm_dir();
        (
            serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap())
                .unwrap(),
            std::fs::read_to_string(dir.join("tokenizer.json")).unwrap(),
            std::fs::read(dir.join("model.f16.safetensors")).unwrap(),
        )
    })
}

/// MiniLM's config.json with `field` set to `value` (or removed, for `None`).
fn bert_config_with(field: &str, value: Option<Value>) -> String {
    let mut config = minilm_files().0.clone();
    match value {
        Some(v) => config[field] = v,
        None => {
            config.as_object_mut().unwrap().remove(field);
        }
    }
    config.to_string()
}

/// Asserts a `ConfigField` error about `field` in `file`, with a short message naming it.
fn assert_field_error(
    result: Result<impl std::fmt::Debug, VizError>,
    file: &str,
    field: &str,
    case: &str,
) -> String {
    let err = result.expect_err(case);
    match &err {
        VizError::ConfigField {
            file: f,
            field: got,
            ..
        } => {
            assert_eq!(got, field, "{case}: {err}");
            assert_eq!(f, file, "{case}: {err}");
        }
        other => panic!("{case}: expected a ConfigField error about `{field}`, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(field), "{case}: {message}");
    assert!(
        message.len() < SHORT,
        "{case}: {} characters",
        message.len()
    );
    message
}

/// The whole MiniLM load (config, tokenizer, weights), as the CLI and the page do it.
fn load_minilm(config: &str) -> Result<transformer_viz::Transformer, VizError> {
    let (_, tokenizer, weights) = minilm_files();
    minilm::from_bytes("minilm-l6", config, tokenizer, weights)
}

#[test]
fn huge_layer_counts_are_errors_before_any_allocation() {
    // 1e18 panicked with `capacity overflow`, 2^40 and 1e8 aborted on a failed allocation
    // (and trapped in WebAssembly, as did 2^32 - 1).
    for (layers, problem) in [
        (1_000_000_000_000_000_000u64, "must be at most 4096"),
        (1 << 40, "must be at most 4096"),
        (100_000_000, "must be at most 4096"),
        (u32::MAX as u64, "must be at most 4096"),
        (4096, "but the weights hold 6 layers"),
        (7, "but the weights hold 6 layers"),
        (5, "but the weights hold 6 layers"),
        (0, "must be at least 1"),
    ] {
        let config = bert_config_with("num_hidden_layers", Some(json!(layers)));
        let message = assert_field_error(
            load_minilm(&config),
            "config.json",
            "num_hidden_layers",
            &layers.to_string(),
        );
        assert!(
            message.contains(&format!("num_hidden_layers = {layers}, {problem}")),
            "{message}"
        );
    }
}

#[test]
fn every_count_field_rejects_wrong_types_and_out_of_range_values() {
    let counts = [
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_position_embeddings",
        "type_vocab_size",
    ];
    let bad_values = [
        (json!(-1), "must not be negative"),
        (json!(-1e30), "must not be negative"),
        (json!(6.5), "must be a whole number"),
        (json!(1e18), "whole number"),
        (
            serde_json::from_str("18446744073709551616").unwrap(),
            "must be at most",
        ),
        (json!(1e300), "must be at most"),
        (json!("6"), "found a string"),
        (json!(null), "found null"),
        (json!(true), "found a boolean"),
        (json!([6]), "found a list"),
        (json!({"n": 6}), "found an object"),
        (json!(1_000_000_000_000_000_000u64), "must be at most"),
    ];
    for field in counts {
        for (value, problem) in &bad_values {
            let case = format!("{field} = {value}");
            let message = assert_field_error(
                minilm::config_from_json("m", &bert_config_with(field, Some(value.clone()))),
                "config.json",
                field,
                &case,
            );
            assert!(message.contains(problem), "{case}: {message}");
        }
        if field != "type_vocab_size" {
            let message = assert_field_error(
                minilm::config_from_json("m", &bert_config_with(field, None)),
                "config.json",
                field,
                field,
            );
            assert!(message.contains("is missing"), "{message}");
        }
        if !matches!(field, "type_vocab_size" | "hidden_size") {
            // Zero is allowed only for the token types; hidden_size 0 fails the head split first.
            let case = format!("{field} = 0");
            assert_field_error(
                minilm::config_from_json("m", &bert_config_with(field, Some(json!(0)))),
                "config.json",
                field,
                &case,
            );
        }
    }
}

#[test]
fn other_fields_name_themselves() {
    let cases = [
        ("layer_norm_eps", Some(json!(0)), "layer_norm_eps"),
        ("layer_norm_eps", Some(json!(-1e-12)), "layer_norm_eps"),
        ("layer_norm_eps", Some(json!(2)), "layer_norm_eps"),
        ("layer_norm_eps", Some(json!(1e39)), "layer_norm_eps"),
        ("layer_norm_eps", Some(json!("1e-12")), "layer_norm_eps"),
        ("layer_norm_eps", Some(json!(null)), "layer_norm_eps"),
        ("layer_norm_eps", None, "layer_norm_eps"),
        ("hidden_act", Some(json!("swish")), "hidden_act"),
        ("hidden_act", Some(json!(5)), "hidden_act"),
        ("hidden_act", None, "hidden_act"),
        ("model_type", Some(json!("gpt2")), "model_type"),
        ("model_type", Some(json!(["bert"])), "model_type"),
        (
            "position_embedding_type",
            Some(json!("relative_key")),
            "position_embedding_type",
        ),
        ("hidden_size", Some(json!(383)), "num_attention_heads"),
        ("hidden_size", Some(json!(0)), "hidden_size"),
        ("num_attention_heads", Some(json!(7)), "num_attention_heads"),
        (
            "num_attention_heads",
            Some(json!(385)),
            "num_attention_heads",
        ),
        ("hidden_size", Some(json!(3 << 20)), "hidden_size"),
        (
            "intermediate_size",
            Some(json!(1 << 19)),
            "intermediate_size",
        ),
        ("vocab_size", Some(json!(1 << 23)), "vocab_size"),
        (
            "max_position_embeddings",
            Some(json!(1)),
            "max_position_embeddings",
        ),
        (
            "max_position_embeddings",
            Some(json!(1 << 21)),
            "max_position_embeddings",
        ),
        (
            "max_position_embeddings",
            Some(json!(1 << 20)),
            "max_position_embeddings",
        ),
        ("type_vocab_size", Some(json!(1 << 17)), "type_vocab_size"),
    ];
    for (field, value, named) in cases {
        let case = format!("{field} = {value:?}");
        assert_field_error(
            minilm::config_from_json("m", &bert_config_with(field, value)),
            "config.json",
            named,
            &case,
        );
    }
    // Not a JSON object at all: a plain BadConfig, still short.
    for text in ["{not json", "[]", "6", "\"config\""] {
        let err = minilm::config_from_json("m", text).unwrap_err();
        assert!(matches!(err, VizError::BadConfig(_)), "{text}: {err:?}");
    }
}

#[test]
fn numbers_that_do_not_match_the_weights_name_their_field() {
    for (field, value, named) in [
        ("hidden_size", json!(768), "hidden_size"),
        ("vocab_size", json!(30523), "vocab_size"),
        (
            "max_position_embeddings",
            json!(513),
            "max_position_embeddings",
        ),
        (
            "max_position_embeddings",
            json!(4096),
            "max_position_embeddings",
        ),
        ("type_vocab_size", json!(3), "type_vocab_size"),
        ("type_vocab_size", json!(0), "type_vocab_size"),
        ("intermediate_size", json!(1537), "intermediate_size"),
        ("intermediate_size", json!(200_000), "intermediate_size"),
    ] {
        let case = format!("{field} = {value}");
        let message = assert_field_error(
            load_minilm(&bert_config_with(field, Some(value))),
            "config.json",
            named,
            &case,
        );
        assert!(
            message.contains("but the weights hold"),
            "{case}: {message}"
        );
    }
    // An absent type_vocab_size means 2, as in Hugging Face's BertConfig, which the weights hold.
    assert!(load_minilm(&bert_config_with("type_vocab_size", None)).is_ok());
}

fn generic_config_with(field: &str, value: Option<Value>) -> String {
    let mut config = serde_json::to_value(fixture::decoder_config()).unwrap();
    match value {
        Some(v) => config[field] = v,
        None => {
            config.as_object_mut().unwrap().remove(field);
        }
    }
    config.to_string()
}

#[test]
fn this_projects_config_format_checks_every_field() {
    let valid = generic_config_with("name", Some(json!("fixture-decoder")));
    assert_eq!(
        generic::config_from_json(&valid).unwrap(),
        fixture::decoder_config()
    );
    // A config saved before `embedding_scale` existed means 1.
    let older = generic::config_from_json(&generic_config_with("embedding_scale", None)).unwrap();
    assert_eq!(older.embedding_scale, 1.0);
    let rotary = |base: Value| json!({"Rotary": {"base": base, "adjacent_pairs": true}});
    let cases = [
        (
            "n_layers",
            Some(json!(1_000_000_000_000_000_000u64)),
            "n_layers",
        ),
        ("n_layers", Some(json!(0)), "n_layers"),
        ("n_heads", Some(json!(5000)), "n_heads"),
        ("n_kv_heads", Some(json!(3)), "n_kv_heads"),
        ("n_kv_heads", Some(json!(8)), "n_kv_heads"),
        ("n_kv_heads", Some(json!(0)), "n_kv_heads"),
        ("head_dim", Some(json!(0)), "head_dim"),
        ("head_dim", Some(json!(3)), "head_dim"),
        ("head_dim", Some(json!(4097)), "head_dim"),
        ("d_model", Some(json!(-16)), "d_model"),
        ("d_ff", Some(json!(24.5)), "d_ff"),
        ("vocab_size", Some(json!("257")), "vocab_size"),
        ("context", Some(json!(1)), "context"),
        ("context", Some(json!((1 << 20) + 1)), "context"),
        ("token_types", Some(json!(null)), "token_types"),
        ("norm_eps", Some(json!(0.0)), "norm_eps"),
        ("norm_eps", Some(json!(1e300)), "norm_eps"),
        (
            "position",
            Some(rotary(json!(-10000.0))),
            "position.Rotary.base",
        ),
        ("position", Some(rotary(json!(1.0))), "position.Rotary.base"),
        (
            "position",
            Some(rotary(json!(1e30))),
            "position.Rotary.base",
        ),
        ("position", Some(rotary(json!("10000"))), "position"),
        ("position", Some(json!("Spiral")), "position"),
        ("activation", Some(json!("Swish")), "activation"),
        ("norm", Some(json!(7)), "norm"),
        ("causal", Some(json!("yes")), "causal"),
        ("name", Some(json!(42)), "name"),
        ("lm_head", None, "lm_head"),
        ("embedding_scale", Some(json!(0.0)), "embedding_scale"),
        ("embedding_scale", Some(json!(-11.3)), "embedding_scale"),
        ("embedding_scale", Some(json!(1e9)), "embedding_scale"),
        ("embedding_scale", Some(json!(1e300)), "embedding_scale"),
        ("embedding_scale", Some(json!("11.3")), "embedding_scale"),
    ];
    for (field, value, named) in cases {
        let case = format!("{field} = {value:?}");
        assert_field_error(
            generic::config_from_json(&generic_config_with(field, value)),
            "config.json",
            named,
            &case,
        );
    }
}

#[test]
fn this_projects_weights_are_checked_against_the_config_before_building() {
    let config = fixture::encoder_config();
    let bytes = generic::to_safetensors(&fixture::random_weights(&config, 7)).unwrap();
    assert!(generic::from_safetensors(&bytes, &config).is_ok());
    let with = |edit: &dyn Fn(&mut transformer_viz::model::ModelConfig)| {
        let mut c = config.clone();
        edit(&mut c);
        generic::from_safetensors(&bytes, &c)
    };
    assert_field_error(
        with(&|c| c.n_layers = 4096),
        "ModelConfig",
        "n_layers",
        "4096 layers",
    );
    assert_field_error(
        with(&|c| c.n_layers = usize::MAX),
        "ModelConfig",
        "n_layers",
        "usize::MAX layers",
    );
    assert_field_error(
        with(&|c| c.d_model = 32),
        "ModelConfig",
        "d_model",
        "d_model 32",
    );
    assert_field_error(
        with(&|c| c.vocab_size = 300),
        "ModelConfig",
        "vocab_size",
        "vocab 300",
    );
    assert_field_error(with(&|c| c.d_ff = 64), "ModelConfig", "d_ff", "d_ff 64");
    assert_field_error(
        with(&|c| c.head_dim = 8),
        "ModelConfig",
        "head_dim",
        "head_dim 8",
    );
    assert_field_error(
        with(&|c| c.norm_eps = f32::NAN),
        "ModelConfig",
        "norm_eps",
        "NaN eps",
    );
    assert_field_error(
        with(&|c| c.context = usize::MAX),
        "ModelConfig",
        "context",
        "huge context",
    );
    assert_field_error(
        with(&|c| (c.n_heads, c.head_dim) = (4096, 4096)),
        "ModelConfig",
        "head_dim",
        "huge attention",
    );
}

/// A safetensors file holding one F32 tensor.
fn one_tensor(name: &str, shape: Vec<usize>, values: &[f32]) -> Vec<u8> {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let view = TensorView::new(Dtype::F32, shape, &data).unwrap();
    safetensors::serialize([(name.to_string(), view)], None).unwrap()
}

#[test]
fn messages_about_huge_shapes_names_and_values_stay_short() {
    // A tensor with 100,001 dimensions: the shape mismatch message was 300,110 characters.
    let bytes = one_tensor(
        "embeddings.word_embeddings.weight",
        vec![1; 100_001],
        &[0.5],
    );
    let err = read_safetensors(&bytes)
        .unwrap()
        .matrix("embeddings.word_embeddings.weight", 2, 2)
        .unwrap_err();
    assert!(matches!(&err, VizError::ShapeMismatch { found, .. } if found.len() == 100_001));
    let message = err.to_string();
    assert!(message.len() < SHORT, "{} characters", message.len());
    assert!(message.contains("… (100001 dims)"), "{message}");

    // A 100,000-character tensor name in three different errors.
    let long_name = "n".repeat(100_000);
    let bytes = one_tensor(&long_name, vec![2], &[1.0, f32::NAN]);
    let err = read_safetensors(&bytes).unwrap_err();
    assert!(matches!(err, VizError::CorruptWeights(_)), "{err:?}");
    assert!(
        err.to_string().len() < SHORT,
        "{} characters",
        err.to_string().len()
    );
    let bytes = one_tensor(&long_name, vec![3], &[1.0, 2.0, 3.0]);
    let err = read_safetensors(&bytes)
        .unwrap()
        .vector(&long_name, 4)
        .unwrap_err();
    assert!(
        err.to_string().len() < SHORT,
        "{} characters",
        err.to_string().len()
    );
    let err = read_safetensors(&bytes)
        .unwrap()
        .vector(&format!("{long_name}x"), 4)
        .unwrap_err();
    assert!(matches!(err, VizError::MissingTensor { .. }) && err.to_string().len() < SHORT);
    // The same name in a header whose offsets are wrong: the safetensors crate's own message.
    let mut entries = serde_json::Map::new();
    entries.insert(
        long_name.clone(),
        json!({"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}),
    );
    let header = Value::Object(entries).to_string();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    file.extend([0u8; 12]);
    let err = read_safetensors(&file).unwrap_err();
    assert!(matches!(err, VizError::CorruptWeights(_)), "{err:?}");
    assert!(
        err.to_string().len() < SHORT,
        "{} characters",
        err.to_string().len()
    );

    // A config value of 100,000 characters, and a list of 100,000 numbers.
    let message = assert_field_error(
        minilm::config_from_json(
            "m",
            &bert_config_with("hidden_act", Some(json!("g".repeat(100_000)))),
        ),
        "config.json",
        "hidden_act",
        "long activation",
    );
    assert!(message.contains("characters)"), "{message}");
    let list: Vec<u32> = (0..100_000).collect();
    assert_field_error(
        minilm::config_from_json(
            "m",
            &bert_config_with("num_hidden_layers", Some(json!(list))),
        ),
        "config.json",
        "num_hidden_layers",
        "long list",
    );
    let err = generic::config_from_json(&generic_config_with(
        "activation",
        Some(json!("x".repeat(100_000))),
    ))
    .unwrap_err();
    assert!(
        err.to_string().len() < SHORT,
        "{} characters",
        err.to_string().len()
    );
}
