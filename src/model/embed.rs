//! From token ids to the first residual stream: token embedding, segment embedding and the
//! additive positional encoding.

use ndarray::Array2;

use super::config::{ModelConfig, Position};
use super::position::sinusoidal_rows;
use super::record::{Op, Recorder};
use super::weights::Weights;
use crate::tensor::Tensor;

/// Returns the (T, d_model) stream before any layer (before the embedding norm) and the op
/// that produced it. The tokens sit at positions `first`, `first + 1`, ... (`first` > 0 when
/// the pass continues a cached one). Without `with_position` no position is added (a pass
/// that tests what the positional encoding does).
pub fn embed<R: Recorder>(
    ids: &[u32],
    first: usize,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    with_position: bool,
) -> (Array2<f32>, Op) {
    let t = ids.len();
    let rows: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
    let mut tokens = w
        .token_embedding
        .select_rows(&rows)
        .expect("Transformer::encode keeps ids below vocab_size"); // (T, d)
    if c.embedding_scale != 1.0 {
        tokens *= c.embedding_scale; // (T, d): sqrt(d_model) E[t] in the original paper
    }
    rec.step(Op::TokenEmbedding, None, &[Op::Tokenize], || {
        Tensor::from_array(tokens.clone().into_dyn())
    });
    let mut x = tokens; // (T, d)
    let mut sum_inputs = vec![Op::TokenEmbedding];
    if let Some(seg) = &w.segment_embedding {
        let segment = seg.row(0); // (d): one sentence, segment 0
        rec.step(Op::SegmentEmbedding, None, &[], || {
            Tensor::from_array(
                segment
                    .broadcast((t, c.d_model))
                    .expect("row broadcasts to (T, d)")
                    .to_owned()
                    .into_dyn(),
            )
        });
        x += &segment; // (T, d) + (d)
        sum_inputs.push(Op::SegmentEmbedding);
    }
    let position = match c.position {
        _ if !with_position => None,
        Position::Learned => w
            .position_embedding
            .as_ref()
            .map(|p| p.slice(ndarray::s![first..first + t, ..]).to_owned()), // (T, d)
        Position::Sinusoidal => Some(sinusoidal_rows(first, first + t, c.d_model)), // (T, d)
        Position::Rotary { .. } | Position::None => None,
    };
    match position {
        Some(pe) => {
            rec.step(Op::PositionEncoding, None, &[], || {
                Tensor::from_array(pe.clone().into_dyn())
            });
            x += &pe; // (T, d)
            sum_inputs.push(Op::PositionEncoding);
            rec.step(Op::AddPosition, None, &sum_inputs, || {
                Tensor::from_array(x.clone().into_dyn())
            });
            (x, Op::AddPosition)
        }
        None if sum_inputs.len() > 1 => {
            rec.step(Op::AddPosition, None, &sum_inputs, || {
                Tensor::from_array(x.clone().into_dyn())
            });
            (x, Op::AddPosition)
        }
        None => (x, Op::TokenEmbedding),
    }
}
