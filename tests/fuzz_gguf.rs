//! Property tests of the GGUF reader on hostile input: random bytes, and a small valid file
//! with flipped bytes, truncations and huge counts, lengths and offsets written over it. The
//! reader must return Ok or a typed error, never panic, and never make a large allocation (a
//! counting allocator records the largest single request while parsing).
//!
//! Bounded by default (512 cases a property); `PROPTEST_CASES=100000 cargo test --release
//! --test fuzz_gguf` for a long run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use transformer_viz::formats::gguf::{Gguf, GgufValue, GgufValueType};
use transformer_viz::formats::gguf_writer::GgufWriter;
use transformer_viz::model::quantized::GgmlType;
use transformer_viz::VizError;

/// The system allocator, recording the largest single allocation since the last reset.
struct LargestAllocation;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Inputs here are at most a few KB; no parse of them needs a single allocation near this.
/// (A count trusted without checking it against the file size would ask for far more.)
const ALLOCATION_LIMIT: usize = 1 << 20;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(512);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Parses `bytes` and, when it parses, reads everything it claims to hold, as a model loader
/// would. Checks that the outcome is Ok or one of the reader's typed errors.
fn parse_and_read_all(bytes: &[u8]) -> Result<(), TestCaseError> {
    match Gguf::parse(bytes) {
        Ok(file) => {
            for key in file.metadata().keys() {
                let _ = (
                    file.get_u32(key),
                    file.get_f32(key),
                    file.get_str(key),
                    file.get_str_array(key),
                );
            }
            for tensor in file.tensors() {
                let values = tensor.to_f32().map_err(|e| {
                    TestCaseError::fail(format!("a parsed tensor failed to read: {e}"))
                })?;
                prop_assert_eq!(values.len(), tensor.rows() * tensor.cols());
                let x = vec![1.0f32; tensor.cols()];
                let last = tensor.rows() - 1;
                prop_assert!(tensor.dot_row(last, &x).is_ok());
            }
            Ok(())
        }
        Err(
            VizError::CorruptGguf(_)
            | VizError::GgufVersion(_)
            | VizError::UnsupportedDtype { .. }
            | VizError::MetadataType { .. },
        ) => Ok(()),
        Err(other) => Err(TestCaseError::fail(format!(
            "an unexpected kind of error: {other:?}"
        ))),
    }
}

/// `parse_and_read_all`, also failing if any single allocation exceeded the limit.
fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    LARGEST.store(0, Ordering::Relaxed);
    parse_and_read_all(bytes)?;
    let largest = LARGEST.load(Ordering::Relaxed);
    prop_assert!(
        largest <= ALLOCATION_LIMIT,
        "a {}-byte input made a {largest}-byte allocation",
        bytes.len()
    );
    Ok(())
}

/// A small valid file with every metadata type and one tensor of each supported type.
fn sample() -> Vec<u8> {
    let mut q8 = half::f16::from_f32(0.1).to_le_bytes().to_vec();
    q8.extend((0..32u8).map(|i| i.wrapping_mul(37)));
    let mut q4 = half::f16::from_f32(0.2).to_le_bytes().to_vec();
    q4.extend(half::f16::from_f32(-1.0).to_le_bytes());
    q4.extend((0..16u8).map(|i| i.wrapping_mul(91)));
    let f16s: Vec<u8> = [0.5f32, -1.0, 2.0]
        .iter()
        .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
        .collect();
    GgufWriter::new()
        .alignment(32)
        .kv("general.architecture", GgufValue::String("llama".into()))
        .kv("llama.block_count", GgufValue::U32(2))
        .kv("a.u8", GgufValue::U8(1))
        .kv("a.i8", GgufValue::I8(-1))
        .kv("a.u16", GgufValue::U16(2))
        .kv("a.i16", GgufValue::I16(-2))
        .kv("a.i32", GgufValue::I32(-3))
        .kv("a.f32", GgufValue::F32(1e-5))
        .kv("a.bool", GgufValue::Bool(true))
        .kv("a.u64", GgufValue::U64(4))
        .kv("a.i64", GgufValue::I64(-4))
        .kv("a.f64", GgufValue::F64(0.25))
        .kv(
            "tokenizer.ggml.tokens",
            GgufValue::Array(
                GgufValueType::String,
                ["a", "b", "Ġc"]
                    .iter()
                    .map(|s| GgufValue::String(s.to_string()))
                    .collect(),
            ),
        )
        .kv(
            "a.nested",
            GgufValue::Array(
                GgufValueType::Array,
                vec![GgufValue::Array(
                    GgufValueType::I32,
                    vec![GgufValue::I32(5), GgufValue::I32(6)],
                )],
            ),
        )
        .tensor(
            "norm",
            &[3],
            GgmlType::F32,
            [1.0f32, 2.0, 3.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        )
        .tensor("half", &[3], GgmlType::F16, f16s)
        .tensor("emb", &[2, 32], GgmlType::Q8_0, q8.repeat(2))
        .tensor("w", &[1, 64], GgmlType::Q4_1, q4.repeat(2))
        .to_bytes()
}

/// Values that break naive readers when written over a count, length, dimension or offset.
fn hostile_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX - 31),
        Just(1u64 << 63),
        Just(1u64 << 32),
        Just(u64::from(u32::MAX)),
        Just(1u64 << 24),
        Just(0u64),
        1u64..4096,
        any::<u64>(),
    ]
}

#[test]
fn the_sample_is_valid() {
    let bytes = sample();
    let file = Gguf::parse(&bytes).expect("the sample parses");
    assert_eq!(file.tensor_infos().len(), 4);
    check(&bytes).unwrap();
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_are_ok_or_a_typed_error(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        check(&bytes)?;
    }

    #[test]
    fn random_bytes_after_a_valid_header_are_ok_or_a_typed_error(
        n_tensors in 0u64..6,
        n_kv in 0u64..6,
        rest in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend(3u32.to_le_bytes());
        bytes.extend(n_tensors.to_le_bytes());
        bytes.extend(n_kv.to_le_bytes());
        bytes.extend(rest);
        check(&bytes)?;
    }

    #[test]
    fn flipped_bytes_are_ok_or_a_typed_error(flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8)) {
        let mut bytes = sample();
        for (at, mask) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= mask;
        }
        check(&bytes)?;
    }

    #[test]
    fn truncations_are_typed_errors(cut in any::<prop::sample::Index>()) {
        let bytes = sample();
        let len = cut.index(bytes.len()); // always shorter than the valid file
        prop_assert!(matches!(Gguf::parse(&bytes[..len]), Err(VizError::CorruptGguf(_))));
        check(&bytes[..len])?;
    }

    #[test]
    fn huge_values_written_anywhere_are_ok_or_a_typed_error(
        writes in proptest::collection::vec((any::<prop::sample::Index>(), hostile_u64(), any::<bool>()), 1..4),
    ) {
        let mut bytes = sample();
        for (at, value, as_u32) in writes {
            // Over any 8 bytes (a count, length, dimension or offset) or any 4 bytes (a
            // version, type code or dimension count).
            let width = if as_u32 { 4 } else { 8 };
            let i = at.index(bytes.len() - width + 1);
            if as_u32 {
                bytes[i..i + 4].copy_from_slice(&(value as u32).to_le_bytes());
            } else {
                bytes[i..i + 8].copy_from_slice(&value.to_le_bytes());
            }
        }
        check(&bytes)?;
    }

    #[test]
    fn appended_bytes_are_ok_or_a_typed_error(extra in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = sample();
        bytes.extend(extra);
        // Bytes after the last tensor are outside every tensor: the file still reads.
        prop_assert!(Gguf::parse(&bytes).is_ok());
        check(&bytes)?;
    }
}
