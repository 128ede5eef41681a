//! Learns a byte-level BPE vocabulary from a corpus, as GPT-2's was learned: cut the text into
//! pieces with the same pre-tokenizer the engine uses, start from the 256 bytes, and merge the
//! most frequent adjacent pair again and again. The result is a `VocabFile` whose merges the
//! engine's `ByteLevelBpe` applies in the order they were learned.
//!
//! Pair counts are kept up to date incrementally (only words holding the merged pair are
//! visited), so a few thousand merges over ~100k distinct words take seconds.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::Result;
use crate::tokenize::bpe::{byte_to_char, ByteLevelBpe, PreTokenizer, SpecialTokens};
use crate::tokenize::vocab_file::{VocabFile, KIND};

/// The start token's text (last id of the vocabulary).
pub const BOS_TEXT: &str = "<|endoftext|>";

type Pair = (u32, u32);

/// Learns `vocab_size` tokens (256 bytes, `vocab_size - 257` merges, the start token) from
/// `documents`. Ties between equally frequent pairs go to the smaller pair of ids, so the
/// result depends on the text alone.
pub fn learn_vocab(documents: &[String], vocab_size: usize) -> Result<VocabFile> {
    assert!(
        vocab_size > 257,
        "a byte-level vocabulary needs the 256 bytes, a start token and some merges"
    );
    let to_char = byte_to_char();
    let bytes_only: Vec<String> = to_char.iter().map(|c| c.to_string()).collect();
    let splitter = ByteLevelBpe::new(
        bytes_only.clone(),
        vec![],
        SpecialTokens::default(),
        PreTokenizer::Gpt2,
    )?;

    // Distinct pieces and how often each occurs (BTreeMap: a fixed order).
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for doc in documents {
        for piece in splitter.pieces(doc) {
            *counts.entry(piece).or_default() += 1;
        }
    }
    let mut words: Vec<(Vec<u32>, u64)> = counts
        .iter()
        .map(|(p, &n)| (p.bytes().map(u32::from).collect(), n))
        .collect();

    let mut pair_counts: HashMap<Pair, i64> = HashMap::new();
    let mut where_pair: HashMap<Pair, HashSet<usize>> = HashMap::new();
    for (w, (symbols, n)) in words.iter().enumerate() {
        for pair in symbols.windows(2) {
            *pair_counts.entry((pair[0], pair[1])).or_default() += *n as i64;
            where_pair.entry((pair[0], pair[1])).or_default().insert(w);
        }
    }

    let mut ids: HashMap<String, u32> = bytes_only
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let mut tokens = bytes_only;
    let mut merges = Vec::new();
    while tokens.len() < vocab_size - 1 {
        let Some((&best, &count)) = pair_counts
            .iter()
            .filter(|(_, &c)| c > 0)
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        else {
            break; // every word is a single token
        };
        if count < 2 {
            break;
        }
        // Two pairs can spell the same string ("ab c", "a bc"): they share one token.
        let text = format!("{}{}", tokens[best.0 as usize], tokens[best.1 as usize]);
        merges.push(format!(
            "{} {}",
            tokens[best.0 as usize], tokens[best.1 as usize]
        ));
        let merged = *ids.entry(text.clone()).or_insert_with(|| {
            tokens.push(text);
            tokens.len() as u32 - 1
        });
        let holders: Vec<usize> = where_pair
            .remove(&best)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default();
        for w in holders {
            let (symbols, n) = &mut words[w];
            let n = *n as i64;
            for pair in symbols.windows(2) {
                *pair_counts.get_mut(&(pair[0], pair[1])).expect("counted") -= n;
            }
            let mut out = Vec::with_capacity(symbols.len());
            let mut i = 0;
            while i < symbols.len() {
                if i + 1 < symbols.len() && (symbols[i], symbols[i + 1]) == best {
                    out.push(merged);
                    i += 2;
                } else {
                    out.push(symbols[i]);
                    i += 1;
                }
            }
            *symbols = out;
            for pair in symbols.windows(2) {
                *pair_counts.entry((pair[0], pair[1])).or_default() += n;
                where_pair.entry((pair[0], pair[1])).or_default().insert(w);
            }
        }
        pair_counts.remove(&best);
    }
    let bos = tokens.len() as u32;
    tokens.push(BOS_TEXT.to_string());
    Ok(VocabFile {
        kind: KIND.to_string(),
        tokens,
        merges,
        bos,
    })
}
