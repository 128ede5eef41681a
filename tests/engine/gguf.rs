//! The GGUF reader (src/formats/gguf.rs):
//! (a) on the real SmolLM2-135M-Instruct file, metadata, tensor table and dequantized values
//!     against an independent numpy reader (tests/reference/gguf_reference.py);
//! (b) on small hand-built files, every metadata type, the alignment, the values of each
//!     tensor type, block-wise dot products, and every malformed or truncated case as a typed
//!     error.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use half::f16;
use serde_json::{json, Value};
use transformer_viz::formats::gguf::{Gguf, GgufValue, GgufValueType};
use transformer_viz::formats::gguf_writer::{GgufWriter, GgufWriterTensor};
use transformer_viz::model::quantized::{
    dequantize_row, dot_q4_1, dot_q8_0, GgmlType, GgufTensor, Q4_1_BLOCK_BYTES, Q8_0_BLOCK_BYTES,
    QK,
};
use transformer_viz::VizError;

// ---------------------------------------------------------------------------------------------
// (a) The real file
// ---------------------------------------------------------------------------------------------

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn smollm2_path() -> PathBuf {
    root().join("models/smollm2-135m/model.Q4_1.gguf")
}

/// The real file's bytes, read once; None (and a message saying why the test is skipped)
/// when the model has not been fetched, unless `TVIZ_REQUIRE_SMOLLM2=1` (scripts/test.sh),
/// which makes a missing file a failure.
fn smollm2_bytes() -> Option<&'static [u8]> {
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    let bytes = BYTES
        .get_or_init(|| std::fs::read(smollm2_path()).ok())
        .as_deref();
    if bytes.is_none() && std::env::var("TVIZ_REQUIRE_SMOLLM2").is_ok_and(|v| v == "1") {
        panic!(
            "{} is absent, and TVIZ_REQUIRE_SMOLLM2=1: run scripts/fetch-models.sh",
            smollm2_path().display()
        );
    }
    if bytes.is_none() {
        eprintln!(
            "SKIPPED: {} is absent; scripts/fetch-models.sh fetches it (scripts/test.sh runs that first)",
            smollm2_path().display()
        );
    }
    bytes
}

use crate::common::python;

/// Runs the numpy GGUF reader on the real file with `request` (see its docstring).
fn reference(request: &Value) -> Value {
    let mut child = Command::new(python())
        .arg(root().join("tests/reference/gguf_reference.py"))
        .arg(smollm2_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "start {} (run scripts/test.sh to set up the venv): {e}",
                python().display()
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child
        .wait_with_output()
        .expect("run the numpy GGUF reference");
    assert!(out.status.success(), "the numpy GGUF reference failed");
    serde_json::from_slice(&out.stdout).expect("reference output is JSON")
}

fn smollm2() -> Option<Gguf<'static>> {
    smollm2_bytes().map(|b| Gguf::parse(b).expect("the real SmolLM2 file parses"))
}

#[test]
fn smollm2_metadata_is_the_model_cards_and_the_references() {
    let Some(file) = smollm2() else { return };
    assert_eq!(file.version(), 3);
    assert_eq!(file.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(file.get_u32("llama.block_count").unwrap(), 30);
    assert_eq!(file.get_u32("llama.attention.head_count").unwrap(), 9);
    assert_eq!(file.get_u32("llama.attention.head_count_kv").unwrap(), 3);
    assert_eq!(file.get_u32("llama.embedding_length").unwrap(), 576);
    assert_eq!(file.get_u32("llama.feed_forward_length").unwrap(), 1536);
    assert_eq!(file.get_u32("llama.context_length").unwrap(), 8192);
    let tokens = file.get_str_array("tokenizer.ggml.tokens").unwrap();
    let merges = file.get_str_array("tokenizer.ggml.merges").unwrap();
    assert_eq!(tokens.len(), 49152);
    assert_eq!(merges.len(), 48900);

    let keys = [
        "llama.rope.freq_base",
        "llama.attention.layer_norm_rms_epsilon",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.model",
    ];
    let want = reference(&json!({
        "keys": keys,
        "array_lengths": ["tokenizer.ggml.tokens", "tokenizer.ggml.merges"],
        "array_items": {"tokenizer.ggml.tokens": [0, 1, 2, 220, 49151], "tokenizer.ggml.merges": [0, 1, 48899]},
    }));
    assert_eq!(want["version"], 3);
    assert_eq!(file.alignment(), want["alignment"].as_u64().unwrap());
    assert_eq!(
        file.data_start() as u64,
        want["data_start"].as_u64().unwrap()
    );
    assert_eq!(
        file.tensor_infos().len() as u64,
        want["tensor_count"].as_u64().unwrap()
    );
    assert_eq!(want["array_lengths"]["tokenizer.ggml.tokens"], 49152);
    assert_eq!(want["array_lengths"]["tokenizer.ggml.merges"], 48900);
    // Both read as f32 from the same 4 bytes, so they are equal, not merely close.
    assert_eq!(
        file.get_f32("llama.rope.freq_base").unwrap() as f64,
        want["keys"]["llama.rope.freq_base"].as_f64().unwrap()
    );
    assert_eq!(
        file.get_f32("llama.attention.layer_norm_rms_epsilon")
            .unwrap() as f64,
        want["keys"]["llama.attention.layer_norm_rms_epsilon"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(
        file.get_u32("tokenizer.ggml.bos_token_id").unwrap() as u64,
        want["keys"]["tokenizer.ggml.bos_token_id"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(
        file.get_u32("tokenizer.ggml.eos_token_id").unwrap() as u64,
        want["keys"]["tokenizer.ggml.eos_token_id"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(
        file.get_str("tokenizer.ggml.model").unwrap(),
        want["keys"]["tokenizer.ggml.model"].as_str().unwrap()
    );
    for (i, w) in [0, 1, 2, 220, 49151].iter().zip(
        want["array_items"]["tokenizer.ggml.tokens"]
            .as_array()
            .unwrap(),
    ) {
        assert_eq!(tokens[*i], w.as_str().unwrap(), "token {i}");
    }
    for (i, w) in [0, 1, 48899].iter().zip(
        want["array_items"]["tokenizer.ggml.merges"]
            .as_array()
            .unwrap(),
    ) {
        assert_eq!(merges[*i], w.as_str().unwrap(), "merge {i}");
    }
    // Byte-level BPE: `Ġ` marks a leading space.
    assert!(merges[0].starts_with('Ġ'), "first merge {:?}", merges[0]);
}

#[test]
fn smollm2_tensor_table_has_the_llama_layout_and_the_references_kinds_and_shapes() {
    let Some(file) = smollm2() else { return };
    let want = reference(&json!({}));
    let infos = file.tensor_infos();
    assert_eq!(infos.len(), 272); // 30 layers × 9 + token_embd + output_norm; output tied to token_embd
    for info in infos {
        assert_eq!(
            info.kind.name(),
            want["kinds"][&info.name].as_str().unwrap(),
            "kind of {}",
            info.name
        );
        let shape: Vec<usize> = want["shapes"][&info.name]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(info.shape, shape, "shape of {}", info.name);
    }
    let kind_shape = |name: &str| {
        let t = file.tensor(name).unwrap();
        (t.kind(), t.shape().to_vec())
    };
    assert_eq!(
        kind_shape("token_embd.weight"),
        (GgmlType::Q8_0, vec![49152, 576])
    );
    assert_eq!(kind_shape("output_norm.weight"), (GgmlType::F32, vec![576]));
    for layer in 0..30 {
        let name = |part: &str| format!("blk.{layer}.{part}.weight");
        // Linear weights are (out, in): GGUF's ne = [in, out] reversed.
        assert_eq!(
            kind_shape(&name("attn_q")),
            (GgmlType::Q4_1, vec![576, 576])
        );
        assert_eq!(
            kind_shape(&name("attn_k")),
            (GgmlType::Q4_1, vec![192, 576])
        ); // 3 kv heads × 64
        assert_eq!(
            kind_shape(&name("attn_v")),
            (GgmlType::Q4_1, vec![192, 576])
        );
        assert_eq!(
            kind_shape(&name("attn_output")),
            (GgmlType::Q4_1, vec![576, 576])
        );
        assert_eq!(
            kind_shape(&name("ffn_gate")),
            (GgmlType::Q4_1, vec![1536, 576])
        );
        assert_eq!(
            kind_shape(&name("ffn_up")),
            (GgmlType::Q4_1, vec![1536, 576])
        );
        assert_eq!(
            kind_shape(&name("ffn_down")),
            (GgmlType::Q4_1, vec![576, 1536])
        );
        assert_eq!(kind_shape(&name("attn_norm")), (GgmlType::F32, vec![576]));
        assert_eq!(kind_shape(&name("ffn_norm")), (GgmlType::F32, vec![576]));
    }
    let ffn_down = file
        .tensor_infos()
        .iter()
        .find(|t| t.name == "blk.0.ffn_down.weight")
        .unwrap();
    assert_eq!(
        ffn_down.ne,
        vec![1536, 576],
        "GGUF stores dimensions innermost first"
    );
    assert!(matches!(
        file.tensor("output.weight"),
        Err(VizError::MissingTensor { .. })
    ));
}

/// A deterministic vector of `n` values in [-1, 1) to multiply rows by.
fn probe_vector(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = XorShift(seed);
    (0..n).map(|_| rng.uniform() * 2.0 - 1.0).collect()
}

#[test]
fn smollm2_dequantized_values_and_dot_products_match_the_numpy_reference() {
    let Some(file) = smollm2() else { return };
    // (name, kind, rows to compare in full)
    let chosen: [(&str, GgmlType, &[usize]); 6] = [
        ("token_embd.weight", GgmlType::Q8_0, &[0, 1, 12345, 49151]),
        ("blk.0.attn_q.weight", GgmlType::Q4_1, &[0, 300, 575]),
        ("blk.7.attn_k.weight", GgmlType::Q4_1, &[0, 191]),
        ("blk.29.ffn_down.weight", GgmlType::Q4_1, &[0, 575]),
        ("output_norm.weight", GgmlType::F32, &[0]),
        ("blk.11.attn_norm.weight", GgmlType::F32, &[0]),
    ];
    let dots: Vec<(&str, usize, Vec<f32>)> = vec![
        ("token_embd.weight", 9, probe_vector(576, 1)),
        ("token_embd.weight", 40000, probe_vector(576, 2)),
        ("blk.0.attn_q.weight", 17, probe_vector(576, 3)),
        ("blk.29.ffn_down.weight", 100, probe_vector(1536, 4)),
        ("blk.15.ffn_gate.weight", 1535, probe_vector(576, 5)),
    ];
    let want = reference(&json!({
        "tensors": chosen.iter().map(|(n, _, rows)| json!({"name": n, "rows": rows})).collect::<Vec<_>>(),
        "dots": dots.iter().map(|(n, r, x)| json!({"name": n, "row": r, "x": x})).collect::<Vec<_>>(),
    }));

    let mut worst_value: f64 = 0.0;
    for (name, kind, rows) in chosen {
        let t = file.tensor(name).unwrap();
        let w = &want["tensors"][name];
        assert_eq!(t.kind(), kind, "{name}");
        assert_eq!(w["kind"], kind.name(), "{name}");
        let mut row = vec![0.0f32; t.cols()];
        for &r in rows {
            t.dequantize_row_into(r, &mut row).unwrap();
            let expected: Vec<f64> = w["rows"][r.to_string()]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(expected.len(), row.len(), "{name} row {r}");
            for (j, (&e, &g)) in expected.iter().zip(&row).enumerate() {
                let diff = (e - g as f64).abs();
                assert!(diff <= 1e-6, "{name}[{r}, {j}] = {g}, numpy says {e}");
                worst_value = worst_value.max(diff);
            }
        }
        // Every block of the tensor, through its sum and sum of squares.
        let all = t.to_f32().unwrap();
        let sum: f64 = all.iter().map(|&v| v as f64).sum();
        let sum_sq: f64 = all.iter().map(|&v| (v as f64) * (v as f64)).sum();
        let (want_sum, want_sq) = (w["sum"].as_f64().unwrap(), w["sum_sq"].as_f64().unwrap());
        assert!(
            (sum - want_sum).abs() <= 1e-9 * want_sq.sqrt() * (all.len() as f64).sqrt(),
            "{name}: sum {sum} vs {want_sum}"
        );
        assert!(
            (sum_sq - want_sq).abs() <= 1e-9 * want_sq,
            "{name}: sum of squares {sum_sq} vs {want_sq}"
        );
    }

    let mut worst_dot: f64 = 0.0;
    for ((name, r, x), w) in dots.iter().zip(want["dots"].as_array().unwrap()) {
        let t = file.tensor(name).unwrap();
        let got = t.dot_row(*r, x).unwrap() as f64;
        let mut row = vec![0.0f32; t.cols()];
        t.dequantize_row_into(*r, &mut row).unwrap();
        let scale: f64 = row
            .iter()
            .zip(x)
            .map(|(&a, &b)| (a as f64 * b as f64).abs())
            .sum();
        let rel = (got - w.as_f64().unwrap()).abs() / scale;
        assert!(
            rel <= 1e-5,
            "{name} row {r}: dot {got} vs numpy {w} (relative {rel:.2e})"
        );
        worst_dot = worst_dot.max(rel);
    }
    eprintln!("worst dequantized value difference {worst_value:.2e}, worst dot product difference {worst_dot:.2e} (relative to Σ|w·x|)");
}

// ---------------------------------------------------------------------------------------------
// (b) Hand-built files
// ---------------------------------------------------------------------------------------------

/// xorshift64*: deterministic random numbers without a dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// In [0, 1).
    fn uniform(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn byte(&mut self) -> u8 {
        (self.next() >> 56) as u8
    }
}

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The error a malformed file gives; fails the test if it parses.
fn parse_error(bytes: &[u8]) -> VizError {
    match Gguf::parse(bytes) {
        Ok(_) => panic!("a malformed file parsed"),
        Err(e) => e,
    }
}

/// The message of the `CorruptGguf` error a malformed file gives.
fn corrupt_message(bytes: &[u8]) -> String {
    match parse_error(bytes) {
        VizError::CorruptGguf(m) => m,
        other => panic!("expected CorruptGguf, got {other:?}"),
    }
}

#[test]
fn every_metadata_type_reads_back_as_written() {
    let values = vec![
        ("t.u8", GgufValue::U8(200)),
        ("t.i8", GgufValue::I8(-100)),
        ("t.u16", GgufValue::U16(60000)),
        ("t.i16", GgufValue::I16(-30000)),
        ("t.u32", GgufValue::U32(4_000_000_000)),
        ("t.i32", GgufValue::I32(-2_000_000_000)),
        ("t.f32", GgufValue::F32(-1.5e-5)),
        ("t.bool_true", GgufValue::Bool(true)),
        ("t.bool_false", GgufValue::Bool(false)),
        ("t.string", GgufValue::String("héllo Ġworld 🎉".into())),
        ("t.empty_string", GgufValue::String(String::new())),
        ("t.u64", GgufValue::U64(u64::MAX)),
        ("t.i64", GgufValue::I64(i64::MIN)),
        ("t.f64", GgufValue::F64(std::f64::consts::PI)),
        (
            "t.strings",
            GgufValue::Array(
                GgufValueType::String,
                vec![
                    GgufValue::String("a b".into()),
                    GgufValue::String("Ġ t".into()),
                ],
            ),
        ),
        (
            "t.empty_array",
            GgufValue::Array(GgufValueType::F32, vec![]),
        ),
        (
            "t.i32s",
            GgufValue::Array(
                GgufValueType::I32,
                vec![GgufValue::I32(1), GgufValue::I32(-3)],
            ),
        ),
        (
            "t.nested",
            GgufValue::Array(
                GgufValueType::Array,
                vec![
                    GgufValue::Array(
                        GgufValueType::I16,
                        vec![GgufValue::I16(-1), GgufValue::I16(2)],
                    ),
                    GgufValue::Array(GgufValueType::Bool, vec![GgufValue::Bool(true)]),
                ],
            ),
        ),
    ];
    let mut writer = GgufWriter::new();
    for (k, v) in &values {
        writer = writer.kv(k, v.clone());
    }
    let bytes = writer.to_bytes();
    let file = Gguf::parse(&bytes).unwrap();
    assert_eq!(file.metadata().len(), values.len());
    for (k, v) in &values {
        assert_eq!(file.get(k), Some(v), "{k}");
    }
    assert!(file.tensor_infos().is_empty());

    // Accessors widen losslessly and name the key when they cannot.
    assert_eq!(file.get_u32("t.u8").unwrap(), 200);
    assert_eq!(file.get_u32("t.u16").unwrap(), 60000);
    assert_eq!(file.get_u32("t.u32").unwrap(), 4_000_000_000);
    assert_eq!(file.get_u64("t.u64").unwrap(), u64::MAX);
    assert_eq!(file.get_i64("t.i8").unwrap(), -100);
    assert_eq!(file.get_i64("t.i64").unwrap(), i64::MIN);
    assert_eq!(file.get_f32("t.f32").unwrap(), -1.5e-5);
    assert_eq!(file.get_f32("t.f64").unwrap(), std::f32::consts::PI);
    assert!(file.get_bool("t.bool_true").unwrap());
    assert_eq!(file.get_str("t.string").unwrap(), "héllo Ġworld 🎉");
    assert_eq!(file.get_str_array("t.strings").unwrap(), vec!["a b", "Ġ t"]);
    assert_eq!(file.get_i32_array("t.i32s").unwrap(), vec![1, -3]);
    assert_eq!(
        file.get_f32_array("t.empty_array").unwrap(),
        Vec::<f32>::new()
    );
    let wrong = |r: transformer_viz::Result<_>, key: &str, found: &str| match r {
        Err(VizError::MetadataType {
            key: k, found: f, ..
        }) => {
            assert_eq!((k.as_str(), f.as_str()), (key, found));
        }
        other => panic!("{key}: expected MetadataType, got {other:?}"),
    };
    wrong(file.get_u32("t.i8").map(|_| ()), "t.i8", "i8"); // negative
    wrong(file.get_u32("t.u64").map(|_| ()), "t.u64", "u64"); // too large
    wrong(file.get_u32("t.string").map(|_| ()), "t.string", "string");
    wrong(file.get_f32("t.u32").map(|_| ()), "t.u32", "u32");
    wrong(file.get_str("t.u8").map(|_| ()), "t.u8", "u8");
    wrong(
        file.get_str_array("t.i32s").map(|_| ()),
        "t.i32s",
        "array of i32",
    );
    wrong(file.get_bool("t.u8").map(|_| ()), "t.u8", "u8");
    assert_eq!(
        file.get_u32("llama.block_count"),
        Err(VizError::MissingMetadata {
            key: "llama.block_count".into()
        })
    );
}

#[test]
fn alignment_places_the_data_section_and_every_tensor() {
    let a = f32_bytes(&[1.0, 2.0, 3.0]); // 12 bytes: the next tensor needs padding
    let b = f32_bytes(&[4.0, 5.0]);
    for alignment in [None, Some(8u32), Some(64), Some(256)] {
        let mut writer = GgufWriter::new();
        if let Some(al) = alignment {
            writer = writer.alignment(al);
        }
        let bytes = writer
            .tensor("a", &[3], GgmlType::F32, a.clone())
            .tensor("b", &[2], GgmlType::F32, b.clone())
            .to_bytes();
        let file = Gguf::parse(&bytes).unwrap();
        let al = alignment.map_or(32, u64::from);
        assert_eq!(file.alignment(), al);
        assert_eq!(file.data_start() as u64 % al, 0);
        assert_eq!(
            file.tensor_infos()[1].offset as u64,
            12u64.div_ceil(al) * al,
            "b follows a at the next multiple"
        );
        assert_eq!(
            file.tensor("a").unwrap().to_f32().unwrap(),
            vec![1.0, 2.0, 3.0]
        );
        assert_eq!(file.tensor("b").unwrap().to_f32().unwrap(), vec![4.0, 5.0]);
        // The data section starts where the reader says it does.
        assert_eq!(&bytes[file.data_start()..file.data_start() + 12], &a[..]);
    }
    for bad in [0u32, 48, 3] {
        let bytes = GgufWriter::new()
            .kv("general.alignment", GgufValue::U32(bad))
            .to_bytes();
        assert!(
            corrupt_message(&bytes).contains("power of two"),
            "alignment {bad}"
        );
    }
    let bytes = GgufWriter::new()
        .kv("general.alignment", GgufValue::String("32".into()))
        .to_bytes();
    assert!(
        matches!(parse_error(&bytes), VizError::MetadataType { ref key, .. } if key == "general.alignment")
    );
}

/// One Q8_0 block: d = 0.25, q_j = j - 16, so x_j = 0.25·(j - 16).
fn q8_0_block() -> (Vec<u8>, Vec<f32>) {
    let mut bytes = f16_bytes(0.25).to_vec();
    bytes.extend((0..32).map(|j| (j as i8 - 16) as u8));
    (bytes, (0..32).map(|j| 0.25 * (j as f32 - 16.0)).collect())
}

/// One Q4_1 block: d = 0.5, m = -1, byte j = j | (15 - j) << 4, so element j (low nibble)
/// is 0.5·j - 1 and element 16 + j (high nibble) is 0.5·(15 - j) - 1.
fn q4_1_block() -> (Vec<u8>, Vec<f32>) {
    let mut bytes = f16_bytes(0.5).to_vec();
    bytes.extend(f16_bytes(-1.0));
    bytes.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let mut values: Vec<f32> = (0..16).map(|j| 0.5 * j as f32 - 1.0).collect();
    values.extend((0..16).map(|j| 0.5 * (15 - j) as f32 - 1.0));
    (bytes, values)
}

#[test]
fn each_tensor_type_dequantizes_to_the_values_it_encodes() {
    let (q8, q8_values) = q8_0_block();
    let (q4, q4_values) = q4_1_block();
    let f16_values = [1.0f32, -2.5, 65504.0, 0.0];
    let f16_data: Vec<u8> = f16_values.iter().flat_map(|&v| f16_bytes(v)).collect();
    // A 2×64 Q4_1 matrix: row 1 is the block pair with its nibbles swapped.
    let (mut q4_matrix, mut q4_matrix_values) = (q4.repeat(2), q4_values.repeat(2));
    let mut swapped = q4.clone();
    for b in &mut swapped[4..] {
        *b = b.rotate_left(4);
    }
    q4_matrix.extend(swapped.repeat(2));
    let mut swapped_values = q4_values[16..].to_vec();
    swapped_values.extend(&q4_values[..16]);
    q4_matrix_values.extend(swapped_values.repeat(2));

    let bytes = GgufWriter::new()
        .tensor(
            "f32",
            &[2, 3],
            GgmlType::F32,
            f32_bytes(&[1.0, 2.0, 3.0, -4.0, 5.5, 1e-30]),
        )
        .tensor("f16", &[4], GgmlType::F16, f16_data)
        .tensor("q8", &[1, 32], GgmlType::Q8_0, q8.clone())
        .tensor("q4", &[32], GgmlType::Q4_1, q4.clone())
        .tensor("q4_matrix", &[2, 64], GgmlType::Q4_1, q4_matrix)
        .to_bytes();
    let file = Gguf::parse(&bytes).unwrap();
    assert_eq!(
        file.tensor("f32").unwrap().to_f32().unwrap(),
        vec![1.0, 2.0, 3.0, -4.0, 5.5, 1e-30]
    );
    assert_eq!(
        file.tensor("f16").unwrap().to_f32().unwrap(),
        f16_values.to_vec()
    );
    assert_eq!(file.tensor("q8").unwrap().to_f32().unwrap(), q8_values);
    assert_eq!(file.tensor("q4").unwrap().to_f32().unwrap(), q4_values);
    assert_eq!(
        file.tensor("q4").unwrap().bytes(),
        &q4[..],
        "quantized tensors keep their raw blocks"
    );

    let m = file.tensor("q4_matrix").unwrap();
    let info = &file.tensor_infos()[4];
    assert_eq!(info.ne, vec![64, 2], "written innermost first");
    assert_eq!(
        (m.shape(), m.rows(), m.cols(), m.row_bytes()),
        (&[2usize, 64][..], 2, 64, 2 * Q4_1_BLOCK_BYTES)
    );
    assert_eq!(m.to_f32().unwrap(), q4_matrix_values);
    let mut row = vec![0.0; 64];
    m.dequantize_row_into(1, &mut row).unwrap();
    assert_eq!(row, q4_matrix_values[64..]);
    let f = file.tensor("f32").unwrap();
    assert_eq!((f.rows(), f.cols()), (2, 3));
    f.dequantize_row_into(1, &mut row[..3]).unwrap();
    assert_eq!(row[..3], [-4.0, 5.5, 1e-30]);

    // An owned copy reads the same.
    let owned: GgufTensor<Vec<u8>> = m.to_owned();
    assert_eq!(owned.to_f32().unwrap(), q4_matrix_values);

    // Misused rows and sizes are errors too.
    assert!(matches!(m.row(2), Err(VizError::BadConfig(_))));
    assert!(matches!(
        m.dot_row(0, &[0.0; 63]),
        Err(VizError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        m.dequantize_row_into(0, &mut [0.0; 32]),
        Err(VizError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        dequantize_row(GgmlType::Q4_1, &q4[..19], &mut [0.0; 32]),
        Err(VizError::CorruptGguf(_))
    ));
    assert!(matches!(
        dequantize_row(GgmlType::Q8_0, &q8, &mut [0.0; 31]),
        Err(VizError::CorruptGguf(_))
    ));
    assert!(
        GgufTensor::new("x", vec![2, 32], GgmlType::Q8_0, q8.clone()).is_err(),
        "two rows need two blocks"
    );
    assert!(
        GgufTensor::new("x", vec![16], GgmlType::Q4_1, &q4[..]).is_err(),
        "16 values are not a whole block"
    );
    assert!(GgufTensor::new("x", vec![], GgmlType::F32, &[0u8; 0][..]).is_err());
    assert!(GgufTensor::new("x", vec![32], GgmlType::Q8_0, q8).is_ok());
}

/// Random finite Q8_0 or Q4_1 rows: random f16 scales (and minimums), random quants.
fn random_row(rng: &mut XorShift, kind: GgmlType, blocks: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(blocks * kind.block_bytes());
    for _ in 0..blocks {
        row.extend(f16_bytes((rng.uniform() - 0.5) * 0.2));
        if kind == GgmlType::Q4_1 {
            row.extend(f16_bytes((rng.uniform() - 0.5) * 2.0));
        }
        let quant_bytes = if kind == GgmlType::Q4_1 { QK / 2 } else { QK };
        row.extend((0..quant_bytes).map(|_| rng.byte()));
    }
    row
}

#[test]
fn block_dot_products_equal_dequantize_then_multiply_on_random_blocks() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut worst: f64 = 0.0;
    for trial in 0..600 {
        let kind = if trial % 2 == 0 {
            GgmlType::Q8_0
        } else {
            GgmlType::Q4_1
        };
        let blocks = 1 + trial % 48;
        let row = random_row(&mut rng, kind, blocks);
        let x: Vec<f32> = (0..blocks * QK)
            .map(|_| (rng.uniform() - 0.5) * 6.0)
            .collect();
        let mut w = vec![0.0f32; blocks * QK];
        dequantize_row(kind, &row, &mut w).unwrap();
        let exact: f64 = w.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
        let scale: f64 = w
            .iter()
            .zip(&x)
            .map(|(&a, &b)| (a as f64 * b as f64).abs())
            .sum();
        let block_wise = match kind {
            GgmlType::Q8_0 => dot_q8_0(&row, &x),
            _ => dot_q4_1(&row, &x),
        };
        let tensor = GgufTensor::new("w", vec![blocks * QK], kind, &row[..]).unwrap();
        assert_eq!(
            tensor.dot_row(0, &x).unwrap(),
            block_wise,
            "the checked path runs the same kernel"
        );
        let rel = (block_wise as f64 - exact).abs() / scale.max(f64::MIN_POSITIVE);
        assert!(
            rel <= 1e-5,
            "{kind:?}, {blocks} blocks: block-wise {block_wise} vs {exact} (relative {rel:.2e})"
        );
        worst = worst.max(rel);
    }
    eprintln!("worst block-wise dot product difference {worst:.2e} relative to Σ|w·x|");
    assert_eq!(Q8_0_BLOCK_BYTES, 34);
    assert_eq!(Q4_1_BLOCK_BYTES, 20);
}

/// A small valid file: two metadata entries and one Q8_0 tensor at the end.
fn small_file() -> Vec<u8> {
    let (q8, _) = q8_0_block();
    GgufWriter::new()
        .kv("general.name", GgufValue::String("tiny".into()))
        .kv(
            "tok",
            GgufValue::Array(GgufValueType::String, vec![GgufValue::String("a".into())]),
        )
        .tensor("w", &[32], GgmlType::Q8_0, q8)
        .to_bytes()
}

fn patch(bytes: &[u8], at: usize, with: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at..at + with.len()].copy_from_slice(with);
    out
}

fn one_tensor(ne: Vec<u64>, type_code: u32, data: Vec<u8>, offset: Option<u64>) -> Vec<u8> {
    GgufWriter::new()
        .raw_tensor(GgufWriterTensor {
            name: "w".into(),
            ne,
            type_code,
            data,
            offset,
        })
        .to_bytes()
}

#[test]
fn malformed_headers_and_metadata_are_typed_errors() {
    let good = small_file();
    Gguf::parse(&good).expect("the small file is valid");
    // Header: magic 0..4, version 4..8, tensor count 8..16, metadata count 16..24, then the
    // first key's length at 24..32 ("general.name", 12 bytes), its type at 44..48, the string
    // value's length at 48..56.
    assert!(corrupt_message(b"").contains("truncated"));
    assert!(corrupt_message(b"GGU").contains("truncated"));
    assert!(corrupt_message(&patch(&good, 0, b"GGML")).contains("magic"));
    assert_eq!(
        parse_error(&patch(&good, 4, &2u32.to_le_bytes())),
        VizError::GgufVersion(2)
    );
    assert_eq!(
        parse_error(&patch(&good, 4, &4u32.to_le_bytes())),
        VizError::GgufVersion(4)
    );
    assert!(corrupt_message(&patch(&good, 8, &u64::MAX.to_le_bytes())).contains("tensor count"));
    assert!(corrupt_message(&patch(&good, 8, &1000u64.to_le_bytes())).contains("tensor count"));
    assert!(corrupt_message(&patch(&good, 16, &u64::MAX.to_le_bytes())).contains("metadata count"));
    assert!(corrupt_message(&patch(&good, 24, &u64::MAX.to_le_bytes()))
        .contains("length of metadata key 0"));
    assert!(
        corrupt_message(&patch(&good, 24, &(good.len() as u64).to_le_bytes()))
            .contains("metadata key 0")
    );
    assert!(corrupt_message(&patch(&good, 32, &[0xFF])).contains("not UTF-8"));
    assert!(
        corrupt_message(&patch(&good, 44, &13u32.to_le_bytes())).contains("unknown value type 13")
    );
    assert!(corrupt_message(&patch(&good, 48, &u64::MAX.to_le_bytes())).contains("general.name"));
    assert!(
        corrupt_message(&patch(&good, 48, &(1u64 << 40).to_le_bytes())).contains("general.name")
    );

    // Arrays: "tok" starts at 60 (8 + 3 key bytes, 4 type), its item type at 75, count at 79.
    let tok = 24 + 8 + 12 + 4 + 8 + 4;
    assert_eq!(&good[tok + 8..tok + 11], b"tok");
    let item_type = tok + 8 + 3 + 4;
    assert!(
        corrupt_message(&patch(&good, item_type, &99u32.to_le_bytes()))
            .contains("array of unknown type 99")
    );
    assert!(
        corrupt_message(&patch(&good, item_type + 4, &u64::MAX.to_le_bytes()))
            .contains("length of metadata `tok`")
    );
    assert!(
        corrupt_message(&patch(&good, item_type + 4, &(1u64 << 33).to_le_bytes()))
            .contains("length of metadata `tok`")
    );
    // The array's one string, made longer than the file.
    assert!(
        corrupt_message(&patch(&good, item_type + 12, &(1u64 << 20).to_le_bytes())).contains("tok")
    );

    let bool_bytes = GgufWriter::new().kv("b", GgufValue::Bool(true)).to_bytes();
    let at = 24 + 8 + 1 + 4; // after the key "b" and the type
    assert_eq!(bool_bytes[at], 1);
    assert!(corrupt_message(&patch(&bool_bytes, at, &[2])).contains("bool stored as 2"));

    let twice = GgufWriter::new()
        .kv("k", GgufValue::U8(1))
        .kv("k", GgufValue::U8(2))
        .to_bytes();
    assert!(corrupt_message(&twice).contains("appears twice"));

    let mut deep = GgufValue::Array(GgufValueType::U8, vec![]);
    for _ in 0..20 {
        deep = GgufValue::Array(GgufValueType::Array, vec![deep]);
    }
    assert!(
        corrupt_message(&GgufWriter::new().kv("deep", deep).to_bytes())
            .contains("nests arrays deeper")
    );
}

#[test]
fn malformed_tensor_tables_and_data_are_typed_errors() {
    let q8 = q8_0_block().0;
    let ok = one_tensor(vec![32], GgmlType::Q8_0.code(), q8.clone(), None);
    Gguf::parse(&ok).expect("one valid tensor");
    assert!(corrupt_message(&one_tensor(vec![], 8, q8.clone(), None)).contains("0 dimensions"));
    assert!(
        corrupt_message(&one_tensor(vec![32, 1, 1, 1, 1], 8, q8.clone(), None))
            .contains("5 dimensions")
    );
    assert!(
        corrupt_message(&one_tensor(vec![32, 0], 8, q8.clone(), None)).contains("dimension of 0")
    );
    assert!(
        corrupt_message(&one_tensor(vec![32, u64::MAX], 8, q8.clone(), None)).contains("overflows")
    );
    assert!(
        corrupt_message(&one_tensor(vec![32, 1 << 40, 1 << 40], 8, q8.clone(), None))
            .contains("overflows")
    );
    // Rows of Q8_0 must be whole 32-value blocks.
    assert!(
        corrupt_message(&one_tensor(vec![48], 8, q8.repeat(2), None))
            .contains("whole number of 32-value Q8_0 blocks")
    );
    assert!(
        corrupt_message(&one_tensor(vec![16, 2], 3, vec![0; 20], None))
            .contains("whole number of 32-value Q4_1 blocks")
    );
    // Types this reader does not read, named with the tensor.
    match parse_error(&one_tensor(vec![256], 12, vec![0; 144], None)) {
        VizError::UnsupportedDtype { name, dtype } => assert_eq!(
            (name.as_str(), dtype.as_str()),
            ("w", "Q4_K (ggml type 12)")
        ),
        other => panic!("expected UnsupportedDtype, got {other:?}"),
    }
    assert!(
        matches!(parse_error(&one_tensor(vec![32], 1234, q8.clone(), None)), VizError::UnsupportedDtype { dtype, .. } if dtype == "ggml type 1234")
    );
    // Offsets: misaligned, past the end, beyond any file.
    assert!(
        corrupt_message(&one_tensor(vec![32], 8, q8.clone(), Some(4)))
            .contains("not a multiple of the alignment 32")
    );
    assert!(
        corrupt_message(&one_tensor(vec![32], 8, q8.clone(), Some(1 << 30)))
            .contains("runs past the end")
    );
    assert!(
        corrupt_message(&one_tensor(vec![32], 8, q8.clone(), Some(u64::MAX - 31))).contains("w")
    );
    assert!(
        corrupt_message(&one_tensor(vec![1 << 30, 1 << 20], 8, q8.clone(), None))
            .contains("runs past the end")
    );
    // Two tensors in the same place, or sharing bytes.
    let overlapping = GgufWriter::new()
        .raw_tensor(GgufWriterTensor {
            name: "a".into(),
            ne: vec![64],
            type_code: 8,
            data: q8.repeat(2),
            offset: Some(0),
        })
        .raw_tensor(GgufWriterTensor {
            name: "b".into(),
            ne: vec![32],
            type_code: 8,
            data: q8.clone(),
            offset: Some(32),
        })
        .to_bytes();
    assert!(corrupt_message(&overlapping).contains("overlap"));
    let same_name = GgufWriter::new()
        .tensor("w", &[32], GgmlType::Q8_0, q8.clone())
        .tensor("w", &[32], GgmlType::Q8_0, q8.clone())
        .to_bytes();
    assert!(corrupt_message(&same_name).contains("appears twice"));
    // A data section that does not start inside the file.
    let mut no_data = ok.clone();
    no_data.truncate(ok.len() - q8.len());
    assert!(corrupt_message(&no_data).contains("truncated"));
}

#[test]
fn every_truncation_of_a_valid_file_is_a_typed_error() {
    let (q4, _) = q4_1_block();
    let good = GgufWriter::new()
        .alignment(64)
        .kv("general.name", GgufValue::String("tiny".into()))
        .kv(
            "scores",
            GgufValue::Array(GgufValueType::F32, vec![GgufValue::F32(0.5); 7]),
        )
        .kv(
            "nested",
            GgufValue::Array(
                GgufValueType::Array,
                vec![GgufValue::Array(
                    GgufValueType::U16,
                    vec![GgufValue::U16(7)],
                )],
            ),
        )
        .tensor("norm", &[5], GgmlType::F32, f32_bytes(&[1.0; 5]))
        .tensor("w", &[2, 32], GgmlType::Q4_1, q4.repeat(2))
        .to_bytes();
    Gguf::parse(&good).expect("valid");
    for len in 0..good.len() {
        match Gguf::parse(&good[..len]) {
            Err(VizError::CorruptGguf(_)) => {}
            other => panic!(
                "cut at {len} of {}: expected CorruptGguf, got {other:?}",
                good.len()
            ),
        }
    }
}

/// As a safetensors file with a NaN is refused, so is a GGUF whose F32 tensor holds a NaN, or
/// whose Q8_0 scale or Q4_1 minimum is infinite: a typed error naming the tensor, never a
/// model that computes NaN. Finite ones still load.
#[test]
fn a_non_finite_value_scale_or_minimum_is_refused() {
    let (q8, _) = q8_0_block();
    let (q4, _) = q4_1_block();
    let file = |kind: GgmlType, shape: &[usize], data: Vec<u8>| {
        GgufWriter::new().tensor("w", shape, kind, data).to_bytes()
    };
    assert!(Gguf::parse(&file(GgmlType::F32, &[3], f32_bytes(&[1.0, 2.0, 3.0]))).is_ok());
    assert!(Gguf::parse(&file(GgmlType::Q8_0, &[32], q8.clone())).is_ok());
    assert!(Gguf::parse(&file(GgmlType::Q4_1, &[32], q4.clone())).is_ok());
    let mut nan_scale = q8.clone();
    nan_scale[..2].copy_from_slice(&f16_bytes(f32::INFINITY));
    let mut inf_minimum = q4.clone();
    inf_minimum[2..4].copy_from_slice(&f16_bytes(f32::NEG_INFINITY));
    for (kind, shape, data, block) in [
        (GgmlType::F32, vec![3], f32_bytes(&[1.0, f32::NAN, 3.0]), 1),
        (
            GgmlType::F16,
            vec![2],
            [f16_bytes(1.0), f16_bytes(f32::INFINITY)].concat(),
            1,
        ),
        (
            GgmlType::Q8_0,
            vec![64],
            [q8.clone(), nan_scale].concat(),
            1,
        ),
        (GgmlType::Q4_1, vec![32], inf_minimum, 0),
    ] {
        let message = corrupt_message(&file(kind, &shape, data));
        assert!(
            message.contains("tensor `w` has a non-finite value")
                && message.contains(&format!("block {block}")),
            "{kind:?}: {message}"
        );
    }
}
