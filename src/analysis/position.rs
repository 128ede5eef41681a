//! The model's own positional encoding as a table, for the positional-encoding view.

use ndarray::{s, Array2};

use crate::model::config::Position;
use crate::model::position::sinusoidal_table;
use crate::Transformer;

/// The first `positions` rows of the table the model adds to its embeddings: the learned
/// table, or the sinusoidal one. `None` for rotary or no positions (nothing is added).
pub fn position_table(model: &Transformer, positions: usize) -> Option<Array2<f32>> {
    let c = &model.config;
    let n = positions.min(c.context);
    match c.position {
        Position::Learned => model
            .weights
            .position_embedding
            .as_ref()
            .map(|t| t.slice(s![..n, ..]).to_owned()),
        Position::Sinusoidal => Some(sinusoidal_table(n, c.d_model)),
        Position::Rotary { .. } | Position::None => None,
    }
}
