//! A step's values wherever they are: kept in memory, shared with an earlier step, computed
//! again from earlier steps when read, joined from an earlier pass's rows and new ones, or
//! still on a device until a readback fills them. The lowest layer of the crate: the model
//! records into these, the trace keeps them, the views read them.

mod data;
mod top;

pub use data::{join_rows, token_axis, Fill, ReadLog, Recipe, RowsPart, Tensor, TensorData};
pub use top::top_ids;

use ndarray::ArrayD;

/// Row-major values of an array in any layout.
pub(crate) fn row_major(array: ArrayD<f32>) -> Vec<f32> {
    if array.is_standard_layout() {
        array.into_raw_vec_and_offset().0
    } else {
        array.iter().copied().collect()
    }
}
