//! Native file access: where the setup step puts each model and how to read it.

use std::path::{Path, PathBuf};

use crate::error::{Result, VizError};
use crate::transformer::Transformer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightPrecision {
    /// `model.safetensors` as shipped (f32).
    F32,
    /// `model.f16.safetensors`, made by the setup step (what the browser loads).
    F16,
}

/// `models/NAME` under the given root (the repository's `models/` by default).
pub fn model_dir(root: &Path, name: &str) -> PathBuf {
    root.join(name)
}

pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => VizError::MissingFile {
            path: path.display().to_string(),
            hint: "run `scripts/fetch-models.sh` (or either of the README's set-up commands) to fetch the model files".into(),
        },
        _ => VizError::Io { path: path.display().to_string(), reason: e.to_string() },
    })
}

fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read_file(path)?).map_err(|_| VizError::Io {
        path: path.display().to_string(),
        reason: "not UTF-8 text".into(),
    })
}

/// Loads a model the setup step prepared, by its short name.
pub fn load_named(root: &Path, name: &str, precision: WeightPrecision) -> Result<Transformer> {
    let dir = model_dir(root, name);
    match name {
        "minilm-l6" => {
            let weights = match precision {
                WeightPrecision::F32 => "model.safetensors",
                WeightPrecision::F16 => "model.f16.safetensors",
            };
            super::minilm::from_bytes(
                name,
                &read_text(&dir.join("config.json"))?,
                &read_text(&dir.join("tokenizer.json"))?,
                &read_file(&dir.join(weights))?,
            )
        }
        "smollm2-135m" => {
            super::smollm2::from_gguf_file(name, read_file(&dir.join(super::SMOLLM2_FILE))?)
        }
        // Committed with the repository rather than fetched: `trained/NAME/`.
        lecture if super::lecture::ALL.contains(&lecture) => {
            let dir = Path::new(super::lecture::TRAINED_DIR).join(lecture);
            super::lecture::from_bytes(
                name,
                &read_text(&dir.join("config.json"))?,
                &read_text(&dir.join("tokenizer.json"))?,
                &read_file(&dir.join("model.safetensors"))?,
            )
        }
        other => Err(VizError::UnknownModel(
            other.into(),
            super::KNOWN_MODELS.join(", "),
        )),
    }
}
