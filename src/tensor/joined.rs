//! A step's values made of token rows from several tensors: a pass through the KV cache
//! computes only the new tokens, so each of its steps is an earlier trace's first rows then
//! the new rows. On a GPU neither part may have come back yet (`TensorData::awaits_device`),
//! so the join is computed when read (`TensorData::joined`), from its parts.
//!
//! A join's parts are never joins themselves (`TensorData::first_rows` hands out a join's own
//! parts): however many passes continue one another, a step reads at most one tensor a pass.

use std::ops::Range;

use super::TensorData;

/// Rows `rows` of a tensor of shape `shape`, along its token axis (`token_axis`).
#[derive(Clone)]
pub struct RowsPart {
    pub data: TensorData,
    pub shape: Vec<usize>,
    pub rows: Range<usize>,
}

/// The token axis of a step of `ndim` axes: (heads, T, ...) for per-head steps, (T, ...)
/// for the others.
pub fn token_axis(ndim: usize) -> usize {
    if ndim == 3 {
        1
    } else {
        0
    }
}

/// A shape seen as (outer, rows, inner) around its token axis: (T) is (1, T, 1), (T, w) is
/// (1, T, w), (heads, T, w) is itself.
fn around_rows(shape: &[usize]) -> (usize, usize, usize) {
    match *shape {
        [t] => (1, t, 1),
        [t, w] => (1, t, w),
        [h, t, w] => (h, t, w),
        _ => (0, 0, 0),
    }
}

/// The values of `parts`' rows one after the other, in a tensor of `shape` (row-major).
/// A part's row narrower than the result's is followed by zeros: an earlier query's attention
/// weights cover the keys of its own pass, and every later key is hidden from it (weight 0).
pub fn join_rows(parts: &[RowsPart], shape: &[usize]) -> Vec<f32> {
    let (outer, total, width) = around_rows(shape);
    let mut out = vec![0.0; shape.iter().product()];
    let mut at = 0;
    for part in parts {
        let (part_outer, rows, part_width) = around_rows(&part.shape);
        let values: &[f32] = &part.data;
        let copied = part_width.min(width);
        let taken = part.rows.len().min(total - at);
        for h in 0..outer.min(part_outer) {
            for r in 0..taken {
                let from = (h * rows + part.rows.start + r) * part_width;
                let to = (h * total + at + r) * width;
                out[to..to + copied].copy_from_slice(&values[from..from + copied]);
            }
        }
        at += taken;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(values: Vec<f32>, shape: &[usize], rows: Range<usize>) -> RowsPart {
        RowsPart {
            data: values.into(),
            shape: shape.to_vec(),
            rows,
        }
    }

    #[test]
    fn rows_of_two_tensors_follow_one_another() {
        // (T, w): the first two rows of a (3, 2) tensor, then a (1, 2) tensor.
        let a = part(vec![1., 2., 3., 4., 5., 6.], &[3, 2], 0..2);
        let b = part(vec![7., 8.], &[1, 2], 0..1);
        assert_eq!(join_rows(&[a, b], &[3, 2]), vec![1., 2., 3., 4., 7., 8.]);
        // (T): token ids.
        let a = part(vec![10., 11., 12.], &[3], 0..1);
        let b = part(vec![20., 21.], &[2], 0..2);
        assert_eq!(join_rows(&[a, b], &[3]), vec![10., 20., 21.]);
    }

    #[test]
    fn per_head_rows_join_head_by_head_and_narrower_rows_end_in_zeros() {
        // Two heads, weights over 2 keys for the first query, then one new query over 3 keys.
        let old = part(
            vec![1., 0., 0.5, 0.5, /* head 1 */ 1., 0., 0.25, 0.75],
            &[2, 2, 2],
            0..1,
        );
        let new = part(
            vec![0.2, 0.3, 0.5, /* head 1 */ 0.1, 0.1, 0.8],
            &[2, 1, 3],
            0..1,
        );
        let joined = join_rows(&[old, new], &[2, 2, 3]);
        assert_eq!(
            joined,
            vec![1., 0., 0., 0.2, 0.3, 0.5, /* head 1 */ 1., 0., 0., 0.1, 0.1, 0.8]
        );
    }
}
