//! Training sequences drawn from the token stream. Most are plain windows of text; a share
//! holds a repeated span, because a model learns to copy (induction heads: attend to the
//! token after an earlier occurrence of the current one, and predict it) far earlier when
//! its data rewards copying often (Olsson et al., 2022, "In-context learning and induction
//! heads"):
//! - `RANDOM_REPEAT`: random tokens, the same run repeated until the sequence is full;
//! - `COPIED_SPAN`: a window of text with a span of it copied later into the same window.

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

/// Shares of sequences of each kind, in thousandths.
pub const RANDOM_REPEAT: u32 = 100;
pub const COPIED_SPAN: u32 = 150;

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

fn between(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> usize {
    lo + below(rng, hi - lo + 1)
}

/// One sequence of `len + 1` ids starting with `bos` (inputs are the first `len`, targets
/// the last `len`).
pub fn sample_sequence(
    rng: &mut ChaCha8Rng,
    stream: &[u32],
    len: usize,
    bos: u32,
    repeats: bool,
) -> Vec<u32> {
    let kind = if repeats {
        below(rng, 1000) as u32
    } else {
        u32::MAX
    };
    let mut seq = Vec::with_capacity(len + 1);
    seq.push(bos);
    if kind < RANDOM_REPEAT {
        // The vocabulary's ordinary tokens are the ids below `bos`.
        let run: Vec<u32> = (0..between(rng, 8, 48))
            .map(|_| below(rng, bos as usize) as u32)
            .collect();
        seq.extend(run.iter().cycle().take(len));
        return seq;
    }
    let start = below(rng, stream.len() - len);
    seq.extend_from_slice(&stream[start..start + len]);
    if kind < RANDOM_REPEAT + COPIED_SPAN {
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
