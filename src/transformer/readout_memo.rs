//! What the model reads off a stream row through its final norm and unembedding (its top
//! token and that token's probability), kept for the rows seen lately. A causal model's rows
//! before the first changed token are the same from one keystroke to the next, and so are the
//! rows a generated token leaves behind, so the logit lens unembeds only the rows that
//! changed. A row is found by its exact bits: one that differs in any bit is read afresh, so
//! a kept answer is always the one reading the row again would give.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use ndarray::ArrayView1;

/// Rows kept at most (SmolLM2's lens reads 31 depths at up to 16 positions: 496 rows of 576
/// floats); past it the memo starts again, empty.
const MOST_ROWS: usize = 2048;

/// A row's top token and its probability.
pub type Readout = (u32, f32);

#[derive(Default)]
pub struct ReadoutMemo {
    rows: Mutex<HashMap<Box<[u32]>, Readout>>,
    /// How many rows were found here rather than read again.
    found: AtomicUsize,
}

/// The row's exact bits.
fn key(row: ArrayView1<'_, f32>) -> Box<[u32]> {
    row.iter().map(|v| v.to_bits()).collect()
}

impl ReadoutMemo {
    fn rows(&self) -> MutexGuard<'_, HashMap<Box<[u32]>, Readout>> {
        // A memo is only ever a shortcut: what a panicking holder left is still right.
        self.rows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The readout kept for exactly this row, if any.
    pub fn get(&self, row: ArrayView1<'_, f32>) -> Option<Readout> {
        let readout = self.rows().get(&key(row)).copied();
        if readout.is_some() {
            self.found.fetch_add(1, Ordering::Relaxed);
        }
        readout
    }

    /// Keeps `readout` as the row's.
    pub fn keep(&self, row: ArrayView1<'_, f32>, readout: Readout) {
        let mut rows = self.rows();
        if rows.len() >= MOST_ROWS {
            rows.clear();
        }
        rows.insert(key(row), readout);
    }

    /// How many rows were found here so far, rather than read again.
    pub fn found(&self) -> usize {
        self.found.load(Ordering::Relaxed)
    }

    /// How many rows are kept.
    pub fn len(&self) -> usize {
        self.rows().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
