//! A GGUF writer, for tests and fixtures only: it exists so that the integration tests
//! (`tests/gguf.rs`, `tests/fuzz_gguf.rs`) can build small GGUF files, valid and malformed,
//! byte for byte. Nothing in the library calls it; it is public (and hidden from the docs)
//! only because integration tests see nothing else.

use super::gguf::{GgufValue, DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VERSION};
use crate::model::quantized::GgmlType;

/// One tensor for `GgufWriter`, written as given: dimensions innermost first (`ne`), any type
/// code, and an offset that is laid out automatically unless one is forced.
#[derive(Debug, Clone)]
pub struct GgufWriterTensor {
    pub name: String,
    pub ne: Vec<u64>,
    pub type_code: u32,
    pub data: Vec<u8>,
    /// None: the next aligned place after the previous tensor.
    pub offset: Option<u64>,
}

/// Writes GGUF bytes: the inverse of `Gguf::parse`. It writes what it is told without checking
/// it, so tests can build malformed files (a wrong version, an unknown type, a misplaced
/// offset) as well as valid ones.
#[derive(Debug, Clone)]
pub struct GgufWriter {
    pub version: u32,
    /// Used to lay out the data; `general.alignment` is written only if added as metadata.
    pub alignment: u64,
    pub metadata: Vec<(String, GgufValue)>,
    pub tensors: Vec<GgufWriterTensor>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        GgufWriter {
            version: GGUF_VERSION,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            tensors: Vec::new(),
        }
    }
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn kv(mut self, key: &str, value: GgufValue) -> Self {
        self.metadata.push((key.to_string(), value));
        self
    }

    /// Sets the layout alignment and writes it as `general.alignment`.
    pub fn alignment(mut self, alignment: u32) -> Self {
        self.alignment = u64::from(alignment.max(1));
        self.kv("general.alignment", GgufValue::U32(alignment))
    }

    /// A tensor with row-major `shape` (written as `ne`, reversed) and type `kind`.
    pub fn tensor(self, name: &str, shape: &[usize], kind: GgmlType, data: Vec<u8>) -> Self {
        let ne = shape.iter().rev().map(|&d| d as u64).collect();
        self.raw_tensor(GgufWriterTensor {
            name: name.into(),
            ne,
            type_code: kind.code(),
            data,
            offset: None,
        })
    }

    pub fn raw_tensor(mut self, tensor: GgufWriterTensor) -> Self {
        self.tensors.push(tensor);
        self
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(GGUF_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            write_string(&mut out, key);
            out.extend_from_slice(&value.value_type().code().to_le_bytes());
            write_value(&mut out, value);
        }
        let align = |n: u64| n.div_ceil(self.alignment.max(1)) * self.alignment.max(1);
        let mut next = 0u64;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            let offset = t.offset.unwrap_or(next);
            next = align(offset.saturating_add(t.data.len() as u64));
            offsets.push(offset);
            write_string(&mut out, &t.name);
            out.extend_from_slice(&(t.ne.len() as u32).to_le_bytes());
            for d in &t.ne {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.type_code.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
        }
        let data_start = align(out.len() as u64) as usize;
        out.resize(data_start, 0);
        for (t, &offset) in self.tensors.iter().zip(&offsets) {
            // Forced offsets far past the end are left unwritten (the reader must refuse them).
            let Some(at) = usize::try_from(offset)
                .ok()
                .and_then(|o| o.checked_add(data_start))
            else {
                continue;
            };
            if at > data_start + (1 << 24) {
                continue;
            }
            let end = at + t.data.len();
            if out.len() < end {
                out.resize(end, 0);
            }
            out[at..end].copy_from_slice(&t.data);
        }
        out
    }
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn write_value(out: &mut Vec<u8>, value: &GgufValue) {
    match value {
        GgufValue::U8(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::Bool(v) => out.push(u8::from(*v)),
        GgufValue::String(s) => write_string(out, s),
        GgufValue::Array(item, items) => {
            out.extend_from_slice(&item.code().to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                write_value(out, v);
            }
        }
        GgufValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        GgufValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
    }
}
