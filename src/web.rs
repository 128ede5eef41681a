//! The browser API: the only code that touches wasm-bindgen and web-sys. The page creates
//! one `Viz` from the model's files, calls `set_text` as the student types, and asks for
//! views by name (`View`) on its canvases or as SVG text.

use serde::Serialize;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::analysis::heads::{head_scores, heads_from};
use crate::checkpoints::{minilm, smollm2};
use crate::model::kv_cache::KvCache;
use crate::draw::compare::{draw_compare_view, CompareView};
use crate::draw::draw_err;
use crate::draw::view::{draw_view, view_svg, Drawn, View};
use crate::error::VizError;
use crate::model::team::{self, Team};
use crate::model::ModelConfig;
use crate::trace::{Op, Trace, TokenInfo, Truncation};
use crate::web_canvas::FastCanvas;
use crate::Transformer;

fn js_err(e: VizError) -> JsError {
    JsError::new(&e.to_string())
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| JsError::new(&e.to_string()))
}

#[derive(Serialize)]
struct StepInfo<'a> {
    index: usize,
    op: Op,
    layer: Option<usize>,
    name: &'a str,
    title: &'a str,
    equation: &'a str,
    explanation: &'a str,
    axes: &'a [String],
    shape: &'a [usize],
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
    steps: Vec<StepInfo<'a>>,
    norms: Vec<NormInfo<'a>>,
    milliseconds: f64,
    /// False when the new text gave the same tokens as the last one, so the last forward
    /// pass (the same numbers) was kept.
    recomputed: bool,
    /// Threads that computed the pass: 2 while a helper worker shares it, else 1.
    threads: usize,
    /// Tokens taken from the last pass (a causal model's KV cache and trace rows) rather
    /// than computed again; 0 for an encoder, whose every token sees every other.
    reused: usize,
    /// Tokens whose keys and values the KV cache holds now, and its size in bytes.
    cached_tokens: usize,
    cache_bytes: usize,
}

// The page's side of `model::team` (www/team.js): halves travel through a SharedArrayBuffer.
#[wasm_bindgen(module = "/www/team.js")]
extern "C" {
    fn team_buffer_bytes(max_floats: usize) -> usize;
    fn team_init(buffer: &js_sys::SharedArrayBuffer, member: usize, helper: &JsValue);
    fn team_begin(ids: &[u32]);
    fn team_exchange(mine: &[f32], theirs: &mut [f32]) -> bool;
}

/// A member of a team whose partner runs in another thread of the browser.
struct BrowserTeam {
    member: usize,
}

impl Team for BrowserTeam {
    fn member(&self) -> usize {
        self.member
    }
    fn exchange(&self, mine: &[f32], theirs: &mut [f32]) -> bool {
        team_exchange(mine, theirs)
    }
}

fn threads() -> usize {
    if team::current().is_some() {
        2
    } else {
        1
    }
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen]
pub struct Viz {
    model: Transformer,
    trace: Option<Trace>,
    /// A causal model's keys and values of `trace`'s tokens.
    cache: KvCache,
    /// Tokens the last pass took from the one before.
    reused: usize,
    /// A second sentence's pass, to compare with the first (same model, same weights).
    compare: Option<Trace>,
}

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
    pub fn new(name: &str, config_json: &str, tokenizer_json: &str, weights: &[u8]) -> Result<Viz, JsError> {
        let model = match name {
            "minilm-l6" => minilm::from_bytes(name, config_json, tokenizer_json, weights).map_err(js_err)?,
            // The GGUF file holds the config and the vocabulary too.
            "smollm2-135m" => smollm2::from_gguf_bytes(name, weights).map_err(js_err)?,
            other => return Err(js_err(VizError::UnknownModel(other.into(), crate::checkpoints::KNOWN_MODELS.join(", ")))),
        };
        Ok(Viz { model, trace: None, cache: KvCache::new(), reused: 0, compare: None })
    }

    /// The model's config (layers, heads, widths, architecture choices).
    pub fn config(&self) -> Result<JsValue, JsError> {
        to_js::<ModelConfig>(&self.model.config)
    }

    /// Where the numbers are computed.
    pub fn backend(&self) -> String {
        match threads() {
            1 => "CPU (WebAssembly)".into(),
            n => format!("CPU (WebAssembly, {n} threads)"),
        }
    }

    /// How many threads compute a pass: 2 while the helper worker shares it, else 1.
    pub fn threads(&self) -> usize {
        threads()
    }

    /// Bytes of shared memory a team of two needs for this model's longest halves.
    pub fn team_buffer_bytes(&self) -> usize {
        let c = &self.model.config;
        let widest = c.d_ff.max(c.d_model).max(c.n_heads * c.head_dim).max(c.n_kv_heads * c.head_dim);
        team_buffer_bytes(c.context * (widest / 2 + 2))
    }

    /// Joins a team of two through `buffer`: member 0 is the page, which tells `helper` (its
    /// Worker) when a pass starts; member 1 is the worker, which runs `help`.
    pub fn join_team(&mut self, buffer: &js_sys::SharedArrayBuffer, member: usize, helper: JsValue) -> Result<(), JsError> {
        if member > 1 {
            return Err(JsError::new("a team has members 0 and 1"));
        }
        if (buffer.byte_length() as usize) < self.team_buffer_bytes() {
            return Err(JsError::new("the team's shared buffer is too small for this model"));
        }
        team_init(buffer, member, &helper);
        team::join(std::rc::Rc::new(BrowserTeam { member }));
        Ok(())
    }

    /// Leaves the team: every product is computed here again.
    pub fn leave_team(&mut self) {
        team::leave();
    }

    /// Member 1: runs the (untraced) pass on the page's tokens, computing its half of every
    /// dense layer.
    pub fn help(&self, ids: Vec<u32>) -> Result<(), JsError> {
        let c = &self.model.config;
        if ids.is_empty() || ids.len() > c.context || ids.iter().any(|&i| i as usize >= c.vocab_size) {
            return Err(JsError::new("the page sent tokens this model cannot read"));
        }
        self.model.run_ids(&ids);
        Ok(())
    }

    /// Runs the traced forward pass on `text` and describes the result: tokens, truncation,
    /// and every step's title, equation and shape (the values stay in wasm until drawn).
    /// Text that splits into the same tokens as before (a trailing space, say) keeps the
    /// last pass: its numbers would be the same.
    pub fn set_text(&mut self, text: &str) -> Result<JsValue, JsError> {
        let start = now_ms();
        let encoding = self.model.encode(text).map_err(js_err)?;
        let recomputed = match self.trace.as_mut() {
            Some(last) if last.tokens == encoding.tokens && last.truncated == encoding.truncated => {
                last.text = text.to_string();
                false
            }
            _ if self.model.config.causal => {
                // A causal model continues its last pass: the tokens before the first change
                // keep their keys, values and trace rows. The helper thread has no copy of
                // the cache, so this pass is computed here alone.
                let previous = self.trace.take();
                let continued = team::alone(|| self.model.continue_trace(encoding, text, previous.as_ref(), &mut self.cache));
                drop(previous);
                self.reused = continued.reused;
                self.trace = Some(continued.trace);
                true
            }
            _ => {
                // Drop the last pass before computing the next: WebAssembly memory never
                // shrinks, so two traces alive at once would pin both for good.
                self.trace = None;
                if team::current().is_some_and(|t| t.member() == 0) {
                    team_begin(&encoding.ids()); // the helper runs the same pass alongside
                }
                self.trace = Some(self.model.trace_ids(encoding, text));
                self.reused = 0;
                true
            }
        };
        let milliseconds = now_ms() - start;
        self.summary(milliseconds, recomputed)
    }

    /// What the page learns of the current pass (see `set_text`).
    fn summary(&self, milliseconds: f64, recomputed: bool) -> Result<JsValue, JsError> {
        let trace = self.current()?;
        let steps = trace
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
                shape: &s.tensor.shape,
                inputs: &s.inputs,
            })
            .collect();
        let norms = trace.norms.iter().enumerate().map(|(index, n)| NormInfo { index, step: &n.step, layer: n.layer }).collect();
        let threads = if self.model.config.causal { 1 } else { threads() };
        to_js(&Summary {
            tokens: &trace.tokens,
            truncated: &trace.truncated,
            steps,
            norms,
            milliseconds,
            recomputed,
            threads,
            reused: self.reused,
            cached_tokens: self.cache.len(),
            cache_bytes: self.cache.bytes(),
        })
    }

    fn current(&self) -> Result<&Trace, JsError> {
        self.trace.as_ref().ok_or_else(|| js_err(VizError::EmptyText))
    }

    fn view(spec: JsValue) -> Result<AnyView, JsError> {
        serde_wasm_bindgen::from_value(spec).map_err(|e| JsError::new(&format!("unknown view: {e}")))
    }

    fn draw_any<DB: plotters::prelude::DrawingBackend>(&self, area: &plotters::drawing::DrawingArea<DB, plotters::coord::Shift>, view: &AnyView, vector: bool) -> Result<Drawn, JsError> {
        let trace = self.current()?;
        match view {
            AnyView::Single(view) => draw_view(area, &self.model, trace, view, vector),
            AnyView::Compare(view) => draw_compare_view(area, trace, self.compare.as_ref(), view, vector),
        }
        .map_err(js_err)
    }

    /// Draws a view on a canvas; returns where its cells and labels are (in CSS pixels) and
    /// their values, for hover. A canvas whose `data-scale` attribute is 2 has two backing
    /// pixels a CSS pixel (a HiDPI screen, or a PNG export at twice the size): the view is
    /// laid out at its CSS size and drawn at the full resolution.
    pub fn draw(&self, canvas: HtmlCanvasElement, spec: JsValue) -> Result<JsValue, JsError> {
        let view = Self::view(spec)?;
        let scale = canvas.get_attribute("data-scale").and_then(|s| s.parse::<f64>().ok()).unwrap_or(1.0);
        let backend = FastCanvas::new(canvas, scale).ok_or_else(|| JsError::new("the canvas has no 2D context"))?;
        let area = plotters::drawing::IntoDrawingArea::into_drawing_area(backend);
        let mut drawn = self.draw_any(&area, &view, false)?;
        area.present().map_err(|e| JsError::new(&e.to_string()))?;
        drawn.scale = scale;
        to_js(&drawn)
    }

    /// A view as SVG text, for export: text stays text; large heatmaps are one embedded PNG.
    pub fn svg(&self, spec: JsValue, width: u32, height: u32) -> Result<String, JsError> {
        match Self::view(spec)? {
            AnyView::Single(view) => view_svg(&self.model, self.current()?, &view, (width, height)).map_err(js_err),
            compare => {
                let mut out = String::new();
                {
                    let area = plotters::drawing::IntoDrawingArea::into_drawing_area(plotters::prelude::SVGBackend::with_string(&mut out, (width, height)));
                    self.draw_any(&area, &compare, true)?;
                    area.present().map_err(|e| js_err(draw_err(e)))?;
                }
                Ok(out)
            }
        }
    }

    /// The whole trace as JSON, for export.
    pub fn trace_json(&self) -> Result<String, JsError> {
        serde_json::to_string(self.current()?).map_err(|e| JsError::new(&e.to_string()))
    }

    /// Softmax weights of one head, row-major (T x T).
    pub fn attention(&self, layer: usize, head: usize) -> Result<Vec<f32>, JsError> {
        Ok(self.current()?.attention(layer, head).map_err(js_err)?.iter().copied().collect())
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
        let encoding = self.model.encode(text).map_err(js_err)?;
        let recomputed = match self.compare.as_mut() {
            Some(last) if last.tokens == encoding.tokens && last.truncated == encoding.truncated => {
                last.text = text.to_string();
                false
            }
            _ if self.model.config.causal => {
                self.compare = None;
                self.compare = Some(team::alone(|| self.model.trace_ids(encoding, text)));
                true
            }
            _ => {
                if team::current().is_some_and(|t| t.member() == 0) {
                    team_begin(&encoding.ids()); // the helper runs the same pass alongside
                }
                self.compare = Some(self.model.trace_ids(encoding, text));
                true
            }
        };
        let compare = self.compare.as_ref().expect("set above");
        to_js(&CompareSummary { tokens: &compare.tokens, truncated: &compare.truncated, recomputed })
    }

    /// Forgets the second sentence.
    pub fn clear_compare(&mut self) {
        self.compare = None;
    }
}
