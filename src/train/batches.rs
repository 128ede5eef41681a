//! Training sequences drawn from the token stream. Most are plain windows of text; a share
//! holds a repeated span, because a model learns to copy (induction heads: attend to the
//! token after an earlier occurrence of the current one, and predict it) far earlier when
//! its data rewards copying often (Olsson et al., 2022, "In-context learning and induction
//! heads"):
//! - random runs: random tokens, the same run repeated until the sequence is full;
//! - copied spans: a window of text with a span of it copied later into the same window;
//! - drills: a window of a text of its own (`corpus::drill_text`, `train --drills`), when a
//!   behaviour's tokens are too rare in the text for its gradient to be felt.

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde::{Deserialize, Serialize};

/// How many sequences of each kind a batch holds, in thousandths (the rest is plain text),
/// and which tokens a random run draws from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Mixture {
    pub random_repeat: u32,
    pub copied_span: u32,
    /// A random run draws from this many of the training text's most frequent ordinary
    /// tokens (0: from all of them alike).
    pub pool: u32,
    /// A random run's length, shortest and longest. Runs of 2 or 3 tokens are copied by
    /// looking 1 or 2 tokens back: a positional head that copies, the two halves an induction
    /// circuit is built from, learned before any content has to be matched.
    #[serde(default = "default_run_lengths")]
    pub run_lengths: (u32, u32),
    /// 0: a random run draws its tokens alike. Above 0: it draws the token of frequency rank
    /// r (from 0) with a chance of about 1 / (r + 1.5)^zipf (a power law, as words come in
    /// text): the frequent tokens are met often enough to learn early, and every token still
    /// comes.
    #[serde(default)]
    pub zipf: f32,
    /// Windows of the drill text (a stream apart from the training text), in thousandths.
    #[serde(default)]
    pub drills: u32,
    /// Of the drill windows, how many in a thousand begin at a drill story's first token,
    /// right after the start token, as a student's typed text does: a sentence at the very
    /// start of a text is read with fewer tokens to look back at than one in running text.
    #[serde(default)]
    pub drill_starts: u32,
}

fn default_run_lengths() -> (u32, u32) {
    (8, 48)
}

impl Mixture {
    pub const PLAIN: Mixture = Mixture {
        random_repeat: 0,
        copied_span: 0,
        pool: 0,
        run_lengths: (8, 48),
        zipf: 0.0,
        drills: 0,
        drill_starts: 0,
    };
}

/// The ordinary tokens (ids below `bos`), most frequent in `stream` first: a random run drawn
/// from the first of them is a run of words the model has learned to read.
pub fn run_pool(stream: &[u32], bos: u32) -> Vec<u32> {
    let mut counts = vec![0u64; bos as usize];
    for &id in stream {
        if id < bos {
            counts[id as usize] += 1;
        }
    }
    let mut ids: Vec<u32> = (0..bos).collect();
    ids.sort_by_key(|&id| (std::cmp::Reverse(counts[id as usize]), id)); // (bos,)
    ids
}

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A rank below `n` drawn with the chance the continuous power law x^-a (a > 0) gives
/// [rank + 1, rank + 2) within [1, n + 1), about 1 / (rank + 1.5)^a: its distribution is
/// inverted in closed form, so a draw costs no table.
fn zipf_rank(rng: &mut ChaCha8Rng, n: usize, a: f64) -> usize {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    let top = (n + 1) as f64;
    let x = if (a - 1.0).abs() < 1e-9 {
        top.powf(u)
    } else {
        let b = 1.0 - a;
        (u * top.powf(b) + (1.0 - u)).powf(1.0 / b)
    };
    ((x.floor() as usize).max(1) - 1).min(n - 1)
}

fn between(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> usize {
    lo + below(rng, hi - lo + 1)
}

/// One sequence of `len + 1` ids starting with `bos` (inputs are the first `len`, targets
/// the last `len`). `pool` holds the ordinary ids most frequent first (`run_pool`); a random
/// run draws uniformly from the mixture's first `pool` of them, or from every id below `bos`
/// when the mixture's pool is 0 (or `pool` is empty). A drill window comes from `drills`,
/// which must then be longer than `len` (`Run` checks); with no drills in the mixture the
/// draws are the same as before drills existed.
pub fn sample_sequence(
    rng: &mut ChaCha8Rng,
    stream: &[u32],
    drills: &[u32],
    len: usize,
    bos: u32,
    mixture: &Mixture,
    pool: &[u32],
) -> Vec<u32> {
    let kind = if mixture.random_repeat + mixture.copied_span + mixture.drills > 0 {
        below(rng, 1000) as u32
    } else {
        u32::MAX
    };
    let mut seq = Vec::with_capacity(len + 1);
    seq.push(bos);
    if kind < mixture.random_repeat {
        let (shortest, longest) = mixture.run_lengths;
        // Every ordinary id alike (id = the number drawn, as the committed runs drew them),
        // or one of the pool's first `mixture.pool` ids, alike or by a power law of rank.
        let size = if mixture.zipf > 0.0 && mixture.pool == 0 {
            pool.len()
        } else {
            (mixture.pool as usize).min(pool.len())
        };
        let run: Vec<u32> = (0..between(
            rng,
            shortest.max(1) as usize,
            longest.max(shortest.max(1)) as usize,
        ))
            .map(|_| {
                if size == 0 {
                    below(rng, bos as usize) as u32
                } else if mixture.zipf > 0.0 {
                    pool[zipf_rank(rng, size, mixture.zipf as f64)]
                } else {
                    pool[below(rng, size)]
                }
            })
            .collect();
        seq.extend(run.iter().cycle().take(len));
        return seq;
    }
    let copying = mixture.random_repeat + mixture.copied_span;
    if kind >= copying && kind < copying + mixture.drills {
        let mut start = below(rng, drills.len() - len);
        // No draw when no window is to start at a story, so older runs draw the same.
        if mixture.drill_starts > 0 && (below(rng, 1000) as u32) < mixture.drill_starts {
            // The first story that starts after `start` and still fills the window.
            if let Some(at) = drills[start..drills.len() - len]
                .iter()
                .position(|&t| t == bos)
            {
                start += at + 1;
            }
        }
        seq.extend_from_slice(&drills[start..start + len]);
        return seq;
    }
    let start = below(rng, stream.len() - len);
    seq.extend_from_slice(&stream[start..start + len]);
    if kind < mixture.random_repeat + mixture.copied_span {
        let span = between(rng, 8, 40.min(len / 4));
        let from = between(rng, 1, len / 2 - span);
        let to = between(rng, from + span, len + 1 - span);
        let copy: Vec<u32> = seq[from..from + span].to_vec();
        seq[to..to + span].copy_from_slice(&copy);
    }
    seq
}

/// Fixed evaluation windows of plain text: `count` windows spread evenly over the stream.
pub fn evaluation_windows(stream: &[u32], len: usize, bos: u32, count: usize) -> Vec<Vec<u32>> {
    let room = stream.len().saturating_sub(len + 1);
    (0..count)
        .map(|i| {
            let start = room * i / count.max(1);
            let mut seq = vec![bos];
            seq.extend_from_slice(&stream[start..start + len]);
            seq
        })
        .collect()
}
