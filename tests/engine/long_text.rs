//! Pasting a long text: the tokens kept for the 512-token context are exactly the first ones
//! Hugging Face `tokenizers` gives for the whole text, and the reported length is its full
//! count, while the tokens past the context are only counted.

use crate::common;
use common::*;
use serde_json::json;

/// 100,000-character texts of several kinds: prose, words the vocabulary lacks (long greedy
/// searches), accents with CJK and emoji, hand-typed special tokens, and control characters.
fn long_texts() -> Vec<String> {
    let mut seed = 12_345u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut rare = String::new();
    while rare.len() < 100_000 {
        let len = 20 + (next() % 80) as usize;
        rare.extend((0..len).map(|_| char::from(b'a' + (next() % 26) as u8)));
        rare.push(' ');
    }
    let cut = |s: String| s.chars().take(100_000).collect::<String>();
    vec![
        cut("The quick brown fox jumps over the lazy dog, and the students watched attention heads form. ".repeat(1200)),
        cut(rare),
        cut("Zürich café naïve — 東京 🇫🇷 déjà vu, résumé! ".repeat(2500)),
        cut("[CLS] a [SEP] unbelievable[MASK]tokens ".repeat(3000)),
        cut("tab\there\u{b}vertical\u{c}feed\u{85}next\u{a0}nbsp\u{3000}ideographic\r\n".repeat(2000)),
    ]
}

#[test]
fn the_kept_tokens_of_a_long_text_are_the_first_tokens_of_the_whole_text() {
    let model = minilm();
    let texts = long_texts();
    let expected = reference("tokenize", &minilm_dir(), &json!(texts));
    for (text, want) in texts.iter().zip(expected.as_array().unwrap()) {
        let want: Vec<u32> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert!(want.len() > 512, "each text is longer than the context");
        let encoding = model.encode(text).unwrap();
        let kept = encoding.ids();
        let head = &text[..text.char_indices().nth(40).unwrap().0];
        assert_eq!(kept.len(), 512, "{head:?}");
        assert_eq!(
            kept[..511],
            want[..511],
            "the first 511 ids differ for {head:?}"
        );
        assert_eq!(
            kept[511],
            *want.last().unwrap(),
            "the context ends with [SEP] for {head:?}"
        );
        let truncation = encoding
            .truncated
            .expect("a long text is reported as truncated");
        assert_eq!(
            truncation.original_tokens,
            want.len(),
            "the full count for {head:?}"
        );
        assert_eq!(truncation.kept_tokens, 512);
    }
}
