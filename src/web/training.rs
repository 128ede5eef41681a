//! The page's trainer (the `train` feature: its own wasm file, loaded by a worker so the page
//! stays responsive): a `TrainingRun` steps the trainer's `PageRun` a few steps at a time when
//! asked, measures it and hands its files over.

use wasm_bindgen::prelude::*;

use super::js::{js_err, to_js};
use crate::train::in_page::{corpus_files, PageRun, PageSettings};

fn settings_of(value: JsValue) -> Result<PageSettings, JsError> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| JsError::new(&format!("training settings: {e}")))
}

/// Every setting out of range as `[{ field, message }]` (empty when all are fine).
#[wasm_bindgen]
pub fn check_training_settings(settings: JsValue) -> Result<JsValue, JsError> {
    to_js(&settings_of(settings)?.check())
}

/// The settings of preset `name` ("previous-token", "induction", "stories"), or undefined.
#[wasm_bindgen]
pub fn training_preset(name: &str) -> Result<JsValue, JsError> {
    match PageSettings::preset(name) {
        Some(settings) => to_js(&settings),
        None => Ok(JsValue::UNDEFINED),
    }
}

/// Starts `count` threads (2 to 64) that compute the parts of each step's batch side by side
/// (`TrainingRun`'s `threads`) while the worker waits: the threaded trainer only, once.
#[cfg(feature = "threads")]
#[wasm_bindgen]
pub async fn start_training_threads(count: usize) -> Result<usize, JsError> {
    crate::model::threads::start_outside(count)
        .await
        .map_err(|e| JsError::new(&e))
}

/// The corpus files the text task reads, in order (beside the page in `corpus/moby-dick/`).
#[wasm_bindgen]
pub fn training_corpus_files() -> Vec<String> {
    corpus_files()
}

#[wasm_bindgen]
pub struct TrainingRun {
    run: PageRun,
}

#[wasm_bindgen]
impl TrainingRun {
    /// A fresh run of `settings` (refused, every bad setting named, before anything is
    /// allocated). `chapters`: the texts of `training_corpus_files`, in that order, for the
    /// text task (undefined for the others). `threads`: the parts each step's batch is cut
    /// into, one a thread (`start_training_threads`; undefined: 1, the whole batch).
    #[wasm_bindgen(constructor)]
    pub fn new(
        settings: JsValue,
        chapters: Option<Vec<String>>,
        threads: Option<usize>,
    ) -> Result<TrainingRun, JsError> {
        let run = PageRun::new(settings_of(settings)?, chapters.as_deref()).map_err(js_err)?;
        Ok(TrainingRun {
            run: run.on_threads(threads.unwrap_or(1)),
        })
    }

    /// The parts each step's batch is cut into, one a thread.
    pub fn threads(&self) -> usize {
        self.run.threads()
    }

    /// Up to `steps` more steps: `[{ step, loss, grad_norm, learning_rate }]`.
    pub fn train(&mut self, steps: usize) -> Result<JsValue, JsError> {
        to_js(&self.run.train(steps).map_err(js_err)?)
    }

    /// `{ step, held_out, previous, induction, first, copy_loss }`: every head's scores.
    pub fn evaluate(&self) -> Result<JsValue, JsError> {
        to_js(&self.run.evaluate().map_err(js_err)?)
    }

    /// The next batch's `{ loss, inputs, gradients }` without an update (the parity test).
    pub fn gradients(&mut self) -> Result<JsValue, JsError> {
        to_js(&self.run.gradients().map_err(js_err)?)
    }

    /// The model's config and vocabulary (JSON texts) as `{ config, tokenizer }`.
    pub fn files(&self) -> Result<JsValue, JsError> {
        let exported = self.run.export().map_err(js_err)?;
        to_js(&serde_json::json!({ "config": exported.config, "tokenizer": exported.tokenizer }))
    }

    /// The weights as safetensors bytes.
    pub fn weights(&self) -> Result<Vec<u8>, JsError> {
        Ok(self.run.export().map_err(js_err)?.weights)
    }

    pub fn step(&self) -> usize {
        self.run.done
    }

    pub fn steps(&self) -> usize {
        self.run.settings.steps
    }

    pub fn parameters(&self) -> usize {
        self.run.parameter_count()
    }

    pub fn tokens_per_step(&self) -> usize {
        self.run.tokens_per_step()
    }
}
