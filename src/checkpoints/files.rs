//! Native file access: where the setup step puts each model and how to read it.

use std::path::{Path, PathBuf};

use super::catalog::{self, ModelFile};
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

/// Loads a model the setup step prepared (or the repository holds), by its short name: the
/// files the catalog lists, read natively. `models/NAME/FILE` in the catalog is
/// `root/NAME/FILE` here, or `trained/NAME/FILE` for a model committed with the repository;
/// with `F32`, the full-precision weights where the catalog names them.
pub fn load_named(root: &Path, name: &str, precision: WeightPrecision) -> Result<Transformer> {
    let model = catalog::named(name)
        .ok_or_else(|| VizError::UnknownModel(name.into(), catalog::known()))?;
    let base = if model.committed {
        Path::new(super::lecture::TRAINED_DIR)
    } else {
        root
    };
    let local = |path: &str| base.join(path.strip_prefix("models/").unwrap_or(path));
    let text = |file: Option<&ModelFile>| match file {
        Some(f) => read_text(&local(&f.path)),
        None => Ok(String::new()), // in the weights' file (GGUF)
    };
    let weights = match (precision, &model.full_precision) {
        (WeightPrecision::F32, Some(path)) => path.as_str(),
        _ => model.files.weights.path.as_str(),
    };
    let config = text(model.files.config.as_ref())?;
    let tokenizer = text(model.files.tokenizer.as_ref())?;
    catalog::build(name, &config, &tokenizer, read_file(&local(weights))?)
}

/// A model in the project's own format from the folder `dir` (config.json, tokenizer.json,
/// model.safetensors: what the trainers write), named after the folder.
pub fn load_dir(dir: &Path) -> Result<Transformer> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    super::lecture::from_bytes(
        &name,
        &read_text(&dir.join("config.json"))?,
        &read_text(&dir.join("tokenizer.json"))?,
        &read_file(&dir.join("model.safetensors"))?,
    )
}
