//! GGUF version 3, llama.cpp's one-file model format: header, typed metadata, the tensor table
//! and the tensor data, with every count, length and offset checked before it is used, so a
//! truncated or corrupt file is a `VizError`, never a panic or a huge allocation.
//!
//! Quantized tensors stay quantized: a tensor is its raw blocks (`GgufTensor`), dequantized a
//! row at a time or multiplied by a vector block by block (`dot_q8_0`, `dot_q4_1`), which is
//! what lets a 98 MB Q4_1 model run without its 538 MB f32 expansion.
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
use std::sync::Arc;

use half::f16;

use crate::error::{Result, VizError};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";
/// The only version this reader accepts (v1 and v2 differ in integer widths).
pub const GGUF_VERSION: u32 = 3;
/// Data alignment when the file has no `general.alignment`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml tensors have at most four dimensions.
pub const MAX_DIMS: usize = 4;
/// Arrays of arrays are legal; this bounds the nesting so a crafted file cannot exhaust the
/// stack (real files use one level).
const MAX_ARRAY_DEPTH: usize = 8;

/// Values per block of the quantized types below (ggml's QK8_0 and QK4_1).
pub const QK: usize = 32;
/// Q8_0 block: f16 scale d, then 32 signed bytes q; x = d·q.
pub const Q8_0_BLOCK_BYTES: usize = 2 + QK;
/// Q4_1 block: f16 scale d, f16 minimum m, then 16 bytes holding 32 four-bit q; x = d·q + m.
pub const Q4_1_BLOCK_BYTES: usize = 2 + 2 + QK / 2;

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
// Tensor types
// ---------------------------------------------------------------------------------------------

/// The ggml tensor types this reader understands. Others are refused with the tensor's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    Q4_1,
    Q8_0,
}

impl GgmlType {
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(GgmlType::F32),
            1 => Some(GgmlType::F16),
            3 => Some(GgmlType::Q4_1),
            8 => Some(GgmlType::Q8_0),
            _ => None,
        }
    }

    pub fn code(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_1 => 3,
            GgmlType::Q8_0 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q8_0 => "Q8_0",
        }
    }

    /// Values per block (1 for the plain float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 => 1,
            GgmlType::Q4_1 | GgmlType::Q8_0 => QK,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 => 2,
            GgmlType::Q4_1 => Q4_1_BLOCK_BYTES,
            GgmlType::Q8_0 => Q8_0_BLOCK_BYTES,
        }
    }

    /// Bytes that `n_values` values take, or None when they are not a whole number of blocks
    /// or the size overflows.
    pub fn bytes_for(self, n_values: usize) -> Option<usize> {
        if n_values % self.block_len() != 0 {
            return None;
        }
        (n_values / self.block_len()).checked_mul(self.block_bytes())
    }
}

/// ggml's name for any type code, for error messages ("Q4_K", "type 99").
pub fn ggml_type_name(code: u32) -> String {
    const NAMES: [&str; 31] = [
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K",
        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
    ];
    match NAMES.get(code as usize) {
        Some(name) => format!("{name} (ggml type {code})"),
        None => format!("ggml type {code}"),
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
        // Placement was checked in `parse`: offset + n_bytes is within the data section.
        GgufTensor {
            name: info.name.clone(),
            shape: info.shape.clone(),
            kind: info.kind,
            bytes: &data[info.offset..info.offset + info.n_bytes],
        }
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

// ---------------------------------------------------------------------------------------------
// Tensors: raw blocks, rows, dequantization and block-wise dot products
// ---------------------------------------------------------------------------------------------

/// One tensor as stored: its row-major shape, its ggml type and its raw bytes (blocks for the
/// quantized types). `B` is `&[u8]` when borrowed from the file, `Vec<u8>` when owned.
/// A matrix's rows are `shape[..n-1]` flattened; each row is `cols()` values, a whole number
/// of blocks, stored one after the other.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufTensor<B> {
    name: String,
    shape: Vec<usize>,
    kind: GgmlType,
    bytes: B,
}

impl<B: AsRef<[u8]>> GgufTensor<B> {
    /// Checks that `bytes` holds exactly `shape` values of `kind` in whole-block rows.
    pub fn new(
        name: impl Into<String>,
        shape: Vec<usize>,
        kind: GgmlType,
        bytes: B,
    ) -> Result<Self> {
        let name = name.into();
        let cols = shape.last().copied().unwrap_or(0);
        let n_values = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let fits = !shape.is_empty()
            && shape.len() <= MAX_DIMS
            && cols % kind.block_len() == 0
            && n_values.and_then(|n| kind.bytes_for(n)) == Some(bytes.as_ref().len());
        if !fits {
            return Err(corrupt(format!(
                "tensor `{name}`: {} bytes do not hold shape {shape:?} of {} in whole-block rows",
                bytes.as_ref().len(),
                kind.name()
            )));
        }
        Ok(GgufTensor {
            name,
            shape,
            kind,
            bytes,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Row-major shape (GGUF's `ne` reversed).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn kind(&self) -> GgmlType {
        self.kind
    }

    /// The raw stored bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// Values per row: the last row-major dimension, GGUF's `ne[0]`.
    pub fn cols(&self) -> usize {
        self.shape.last().copied().unwrap_or(0)
    }

    /// Number of rows: every dimension but the last, multiplied (1 for a vector).
    pub fn rows(&self) -> usize {
        self.shape[..self.shape.len().saturating_sub(1)]
            .iter()
            .product()
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.cols() / self.kind.block_len() * self.kind.block_bytes()
    }

    /// The raw bytes of row `i`.
    pub fn row(&self, i: usize) -> Result<&[u8]> {
        if i >= self.rows() {
            return Err(VizError::BadConfig(format!(
                "row {i} of tensor `{}` is out of range ({} rows)",
                self.name,
                self.rows()
            )));
        }
        let n = self.row_bytes();
        Ok(&self.bytes()[i * n..(i + 1) * n])
    }

    /// Row `i` dequantized into `out` (`cols()` values).
    pub fn dequantize_row_into(&self, i: usize, out: &mut [f32]) -> Result<()> {
        if out.len() != self.cols() {
            return Err(VizError::ShapeMismatch {
                name: self.name.clone(),
                expected: vec![self.cols()],
                found: vec![out.len()],
            });
        }
        dequantize_row(self.kind, self.row(i)?, out)
    }

    /// Every value as f32, row-major. For tests and small tensors: a Q4_1 matrix grows 6.4×.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        let n_values = self.rows() * self.cols();
        let mut out = vec![0.0; n_values];
        dequantize_row(self.kind, self.bytes(), &mut out)?;
        Ok(out)
    }

    /// Row `i` times the vector `x` (`cols()` values), block by block, without dequantizing
    /// the row.
    pub fn dot_row(&self, i: usize, x: &[f32]) -> Result<f32> {
        if x.len() != self.cols() {
            return Err(VizError::ShapeMismatch {
                name: self.name.clone(),
                expected: vec![self.cols()],
                found: vec![x.len()],
            });
        }
        dot_row(self.kind, self.row(i)?, x)
    }

    /// The same tensor owning a copy of its bytes.
    pub fn to_owned(&self) -> GgufTensor<Vec<u8>> {
        GgufTensor {
            name: self.name.clone(),
            shape: self.shape.clone(),
            kind: self.kind,
            bytes: self.bytes().to_vec(),
        }
    }

    /// The same tensor holding its bytes as `SharedBytes` (no copy when they are already).
    pub fn into_shared(self) -> GgufTensor<SharedBytes>
    where
        B: Into<SharedBytes>,
    {
        GgufTensor {
            name: self.name,
            shape: self.shape,
            kind: self.kind,
            bytes: self.bytes.into(),
        }
    }
}

impl GgufTensor<&[u8]> {
    /// The same tensor reading its bytes from `file`, the buffer this tensor was parsed from,
    /// instead of copying them: a model keeps the file and its tensors point into it.
    pub fn within(&self, file: &Arc<Vec<u8>>) -> Result<GgufTensor<SharedBytes>> {
        let start = (self.bytes.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
        let end = start
            .checked_add(self.bytes.len())
            .filter(|&end| end <= file.len());
        let Some(end) = end else {
            return Err(corrupt(format!(
                "tensor {} is not inside the file it was read from",
                self.name
            )));
        };
        let bytes = SharedBytes {
            file: file.clone(),
            start,
            end,
        };
        Ok(GgufTensor {
            name: self.name.clone(),
            shape: self.shape.clone(),
            kind: self.kind,
            bytes,
        })
    }
}

/// A range of a file's bytes held in memory once and shared by every tensor that lives in it
/// (SmolLM2: 98 MB kept once rather than the file plus a copy of each tensor).
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBytes {
    file: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.file[self.start..self.end]
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(bytes: Vec<u8>) -> Self {
        let end = bytes.len();
        SharedBytes {
            file: Arc::new(bytes),
            start: 0,
            end,
        }
    }
}

/// The f16 at `at`, as f32. Written out rather than through `half` so that it inlines into
/// the block loops (two per block of 32 values); it gives `half`'s values (tested).
#[inline(always)]
fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_bits_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// IEEE half to single precision, exactly (every f16 is an f32).
#[inline(always)]
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1F);
    let mantissa = u32::from(h & 0x03FF);
    match exponent {
        // Zero and subnormals: mantissa · 2^-24.
        0 => f32::from_bits((mantissa as f32 * (1.0 / 16_777_216.0)).to_bits() | sign),
        // Infinities and NaNs.
        0x1F => f32::from_bits(sign | 0x7F80_0000 | (mantissa << 13)),
        // Normal numbers: rebias the exponent from 15 to 127.
        _ => f32::from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13)),
    }
}

fn check_row(kind: GgmlType, bytes: &[u8], n_values: usize) -> Result<()> {
    if kind.bytes_for(n_values) != Some(bytes.len()) {
        return Err(corrupt(format!(
            "{} bytes do not hold {n_values} {} values in whole blocks",
            bytes.len(),
            kind.name()
        )));
    }
    Ok(())
}

/// Dequantizes values stored as `kind` (one row or several whole rows) into `out`, as ggml's
/// reference `dequantize_row_*` does: Q8_0 x = d·q; Q4_1 x = d·q + m, where byte j of a
/// block's 16 nibble bytes holds element j in its low nibble and element j + 16 in its high
/// nibble (ggml-quants.c, `dequantize_row_q4_1`).
pub fn dequantize_row(kind: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    check_row(kind, bytes, out.len())?;
    match kind {
        GgmlType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
            }
        }
        GgmlType::Q8_0 => {
            for (block, o) in bytes
                .chunks_exact(Q8_0_BLOCK_BYTES)
                .zip(out.chunks_exact_mut(QK))
            {
                let d = f16_at(block, 0);
                for (o, &q) in o.iter_mut().zip(&block[2..]) {
                    *o = d * f32::from(q as i8);
                }
            }
        }
        GgmlType::Q4_1 => {
            for (block, o) in bytes
                .chunks_exact(Q4_1_BLOCK_BYTES)
                .zip(out.chunks_exact_mut(QK))
            {
                let (d, m) = (f16_at(block, 0), f16_at(block, 2));
                let (low, high) = o.split_at_mut(QK / 2);
                for ((lo, hi), &b) in low.iter_mut().zip(high).zip(&block[4..]) {
                    *lo = d * f32::from(b & 0x0F) + m;
                    *hi = d * f32::from(b >> 4) + m;
                }
            }
        }
    }
    Ok(())
}

/// A Q8_0 row times `x`, block by block: Σ_blocks d · Σ_j q_j x_j.
/// `row` must be `x.len() / 32` whole blocks (checked by `dot_row` and `GgufTensor::dot_row`;
/// here only in debug builds, since this is the inner loop of the dense layers; extra blocks
/// or values on either side are ignored).
pub fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { wide::dot_q8_0(row, x) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd128::dot_q8_0(row, x);
    #[allow(unreachable_code)]
    dot_q8_0_body(row, x)
}

#[inline(always)]
fn dot_q8_0_body(row: &[u8], x: &[f32]) -> f32 {
    debug_assert_eq!(row.len(), x.len() / QK * Q8_0_BLOCK_BYTES);
    // Eight lanes of d · q · x, summed across lanes once at the end: fixed-size arrays and
    // lane-wise sums, which the compiler turns into SIMD code.
    let mut acc = [0.0f32; 8];
    for (block, xs) in row.chunks_exact(Q8_0_BLOCK_BYTES).zip(x.chunks_exact(QK)) {
        let d = f16_at(block, 0);
        let qs: &[u8; QK] = block[2..].try_into().expect("a Q8_0 block holds 32 quants");
        let xs: &[f32; QK] = xs.try_into().expect("chunks of 32");
        let mut qx = [0.0f32; 8];
        for j in 0..QK {
            qx[j % 8] += f32::from(qs[j] as i8) * xs[j];
        }
        for lane in 0..8 {
            acc[lane] += d * qx[lane];
        }
    }
    acc.iter().sum()
}

/// A Q4_1 row times `x`, block by block: Σ_blocks d · Σ_j q_j x_j + m · Σ_j x_j.
/// Same contract as `dot_q8_0` (`row` is `x.len() / 32` whole blocks of 20 bytes).
pub fn dot_q4_1(row: &[u8], x: &[f32]) -> f32 {
    dot_q4_1_summed(row, x, &block_sums(x))
}

/// The sum of each block of 32 values of `x`: Q4_1's m · Σ_j x_j term needs it for every
/// block of every row, so a product of many rows with one `x` computes it once.
pub fn block_sums(x: &[f32]) -> Vec<f32> {
    x.chunks_exact(QK).map(|xs| xs.iter().sum()).collect()
}

/// `dot_q4_1` with `x`'s `block_sums` given.
pub fn dot_q4_1_summed(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { wide::dot_q4_1(row, x, sums) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd128::dot_q4_1(row, x, sums);
    #[allow(unreachable_code)]
    dot_q4_1_body(row, x, sums)
}

#[inline(always)]
fn dot_q4_1_body(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    debug_assert_eq!(row.len(), x.len() / QK * Q4_1_BLOCK_BYTES);
    debug_assert_eq!(sums.len(), x.len() / QK);
    let mut acc = [0.0f32; 8]; // eight lanes of d · Σ q x, summed once at the end
    let mut offset = 0.0f32; // Σ_blocks m · Σ x
    for ((block, xs), &sum) in row
        .chunks_exact(Q4_1_BLOCK_BYTES)
        .zip(x.chunks_exact(QK))
        .zip(sums)
    {
        let (d, m) = (f16_at(block, 0), f16_at(block, 2));
        let nibbles: &[u8; QK / 2] = block[4..]
            .try_into()
            .expect("a Q4_1 block holds 16 bytes of nibbles");
        let xs: &[f32; QK] = xs.try_into().expect("chunks of 32");
        // Element j is the low nibble of byte j, element j + 16 its high nibble.
        let mut qx = [0.0f32; 8];
        for j in 0..QK / 2 {
            qx[j % 8] +=
                f32::from(nibbles[j] & 0x0F) * xs[j] + f32::from(nibbles[j] >> 4) * xs[j + QK / 2];
        }
        for lane in 0..8 {
            acc[lane] += d * qx[lane];
        }
        offset += m * sum;
    }
    acc.iter().sum::<f32>() + offset
}

/// The same bodies compiled for AVX2 and FMA, chosen at run time on CPUs that have them
/// (the build targets baseline x86-64, whose 128-bit SSE2 the compiler otherwise sticks to).
#[cfg(target_arch = "x86_64")]
mod wide {
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
        super::dot_q8_0_body(row, x)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_q4_1(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
        super::dot_q4_1_body(row, x, sums)
    }
}

/// The same products written with WebAssembly's 128-bit SIMD: the compiler's own
/// vectorisation of the portable bodies converts the quants one lane at a time. Four f32
/// lanes, two accumulators; summed across lanes once at the end.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use super::{f16_at, Q4_1_BLOCK_BYTES, Q8_0_BLOCK_BYTES, QK};
    use core::arch::wasm32::*;

    #[inline(always)]
    fn load(xs: &[f32], at: usize) -> v128 {
        debug_assert!(at + 4 <= xs.len());
        // SAFETY: `at + 4 <= xs.len()` (blocks of 32 values, read 4 at a time).
        unsafe { v128_load(xs.as_ptr().add(at) as *const v128) }
    }

    #[inline(always)]
    fn sum_lanes(v: v128) -> f32 {
        f32x4_extract_lane::<0>(v)
            + f32x4_extract_lane::<1>(v)
            + f32x4_extract_lane::<2>(v)
            + f32x4_extract_lane::<3>(v)
    }

    /// Sixteen quants, widened to two i16x8 (signed or not), times x[at..at + 16].
    #[inline(always)]
    fn dot16(q16_low: v128, q16_high: v128, xs: &[f32], at: usize, signed: bool) -> v128 {
        let (a, b, c, d) = if signed {
            (
                i32x4_extend_low_i16x8(q16_low),
                i32x4_extend_high_i16x8(q16_low),
                i32x4_extend_low_i16x8(q16_high),
                i32x4_extend_high_i16x8(q16_high),
            )
        } else {
            (
                u32x4_extend_low_u16x8(q16_low),
                u32x4_extend_high_u16x8(q16_low),
                u32x4_extend_low_u16x8(q16_high),
                u32x4_extend_high_u16x8(q16_high),
            )
        };
        let f = f32x4_convert_i32x4; // four i32 lanes as f32
        let p = f32x4_add(
            f32x4_mul(f(a), load(xs, at)),
            f32x4_mul(f(b), load(xs, at + 4)),
        );
        let q = f32x4_add(
            f32x4_mul(f(c), load(xs, at + 8)),
            f32x4_mul(f(d), load(xs, at + 12)),
        );
        f32x4_add(p, q)
    }

    pub fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
        let mut acc = f32x4_splat(0.0);
        for (block, xs) in row.chunks_exact(Q8_0_BLOCK_BYTES).zip(x.chunks_exact(QK)) {
            let d = f16_at(block, 0);
            // SAFETY: a block holds 2 + 32 bytes: two 16-byte loads from byte 2.
            let (q0, q1) = unsafe {
                (
                    v128_load(block.as_ptr().add(2) as *const v128),
                    v128_load(block.as_ptr().add(18) as *const v128),
                )
            };
            let first = dot16(
                i16x8_extend_low_i8x16(q0),
                i16x8_extend_high_i8x16(q0),
                xs,
                0,
                true,
            );
            let second = dot16(
                i16x8_extend_low_i8x16(q1),
                i16x8_extend_high_i8x16(q1),
                xs,
                16,
                true,
            );
            acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), f32x4_add(first, second)));
        }
        sum_lanes(acc)
    }

    pub fn dot_q4_1(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
        let mut acc = f32x4_splat(0.0);
        let mut offset = 0.0f32;
        let mask = u8x16_splat(0x0F);
        for ((block, xs), &sum) in row
            .chunks_exact(Q4_1_BLOCK_BYTES)
            .zip(x.chunks_exact(QK))
            .zip(sums)
        {
            let (d, m) = (f16_at(block, 0), f16_at(block, 2));
            // SAFETY: a block holds 4 + 16 bytes: one 16-byte load from byte 4.
            let v = unsafe { v128_load(block.as_ptr().add(4) as *const v128) };
            // Element j is the low nibble of byte j, element j + 16 its high nibble.
            let (low, high) = (v128_and(v, mask), u8x16_shr(v, 4));
            let first = dot16(
                u16x8_extend_low_u8x16(low),
                u16x8_extend_high_u8x16(low),
                xs,
                0,
                false,
            );
            let second = dot16(
                u16x8_extend_low_u8x16(high),
                u16x8_extend_high_u8x16(high),
                xs,
                16,
                false,
            );
            acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), f32x4_add(first, second)));
            offset += m * sum;
        }
        sum_lanes(acc) + offset
    }
}

/// Stored values (one row of `kind`) times `x`, with the sizes checked.
pub fn dot_row(kind: GgmlType, row: &[u8], x: &[f32]) -> Result<f32> {
    check_row(kind, row, x.len())?;
    Ok(match kind {
        GgmlType::Q8_0 => dot_q8_0(row, x),
        GgmlType::Q4_1 => dot_q4_1(row, x),
        GgmlType::F32 => row
            .chunks_exact(4)
            .zip(x)
            .map(|(b, x)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * x)
            .sum(),
        GgmlType::F16 => row
            .chunks_exact(2)
            .zip(x)
            .map(|(b, x)| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32() * x)
            .sum(),
    })
}
