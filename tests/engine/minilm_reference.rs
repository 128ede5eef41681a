//! The engine against an independent numpy implementation on the real all-MiniLM-L6-v2
//! weights: same tokens, every attention weight within 1e-4, final hidden states within 1e-3.

use crate::common;
use common::*;
use serde_json::json;

#[test]
fn tokenizer_matches_huggingface_tokenizers_on_a_corpus() {
    let model = minilm();
    let mut corpus: Vec<String> = SENTENCES.iter().map(|s| s.to_string()).collect();
    corpus.extend(
        [
            "Hello, world!",
            "UPPER lower MiXeD",
            "numbers 3.14159 and 1,000,000 and $5.99",
            "don't won't can't shouldn't've",
            "e-mail: someone@example.com, url https://example.org/a?b=c",
            "ﬁ ligature, full-width ＡＢＣ, superscript x²",
            "Ελληνικά, русский текст, हिन्दी, ภาษาไทย, 한국어",
            "math ∑ ∫ √ ≤ ≥ ≠ ∞ and arrows → ← ↑",
            "a  lot   of    spaces",
            "trailing space ",
            "\u{feff}byte order mark and \u{202e}override",
            "🥰 newer emoji 🫠 and flags 🇫🇷",
            "x",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let expected = reference("tokenize", &minilm_dir(), &json!(corpus));
    for (text, want) in corpus.iter().zip(expected.as_array().unwrap()) {
        let want: Vec<u32> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let got = model.encode(text).unwrap().ids();
        assert_eq!(got, want, "token ids differ for {text:?}");
    }
}

#[test]
fn attention_and_hidden_states_match_the_numpy_reference() {
    let model = minilm();
    let expected = reference("bert", &minilm_dir(), &json!(SENTENCES));
    let mut worst_attention: f64 = 0.0;
    let mut worst_hidden: f64 = 0.0;
    for (text, want) in SENTENCES.iter().zip(expected.as_array().unwrap()) {
        let trace = model.trace(text).unwrap();
        let ids: Vec<u64> = trace.tokens.iter().map(|t| t.id as u64).collect();
        let want_ids: Vec<u64> = want["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(ids, want_ids, "tokens differ for {text:?}");
        for layer in 0..6 {
            let ours = trace.attention_layer(layer).unwrap(); // (heads, T, T)
            let diff = max_abs_diff(
                &want["attention"][layer],
                ours.as_standard_layout().as_slice().unwrap(),
            );
            assert!(
                diff < 1e-4,
                "layer {layer} attention differs by {diff} for {text:?}"
            );
            worst_attention = worst_attention.max(diff);
        }
        let hidden = trace.final_hidden().unwrap(); // (T, d)
        let diff = max_abs_diff(
            &want["hidden"],
            hidden.as_standard_layout().as_slice().unwrap(),
        );
        assert!(
            diff < 1e-3,
            "final hidden states differ by {diff} for {text:?}"
        );
        worst_hidden = worst_hidden.max(diff);
    }
    eprintln!("worst attention difference {worst_attention:.2e}, worst hidden difference {worst_hidden:.2e}");
}

#[test]
fn f16_weights_stay_close_to_f32() {
    let f32_model = minilm();
    let f16_model = minilm_f16();
    for text in &SENTENCES[..4] {
        let a = f32_model.trace(text).unwrap();
        let b = f16_model.trace(text).unwrap();
        let mut worst: f32 = 0.0;
        for layer in 0..6 {
            let x = a.attention_layer(layer).unwrap();
            let y = b.attention_layer(layer).unwrap();
            worst = x
                .iter()
                .zip(y.iter())
                .map(|(p, q)| (p - q).abs())
                .fold(worst, f32::max);
        }
        assert!(worst < 2e-2, "f16 attention moved by {worst} for {text:?}");
        let pa = transformer_viz::analysis::pooling::mean_pool(a.final_hidden().unwrap());
        let pb = transformer_viz::analysis::pooling::mean_pool(b.final_hidden().unwrap());
        let cos = transformer_viz::analysis::pooling::cosine(&pa, &pb);
        assert!(
            cos > 0.999,
            "f16 sentence embedding cosine to f32 is only {cos}"
        );
    }
}
