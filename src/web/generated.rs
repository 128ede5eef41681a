//! A generation's next token as the page hands it on: drawn on the CPU
//! (`Viz::draw_next_token`), its pass run there or on the GPU (`GpuSession::generate`).

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::analysis::generation::GeneratedToken;

/// A generated token as the page shows it: the token drawn (`draw_token`, as the CLI draws
/// it) and the text so far.
#[derive(Serialize)]
pub(crate) struct Generated {
    #[serde(flatten)]
    pub(super) token: GeneratedToken,
    /// The text so far: the prompt and every token generated since `start_generation`.
    pub(super) text: String,
}

/// The token a generation adds next, drawn from the current prediction
/// (`Viz::draw_next_token`), with the tokens and text it makes: its pass is the GPU's
/// (`GpuSession::generate`).
#[wasm_bindgen]
pub struct NextToken {
    pub(crate) encoding: crate::tokenize::Encoding,
    pub(crate) text: String,
    pub(crate) generated: Generated,
}

/// The text a generation started from, and its token count.
pub(super) struct Prompt {
    pub(super) text: String,
    pub(super) tokens: usize,
}
