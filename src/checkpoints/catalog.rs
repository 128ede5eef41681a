//! The models the CLI and the page know, in one list: `models.json` beside this file. Rust
//! reads it here (compiled in); the page reads the same file as a JSON module
//! (`www/js/models.js`, through `www/js/models.json`, a link to it), so a model is added,
//! renamed or resized in one place. Each entry: the short name, what kind of model it is, the
//! engine's reader for its files, the page's words for it (short, title, description), its
//! files with their sizes (what the page downloads), and for some: its post-LN / pre-LN twin,
//! whether its files are committed (`trained/`), the example text and the characters it
//! accepts, the full-precision weights the CLI reads by default, and whether it is the default.

use std::sync::OnceLock;

use serde::Deserialize;

use super::{lecture, minilm, smollm2};
use crate::error::{Result, VizError};
use crate::Transformer;

/// The catalog as it is stored.
pub const MODELS_JSON: &str = include_str!("models.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Encoder,
    Decoder,
    EncoderDecoder,
}

/// Which of the engine's readers builds the model from its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reader {
    /// This project's own format (`lecture::from_bytes`): config, vocabulary, safetensors.
    Lecture,
    /// A BERT checkpoint as Hugging Face ships it (`minilm::from_bytes`).
    Minilm,
    /// One GGUF file holding config, vocabulary and weights (`smollm2::from_gguf_file`).
    Smollm2,
}

/// One file the page downloads: its path under the page's root (`models/NAME/...`) and size.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub path: String,
    pub bytes: u64,
}

/// A model's files by role; a model without a config or tokenizer file (a GGUF holds them)
/// passes "" for it to its reader.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Files {
    #[serde(default)]
    pub config: Option<ModelFile>,
    #[serde(default)]
    pub tokenizer: Option<ModelFile>,
    pub weights: ModelFile,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    /// The model the page and the CLI open when none is named (exactly one).
    #[serde(default)]
    pub default: bool,
    pub kind: Kind,
    pub reader: Reader,
    /// The picker's label.
    pub short: String,
    /// The checkpoint's own name, in sentences.
    pub title: String,
    pub description: String,
    pub files: Files,
    /// The model trained alongside it that differs only in where its norms sit.
    #[serde(default)]
    pub twin: Option<String>,
    /// In the repository's `trained/NAME/` rather than fetched into `models/NAME/`.
    #[serde(default)]
    pub committed: bool,
    /// The page's text for it when chosen, if it cannot read every sentence.
    #[serde(default)]
    pub example: Option<String>,
    /// A regular expression (JavaScript's and the `regex` crate's) for the text it reads whole.
    #[serde(default)]
    pub accepts: Option<String>,
    /// The shortest and longest text (in characters) it was trained on, when a longer one is
    /// past what it learned (the page says so).
    #[serde(default)]
    pub trained_lengths: Option<[usize; 2]>,
    /// The original f32 weights (`models/NAME/...`), which the CLI reads unless `--f16`; the
    /// page downloads `files.weights` (f16).
    #[serde(default)]
    pub full_precision: Option<String>,
}

/// Every model, in the picker's order.
pub fn catalog() -> &'static [Model] {
    static CATALOG: OnceLock<Vec<Model>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        serde_json::from_str(MODELS_JSON)
            .expect("src/checkpoints/models.json parses (a unit test checks it)")
    })
}

/// Every model's name, in the catalog's order.
pub fn names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| catalog().iter().map(|m| m.name.as_str()).collect())
}

/// The model called `name`, if the catalog has it.
pub fn named(name: &str) -> Option<&'static Model> {
    catalog().iter().find(|m| m.name == name)
}

/// The model opened when none is named.
pub fn default_model() -> &'static Model {
    catalog()
        .iter()
        .find(|m| m.default)
        .expect("one model is the default (a unit test checks it)")
}

/// `names()` joined, for messages ("lecture-post-ln, lecture-pre-ln, ...").
pub fn known() -> String {
    names().join(", ")
}

/// Builds model `name` from its files' contents (what the page fetches, or the CLI reads); a
/// file the model does not have is "".
pub fn build(
    name: &str,
    config_json: &str,
    tokenizer_json: &str,
    weights: Vec<u8>,
) -> Result<Transformer> {
    let model = named(name).ok_or_else(|| VizError::UnknownModel(name.into(), known()))?;
    match model.reader {
        Reader::Lecture => lecture::from_bytes(name, config_json, tokenizer_json, &weights),
        Reader::Minilm => minilm::from_bytes(name, config_json, tokenizer_json, &weights),
        Reader::Smollm2 => smollm2::from_gguf_file(name, weights),
    }
}

/// Names the catalog's models as a slice of names (`KNOWN_MODELS.join(", ")`).
#[derive(Debug, Clone, Copy)]
pub struct KnownModels;

impl std::ops::Deref for KnownModels {
    type Target = [&'static str];

    fn deref(&self) -> &Self::Target {
        names()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_parses_and_exactly_one_is_the_default() {
        let models: Vec<Model> = serde_json::from_str(MODELS_JSON).expect("models.json parses");
        assert_eq!(models, catalog());
        assert!(!models.is_empty());
        let defaults: Vec<&str> = models
            .iter()
            .filter(|m| m.default)
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(
            defaults,
            [lecture::POST_LN],
            "exactly one default: the lecture decoder"
        );
        assert_eq!(default_model().name, lecture::POST_LN);
    }

    #[test]
    fn names_are_unique_and_files_sit_under_their_model() {
        for (i, m) in catalog().iter().enumerate() {
            assert!(
                !catalog()[..i].iter().any(|other| other.name == m.name),
                "{} twice",
                m.name
            );
            let files = [
                m.files.config.as_ref(),
                m.files.tokenizer.as_ref(),
                Some(&m.files.weights),
            ];
            for f in files.into_iter().flatten() {
                assert!(
                    f.path.starts_with(&format!("models/{}/", m.name)),
                    "{}: {}",
                    m.name,
                    f.path
                );
                assert!(f.bytes > 0, "{}: {} has no size", m.name, f.path);
            }
            if let Some(path) = &m.full_precision {
                assert!(
                    path.starts_with(&format!("models/{}/", m.name)),
                    "{}: {path}",
                    m.name
                );
            }
            assert!(!m.short.is_empty() && !m.title.is_empty() && !m.description.is_empty());
        }
        assert_eq!(&*KnownModels, names());
        assert_eq!(names().len(), catalog().len());
    }

    #[test]
    fn twins_name_each_other_and_examples_are_accepted() {
        for m in catalog() {
            if let Some(twin) = &m.twin {
                let other = named(twin).unwrap_or_else(|| panic!("{}: no twin {twin}", m.name));
                assert_eq!(other.twin.as_deref(), Some(m.name.as_str()));
                assert_eq!(other.kind, m.kind);
            }
            if let Some(accepts) = &m.accepts {
                let re = regex::Regex::new(accepts).expect("accepts is a regular expression");
                let example = m
                    .example
                    .as_deref()
                    .expect("a model that refuses text has an example");
                assert!(
                    re.is_match(example),
                    "{}: its example {example:?} is refused",
                    m.name
                );
            }
        }
    }

    #[test]
    fn readers_match_the_engine_s_own_lists() {
        for m in catalog() {
            assert_eq!(
                m.committed,
                lecture::ALL.contains(&m.name.as_str()),
                "{}",
                m.name
            );
            assert_eq!(m.reader == Reader::Lecture, m.committed, "{}", m.name);
            if m.reader == Reader::Smollm2 {
                assert!(m.files.weights.path.ends_with(super::super::SMOLLM2_FILE));
                assert!(m.files.config.is_none() && m.files.tokenizer.is_none());
            }
        }
        assert_eq!(
            named(lecture::REVERSE).map(|m| m.kind),
            Some(Kind::EncoderDecoder)
        );
        assert!(named("gpt-17").is_none());
        assert!(matches!(
            build("gpt-17", "", "", Vec::new()),
            Err(VizError::UnknownModel(..))
        ));
    }
}
