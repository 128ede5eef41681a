//! Sentence embeddings as sentence-transformers makes them from MiniLM: the mean of the
//! final hidden states over all tokens, then (for cosine similarity) unit length.

use ndarray::{Array1, ArrayView2, Axis};

/// Mean over tokens of (T, d) hidden states: (d).
pub fn mean_pool(hidden: ArrayView2<f32>) -> Array1<f32> {
    hidden.mean_axis(Axis(0)).expect("at least one token")
}

pub fn cosine(a: &Array1<f32>, b: &Array1<f32>) -> f32 {
    a.dot(b) / (a.dot(a).sqrt() * b.dot(b).sqrt())
}
