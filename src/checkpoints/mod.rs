//! Real models: each file maps one checkpoint's config and tensor names onto `ModelConfig`
//! and `Weights`. `generic` is this project's own format; `fixture` builds random-weight
//! models for tests only. `catalog` lists the models the CLI and the page know (models.json).

pub mod catalog;
pub mod config_json;
pub mod fixture;
pub mod generic;
pub mod lecture;
pub mod minilm;
pub mod smollm2;

#[cfg(not(target_arch = "wasm32"))]
mod files;
#[cfg(not(target_arch = "wasm32"))]
pub use files::{load_dir, load_named, model_dir, read_file, WeightPrecision};

/// Models the CLI and the page know by name: the catalog's (`catalog::names()`), as a slice.
pub static KNOWN_MODELS: catalog::KnownModels = catalog::KnownModels;

/// Where the set-up step puts SmolLM2's GGUF file, under `models/smollm2-135m/`.
pub const SMOLLM2_FILE: &str = "model.Q4_1.gguf";
