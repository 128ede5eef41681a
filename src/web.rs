//! The browser API: the only code that touches wasm-bindgen and web-sys. The page creates
//! one `Viz` from the model's files, calls `set_text` as the student types, and asks for
//! views by name (`View`) on its canvases or as SVG text.

use serde::Serialize;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::analysis::generation::{draw_token, GeneratedToken};
use crate::analysis::heads::{head_scores, heads_from};
use crate::analysis::sampling::{Sampler, SamplingSettings};
use crate::checkpoints::{lecture, minilm, smollm2};
use crate::draw::compare::{draw_compare_view, CompareView};
use crate::draw::draw_err;
use crate::draw::view::{draw_view, view_svg, Drawn, View};
use crate::error::VizError;
use crate::model::backend::on_cpu;
use crate::model::cpu::Cpu;
use crate::model::kv_cache::KvCache;
use crate::model::{threads, ModelConfig};
use crate::trace::{Op, Readback, TokenInfo, Trace, Truncation};
use crate::transformer::{DecodedToken, Decoding, Keep, Kind, PassRequest, Transformer};
use crate::web_canvas::FastCanvas;

fn js_err(e: VizError) -> JsError {
    JsError::new(&e.to_string())
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&e.to_string()))
}

#[derive(Serialize, Hash)]
struct StepInfo<'a> {
    index: usize,
    op: Op,
    layer: Option<usize>,
    name: &'a str,
    title: &'a str,
    equation: &'a str,
    explanation: &'a str,
    axes: &'a [String],
    inputs: &'a [String],
}

#[derive(Serialize)]
struct NormInfo<'a> {
    index: usize,
    step: &'a str,
    layer: Option<usize>,
}

#[derive(Serialize)]
struct Summary<'a> {
    tokens: &'a [TokenInfo],
    truncated: &'a Option<Truncation>,
    // `steps` (the StepInfo of each step) is set on the object afterwards (`Viz::steps_js`);
    // the page gives each its shape from `shapes`.
    /// Each step's tensor shape (T changes it).
    shapes: Vec<&'a [usize]>,
    norms: Vec<NormInfo<'a>>,
    milliseconds: f64,
    /// False when the new text gave the same tokens as the last one, so the last forward
    /// pass (the same numbers) was kept.
    recomputed: bool,
    /// Threads that computed the pass (`model::threads`).
    threads: usize,
    /// The most tokens a pass takes: the model's context, or less (`PAGE_TOKENS`).
    token_limit: usize,
    /// Tokens taken from the last pass (a causal model's KV cache and trace rows) rather
    /// than computed again; 0 for an encoder, whose every token sees every other.
    reused: usize,
    /// Tokens whose keys and values the KV cache holds now, and its size in bytes.
    cached_tokens: usize,
    cache_bytes: usize,
    /// The token `generate_next` just added, and the whole text with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    generated: Option<Generated>,
    /// An encoder-decoder's pass: the text is its source, `tokens` what it wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    translation: Option<TranslationSummary<'a>>,
}

#[derive(Serialize)]
struct TranslationSummary<'a> {
    source_tokens: &'a [TokenInfo],
    source_truncated: &'a Option<Truncation>,
    output: &'a str,
    /// Each decoding step's choice (the last the end token when `finished`).
    steps: &'a [DecodedToken],
    finished: bool,
}

/// A generated token as the page shows it: the token drawn (`draw_token`, as the CLI draws
/// it) and the text so far.
#[derive(Serialize)]
pub(crate) struct Generated {
    #[serde(flatten)]
    token: GeneratedToken,
    /// The text so far: the prompt and every token generated since `start_generation`.
    text: String,
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
struct Prompt {
    text: String,
    tokens: usize,
}

/// Starts `count` threads (the page's own among them) that share every matrix product on
/// this module's memory: the threaded build only. Resolves to the count.
#[cfg(feature = "threads")]
#[wasm_bindgen]
pub async fn start_threads(count: usize) -> Result<usize, JsError> {
    threads::start(count).await.map_err(|e| JsError::new(&e))
}

#[wasm_bindgen]
extern "C" {
    /// The page's clock in milliseconds, to a few microseconds on a cross-origin isolated page
    /// (`Date.now()` counts whole milliseconds: too coarse for a pass of 15 ms).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

pub(crate) fn now_ms() -> f64 {
    performance_now()
}

#[wasm_bindgen]
pub struct Viz {
    /// Shared with the GPU session (`web_gpu`), which computes on the same weights.
    model: std::rc::Rc<Transformer>,
    trace: Option<Trace>,
    /// A causal model's keys and values of `trace`'s tokens.
    cache: KvCache,
    /// Tokens the last pass took from the one before.
    reused: usize,
    /// The seeded random stream and the prompt of the generation under way.
    generation: Option<(Sampler, Prompt)>,
    /// A second sentence's pass, to compare with the first (same model, same weights).
    compare: Option<Trace>,
    /// The most tokens a pass takes (`PAGE_TOKENS`, or the model's context if shorter).
    limit: usize,
    /// The tokens and bytes of the GPU's KV cache when the current pass is a GPU's
    /// (`install_pass`); `cache` is the CPU's.
    device_cache: Option<(usize, usize)>,
    /// A causal model's last CPU pass computed to check a GPU pass (`largest_difference`),
    /// and its KV cache: the next check continues it.
    shadow: Option<Trace>,
    shadow_cache: KvCache,
    /// An encoder-decoder's output, decoding steps and whether it ended, for `trace`.
    translation: Option<Decoding>,
    /// The next `set_text` computes even for unchanged tokens (`recompute_next`).
    recompute: bool,
    /// The summary's `steps` as last sent, and a hash of what they said (`steps_js`).
    steps_sent: std::cell::RefCell<Option<(u64, JsValue)>>,
}

/// The most tokens the page traces. The trace keeps every layer's attention weights for the
/// views: SmolLM2's 30 layers of 9 heads at 512 tokens are 283 MB of them, at its full context
/// of 8,192 tokens they would be 72 GB. MiniLM's context is 512.
pub const PAGE_TOKENS: usize = 512;

/// The canvas size a view is drawn at to find what it reads (`Viz::steps_read`): a chart's
/// reads do not depend on its size.
const PROBE_SIZE: (u32, u32) = (1000, 700);

/// Any chart the page can ask for: one of the sentence's views, or a compare chart that also
/// reads the second sentence.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum AnyView {
    Compare(CompareView),
    Single(View),
}

#[derive(Serialize)]
struct CompareSummary<'a> {
    tokens: &'a [TokenInfo],
    truncated: &'a Option<Truncation>,
    recomputed: bool,
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
        let model = match name {
            "minilm-l6" => {
                minilm::from_bytes(name, config_json, tokenizer_json, &weights).map_err(js_err)?
            }
            // The GGUF file holds the config and the vocabulary too.
            "smollm2-135m" => smollm2::from_gguf_file(name, weights).map_err(js_err)?,
            lecture if lecture::ALL.contains(&lecture) => {
                lecture::from_bytes(name, config_json, tokenizer_json, &weights).map_err(js_err)?
            }
            other => {
                return Err(js_err(VizError::UnknownModel(
                    other.into(),
                    crate::checkpoints::KNOWN_MODELS.join(", "),
                )))
            }
        };
        let limit = model.config.context.min(PAGE_TOKENS);
        Ok(Viz {
            model: std::rc::Rc::new(model),
            trace: None,
            cache: KvCache::new(),
            reused: 0,
            generation: None,
            compare: None,
            limit,
            device_cache: None,
            shadow: None,
            shadow_cache: KvCache::new(),
            translation: None,
            recompute: false,
            steps_sent: Default::default(),
        })
    }

    /// The model's config (layers, heads, widths, architecture choices).
    pub fn config(&self) -> Result<JsValue, JsError> {
        to_js::<ModelConfig>(&self.model.config)
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
        let mut previous = self.trace.take();
        if self.model.kind() != Kind::Causal {
            previous = None;
        }
        let request =
            PassRequest::tokens(encoding, text).continuing(previous.as_ref(), &mut self.cache);
        let pass = on_cpu(self.model.pass(&Cpu, request));
        drop(previous);
        let pass = pass.map_err(js_err)?;
        self.reused = pass.reused;
        self.device_cache = None;
        // The page computes on the CPU now: no GPU pass to check.
        self.shadow = None;
        self.shadow_cache = KvCache::new();
        self.translation = pass.decoding.clone();
        self.trace = Some(pass.into_trace());
        Ok(())
    }

    /// Opens the GPU backend (WebGPU through wgpu) on this model: a promise of a
    /// `GpuSession`, rejected with the reason when the browser has no adapter or the device
    /// request fails (the page then stays on the CPU and says why).
    pub fn open_gpu(&self) -> js_sys::Promise {
        crate::web_gpu::open(self.model.clone(), self.limit)
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
            model,
            trace,
            shadow,
            shadow_cache,
            ..
        } = self;
        let gpu = trace.as_ref().ok_or_else(|| js_err(VizError::EmptyText))?;
        // The GPU pass's own tokens (a generated token's pass has tokens its text, encoded
        // again, might not give).
        let encoding = crate::tokenize::Encoding {
            tokens: gpu.tokens.clone(),
            truncated: gpu.truncated.clone(),
        };
        // An encoder-decoder's pass starts again from its source text.
        let text = gpu.source.as_ref().map_or(&gpu.text, |source| &source.text);
        let previous = shadow.take();
        let request = PassRequest::tokens(encoding, text)
            .continuing(previous.as_ref(), shadow_cache)
            .keeping(Keep::Steps(Readback::Everything));
        let cpu = on_cpu(model.pass(&Cpu, request));
        drop(previous);
        let cpu = cpu.map_err(js_err)?.into_trace();
        let difference = cpu.largest_difference(gpu).map_err(js_err)?;
        if model.config.causal && gpu.source.is_none() {
            *shadow = Some(cpu);
        }
        to_js(&difference)
    }

    /// Makes a GPU pass the current one (the pass object is used up) and describes it as
    /// `set_text` does (a generated token's pass, as `generate_next` does). The CPU's KV
    /// cache is emptied: the GPU's keys and values stay on the device (its session's cache),
    /// so the next CPU pass of a causal model computes every token.
    pub fn install_pass(&mut self, pass: crate::web_gpu::GpuPass) -> Result<JsValue, JsError> {
        let parts = pass.into_parts();
        if self.model.config.is_encoder_decoder() != parts.translation.is_some() {
            return Err(JsError::new("this pass is not of the model shown"));
        }
        self.translation = parts.translation;
        self.recompute = false;
        self.cache = KvCache::new();
        self.reused = parts.reused;
        self.device_cache = Some(parts.cache);
        self.trace = Some(parts.trace);
        self.summary(parts.milliseconds, true, parts.generated)
    }

    /// Makes the next `set_text` compute its pass again even for the same tokens (after a
    /// switch of backend); the current pass stays drawable until then.
    pub fn recompute_next(&mut self) {
        self.recompute = true;
    }

    /// Runs the traced forward pass on `text` and describes the result: tokens, truncation,
    /// and every step's title, equation and shape (the values stay in wasm until drawn).
    /// Text that splits into the same tokens as before (a trailing space, say) keeps the
    /// last pass: its numbers would be the same.
    pub fn set_text(&mut self, text: &str) -> Result<JsValue, JsError> {
        let start = now_ms();
        let encoding = self.model.encode_within(text, self.limit).map_err(js_err)?;
        let unchanged = !self.recompute
            && self.trace.as_ref().is_some_and(|last| match &last.source {
                // An encoder-decoder's text is its source.
                Some(source) => source.text == text,
                None => last.tokens == encoding.tokens && last.truncated == encoding.truncated,
            });
        match self.trace.as_mut() {
            Some(last) if unchanged => {
                if last.source.is_none() {
                    last.text = text.to_string();
                }
            }
            _ => self.pass_on_cpu(encoding, text)?,
        }
        self.recompute = false;
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
            .map(|(index, s)| StepInfo {
                index,
                op: s.op,
                layer: s.layer,
                name: &s.name,
                title: &s.title,
                equation: &s.equation,
                explanation: &s.explanation,
                axes: &s.axes,
                inputs: &s.inputs,
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
            reused: self.reused,
            cached_tokens: self
                .device_cache
                .map_or(self.cache.len(), |(tokens, _)| tokens),
            cache_bytes: self
                .device_cache
                .map_or(self.cache.bytes(), |(_, bytes)| bytes),
            generated,
            translation: match (&self.translation, &trace.source) {
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

    fn current(&self) -> Result<&Trace, JsError> {
        self.trace
            .as_ref()
            .ok_or_else(|| js_err(VizError::EmptyText))
    }

    /// Read as JSON first: `AnyView` is untagged, so serde tries `Compare` before `Single`,
    /// and each failed try read straight from JS would build a JS `Error` (a stack trace).
    fn view(spec: JsValue) -> Result<AnyView, JsError> {
        let spec: serde_json::Value = serde_wasm_bindgen::from_value(spec)
            .map_err(|e| JsError::new(&format!("unknown view: {e}")))?;
        serde_json::from_value(spec).map_err(|e| JsError::new(&format!("unknown view: {e}")))
    }

    fn draw_any<DB: crate::draw::Canvas>(
        &self,
        area: &plotters::drawing::DrawingArea<DB, plotters::coord::Shift>,
        view: &AnyView,
        vector: bool,
    ) -> Result<Drawn, JsError> {
        let trace = self.current()?;
        match view {
            AnyView::Single(view) => draw_view(area, &self.model, trace, view, vector),
            AnyView::Compare(view) => {
                draw_compare_view(area, trace, self.compare.as_ref(), view, vector)
            }
        }
        .map_err(js_err)
    }

    /// Draws a view on a canvas; returns where its cells and labels are (in CSS pixels) and
    /// their values, for hover. A canvas whose `data-scale` attribute is 2 has two backing
    /// pixels a CSS pixel (a HiDPI screen, or a PNG export at twice the size): the view is
    /// laid out at its CSS size and drawn at the full resolution.
    pub fn draw(&self, canvas: HtmlCanvasElement, spec: JsValue) -> Result<JsValue, JsError> {
        let view = Self::view(spec)?;
        let scale = canvas
            .get_attribute("data-scale")
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(1.0);
        let backend = FastCanvas::new(canvas, scale)
            .ok_or_else(|| JsError::new("the canvas has no 2D context"))?;
        let area = plotters::drawing::IntoDrawingArea::into_drawing_area(backend);
        let mut drawn = self.draw_any(&area, &view, false)?;
        area.present().map_err(|e| JsError::new(&e.to_string()))?;
        drawn.scale = scale;
        to_js(&drawn)
    }

    /// A view as SVG text, for export: text stays text; large heatmaps are one embedded PNG.
    pub fn svg(&self, spec: JsValue, width: u32, height: u32) -> Result<String, JsError> {
        match Self::view(spec)? {
            AnyView::Single(view) => {
                view_svg(&self.model, self.current()?, &view, (width, height)).map_err(js_err)
            }
            compare => {
                let mut out = String::new();
                {
                    let area = plotters::drawing::IntoDrawingArea::into_drawing_area(
                        plotters::prelude::SVGBackend::with_string(&mut out, (width, height)),
                    );
                    self.draw_any(&area, &compare, true)?;
                    area.present().map_err(|e| js_err(draw_err(e)))?;
                }
                Ok(out)
            }
        }
    }

    /// The whole trace as JSON, for export. Refused while some of a GPU pass's values are
    /// still on the device (they would be written as zeros): `GpuSession::read_rest` first.
    pub fn trace_json(&self) -> Result<String, JsError> {
        let trace = self.current()?;
        if trace.awaits_device() {
            return Err(JsError::new("some of the pass's values are still on the GPU: read them back first (GpuSession::read_rest)"));
        }
        serde_json::to_string(trace).map_err(|e| JsError::new(&e.to_string()))
    }

    /// The names of the steps the views `specs` (an array of chart specs, as `draw` takes)
    /// read, found by drawing each once on a canvas that keeps nothing: what a GPU pass reads
    /// back with the pass for the views on screen (`GpuSession::trace`).
    pub fn steps_read(&self, specs: JsValue) -> Result<Vec<String>, JsError> {
        let specs: Vec<serde_json::Value> = serde_wasm_bindgen::from_value(specs)
            .map_err(|e| JsError::new(&format!("views: {e}")))?;
        let trace = self.current()?;
        let mut read = std::collections::BTreeSet::new();
        for spec in specs {
            let view: AnyView = serde_json::from_value(spec)
                .map_err(|e| JsError::new(&format!("unknown view: {e}")))?;
            read.extend(crate::draw::reads::steps_read(trace, PROBE_SIZE, |area| {
                self.draw_any(area, &view, false)
            }));
        }
        Ok(read.into_iter().collect())
    }

    /// True while some of the current pass's values are still on the GPU (its readback
    /// brought back what the views on screen read; `GpuSession::read_rest` brings the rest).
    pub fn awaits_device(&self) -> bool {
        self.trace.as_ref().is_some_and(Trace::awaits_device)
    }

    /// True when one of the steps `names` (`steps_read` of a chart) still waits for its values
    /// on the GPU: the page then keeps the chart as it is and asks for them
    /// (`GpuSession::read_rest`) before drawing it.
    pub fn steps_wait(&self, names: Vec<String>) -> bool {
        self.trace
            .as_ref()
            .is_some_and(|t| crate::draw::reads::waits_for_device(t, &names))
    }

    /// Softmax weights of one head, row-major (T x T).
    pub fn attention(&self, layer: usize, head: usize) -> Result<Vec<f32>, JsError> {
        Ok(self
            .current()?
            .attention(layer, head)
            .map_err(js_err)?
            .iter()
            .copied()
            .collect())
    }

    /// What every head of the current sentence does: for each (layer, head), its
    /// previous-token, next-token, first-token and final-[SEP] scores (mean weights).
    pub fn head_scores(&self) -> Result<JsValue, JsError> {
        to_js(&head_scores(self.current()?).map_err(js_err)?)
    }

    /// The heads that attend most strongly from token `token` to another ordinary token,
    /// strongest first: layer, head, key and weight. `beyond_neighbours` leaves out the
    /// tokens right before and after it (the previous/next-token heads' targets).
    pub fn heads_from(&self, token: usize, beyond_neighbours: bool) -> Result<JsValue, JsError> {
        to_js(&heads_from(self.current()?, token, beyond_neighbours).map_err(js_err)?)
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
