//! One error type for the whole crate: every way a model, a file or a sentence can be wrong.
//!
//! Messages are shown in the page as they are, and many quote a file's contents (tensor names,
//! shapes, config values, parser messages); every such part is cut to a few hundred characters
//! by `clip` and `short_shape`, so a hostile or broken file cannot flood the page.

use thiserror::Error;

/// Everything that can go wrong between a sentence and a trace. Each variant says what a
/// person can do about it; none of them is ever raised as a panic.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum VizError {
    /// Training failed (a tensor operation of the trainer, or its settings).
    #[error("training: {0}")]
    Training(String),

    /// The GPU backend failed (no adapter, a refused device, a kernel's error, a readback):
    /// the caller falls back to the CPU.
    #[error("the GPU backend failed: {}", clip_message(.0))]
    Gpu(String),

    #[error("the text is empty: type a sentence to see the model work on it")]
    EmptyText,

    #[error("the text has no tokens the model can read after normalisation (it was only spaces or control characters)")]
    NoTokens,

    #[error("model file `{}` was not found: {}", clip(.path), clip_message(.hint))]
    MissingFile { path: String, hint: String },

    #[error("could not read `{}`: {}", clip(.path), clip_message(.reason))]
    Io { path: String, reason: String },

    #[error("the weights file is not valid safetensors ({}); it may be truncated or corrupt, run the setup again", clip_message(.0))]
    CorruptWeights(String),

    #[error("the weights file is not valid GGUF ({}); it may be truncated or corrupt", clip_message(.0))]
    CorruptGguf(String),

    #[error("tensor `{}` is missing from the weights file", clip(.name))]
    MissingTensor { name: String },

    #[error("tensor `{}` has shape {} but the config expects {}", clip(.name), short_shape(.found), short_shape(.expected))]
    ShapeMismatch {
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },

    #[error("tensor `{}` has dtype {}, which this loader cannot read", clip(.name), clip(.dtype))]
    UnsupportedDtype { name: String, dtype: String },

    #[error("the model config is invalid: {}", clip_message(.0))]
    BadConfig(String),

    /// A word that should be one token (an answer to score) is several, or none.
    #[error("{:?} is {tokens} tokens for this model's vocabulary, not one", clip(.text))]
    NotOneToken { text: String, tokens: usize },

    /// A change asked of a pass (a head or layer switched off, a run patched in) that does
    /// not fit the model or the text.
    #[error("cannot change the pass so: {}", clip_message(.0))]
    BadEdit(String),

    /// One field of a config is wrong: missing, of the wrong type, out of range, or not what
    /// the weights hold. `field` is spelled as in `file` (`num_hidden_layers` in a BERT
    /// `config.json`, `n_layers` in this project's `ModelConfig`); `value` is the offending
    /// value as written (None when the field is missing).
    #[error("the model config is invalid: {}: {}{} {}", clip(.file), clip(.field), shown_value(.value), clip_message(.problem))]
    ConfigField {
        file: String,
        field: String,
        value: Option<String>,
        problem: String,
    },

    #[error("the tokenizer file is invalid: {}", clip_message(.0))]
    BadTokenizer(String),

    #[error("unknown model `{}`; known models: {}", clip(.0), clip(.1))]
    UnknownModel(String, String),

    #[error("layer {layer} or head {head} is out of range (the model has {layers} layers and {heads} heads)")]
    OutOfRange {
        layer: usize,
        head: usize,
        layers: usize,
        heads: usize,
    },

    #[error("token {index} is out of range (the sentence has {tokens} tokens)")]
    NoSuchToken { index: usize, tokens: usize },

    #[error("the trace has no step named `{}`", clip(.0))]
    NoSuchStep(String),

    #[error("this model has no language-model head, so it makes no next-token prediction")]
    NoLmHead,

    #[error("the pass gave a number that is not finite (infinite or NaN) in {0}: the model's weights are too large or broken, so no view of this pass would mean anything")]
    NotFinite(String),

    #[error("this model has no cross-attention: only an encoder-decoder's decoder reads an encoder's output")]
    NoCrossAttention,

    #[error("this is not an encoder-decoder: it has no source to translate")]
    NotEncoderDecoder,

    #[error("this model's vocabulary has no token for {}: it can only spell {allowed}", clip(.dropped))]
    Unspellable { dropped: String, allowed: String },

    #[error("the sampling setting `{setting}` = {value} {problem}")]
    BadSampling {
        setting: String,
        value: String,
        problem: String,
    },

    #[error("this text has {tokens} tokens, which fill the {context} tokens that can be traced here: no token can be added")]
    ContextFull { tokens: usize, context: usize },

    #[error("drawing failed: {}", clip_message(.0))]
    Draw(String),

    #[error("token id {id} is outside the vocabulary of {vocab_size} tokens")]
    UnknownTokenId { id: u32, vocab_size: usize },

    #[error("GGUF version {0} is not supported: this reader reads GGUF version 3")]
    GgufVersion(u32),

    #[error("the GGUF metadata has no key `{}`", clip(.key))]
    MissingMetadata { key: String },

    #[error("the GGUF metadata key `{}` holds {}, but {} is needed", clip(.key), clip(.found), clip(.expected))]
    MetadataType {
        key: String,
        expected: String,
        found: String,
    },
}

pub type Result<T> = std::result::Result<T, VizError>;

/// The most characters of one quoted name or value a message shows.
pub const MAX_QUOTED_CHARS: usize = 100;

/// The most characters of a reason a message gives (a parser's message, which may itself
/// quote the file).
pub const MAX_REASON_CHARS: usize = 200;

/// The most dimensions of a shape a message lists.
pub const MAX_SHOWN_DIMS: usize = 8;

/// `text` itself when short; else its first `max` characters and how long it was.
fn clip_to(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// A name or value quoted from a file, cut to `MAX_QUOTED_CHARS`.
pub fn clip(text: &str) -> String {
    clip_to(text, MAX_QUOTED_CHARS)
}

/// A reason, cut to `MAX_REASON_CHARS`.
pub fn clip_message(text: &str) -> String {
    clip_to(text, MAX_REASON_CHARS)
}

/// A shape as `[a, b, c]`; beyond `MAX_SHOWN_DIMS` dimensions, the first ones and the count.
pub fn short_shape(shape: &[usize]) -> String {
    if shape.len() <= MAX_SHOWN_DIMS {
        return format!("{shape:?}");
    }
    let first: Vec<String> = shape[..MAX_SHOWN_DIMS]
        .iter()
        .map(usize::to_string)
        .collect();
    format!("[{}, … ({} dims)]", first.join(", "), shape.len())
}

/// ` = value,` for a config field that has a value (clipped), nothing for a missing one.
fn shown_value(value: &Option<String>) -> String {
    value
        .as_deref()
        .map(|v| format!(" = {},", clip(v)))
        .unwrap_or_default()
}

impl VizError {
    /// A `ConfigField` error: `field` of `file` holds `value` (as written) and `problem` says why
    /// that is wrong (`must be at most 4096`, `but the weights hold 6 layers`).
    pub fn config_field(
        file: &str,
        field: &str,
        value: impl ToString,
        problem: impl Into<String>,
    ) -> Self {
        VizError::ConfigField {
            file: file.into(),
            field: field.into(),
            value: Some(value.to_string()),
            problem: problem.into(),
        }
    }

    /// The config field this error is about, if it is about one.
    pub fn config_field_name(&self) -> Option<&str> {
        match self {
            VizError::ConfigField { field, .. } => Some(field),
            _ => None,
        }
    }
}
