//! The lecture's encoder-decoder task: write the source backwards ("attention" becomes
//! "noitnetta"). Its cross-attention can be read at a glance: to write its t-th letter the
//! decoder must look at the source's t-th letter from the end, so the weights of a head that
//! does the job lie on the anti-diagonal. Sources are 1 to `MAX_LETTERS` lowercase letters and
//! spaces; about one in eight strings of 4 letters or more is held out (by a hash of the
//! string, so no run ever trains on it) to measure exact match on inputs never seen.
//!
//! This file is the task (its strings, held-out ones and answers), which the page's trainer
//! also reads (`in_page`, the decoder-only reversal task); `reversal_run` trains the
//! encoder-decoder on it.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::tokenize::vocab_file::VocabFile;

/// What the sources are made of.
pub const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz ";
/// The longest source the model is trained on (the context holds it with the start token,
/// and the output with the start token and the end token).
pub const MAX_LETTERS: usize = 20;
/// Held-out strings are at least this long (every shorter string is trained on).
pub const HELD_OUT_FROM: usize = 4;

/// The vocabulary: one token per character of `ALPHABET` (in GPT-2's byte alphabet, a space
/// is `Ġ`), then the start token, which also ends the output.
pub fn vocab() -> VocabFile {
    VocabFile::characters(ALPHABET.bytes())
}

/// Whether `text` belongs to the held-out strings (FNV-1a hash, one in eight).
pub fn is_held_out(text: &str) -> bool {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    text.len() >= HELD_OUT_FROM && hash % 8 == 0
}

/// A random string of `len` characters: letters, and a space one time in ten.
fn random_string(rng: &mut ChaCha8Rng, len: usize) -> String {
    (0..len)
        .map(|_| {
            let r = rng.next_u32();
            if r % 10 == 0 {
                ' '
            } else {
                (b'a' + ((r >> 8) % 26) as u8) as char
            }
        })
        .collect()
}

/// A training string of `len` characters (never a held-out one).
pub fn training_string(rng: &mut ChaCha8Rng, len: usize) -> String {
    loop {
        let s = random_string(rng, len);
        if !is_held_out(&s) {
            return s;
        }
    }
}

/// `n` held-out strings of 4 to `MAX_LETTERS` characters from `seed`.
pub fn held_out_strings(n: usize, seed: u64) -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = HELD_OUT_FROM + (rng.next_u32() as usize) % (MAX_LETTERS - HELD_OUT_FROM + 1);
        let s = random_string(&mut rng, len);
        if is_held_out(&s) {
            out.push(s);
        }
    }
    out
}

/// The task's answer.
pub fn reversed(text: &str) -> String {
    text.chars().rev().collect()
}
