//! Shared helpers for the integration tests: where the model files and the Python reference
//! live, and how to call the reference.
#![allow(dead_code)]

pub mod passes;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::Transformer;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn models_dir() -> PathBuf {
    root().join("models")
}

pub fn minilm_dir() -> PathBuf {
    models_dir().join("minilm-l6")
}

/// The real MiniLM model, loaded once per test binary. Panics with the fix if it is absent.
pub fn minilm() -> &'static Transformer {
    static MODEL: OnceLock<Transformer> = OnceLock::new();
    MODEL.get_or_init(|| {
        load_named(&models_dir(), "minilm-l6", WeightPrecision::F32).unwrap_or_else(|e| {
            panic!("{e}\n(run scripts/fetch-models.sh first; the README's test command does)")
        })
    })
}

pub fn minilm_f16() -> Transformer {
    load_named(&models_dir(), "minilm-l6", WeightPrecision::F16).unwrap_or_else(|e| panic!("{e}"))
}

/// The Python of the reference environment: `TVIZ_PYTHON` when set, else the checkout's
/// `.venv` (made by scripts/test.sh's set-up, `ensure_python_env` in scripts/lib.sh).
pub fn python() -> PathBuf {
    if let Ok(p) = std::env::var("TVIZ_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = root().join(".venv/bin/python");
    assert!(venv.exists(), "no Python reference environment at {}: run scripts/test.sh, whose set-up makes it (ensure_python_env in scripts/lib.sh)", venv.display());
    venv
}

/// A GPU adapter's context for the GPU tests (on a machine without a GPU, lavapipe).
pub fn gpu_context() -> transformer_viz::gpu::GpuContext {
    std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    pollster::block_on(transformer_viz::gpu::GpuContext::new()).unwrap_or_else(|e| {
        panic!("{e}: the GPU tests need a Vulkan adapter; on Debian `apt-get install mesa-vulkan-drivers libvulkan1` gives lavapipe (the README's test command installs it)")
    })
}

/// Runs tests/reference/reference.py in `mode` on `input` (JSON) and parses its output.
pub fn reference(mode: &str, model_dir: &Path, input: &serde_json::Value) -> serde_json::Value {
    let mut child = Command::new(python())
        .arg(root().join("tests/reference/reference.py"))
        .arg(mode)
        .arg(model_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the Python reference");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("run the Python reference");
    assert!(out.status.success(), "the Python reference failed");
    serde_json::from_slice(&out.stdout).expect("reference output is JSON")
}

/// Largest absolute difference between a nested JSON array and a flat f32 slice.
pub fn max_abs_diff(json: &serde_json::Value, values: &[f32]) -> f64 {
    let mut flat = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
            other => panic!("unexpected JSON value {other}"),
        }
    }
    walk(json, &mut flat);
    assert_eq!(
        flat.len(),
        values.len(),
        "reference and engine disagree on the number of values"
    );
    flat.iter()
        .zip(values)
        .map(|(a, &b)| (a - b as f64).abs())
        .fold(0.0, f64::max)
}

/// Sentences that exercise the tokenizer and the model: punctuation, case, numbers,
/// accents, CJK, emoji, combining marks, right-to-left text, control characters.
pub const SENTENCES: &[&str] = &[
    "The cat sat on the mat.",
    "Attention is all you need, or so the paper claims!",
    "The quick brown fox jumps over the lazy dog; the dog didn't mind.",
    "Transformers process every token at once: 12 heads x 6 layers = 72 patterns.",
    "Café naïve résumé — Zoë's coöperation in São Paulo.",
    "東京は日本の首都です。 I love 北京!",
    "Emoji 🎉🚀 and a family 👨‍👩‍👧 walk into a bar.",
    "שלום עולם and مرحبا بالعالم side by side.",
    "Tabs\tand\nnewlines\r\nand a bell\u{7} and a zero\u{0} width\u{200b}space.",
    "e\u{301}le\u{300}ve combining marks",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "[CLS] written by hand, and a [MASK] token in the middle [SEP] too.",
];

/// The real SmolLM2-135M, loaded once per test binary; `None` (after saying SKIPPED) when the
/// set-up has not fetched it, except that `TVIZ_REQUIRE_SMOLLM2=1` (the test command) makes
/// its absence a failure.
pub fn smollm2() -> Option<&'static Transformer> {
    static MODEL: OnceLock<Result<Transformer, String>> = OnceLock::new();
    let loaded = MODEL.get_or_init(|| {
        load_named(&models_dir(), "smollm2-135m", WeightPrecision::F32).map_err(|e| e.to_string())
    });
    match loaded {
        Ok(m) => Some(m),
        Err(e) if std::env::var("TVIZ_REQUIRE_SMOLLM2").is_ok_and(|v| v == "1") => panic!("{e}"),
        Err(e) => {
            eprintln!("SKIPPED: SmolLM2 is not available ({e}); run scripts/fetch-models.sh");
            None
        }
    }
}
