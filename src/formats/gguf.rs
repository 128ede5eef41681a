//! GGUF version 3, llama.cpp's one-file model format: header, typed metadata, the tensor table
//! and the tensor data, with every count, length and offset checked before it is used, so a
//! truncated or corrupt file is a `VizError`, never a panic or a huge allocation.
//!
//! Tensors are handed out as they lie in the file: a `GgufTensor` whose bytes are borrowed from
//! the file's bytes (or, through `GgufTensor::within`, a range of the file kept once in
//! memory), so quantized tensors stay quantized. The block formats, their dequantization and
//! their block-wise dot products are `model::quantized`'s, apart from the file format; the
//! writer the tests build files with is `formats::gguf_writer`.
//!
//! Layout (all numbers little-endian):
//! ```text
//! "GGUF" | u32 version (3) | u64 tensor_count | u64 metadata_kv_count
//! metadata_kv_count × (string key, u32 value type, value)
//! tensor_count × (string name, u32 n_dims, n_dims × u64 ne, u32 ggml type, u64 offset)
//! padding up to a multiple of `general.alignment` (default 32) from the start of the file
//! tensor data: each tensor at data start + its offset (a multiple of the alignment)
//! ```
//! A string is a u64 byte length then UTF-8 bytes; an array is a u32 item type, a u64 count,
//! then the items (arrays may nest).

use std::collections::BTreeMap;

use crate::error::{Result, VizError};
use crate::model::quantized::{
    first_non_finite_block, ggml_type_name, GgmlType, GgufTensor, MAX_DIMS,
};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";
/// The only version this reader accepts (v1 and v2 differ in integer widths).
pub const GGUF_VERSION: u32 = 3;
/// Data alignment when the file has no `general.alignment`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Arrays of arrays are legal; this bounds the nesting so a crafted file cannot exhaust the
/// stack (real files use one level).
const MAX_ARRAY_DEPTH: usize = 8;

fn corrupt(message: impl Into<String>) -> VizError {
    VizError::CorruptGguf(message.into())
}

// ---------------------------------------------------------------------------------------------
// Metadata values
// ---------------------------------------------------------------------------------------------

/// The type tag of a metadata value (GGUF's `gguf_metadata_value_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl GgufValueType {
    pub fn from_code(code: u32) -> Option<Self> {
        use GgufValueType::*;
        Some(match code {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    pub fn code(self) -> u32 {
        use GgufValueType::*;
        match self {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            String => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    pub fn name(self) -> &'static str {
        use GgufValueType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }

    /// The fewest bytes one value of this type takes in a file: what a count is checked
    /// against before anything is allocated for it.
    fn min_bytes(self) -> usize {
        use GgufValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 => 8,
            String => 8,    // u64 length
            Array => 4 + 8, // item type + count
        }
    }
}

/// One metadata value, as typed in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// Every item has the item type (kept so an empty array still says what it holds).
    Array(GgufValueType, Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    pub fn value_type(&self) -> GgufValueType {
        match self {
            GgufValue::U8(_) => GgufValueType::U8,
            GgufValue::I8(_) => GgufValueType::I8,
            GgufValue::U16(_) => GgufValueType::U16,
            GgufValue::I16(_) => GgufValueType::I16,
            GgufValue::U32(_) => GgufValueType::U32,
            GgufValue::I32(_) => GgufValueType::I32,
            GgufValue::F32(_) => GgufValueType::F32,
            GgufValue::Bool(_) => GgufValueType::Bool,
            GgufValue::String(_) => GgufValueType::String,
            GgufValue::Array(..) => GgufValueType::Array,
            GgufValue::U64(_) => GgufValueType::U64,
            GgufValue::I64(_) => GgufValueType::I64,
            GgufValue::F64(_) => GgufValueType::F64,
        }
    }

    /// "u32", "string", "array of string", ... for error messages.
    pub fn type_name(&self) -> String {
        match self {
            GgufValue::Array(item, _) => format!("array of {}", item.name()),
            other => other.value_type().name().to_string(),
        }
    }

    /// Any integer that is not negative, widened to u64 (config counts are u32 in real files,
    /// but nothing is lost by accepting the other widths).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any integer, as i64 (None for a u64 above i64::MAX).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            GgufValue::I8(v) => Some(v.into()),
            GgufValue::I16(v) => Some(v.into()),
            GgufValue::I32(v) => Some(v.into()),
            GgufValue::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// A floating-point value (f32 or f64) as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Byte reader
// ---------------------------------------------------------------------------------------------

/// A cursor over the file that never reads past its end: every read says what it was for.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(corrupt(format!(
                "truncated: {what} needs {n} bytes at byte {}, but the file has {} left",
                self.pos,
                self.remaining()
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.fixed(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.fixed(what)?))
    }

    /// A u64 count of items that each take at least `min_item_bytes`: refused when the rest
    /// of the file could not hold that many, before anything is allocated for them.
    fn count(&mut self, min_item_bytes: usize, what: &str) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let fits = self.remaining() / min_item_bytes.max(1);
        match usize::try_from(n) {
            Ok(n) if n <= fits => Ok(n),
            _ => Err(corrupt(format!(
                "{what} at byte {at} is {n}, but the {} bytes left hold at most {fits}",
                self.remaining()
            ))),
        }
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let at = self.pos;
        let len = self.count(1, &format!("the length of {what}"))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| corrupt(format!("{what} at byte {at} is not UTF-8")))
    }

    fn value(&mut self, ty: GgufValueType, depth: usize, what: &str) -> Result<GgufValue> {
        Ok(match ty {
            GgufValueType::U8 => GgufValue::U8(u8::from_le_bytes(self.fixed(what)?)),
            GgufValueType::I8 => GgufValue::I8(i8::from_le_bytes(self.fixed(what)?)),
            GgufValueType::U16 => GgufValue::U16(u16::from_le_bytes(self.fixed(what)?)),
            GgufValueType::I16 => GgufValue::I16(i16::from_le_bytes(self.fixed(what)?)),
            GgufValueType::U32 => GgufValue::U32(u32::from_le_bytes(self.fixed(what)?)),
            GgufValueType::I32 => GgufValue::I32(i32::from_le_bytes(self.fixed(what)?)),
            GgufValueType::F32 => GgufValue::F32(f32::from_le_bytes(self.fixed(what)?)),
            GgufValueType::U64 => GgufValue::U64(u64::from_le_bytes(self.fixed(what)?)),
            GgufValueType::I64 => GgufValue::I64(i64::from_le_bytes(self.fixed(what)?)),
            GgufValueType::F64 => GgufValue::F64(f64::from_le_bytes(self.fixed(what)?)),
            GgufValueType::Bool => {
                let at = self.pos;
                match self.fixed::<1>(what)?[0] {
                    0 => GgufValue::Bool(false),
                    1 => GgufValue::Bool(true),
                    b => {
                        return Err(corrupt(format!(
                            "{what} at byte {at} is a bool stored as {b}, not 0 or 1"
                        )))
                    }
                }
            }
            GgufValueType::String => GgufValue::String(self.string(what)?),
            GgufValueType::Array => {
                let at = self.pos;
                let code = self.u32(&format!("the item type of {what}"))?;
                let item = GgufValueType::from_code(code).ok_or_else(|| {
                    corrupt(format!(
                        "{what} at byte {at} is an array of unknown type {code}"
                    ))
                })?;
                if item == GgufValueType::Array && depth + 1 >= MAX_ARRAY_DEPTH {
                    return Err(corrupt(format!(
                        "{what} nests arrays deeper than {MAX_ARRAY_DEPTH} levels"
                    )));
                }
                let n = self.count(item.min_bytes(), &format!("the length of {what}"))?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(item, depth + 1, what)?);
                }
                GgufValue::Array(item, items)
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The file
// ---------------------------------------------------------------------------------------------

/// Where one tensor is and what it holds, from the tensor table.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufTensorInfo {
    pub name: String,
    /// The dimensions as GGUF stores them, innermost first: `ne[0]` is the number of values
    /// stored contiguously, i.e. the number of columns of a matrix.
    pub ne: Vec<u64>,
    /// The same dimensions in row-major order, as the engine uses them: `ne` reversed. A
    /// weight stored with `ne = [cols, rows]` has `shape = [rows, cols]` = `[ne[1], ne[0]]`,
    /// e.g. SmolLM2's `ffn_down.weight` has ne = [1536, 576] and shape (576, 1536), a Linear
    /// weight (out, in) like the safetensors ones; a 1-D norm weight has shape [ne[0]].
    pub shape: Vec<usize>,
    pub kind: GgmlType,
    /// Byte offset from the start of the data section.
    pub offset: usize,
    pub n_bytes: usize,
}

/// A parsed GGUF file: metadata and tensor table, with the tensors' bytes borrowed from the
/// file's bytes.
#[derive(Debug)]
pub struct Gguf<'a> {
    version: u32,
    alignment: u64,
    data_start: usize,
    metadata: BTreeMap<String, GgufValue>,
    tensors: Vec<GgufTensorInfo>,
    by_name: BTreeMap<String, usize>,
    data: &'a [u8],
}

/// Fewest bytes one metadata entry takes: key length (8), value type (4), a 1-byte value.
const MIN_KV_BYTES: usize = 8 + 4 + 1;
/// Fewest bytes one tensor-table entry takes: name length (8), n_dims (4), one dimension (8),
/// type (4), offset (8).
const MIN_TENSOR_INFO_BYTES: usize = 8 + 4 + 8 + 4 + 8;

impl<'a> Gguf<'a> {
    /// Parses and checks a whole GGUF file held in memory.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut r = Reader { bytes, pos: 0 };
        if r.fixed::<4>("the magic number")? != *GGUF_MAGIC {
            return Err(corrupt("it does not start with the magic bytes `GGUF`"));
        }
        let version = r.u32("the version")?;
        if version != GGUF_VERSION {
            return Err(VizError::GgufVersion(version));
        }
        // Both counts are read before either table, so the tensor count can only be bounded
        // by the whole rest of the file here; it is checked again after the metadata.
        let n_tensors = r.count(MIN_TENSOR_INFO_BYTES, "the tensor count")?;
        let n_kv = r.count(MIN_KV_BYTES, "the metadata count")?;

        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = r.string(&format!("metadata key {i}"))?;
            let at = r.pos;
            let code = r.u32(&format!("the type of metadata `{key}`"))?;
            let ty = GgufValueType::from_code(code).ok_or_else(|| {
                corrupt(format!(
                    "metadata `{key}` at byte {at} has unknown value type {code}"
                ))
            })?;
            let value = r.value(ty, 0, &format!("metadata `{key}`"))?;
            if metadata.insert(key.clone(), value).is_some() {
                return Err(corrupt(format!("metadata key `{key}` appears twice")));
            }
        }

        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v {
                GgufValue::U32(a) if a.is_power_of_two() => u64::from(*a),
                GgufValue::U32(a) => {
                    return Err(corrupt(format!(
                        "general.alignment is {a}, not a power of two"
                    )))
                }
                other => {
                    return Err(VizError::MetadataType {
                        key: "general.alignment".into(),
                        expected: "u32".into(),
                        found: other.type_name(),
                    })
                }
            },
        };

        if n_tensors > r.remaining() / MIN_TENSOR_INFO_BYTES {
            return Err(corrupt(format!(
                "the tensor count is {n_tensors}, but the {} bytes after the metadata hold at most {}",
                r.remaining(),
                r.remaining() / MIN_TENSOR_INFO_BYTES
            )));
        }
        let mut tensors = Vec::with_capacity(n_tensors);
        let mut by_name = BTreeMap::new();
        for i in 0..n_tensors {
            let info = read_tensor_info(&mut r, i)?;
            if by_name.insert(info.name.clone(), i).is_some() {
                return Err(corrupt(format!("tensor `{}` appears twice", info.name)));
            }
            tensors.push(info);
        }

        // The data section starts at the next multiple of the alignment (counted from the
        // start of the file) after the tensor table.
        let data_start = align_up(r.pos, alignment).ok_or_else(|| {
            corrupt(format!(
                "the data section start overflows (alignment {alignment})"
            ))
        })?;
        let data: &'a [u8] = match bytes.get(data_start..) {
            Some(data) => data,
            None if tensors.is_empty() => &[],
            None => {
                return Err(corrupt(format!(
                    "truncated: the data section should start at byte {data_start}, but the file has {} bytes",
                    bytes.len()
                )))
            }
        };
        check_tensor_placement(&tensors, alignment, data.len())?;
        // As a safetensors file with a NaN is refused, so is a GGUF tensor with a non-finite
        // value, scale or minimum (reading every block's header, not every value).
        for t in &tensors {
            let bytes = &data[t.offset..t.offset + t.n_bytes];
            if let Some(block) = first_non_finite_block(t.kind, bytes) {
                return Err(corrupt(format!(
                    "tensor `{}` has a non-finite value in block {block} of {}",
                    t.name,
                    t.kind.name()
                )));
            }
        }

        Ok(Gguf {
            version,
            alignment,
            data_start,
            metadata,
            tensors,
            by_name,
            data,
        })
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    /// `general.alignment`, or 32 when the file does not say.
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Byte offset of the data section in the file.
    pub fn data_start(&self) -> usize {
        self.data_start
    }

    /// Every metadata entry, by key.
    pub fn metadata(&self) -> &BTreeMap<String, GgufValue> {
        &self.metadata
    }

    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.get(key)
    }

    fn require(&self, key: &str) -> Result<&GgufValue> {
        self.metadata
            .get(key)
            .ok_or_else(|| VizError::MissingMetadata { key: key.into() })
    }

    fn wrong_type(key: &str, expected: &str, found: &GgufValue) -> VizError {
        VizError::MetadataType {
            key: key.into(),
            expected: expected.into(),
            found: found.type_name(),
        }
    }

    /// An integer that fits u32 (`llama.block_count`, `tokenizer.ggml.bos_token_id`, ...).
    pub fn get_u32(&self, key: &str) -> Result<u32> {
        let v = self.require(key)?;
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Self::wrong_type(key, "an integer from 0 to 4294967295", v))
    }

    pub fn get_u64(&self, key: &str) -> Result<u64> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| Self::wrong_type(key, "an integer of at least 0", v))
    }

    /// A count or size, as usize.
    pub fn get_usize(&self, key: &str) -> Result<usize> {
        let v = self.require(key)?;
        v.as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Self::wrong_type(key, "an integer from 0 to usize::MAX", v))
    }

    pub fn get_i64(&self, key: &str) -> Result<i64> {
        let v = self.require(key)?;
        v.as_i64()
            .ok_or_else(|| Self::wrong_type(key, "an integer", v))
    }

    /// A float stored as f32 or f64 (`llama.rope.freq_base`, the RMSNorm epsilon).
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        let v = self.require(key)?;
        v.as_f64()
            .map(|x| x as f32)
            .ok_or_else(|| Self::wrong_type(key, "a float", v))
    }

    pub fn get_bool(&self, key: &str) -> Result<bool> {
        match self.require(key)? {
            GgufValue::Bool(b) => Ok(*b),
            other => Err(Self::wrong_type(key, "a bool", other)),
        }
    }

    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.require(key)?;
        v.as_str()
            .ok_or_else(|| Self::wrong_type(key, "a string", v))
    }

    fn array(&self, key: &str, item: GgufValueType, expected: &str) -> Result<&[GgufValue]> {
        match self.require(key)? {
            GgufValue::Array(ty, items) if *ty == item => Ok(items),
            other => Err(Self::wrong_type(key, expected, other)),
        }
    }

    /// An array of strings (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`).
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>> {
        let items = self.array(key, GgufValueType::String, "an array of string")?;
        Ok(items.iter().filter_map(GgufValue::as_str).collect())
    }

    /// An array of i32 (`tokenizer.ggml.token_type`).
    pub fn get_i32_array(&self, key: &str) -> Result<Vec<i32>> {
        let items = self.array(key, GgufValueType::I32, "an array of i32")?;
        Ok(items
            .iter()
            .filter_map(|v| {
                if let GgufValue::I32(x) = v {
                    Some(*x)
                } else {
                    None
                }
            })
            .collect())
    }

    /// An array of f32 (`tokenizer.ggml.scores`).
    pub fn get_f32_array(&self, key: &str) -> Result<Vec<f32>> {
        let items = self.array(key, GgufValueType::F32, "an array of f32")?;
        Ok(items
            .iter()
            .filter_map(|v| {
                if let GgufValue::F32(x) = v {
                    Some(*x)
                } else {
                    None
                }
            })
            .collect())
    }

    /// The tensor table, in file order.
    pub fn tensor_infos(&self) -> &[GgufTensorInfo] {
        &self.tensors
    }

    /// One tensor, its bytes borrowed from the file.
    pub fn tensor(&self, name: &str) -> Result<GgufTensor<&'a [u8]>> {
        let i = *self
            .by_name
            .get(name)
            .ok_or_else(|| VizError::MissingTensor { name: name.into() })?;
        Ok(self.tensor_at(i))
    }

    /// Every tensor, in file order.
    pub fn tensors(&self) -> impl Iterator<Item = GgufTensor<&'a [u8]>> + '_ {
        (0..self.tensors.len()).map(|i| self.tensor_at(i))
    }

    fn tensor_at(&self, i: usize) -> GgufTensor<&'a [u8]> {
        let info = &self.tensors[i];
        let data: &'a [u8] = self.data;
        // Placement was checked in `parse`: offset + n_bytes is within the data section; and
        // so was the rest of what `GgufTensor::new` checks (1 to 4 dimensions, whole-block
        // rows, n_bytes the size of the shape's values).
        GgufTensor::from_checked_parts(
            info.name.clone(),
            info.shape.clone(),
            info.kind,
            &data[info.offset..info.offset + info.n_bytes],
        )
    }
}

fn align_up(pos: usize, alignment: u64) -> Option<usize> {
    let alignment = usize::try_from(alignment).ok()?;
    pos.checked_next_multiple_of(alignment)
}

/// Reads tensor-table entry `i` and checks its dimensions and type.
fn read_tensor_info(r: &mut Reader<'_>, i: usize) -> Result<GgufTensorInfo> {
    let name = r.string(&format!("the name of tensor {i}"))?;
    let at = r.pos;
    let n_dims = r.u32(&format!("the dimension count of tensor `{name}`"))?;
    if n_dims == 0 || n_dims as usize > MAX_DIMS {
        return Err(corrupt(format!(
            "tensor `{name}` at byte {at} has {n_dims} dimensions; ggml allows 1 to {MAX_DIMS}"
        )));
    }
    let mut ne = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        ne.push(r.u64(&format!("the dimensions of tensor `{name}`"))?);
    }
    let code = r.u32(&format!("the type of tensor `{name}`"))?;
    let offset = r.u64(&format!("the offset of tensor `{name}`"))?;
    let kind = GgmlType::from_code(code).ok_or_else(|| VizError::UnsupportedDtype {
        name: name.clone(),
        dtype: ggml_type_name(code),
    })?;

    if ne.contains(&0) {
        return Err(corrupt(format!(
            "tensor `{name}` has a dimension of 0 ({ne:?})"
        )));
    }
    let n_values = ne
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            corrupt(format!(
                "tensor `{name}` has dimensions {ne:?} whose product overflows"
            ))
        })?;
    // Quantized blocks run along ne[0]: a row must be a whole number of blocks.
    if ne[0] % kind.block_len() as u64 != 0 {
        return Err(corrupt(format!(
            "tensor `{name}` has rows of {} values, not a whole number of {}-value {} blocks",
            ne[0],
            kind.block_len(),
            kind.name()
        )));
    }
    let n_bytes = kind.bytes_for(n_values).ok_or_else(|| {
        corrupt(format!(
            "tensor `{name}` ({n_values} {} values) has a size that overflows",
            kind.name()
        ))
    })?;
    let offset = usize::try_from(offset).map_err(|_| {
        corrupt(format!(
            "tensor `{name}` has offset {offset}, past any file"
        ))
    })?;
    let shape = ne.iter().rev().map(|&d| d as usize).collect(); // each ≤ the product, which fits usize
    Ok(GgufTensorInfo {
        name,
        ne,
        shape,
        kind,
        offset,
        n_bytes,
    })
}

/// Every tensor aligned, inside the data section, and not overlapping another.
fn check_tensor_placement(
    tensors: &[GgufTensorInfo],
    alignment: u64,
    data_len: usize,
) -> Result<()> {
    let mut spans = Vec::with_capacity(tensors.len());
    for t in tensors {
        if t.offset as u64 % alignment != 0 {
            return Err(corrupt(format!(
                "tensor `{}` starts at offset {}, not a multiple of the alignment {alignment}",
                t.name, t.offset
            )));
        }
        let end = t.offset.checked_add(t.n_bytes).filter(|&end| end <= data_len).ok_or_else(|| {
            corrupt(format!(
                "truncated: tensor `{}` ({} bytes at offset {}) runs past the end of the data section ({data_len} bytes)",
                t.name, t.n_bytes, t.offset
            ))
        })?;
        spans.push((t.offset, end, t.name.as_str()));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let ((_, end_a, a), (start_b, _, b)) = (pair[0], pair[1]);
        if end_a > start_b {
            return Err(corrupt(format!(
                "tensors `{a}` and `{b}` overlap in the data section"
            )));
        }
    }
    Ok(())
}
