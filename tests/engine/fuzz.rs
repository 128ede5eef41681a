//! Property tests in the place of a fuzzer: random and mutated inputs to every parser the page
//! feeds with a file or with the user's text. Each asserts that nothing panics and that the
//! answer is either a value or a `VizError` (with a short message).
//!
//! `cargo test --release --test fuzz` runs a few hundred cases per target (seconds);
//! `PROPTEST_CASES=200000 cargo test --release --test fuzz` runs a long search.
//! Sections: safetensors bytes; config.json fields; tokenizer text; weights + config pairs.

use crate::common;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::{json, Value};
use transformer_viz::checkpoints::{fixture, generic, minilm};
use transformer_viz::formats::safetensors::{convert_to_f16, read_safetensors};
use transformer_viz::model::ModelConfig;
use transformer_viz::tokenize::bytes::ByteTokenizer;
use transformer_viz::tokenize::wordpiece::WordPiece;
use transformer_viz::tokenize::Tokenizer;
use transformer_viz::{Transformer, VizError};

/// `cases` per property, unless `PROPTEST_CASES` asks for another number (the long mode).
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every error the engine gives is short, whatever the input held.
fn assert_short(err: &VizError) {
    let message = err.to_string();
    assert!(
        message.len() < 600,
        "a {}-character message: {}…",
        message.len(),
        &message[..200]
    );
}

fn ok_or_short<T>(result: Result<T, VizError>) -> Option<T> {
    result.map_err(|e| assert_short(&e)).ok()
}

/// Deterministic small values for the test checkpoints.
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Test checkpoints: a tiny BERT (Hugging Face layout, with a tiny WordPiece tokenizer) and a
// tiny model in this project's format.

const TINY_BERT_VOCAB: &[&str] = &[
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "a", ".",
];

fn tiny_bert_config() -> Value {
    json!({
        "model_type": "bert", "vocab_size": TINY_BERT_VOCAB.len(), "hidden_size": 8, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute"
    })
}

fn tiny_bert_tokenizer() -> String {
    let vocab: serde_json::Map<String, Value> = TINY_BERT_VOCAB
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
    let added: Vec<Value> = (0..5)
        .map(|i| json!({"id": i, "content": TINY_BERT_VOCAB[i], "special": true}))
        .collect();
    json!({
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}
        },
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab}
    })
    .to_string()
}

fn safetensors_of(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(n, s, v)| {
            (
                n.clone(),
                s.clone(),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            )
        })
        .collect();
    let mut views: Vec<(String, TensorView<'_>)> = bytes
        .iter()
        .map(|(n, s, d)| {
            (
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), d).unwrap(),
            )
        })
        .collect();
    // BERT checkpoints carry an int64 table too; the reader skips it.
    let ids: Vec<u8> = (0..16i64).flat_map(|i| i.to_le_bytes()).collect();
    views.push((
        "embeddings.position_ids".into(),
        TensorView::new(Dtype::I64, vec![1, 16], &ids).unwrap(),
    ));
    safetensors::serialize(views, None).unwrap()
}

/// The tiny BERT's weights, in the Hugging Face names.
fn tiny_bert_weights() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let (v, h, f, p) = (TINY_BERT_VOCAB.len(), 8, 16, 16);
        let mut t: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
        let mut put = |name: String, shape: Vec<usize>| {
            let n = shape.iter().product();
            let seed = t.len() as u32;
            t.push((name, shape, values(n, seed)));
        };
        put("embeddings.word_embeddings.weight".into(), vec![v, h]);
        put("embeddings.position_embeddings.weight".into(), vec![p, h]);
        put("embeddings.token_type_embeddings.weight".into(), vec![2, h]);
        for part in ["weight", "bias"] {
            put(format!("embeddings.LayerNorm.{part}"), vec![h]);
        }
        for i in 0..2 {
            let l = format!("encoder.layer.{i}");
            for (name, out, inp) in [
                ("attention.self.query", h, h),
                ("attention.self.key", h, h),
                ("attention.self.value", h, h),
                ("attention.output.dense", h, h),
                ("intermediate.dense", f, h),
                ("output.dense", h, f),
            ] {
                put(format!("{l}.{name}.weight"), vec![out, inp]);
                put(format!("{l}.{name}.bias"), vec![out]);
            }
            for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
                put(format!("{l}.{norm}.weight"), vec![h]);
                put(format!("{l}.{norm}.bias"), vec![h]);
            }
        }
        safetensors_of(&t)
    })
}

/// A tiny Llama-style decoder in this project's format, with its config.
fn tiny_generic() -> &'static (ModelConfig, Vec<u8>) {
    static MODEL: OnceLock<(ModelConfig, Vec<u8>)> = OnceLock::new();
    MODEL.get_or_init(|| {
        let mut c = fixture::decoder_config();
        c.n_layers = 1;
        let bytes = generic::to_safetensors(&fixture::random_weights(&c, 3)).unwrap();
        (c, bytes)
    })
}

/// Runs a loaded model on a short text: whatever a config let through must compute.
fn run_briefly(model: &Transformer) {
    if let Some(encoding) = ok_or_short(model.encode("the cat sat. a cat")) {
        let out = model.run_ids(&encoding.ids()).unwrap();
        assert_eq!(out.hidden.dim().0, encoding.tokens.len());
    }
}

// ---------------------------------------------------------------------------------------
// Section 1: safetensors bytes.

/// Both readers on the same bytes: they may refuse, never panic.
fn read_any_safetensors(bytes: &[u8]) {
    if let Some(map) = ok_or_short(read_safetensors(bytes)) {
        let config = minilm::config_from_json("tiny", &tiny_bert_config().to_string()).unwrap();
        ok_or_short(minilm::weights_from_tensors(map, &config));
    }
    ok_or_short(generic::from_safetensors(bytes, &tiny_generic().0));
    ok_or_short(convert_to_f16(bytes));
}

/// A safetensors file from a header (any JSON) and a data section.
fn with_header(header: &Value, data: &[u8]) -> Vec<u8> {
    let text = header.to_string();
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend(text.as_bytes());
    file.extend(data);
    file
}

/// The header (parsed) and data section of a valid file.
fn split(bytes: &[u8]) -> (Value, &[u8]) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (
        serde_json::from_slice(&bytes[8..8 + n]).unwrap(),
        &bytes[8 + n..],
    )
}

fn a_dtype() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "F32", "F16", "BF16", "F64", "I64", "I32", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "",
            "f32", "XYZ"
        ])
        .prop_map(|s| json!(s)),
        any::<i64>().prop_map(|n| json!(n)),
    ]
}

fn a_dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..20,
        Just(1 << 31),
        Just(1 << 32),
        Just(u64::MAX / 3),
        Just(u64::MAX),
        any::<u64>()
    ]
}

fn an_offset(len: usize) -> impl Strategy<Value = u64> {
    prop_oneof![
        0..=len as u64 + 8,
        Just(u64::MAX),
        Just(1 << 40),
        any::<u64>()
    ]
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn random_bytes_are_refused_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        read_any_safetensors(&bytes);
    }

    #[test]
    fn a_random_header_length_then_random_bytes(len in any::<u64>(), rest in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend(rest);
        read_any_safetensors(&bytes);
    }

    #[test]
    fn flipped_bytes_of_a_valid_file(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<bool>()), 1..8),
        bert in any::<bool>(),
    ) {
        let mut bytes = if bert { tiny_bert_weights().to_vec() } else { tiny_generic().1.clone() };
        let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        for (at, xor, in_header) in flips {
            // Half the flips land in the header, where they matter most.
            let i = if in_header { at.index(header_end) } else { at.index(bytes.len()) };
            bytes[i] ^= xor.max(1);
        }
        read_any_safetensors(&bytes);
    }

    #[test]
    fn a_valid_file_cut_short(cut in any::<prop::sample::Index>(), bert in any::<bool>()) {
        let bytes = if bert { tiny_bert_weights() } else { &tiny_generic().1 };
        read_any_safetensors(&bytes[..cut.index(bytes.len())]);
    }

    #[test]
    fn a_valid_file_with_one_tensor_entry_rewritten(
        pick in any::<prop::sample::Index>(),
        dtype in proptest::option::of(a_dtype()),
        shape in proptest::option::of(prop::collection::vec(a_dim(), 0..5)),
        offsets in proptest::option::of((an_offset(50_000), an_offset(50_000))),
        rename in proptest::option::of("[a-z.0-9]{0,40}"),
        bert in any::<bool>(),
    ) {
        let bytes = if bert { tiny_bert_weights() } else { &tiny_generic().1 };
        let (mut header, data) = split(bytes);
        let names: Vec<String> = header.as_object().unwrap().keys().filter(|k| *k != "__metadata__").cloned().collect();
        let name = names[pick.index(names.len())].clone();
        let mut entry = header[&name].clone();
        if let Some(d) = dtype { entry["dtype"] = d; }
        if let Some(s) = shape { entry["shape"] = json!(s); }
        if let Some((a, b)) = offsets { entry["data_offsets"] = json!([a, b]); }
        let map = header.as_object_mut().unwrap();
        map.remove(&name);
        map.insert(rename.unwrap_or(name), entry);
        read_any_safetensors(&with_header(&header, data));
    }

    #[test]
    fn a_header_of_random_json(header in json_value(3), data in prop::collection::vec(any::<u8>(), 0..64)) {
        read_any_safetensors(&with_header(&header, &data));
    }
}

// ---------------------------------------------------------------------------------------
// Section 2: config.json, every field set to random JSON.

/// Any JSON value, nested up to `depth`, with numbers at the edges of every type.
fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(2),
            Just(4095),
            Just(4096),
            Just(4097),
            Just(1 << 32),
            Just((1 << 32) - 1),
            Just(1 << 40),
            Just(u64::MAX)
        ]
        .prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just(1e-12),
            Just(-0.0),
            Just(0.5),
            Just(1e38),
            Just(1e39),
            Just(1e300),
            Just(f64::MIN_POSITIVE)
        ]
        .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "gelu", "relu", "bert", "absolute", "Rotary", "Learned", "Layer", "Rms", "Pre", "Post",
            "SwiGlu", "Tied"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(depth, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}|base|adjacent_pairs|Rotary", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid config with one to three fields set to random values (or removed).
fn mutate_config(valid: Value) -> impl Strategy<Value = Value> {
    let fields: Vec<String> = valid
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .chain(["unknown_field".to_string()])
        .collect();
    prop::collection::vec(
        (
            prop::sample::select(fields),
            proptest::option::weighted(0.9, json_value(2)),
        ),
        1..4,
    )
    .prop_map(move |edits| {
        let mut config = valid.clone();
        for (field, value) in edits {
            match value {
                Some(v) => config[&field] = v,
                None => {
                    config.as_object_mut().unwrap().remove(&field);
                }
            }
        }
        config
    })
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn bert_config_fields_of_any_value(config in mutate_config(tiny_bert_config())) {
        let text = config.to_string();
        if let Some(model) = ok_or_short(minilm::from_bytes("tiny", &text, &tiny_bert_tokenizer(), tiny_bert_weights())) {
            run_briefly(&model);
        }
    }

    #[test]
    fn generic_config_fields_of_any_value(config in mutate_config(serde_json::to_value(&tiny_generic().0).unwrap())) {
        if let Some(c) = ok_or_short(generic::config_from_json(&config.to_string())) {
            if let Some(weights) = ok_or_short(generic::from_safetensors(&tiny_generic().1, &c)) {
                if let Some(model) = ok_or_short(Transformer::new(c, weights, Box::new(ByteTokenizer::default()))) {
                    run_briefly(&model);
                }
            }
        }
    }

    #[test]
    fn config_text_of_any_bytes(text in ".{0,200}") {
        ok_or_short(minilm::config_from_json("m", &text));
        ok_or_short(generic::config_from_json(&text));
    }
}

// ---------------------------------------------------------------------------------------
// Section 3: tokenizer input, any Unicode text.

fn minilm_tokenizer() -> &'static WordPiece {
    static TOKENIZER: OnceLock<WordPiece> = OnceLock::new();
    TOKENIZER.get_or_init(|| {
        WordPiece::from_tokenizer_json(
            &std::fs::read_to_string(common::minilm_dir().join("tokenizer.json")).unwrap(),
        )
        .unwrap()
    })
}

/// Text built from pieces that stress BERT's normaliser: control characters, combining marks,
/// CJK, emoji, every kind of whitespace, the added tokens themselves, and long runs.
fn nasty_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        prop::sample::select(vec![
            "\u{0}",
            "\u{7}",
            "\u{b}",
            "\u{c}",
            "\u{85}",
            "\u{a0}",
            "\u{2028}",
            "\u{3000}",
            "\t",
            "\n",
            "\r",
            " ",
            "\u{200b}",
            "\u{feff}",
            "\u{301}",
            "\u{308}\u{301}",
            "\u{fffd}",
            "\u{202e}",
            "e\u{301}",
            "ǅ",
            "İ",
            "ß",
            "ΐ",
            "Σ",
            "東京",
            "😀",
            "🏳️‍🌈",
            "[CLS]",
            "[SEP]",
            "[MASK]",
            "[PAD]",
            "[UNK]",
            "[CL",
            "S]",
            "##",
            "un",
            "##able",
            ".",
            ",",
            "'",
            "-",
            "\u{10ffff}",
            "\u{e000}",
        ])
        .prop_map(String::from),
        (any::<char>(), 1usize..300).prop_map(|(c, n)| c.to_string().repeat(n)),
        "[a-z]{1,120}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(cases(512))]

    #[test]
    fn any_text_tokenizes_within_the_context(text in prop_oneof![any::<String>(), nasty_text()], context in prop_oneof![Just(512usize), 2usize..40]) {
        let tokenizer = minilm_tokenizer();
        match tokenizer.encode(&text, context) {
            Ok(encoding) => {
                let ids = encoding.ids();
                prop_assert!(ids.len() <= context.max(2));
                prop_assert_eq!(encoding.tokens.first().map(|t| t.text.as_str()), Some("[CLS]"));
                prop_assert_eq!(encoding.tokens.last().map(|t| t.text.as_str()), Some("[SEP]"));
                // The kept ids are the first ids of the unbounded tokenization, and the count
                // of a truncated text is the full one.
                let all = tokenizer.encode_words(&text);
                prop_assert_eq!(&ids[1..ids.len() - 1], &all[..ids.len() - 2]);
                match encoding.truncated {
                    Some(t) => prop_assert_eq!(t.original_tokens, all.len() + 2),
                    None => prop_assert_eq!(ids.len(), all.len() + 2),
                }
            }
            Err(e) => prop_assert!(matches!(e, VizError::EmptyText | VizError::NoTokens), "{e:?}"),
        }
    }

    #[test]
    fn any_text_runs_through_a_small_model(text in nasty_text()) {
        let model = fixture::fixture(fixture::encoder_config(), 5).unwrap();
        if let Ok(encoding) = model.encode(&text) {
            let out = model.run_ids(&encoding.ids()).unwrap();
            prop_assert!(out.hidden.iter().all(|v| v.is_finite()));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Section 4: weights and configs that were made for each other, or not.

/// Small configs of every architecture family, with numbers near the fixture's.
fn small_config() -> impl Strategy<Value = ModelConfig> {
    (
        1usize..4,
        1usize..5,
        1usize..4,
        prop::sample::select(vec![2usize, 4]),
        1usize..40,
        2usize..30,
        0usize..3,
        any::<u8>(),
    )
        .prop_map(
            |(layers, heads, kv_divisor, head_dim, d_ff, context, token_types, family)| {
                let mut c = if family % 2 == 0 {
                    fixture::encoder_config()
                } else {
                    fixture::decoder_config()
                };
                c.n_layers = layers;
                c.n_heads = heads;
                c.n_kv_heads = if heads % kv_divisor == 0 {
                    heads / kv_divisor
                } else {
                    heads
                };
                c.head_dim = head_dim;
                c.d_ff = d_ff;
                c.context = context;
                c.token_types = token_types;
                if family % 4 == 3 {
                    c.position = transformer_viz::model::config::Position::Learned;
                }
                c
            },
        )
}

proptest! {
    #![proptest_config(cases(128))]

    #[test]
    fn weights_loaded_with_another_config(made_for in small_config(), loaded_with in small_config(), seed in any::<u64>()) {
        let bytes = generic::to_safetensors(&fixture::random_weights(&made_for, seed)).unwrap();
        if let Some(weights) = ok_or_short(generic::from_safetensors(&bytes, &loaded_with)) {
            if let Some(model) = ok_or_short(Transformer::new(loaded_with, weights, Box::new(ByteTokenizer::default()))) {
                run_briefly(&model);
            }
        }
    }

    #[test]
    fn weights_and_their_own_config_always_load(config in small_config(), seed in any::<u64>()) {
        let bytes = generic::to_safetensors(&fixture::random_weights(&config, seed)).unwrap();
        let json = serde_json::to_string(&config).unwrap();
        let parsed = generic::config_from_json(&json).unwrap();
        prop_assert_eq!(&parsed, &config);
        let weights = generic::from_safetensors(&bytes, &parsed).unwrap();
        run_briefly(&Transformer::new(parsed, weights, Box::new(ByteTokenizer::default())).unwrap());
    }
}
