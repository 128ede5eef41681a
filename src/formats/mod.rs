//! Checkpoint file formats: bytes in, named f32 tensors out, every size and offset checked.

pub mod gguf;
/// Writes GGUF files: for tests and fixtures only (the library never calls it).
#[doc(hidden)]
pub mod gguf_writer;
pub mod safetensors;

use std::collections::BTreeMap;

use ndarray::{Array1, Array2};

use crate::error::{Result, VizError};

/// One tensor read from a checkpoint, widened to f32 whatever its storage type.
#[derive(Debug, Clone)]
pub struct RawTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Every floating-point tensor of a checkpoint by its name.
#[derive(Debug, Default)]
pub struct TensorMap {
    pub tensors: BTreeMap<String, RawTensor>,
    /// Tensors that were present but not floating point (e.g. BERT's int64 `position_ids`),
    /// with their dtype, so a loader can tell "missing" from "not readable".
    pub skipped: BTreeMap<String, String>,
}

impl TensorMap {
    fn take(&mut self, name: &str) -> Result<RawTensor> {
        if let Some(dtype) = self.skipped.get(name) {
            return Err(VizError::UnsupportedDtype {
                name: name.into(),
                dtype: dtype.clone(),
            });
        }
        self.tensors
            .remove(name)
            .ok_or_else(|| VizError::MissingTensor { name: name.into() })
    }

    /// Removes a matrix and checks its shape against what the config implies.
    pub fn matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>> {
        let t = self.take(name)?;
        if t.shape != [rows, cols] {
            return Err(VizError::ShapeMismatch {
                name: name.into(),
                expected: vec![rows, cols],
                found: t.shape,
            });
        }
        Array2::from_shape_vec((rows, cols), t.data)
            .map_err(|e| VizError::CorruptWeights(e.to_string()))
    }

    /// Removes a vector and checks its length.
    pub fn vector(&mut self, name: &str, len: usize) -> Result<Array1<f32>> {
        let t = self.take(name)?;
        if t.shape != [len] {
            return Err(VizError::ShapeMismatch {
                name: name.into(),
                expected: vec![len],
                found: t.shape,
            });
        }
        Ok(Array1::from_vec(t.data))
    }

    /// Like `vector`, but absent is fine (for optional biases).
    pub fn optional_vector(&mut self, name: &str, len: usize) -> Result<Option<Array1<f32>>> {
        if self.tensors.contains_key(name) {
            self.vector(name, len).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The shape of a floating-point tensor, left in the map.
    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.tensors.get(name).map(|t| t.shape.as_slice())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}
