//! A step's tensor. Its values are either kept, or computed again from earlier steps the first
//! time someone reads them: a (heads, T, T) score tensor is 12.6 MB at 512 tokens, and
//! WebAssembly memory never shrinks, so keeping every one of them would pin hundreds of
//! megabytes in the tab for good. Steps whose values equal an earlier step's (the mask of a
//! model that hides nothing) share that step's storage.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use ndarray::{ArrayView1, ArrayView2, ArrayView3, ArrayViewD, Ix1, Ix2, Ix3};
use serde::{Deserialize, Serialize};

use crate::error::{Result, VizError};

/// Computes a tensor's values (row-major) from the steps it was derived from.
pub type Recipe = Box<dyn Fn() -> Vec<f32> + Send + Sync>;

struct Storage {
    values: OnceLock<Vec<f32>>,
    /// How to compute `values` when they were not kept. Small: handles to its inputs'
    /// storage and a few numbers.
    recipe: Option<Recipe>,
}

/// The values of a tensor, row-major; cheap to clone (clones share the storage). Reads as a
/// `[f32]` slice: computed values are computed on the first read and kept from then on.
#[derive(Clone)]
pub struct TensorData(Arc<Storage>);

impl TensorData {
    /// Values computed by `recipe` when first read.
    pub fn computed_on_read(recipe: Recipe) -> Self {
        Self(Arc::new(Storage { values: OnceLock::new(), recipe: Some(recipe) }))
    }

    /// True when the values are computed from a recipe when first read (not kept by the pass).
    pub fn computed_when_read(&self) -> bool {
        self.0.recipe.is_some()
    }

    /// True when the values are in memory (kept, or computed by an earlier read).
    pub fn is_in_memory(&self) -> bool {
        self.0.values.get().is_some()
    }

    /// True when `self` and `other` are one storage (one set of values in memory).
    pub fn shares_storage_with(&self, other: &TensorData) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An address that identifies the storage, for counting shared storage once.
    pub(crate) fn storage_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl From<Vec<f32>> for TensorData {
    fn from(values: Vec<f32>) -> Self {
        Self(Arc::new(Storage { values: OnceLock::from(values), recipe: None }))
    }
}

impl Deref for TensorData {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        self.0.values.get_or_init(|| match &self.0.recipe {
            Some(recipe) => recipe(),
            None => unreachable!("kept values are set when the storage is made"),
        })
    }
}

impl<'a> IntoIterator for &'a TensorData {
    type Item = &'a f32;
    type IntoIter = std::slice::Iter<'a, f32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for TensorData {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for TensorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_in_memory() {
            f.debug_list().entries(self.iter()).finish()
        } else {
            f.write_str("[computed on read]")
        }
    }
}

impl Serialize for TensorData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        // serde_json writes the non-finite masked scores (-inf) as null. Values not yet in
        // memory are computed for the export and not kept: exporting a long pass's trace
        // must not pin every tensor in the tab.
        match (self.0.values.get(), &self.0.recipe) {
            (Some(values), _) => values.serialize(s),
            (None, Some(recipe)) => recipe().serialize(s),
            (None, None) => unreachable!("kept values are set when the storage is made"),
        }
    }
}

impl<'de> Deserialize<'de> for TensorData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // JSON has no infinity: masked scores written as `null` are read back as -inf.
        let values: Vec<Option<f32>> = Deserialize::deserialize(d)?;
        Ok(values.into_iter().map(|v| v.unwrap_or(f32::NEG_INFINITY)).collect::<Vec<_>>().into())
    }
}

/// A dense f32 tensor in row-major order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

impl Tensor {
    pub fn view(&self) -> ArrayViewD<'_, f32> {
        ArrayViewD::from_shape(self.shape.clone(), &self.data).expect("a Tensor's shape always matches its data")
    }
    pub fn view1(&self) -> Result<ArrayView1<'_, f32>> {
        self.view().into_dimensionality::<Ix1>().map_err(|e| VizError::BadConfig(e.to_string()))
    }
    pub fn view2(&self) -> Result<ArrayView2<'_, f32>> {
        self.view().into_dimensionality::<Ix2>().map_err(|e| VizError::BadConfig(e.to_string()))
    }
    pub fn view3(&self) -> Result<ArrayView3<'_, f32>> {
        self.view().into_dimensionality::<Ix3>().map_err(|e| VizError::BadConfig(e.to_string()))
    }
}
