//! One error type for the whole crate: every way a model, a file or a sentence can be wrong.

use thiserror::Error;

/// Everything that can go wrong between a sentence and a trace. Each variant says what a
/// person can do about it; none of them is ever raised as a panic.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum VizError {
    #[error("the text is empty: type a sentence to see the model work on it")]
    EmptyText,

    #[error("the text has no tokens the model can read after normalisation (it was only spaces or control characters)")]
    NoTokens,

    #[error("model file `{path}` was not found: {hint}")]
    MissingFile { path: String, hint: String },

    #[error("could not read `{path}`: {reason}")]
    Io { path: String, reason: String },

    #[error("the weights file is not valid safetensors ({0}); it may be truncated or corrupt, run the setup again")]
    CorruptWeights(String),

    #[error("the weights file is not valid GGUF ({0}); it may be truncated or corrupt")]
    CorruptGguf(String),

    #[error("tensor `{name}` is missing from the weights file")]
    MissingTensor { name: String },

    #[error("tensor `{name}` has shape {found:?} but the config expects {expected:?}")]
    ShapeMismatch { name: String, expected: Vec<usize>, found: Vec<usize> },

    #[error("tensor `{name}` has dtype {dtype}, which this loader cannot read")]
    UnsupportedDtype { name: String, dtype: String },

    #[error("the model config is invalid: {0}")]
    BadConfig(String),

    #[error("the tokenizer file is invalid: {0}")]
    BadTokenizer(String),

    #[error("unknown model `{0}`; known models: {1}")]
    UnknownModel(String, String),

    #[error("layer {layer} or head {head} is out of range (the model has {layers} layers and {heads} heads)")]
    OutOfRange { layer: usize, head: usize, layers: usize, heads: usize },

    #[error("the trace has no step named `{0}`")]
    NoSuchStep(String),

    #[error("this model has no language-model head, so it makes no next-token prediction")]
    NoLmHead,

    #[error("drawing failed: {0}")]
    Draw(String),

    #[error("GGUF version {0} is not supported: this reader reads GGUF version 3")]
    GgufVersion(u32),

    #[error("the GGUF metadata has no key `{key}`")]
    MissingMetadata { key: String },

    #[error("the GGUF metadata key `{key}` holds {found}, but {expected} is needed")]
    MetadataType { key: String, expected: String, found: String },
}

pub type Result<T> = std::result::Result<T, VizError>;
