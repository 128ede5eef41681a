//! `Viz`: one model in the page, its current pass (computed on the CPU here, or installed
//! from the GPU session), a second sentence to compare, and a generation under way.

use wasm_bindgen::prelude::*;

use super::generated::{Generated, NextToken, Prompt};
use super::gpu_session::GpuPass;
use super::js::{js_err, now_ms, to_js};
use super::summary::{CompareSummary, NormInfo, StepInfo, Summary, TranslationSummary};
use crate::analysis::ablation::{edits_for, Switch};
use crate::analysis::generation::draw_token;
use crate::analysis::sampling::{Sampler, SamplingSettings};
use crate::checkpoints::catalog;
use crate::error::VizError;
use crate::explain::step_text;
use crate::model::backend::on_cpu;
use crate::model::cpu::Cpu;
use crate::model::kv_cache::KvCache;
use crate::model::{threads, ModelConfig};
use crate::trace::{Readback, Trace};
use crate::transformer::{Decoding, Keep, Kind, PassRequest, Transformer};

#[wasm_bindgen]
pub struct Viz {
    /// Shared with the GPU session (`gpu_session`), which computes on the same weights.
    pub(super) model: std::rc::Rc<Transformer>,
    /// The most tokens a pass takes (`PAGE_TOKENS`, or the model's context if shorter).
    pub(super) limit: usize,
    /// The pass the views draw.
    pub(super) pass: CurrentPass,
    /// The CPU's pass that checks a GPU pass (`largest_difference`).
    check: GpuCheck,
    /// The seeded random stream and the prompt of the generation under way.
    generation: Option<(Sampler, Prompt)>,
    /// A second sentence's pass, to compare with the first (same model, same weights).
    pub(super) compare: Option<Trace>,
    /// The summary's `steps` as last sent, and a hash of what they said (`steps_js`).
    steps_sent: std::cell::RefCell<Option<(u64, JsValue)>>,
    /// Parts switched off (`set_switches`): the views draw the pass without them.
    pub(super) switches: Vec<Switch>,
    /// The pass as trained, beside the changed one the views draw, while parts are off.
    pub(super) intact: Option<Trace>,
    /// The last patching sweep (`Viz::patch_sweep`), under way or done.
    pub(super) patch: std::cell::RefCell<Option<super::patch_sweep::PatchState>>,
}

/// The pass the views draw, computed here on the CPU or installed from the GPU session, and
/// what the next pass continues from.
#[derive(Default)]
pub(super) struct CurrentPass {
    pub(super) trace: Option<Trace>,
    /// A causal model's keys and values of `trace`'s tokens, when the CPU computed it.
    cache: KvCache,
    /// Tokens the pass took from the one before.
    reused: usize,
    /// The tokens and bytes of the GPU's KV cache when the pass is a GPU's (`install_pass`).
    device_cache: Option<(usize, usize)>,
    /// An encoder-decoder's output, decoding steps and whether it ended.
    translation: Option<Decoding>,
    /// The next `set_text` computes even for unchanged tokens (`recompute_next`).
    recompute: bool,
}

impl CurrentPass {
    /// The tokens and bytes the pass's KV cache holds, on whichever device computed it.
    fn cached(&self) -> (usize, usize) {
        self.device_cache
            .unwrap_or((self.cache.len(), self.cache.bytes()))
    }
}

/// A causal model's last CPU pass computed to check a GPU pass, and its KV cache: the next
/// check continues it.
#[derive(Default)]
struct GpuCheck {
    trace: Option<Trace>,
    cache: KvCache,
}

/// The most tokens the page traces. The trace keeps every layer's attention weights for the
/// views: SmolLM2's 30 layers of 9 heads at 512 tokens are 283 MB of them, at its full context
/// of 8,192 tokens they would be 72 GB. MiniLM's context is 512.
pub const PAGE_TOKENS: usize = 512;

impl Viz {
    fn of(model: Transformer) -> Viz {
        let limit = model.config.context.min(PAGE_TOKENS);
        Viz {
            model: std::rc::Rc::new(model),
            limit,
            pass: CurrentPass::default(),
            check: GpuCheck::default(),
            generation: None,
            compare: None,
            steps_sent: Default::default(),
            switches: Vec::new(),
            intact: None,
            patch: Default::default(),
        }
    }
}

#[wasm_bindgen]
impl Viz {
    /// Builds the model from its files' contents; `name` is the model's short name.
    #[wasm_bindgen(constructor)]
    pub fn new(
        name: &str,
        config_json: &str,
        tokenizer_json: &str,
        weights: Vec<u8>,
    ) -> Result<Viz, JsError> {
        let model = catalog::build(name, config_json, tokenizer_json, weights).map_err(js_err)?;
        Ok(Viz::of(model))
    }

    /// Builds a model in the project's own format that the catalog does not list (one the
    /// page's Training section trained), named `name`.
    pub fn trained(
        name: &str,
        config_json: &str,
        tokenizer_json: &str,
        weights: Vec<u8>,
    ) -> Result<Viz, JsError> {
        let model =
            crate::checkpoints::lecture::from_bytes(name, config_json, tokenizer_json, &weights)
                .map_err(js_err)?;
        Ok(Viz::of(model))
    }

    /// Whether the model reads `text` whole in one pass: no token cut off at the page's limit
    /// (`PAGE_TOKENS`, or the model's context if shorter).
    pub fn fits(&self, text: &str) -> Result<bool, JsError> {
        let encoding = self.model.encode_within(text, self.limit).map_err(js_err)?;
        Ok(encoding.truncated.is_none())
    }

    /// The model's config (layers, heads, widths, architecture choices).
    pub fn config(&self) -> Result<JsValue, JsError> {
        to_js::<ModelConfig>(&self.model.config)
    }

    /// How the model's tokenizer cuts text: "word-piece", "byte-bpe" or "bytes".
    pub fn tokenizer_kind(&self) -> Result<JsValue, JsError> {
        to_js(&self.model.tokenizer.kind())
    }

    /// Where the numbers are computed.
    pub fn backend(&self) -> String {
        match threads::threads() {
            1 => "CPU (WebAssembly)".into(),
            n => format!("CPU (WebAssembly, {n} threads)"),
        }
    }

    /// How many threads compute a pass: those of the threaded build's pool (`start_threads`),
    /// 1 in the plain build.
    pub fn threads(&self) -> usize {
        threads::threads()
    }

    /// The traced pass on `encoding` on the CPU (`Transformer::pass`): a causal model's
    /// continues the last one through the KV cache; another model's starts from the first
    /// token, the last pass dropped first (WebAssembly memory never shrinks, so two traces
    /// alive at once would pin both for good).
    fn pass_on_cpu(
        &mut self,
        encoding: crate::tokenize::Encoding,
        text: &str,
    ) -> Result<(), JsError> {
        // The pass as trained continues the last one as trained (the cache holds its keys and
        // values); a changed pass is dropped first.
        let mut previous = match self.intact.take() {
            Some(intact) => {
                self.pass.trace = None;
                Some(intact)
            }
            None => self.pass.trace.take(),
        };
        if self.model.kind() != Kind::Causal {
            previous = None;
        }
        let switched = (!self.switches.is_empty()).then(|| encoding.clone());
        let request =
            PassRequest::tokens(encoding, text).continuing(previous.as_ref(), &mut self.pass.cache);
        let pass = on_cpu(self.model.pass(&Cpu, request));
        drop(previous);
        let mut pass = pass.map_err(js_err)?;
        // With parts switched off, the views draw the changed pass; the intact one stays
        // beside it for the comparison (and for the next pass to continue).
        if let Some(encoding) = switched {
            let intact = pass
                .trace
                .take()
                .ok_or_else(|| js_err(VizError::EmptyText))?;
            // When the change is refused (or its pass fails), the model as trained stays on
            // screen and the page says why.
            let edits = match edits_for(&intact, &self.switches) {
                Ok(edits) => edits,
                Err(e) => {
                    pass.trace = Some(intact);
                    self.install_cpu_pass(pass);
                    return Err(js_err(e));
                }
            };
            let request = PassRequest::tokens(encoding, text).editing(&edits);
            let changed = match on_cpu(self.model.pass(&Cpu, request)) {
                Ok(changed) => changed,
                Err(e) => {
                    pass.trace = Some(intact);
                    self.install_cpu_pass(pass);
                    return Err(js_err(e));
                }
            };
            pass.trace = changed.trace;
            pass.decoding = changed.decoding;
            self.intact = Some(intact);
        }
        self.install_cpu_pass(pass);
        Ok(())
    }

    /// Makes a pass computed here the current one.
    fn install_cpu_pass(&mut self, pass: crate::transformer::Pass) {
        // The page computes on the CPU now: no GPU pass to check.
        self.check = GpuCheck::default();
        self.pass = CurrentPass {
            reused: pass.reused,
            translation: pass.decoding.clone(),
            cache: std::mem::take(&mut self.pass.cache),
            recompute: self.pass.recompute,
            ..CurrentPass::default()
        };
        self.pass.trace = pass.trace;
    }

    /// Opens the GPU backend (WebGPU through wgpu) on this model: a promise of a
    /// `GpuSession`, rejected with the reason when the browser has no adapter or the device
    /// request fails (the page then stays on the CPU and says why).
    pub fn open_gpu(&self) -> js_sys::Promise {
        super::gpu_session::open(self.model.clone(), self.limit)
    }

    /// The largest differences between the current pass (a GPU's, `install_pass`) and the
    /// CPU's pass on the same tokens (computed here): `{attention, other, other_step, values,
    /// unread_steps}`, attention absolute, every other value relative, over the values that
    /// have come back from the device (`unread_steps` are still on it).
    /// A causal model's CPU pass continues the last one compared through its own KV cache
    /// (`Transformer::pass` on the CPU, every step recorded): typing a word or
    /// generating a token costs the comparison the new tokens only.
    pub fn largest_difference(&mut self) -> Result<JsValue, JsError> {
        let Viz {
            model, pass, check, ..
        } = self;
        let gpu = pass
            .trace
            .as_ref()
            .ok_or_else(|| js_err(VizError::EmptyText))?;
        // The GPU pass's own tokens (a generated token's pass has tokens its text, encoded
        // again, might not give).
        let encoding = crate::tokenize::Encoding {
            tokens: gpu.tokens.clone(),
            truncated: gpu.truncated.clone(),
        };
        // An encoder-decoder's pass starts again from its source text.
        let text = gpu.source.as_ref().map_or(&gpu.text, |source| &source.text);
        let previous = check.trace.take();
        let request = PassRequest::tokens(encoding, text)
            .continuing(previous.as_ref(), &mut check.cache)
            .keeping(Keep::Steps(Readback::Everything));
        let cpu = on_cpu(model.pass(&Cpu, request));
        drop(previous);
        let cpu = cpu.map_err(js_err)?.into_trace();
        let difference = cpu.largest_difference(gpu).map_err(js_err)?;
        if model.config.causal && gpu.source.is_none() {
            check.trace = Some(cpu);
        }
        to_js(&difference)
    }

    /// Makes a GPU pass the current one (the pass object is used up) and describes it as
    /// `set_text` does (a generated token's pass, as `generate_next` does). The CPU's KV
    /// cache is emptied: the GPU's keys and values stay on the device (its session's cache),
    /// so the next CPU pass of a causal model computes every token.
    pub fn install_pass(&mut self, pass: GpuPass) -> Result<JsValue, JsError> {
        let parts = pass.into_parts();
        if self.model.config.is_encoder_decoder() != parts.translation.is_some() {
            return Err(JsError::new("this pass is not of the model shown"));
        }
        // The CPU's cache is emptied with the rest of the last pass (a GPU pass is the model
        // as trained: the page switches parts off on the CPU).
        self.intact = None;
        self.pass = CurrentPass {
            trace: Some(parts.trace),
            reused: parts.reused,
            device_cache: Some(parts.cache),
            translation: parts.translation,
            ..CurrentPass::default()
        };
        self.summary(parts.milliseconds, true, parts.generated)
    }

    /// Makes the next `set_text` compute its pass again even for the same tokens (after a
    /// switch of backend); the current pass stays drawable until then.
    pub fn recompute_next(&mut self) {
        self.pass.recompute = true;
    }

    /// Runs the traced forward pass on `text` and describes the result: tokens, truncation,
    /// and every step's title, equation and shape (the values stay in wasm until drawn).
    /// Text that splits into the same tokens as before (a trailing space, say) keeps the
    /// last pass: its numbers would be the same.
    pub fn set_text(&mut self, text: &str) -> Result<JsValue, JsError> {
        let start = now_ms();
        let encoding = self.model.encode_within(text, self.limit).map_err(js_err)?;
        let unchanged = !self.pass.recompute
            && self
                .pass
                .trace
                .as_ref()
                .is_some_and(|last| match &last.source {
                    // An encoder-decoder's text is its source.
                    Some(source) => source.text == text,
                    None => last.tokens == encoding.tokens && last.truncated == encoding.truncated,
                });
        match self.pass.trace.as_mut() {
            Some(last) if unchanged => {
                if last.source.is_none() {
                    last.text = text.to_string();
                }
            }
            _ => self.pass_on_cpu(encoding, text)?,
        }
        self.pass.recompute = false;
        self.summary(now_ms() - start, !unchanged, None)
    }

    /// Starts generating from the current text: a new random stream from `seed` (a whole
    /// number below 2^53, so that JavaScript holds it exactly).
    pub fn start_generation(&mut self, seed: f64) -> Result<(), JsError> {
        let trace = self.current()?;
        if !self.model.config.causal || !self.model.config.has_lm_head() {
            return Err(js_err(VizError::NoLmHead));
        }
        if !((0.0..=9_007_199_254_740_991.0).contains(&seed) && seed.fract() == 0.0) {
            return Err(js_err(VizError::BadSampling {
                setting: "seed".into(),
                value: seed.to_string(),
                problem: "must be a whole number from 0 to 2^53 - 1".into(),
            }));
        }
        let prompt = Prompt {
            text: trace.text.clone(),
            tokens: trace.len(),
        };
        self.generation = Some((Sampler::new(seed as u64), prompt));
        Ok(())
    }

    /// Adds one token, drawn from the current prediction with `settings` (temperature,
    /// top_k, top_p; the seed was given to `start_generation`), computed through the KV
    /// cache: one new row of attention per layer. Returns the pass's summary, with the token.
    pub fn generate_next(&mut self, settings: JsValue) -> Result<JsValue, JsError> {
        let start = now_ms();
        let next = self.draw_next_token(settings)?;
        // One new token: one new row of keys and values a layer.
        self.pass_on_cpu(next.encoding, &next.text)?;
        self.summary(now_ms() - start, true, Some(next.generated))
    }

    /// The token `generate_next` would add, drawn the same way (the random stream moves on),
    /// for a pass on the GPU (`GpuSession::generate`, then `install_pass`).
    pub fn draw_next_token(&mut self, settings: JsValue) -> Result<NextToken, JsError> {
        let settings: SamplingSettings = serde_wasm_bindgen::from_value(settings)
            .map_err(|e| JsError::new(&format!("sampling settings: {e}")))?;
        let Some((sampler, prompt)) = self.generation.as_mut() else {
            return Err(JsError::new(
                "no generation was started: call start_generation first",
            ));
        };
        let trace = self
            .pass
            .trace
            .as_ref()
            .ok_or_else(|| js_err(VizError::EmptyText))?;
        if trace.len() >= self.limit {
            return Err(js_err(VizError::ContextFull {
                tokens: trace.len(),
                context: self.limit,
            }));
        }
        let drawn = draw_token(
            self.model.tokenizer.as_ref(),
            trace.next_token_probabilities().map_err(js_err)?,
            &settings,
            sampler,
        )
        .map_err(js_err)?;
        let info = self.model.tokenizer.token_info(drawn.id).ok_or_else(|| {
            js_err(VizError::UnknownTokenId {
                id: drawn.id,
                vocab_size: self.model.config.vocab_size,
            })
        })?;
        let mut tokens = trace.tokens.clone();
        tokens.push(info.clone());
        // The new text: the prompt, then every generated token's bytes decoded together (a
        // character may take several tokens).
        let generated_ids: Vec<u32> = tokens[prompt.tokens.min(tokens.len())..]
            .iter()
            .map(|t| t.id)
            .collect();
        let text = format!(
            "{}{}",
            prompt.text,
            self.model
                .tokenizer
                .decode(&generated_ids)
                .map_err(js_err)?
        );
        let generated = Generated {
            token: drawn,
            text: text.clone(),
        };
        Ok(NextToken {
            encoding: crate::tokenize::Encoding {
                tokens,
                truncated: None,
            },
            text,
            generated,
        })
    }

    /// Ends the generation under way (the text stays as generated).
    pub fn end_generation(&mut self) {
        self.generation = None;
    }

    /// What the page learns of the current pass (see `set_text`).
    fn summary(
        &self,
        milliseconds: f64,
        recomputed: bool,
        generated: Option<Generated>,
    ) -> Result<JsValue, JsError> {
        let trace = self.current()?;
        let steps: Vec<StepInfo> = trace
            .steps
            .iter()
            .enumerate()
            .map(|(index, s)| {
                let text = step_text(s, &trace.config);
                StepInfo {
                    index,
                    op: s.op,
                    layer: s.layer,
                    name: &s.name,
                    title: text.title,
                    equation: text.equation,
                    explanation: text.explanation,
                    axes: &s.axes,
                    inputs: &s.inputs,
                }
            })
            .collect();
        let shapes = trace
            .steps
            .iter()
            .map(|s| s.tensor.shape.as_slice())
            .collect();
        let norms = trace
            .norms
            .iter()
            .enumerate()
            .map(|(index, n)| NormInfo {
                index,
                step: &n.step,
                layer: n.layer,
            })
            .collect();
        let summary = to_js(&Summary {
            tokens: &trace.tokens,
            truncated: &trace.truncated,
            shapes,
            norms,
            milliseconds,
            recomputed,
            threads: threads::threads(),
            token_limit: self.limit,
            reused: self.pass.reused,
            cached_tokens: self.pass.cached().0,
            cache_bytes: self.pass.cached().1,
            generated,
            translation: match (&self.pass.translation, &trace.source) {
                (Some((output, steps, finished)), Some(source)) => Some(TranslationSummary {
                    source_tokens: &source.tokens,
                    source_truncated: &source.truncated,
                    output,
                    steps,
                    finished: *finished,
                }),
                _ => None,
            },
        })?;
        js_sys::Reflect::set(
            &summary,
            &JsValue::from_str("steps"),
            &self.steps_js(&steps)?,
        )
        .map_err(|_| JsError::new("the summary takes no steps"))?;
        Ok(summary)
    }

    /// `steps` as JavaScript objects. What they say depends on the model alone (names,
    /// equations, explanations: some seven hundred strings for the lecture decoder, each
    /// copied out of the module's memory and decoded on every keystroke), so the objects last
    /// sent are sent again while a hash of what they say is unchanged. Their shapes, which
    /// change with the text, go separately (`Summary::shapes`).
    fn steps_js(&self, steps: &[StepInfo]) -> Result<JsValue, JsError> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        steps.hash(&mut hasher);
        let hash = hasher.finish();
        let mut sent = self.steps_sent.borrow_mut();
        if let Some((old, value)) = sent.as_ref() {
            if *old == hash {
                return Ok(value.clone());
            }
        }
        let value = to_js(&steps)?;
        *sent = Some((hash, value.clone()));
        Ok(value)
    }

    pub(super) fn current(&self) -> Result<&Trace, JsError> {
        self.pass
            .trace
            .as_ref()
            .ok_or_else(|| js_err(VizError::EmptyText))
    }

    /// Runs the traced pass on a second sentence, kept beside the first for the compare
    /// charts (the same model: no second copy of the weights). Same-token text keeps its pass.
    pub fn set_compare_text(&mut self, text: &str) -> Result<JsValue, JsError> {
        if self.model.config.is_encoder_decoder() {
            return Err(js_err(VizError::BadConfig("an encoder-decoder's two sentences would be two sources with two outputs of their own: compare them one at a time".into())));
        }
        let encoding = self.model.encode_within(text, self.limit).map_err(js_err)?;
        let recomputed = match self.compare.as_mut() {
            Some(last)
                if last.tokens == encoding.tokens && last.truncated == encoding.truncated =>
            {
                last.text = text.to_string();
                false
            }
            _ => {
                self.compare = None; // dropped first: two traces alive at once would pin both
                self.compare = Some(self.model.trace_tokens(encoding, text).map_err(js_err)?);
                true
            }
        };
        let compare = self.compare.as_ref().expect("set above");
        to_js(&CompareSummary {
            tokens: &compare.tokens,
            truncated: &compare.truncated,
            recomputed,
        })
    }

    /// Forgets the second sentence.
    pub fn clear_compare(&mut self) {
        self.compare = None;
    }
}
