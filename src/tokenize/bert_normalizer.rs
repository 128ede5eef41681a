//! BERT's text clean-up, as the `BertNormalizer` and `BertPreTokenizer` of a `tokenizer.json`
//! define it: drop control characters, space out CJK ideographs, strip accents, lower-case,
//! then split on whitespace and around every punctuation character.

use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BertNormalizer {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    pub strip_accents: bool,
    pub lowercase: bool,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control, format, unassigned, private-use characters (but not tab, newline, return).
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK ideograph blocks BERT treats as words of their own.
fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

impl BertNormalizer {
    pub fn normalize(&self, text: &str) -> String {
        let mut s: String = if self.clean_text {
            text.chars()
                .filter(|&c| !(c == '\0' || c == '\u{fffd}' || is_control(c)))
                .map(|c| if is_whitespace(c) { ' ' } else { c })
                .collect()
        } else {
            text.to_string()
        };
        if self.handle_chinese_chars {
            let mut spaced = String::with_capacity(s.len());
            for c in s.chars() {
                if is_chinese_char(c) {
                    spaced.push(' ');
                    spaced.push(c);
                    spaced.push(' ');
                } else {
                    spaced.push(c);
                }
            }
            s = spaced;
        }
        if self.strip_accents {
            // Only non-spacing marks (Mn) are accents; spacing marks such as Devanagari vowel
            // signs (Mc) are part of the letter and stay.
            s = s.nfd().filter(|&c| !c.is_mark_nonspacing()).collect();
        }
        if self.lowercase {
            s = s.chars().flat_map(char::to_lowercase).collect();
        }
        s
    }
}

/// Splits normalised text into words: whitespace separates, each punctuation character
/// stands alone.
pub fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if is_punctuation(c) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            words.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}
