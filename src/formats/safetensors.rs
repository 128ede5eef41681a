//! Reading and writing safetensors with the `safetensors` crate, which validates the header,
//! the offsets and that the data covers the file exactly.

use half::{bf16, f16};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use super::{RawTensor, TensorMap};
use crate::error::{clip, short_shape, Result, VizError};

/// Every f16 bit pattern widened to f32. Looking values up is several times faster than
/// converting them in software, which is what WebAssembly would otherwise do for 22M weights.
fn f16_table() -> &'static [f32] {
    static TABLE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        (0..=u16::MAX)
            .map(|bits| f16::from_bits(bits).to_f32())
            .collect()
    })
}

/// Little-endian f32s as values (trailing bytes short of a value are left out). Where the
/// machine is little-endian too (WebAssembly, x86, ARM) the bytes are copied as they are, in one
/// copy (a single `memory.copy` in WebAssembly, whose first run of the page is not yet optimised
/// code); elsewhere each value is read on its own.
fn f32_values(data: &[u8]) -> Vec<f32> {
    let mut values = vec![0f32; data.len() / 4];
    if cfg!(target_endian = "little") {
        let whole = values.len() * 4;
        bytemuck::cast_slice_mut::<f32, u8>(&mut values).copy_from_slice(&data[..whole]);
    } else {
        for (value, b) in values.iter_mut().zip(data.chunks_exact(4)) {
            *value = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
    }
    values
}

/// Parses a whole safetensors file. F32, F16 and BF16 tensors are widened to f32; integer
/// tensors are listed in `skipped` rather than rejected (BERT ships an int64 `position_ids`).
pub fn read_safetensors(bytes: &[u8]) -> Result<TensorMap> {
    let file =
        SafeTensors::deserialize(bytes).map_err(|e| VizError::CorruptWeights(e.to_string()))?;
    let mut map = TensorMap::default();
    for (name, view) in file.tensors() {
        let shape = view.shape().to_vec();
        let data = view.data();
        let count = shape
            .iter()
            .try_fold(1usize, |n, &dim| n.checked_mul(dim))
            .ok_or_else(|| {
                VizError::CorruptWeights(format!(
                    "tensor `{}` has a shape whose size overflows: {}",
                    clip(&name),
                    short_shape(&shape)
                ))
            })?;
        let widened: Vec<f32> = match view.dtype() {
            Dtype::F32 => f32_values(data),
            Dtype::F16 => {
                let table = f16_table();
                data.chunks_exact(2)
                    .map(|b| table[u16::from_le_bytes([b[0], b[1]]) as usize])
                    .collect()
            }
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                map.skipped.insert(name, format!("{other:?}"));
                continue;
            }
        };
        if widened.len() != count {
            return Err(VizError::CorruptWeights(format!(
                "tensor `{}` holds {} values, its shape says {count}",
                clip(&name),
                widened.len()
            )));
        }
        if let Some(bad) = widened.iter().position(|v| !v.is_finite()) {
            return Err(VizError::CorruptWeights(format!(
                "tensor `{}` has a non-finite value at index {bad}",
                clip(&name)
            )));
        }
        map.tensors.insert(
            name,
            RawTensor {
                shape,
                data: widened,
            },
        );
    }
    Ok(map)
}

/// Re-encodes every floating-point tensor of a safetensors file as f16 (half the bytes, which
/// is what the browser downloads); other tensors are copied unchanged. Compute stays f32.
pub fn convert_to_f16(bytes: &[u8]) -> Result<Vec<u8>> {
    let file =
        SafeTensors::deserialize(bytes).map_err(|e| VizError::CorruptWeights(e.to_string()))?;
    let mut converted: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in file.tensors() {
        let (dtype, data) = match view.dtype() {
            Dtype::F32 => {
                let halves: Vec<u8> = view
                    .data()
                    .chunks_exact(4)
                    .flat_map(|b| {
                        f16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes()
                    })
                    .collect();
                (Dtype::F16, halves)
            }
            other => (other, view.data().to_vec()),
        };
        converted.push((name, dtype, view.shape().to_vec(), data));
    }
    let views: Vec<(String, TensorView<'_>)> = converted
        .iter()
        .map(|(name, dtype, shape, data)| {
            TensorView::new(*dtype, shape.clone(), data)
                .map(|v| (name.clone(), v))
                .map_err(|e| VizError::CorruptWeights(e.to_string()))
        })
        .collect::<Result<_>>()?;
    safetensors::serialize(views, None).map_err(|e| VizError::CorruptWeights(e.to_string()))
}
