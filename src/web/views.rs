//! The views of the current pass: drawn on a canvas or as SVG, the trace as JSON, what a view
//! reads (for a GPU's readback), and the numbers hover and the head finder ask for.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use super::canvas::FastCanvas;
use super::js::{js_err, to_js};
use super::patch_sweep::{PatchNow, PatchState, PATCH_MS_WHILE_DRAWING};
use super::viz::Viz;
use crate::analysis::antecedents::references;
use crate::analysis::heads::{head_scores, heads_from};
use crate::analysis::prediction::prediction;
use crate::draw::compare::{draw_compare_view, CompareView, PatchShown};
use crate::draw::draw_err;
use crate::draw::view::{draw_view, view_svg, Drawn, View};
use crate::explain::DescribedTrace;
use crate::trace::Trace;

/// The canvas size a view is drawn at to find what it reads (`Viz::steps_read`): a chart's
/// reads do not depend on its size.
const PROBE_SIZE: (u32, u32) = (1000, 700);

/// Most views `Viz::view` keeps read (past it it starts again): more than the page's charts,
/// so that a keystroke finds every one it draws.
const VIEWS_KEPT: usize = 64;

thread_local! {
    /// Views read, by their JSON text: serde's reading of one (it tries the compare views
    /// first, then the sentence's) cost more than finding its text here.
    static VIEWS_READ: RefCell<HashMap<String, Rc<AnyView>>> = RefCell::new(HashMap::new());
}

/// Any chart the page can ask for: one of the sentence's views, or a compare chart that also
/// reads the second sentence.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum AnyView {
    Compare(CompareView),
    Single(View),
}

impl Viz {
    /// The patching grids of sentence A (`a`, the current pass's text) put into sentence B:
    /// a new pair of texts or answers starts a sweep and makes patches for a moment; a sweep
    /// that is not done says how far it has come (`patch_step` makes the rest). The model as
    /// trained: parts switched off do not apply.
    fn patch_sweep(
        &self,
        a: &Trace,
        b: &Trace,
        answer: Option<&str>,
        wrong: Option<&str>,
    ) -> PatchNow {
        let mut slot = self.patch.borrow_mut();
        let (mut state, fresh) =
            PatchState::for_texts(slot.take(), &self.model, a, b, answer, wrong);
        if fresh {
            state.advance(&self.model, PATCH_MS_WHILE_DRAWING);
        }
        let now = state.now();
        *slot = Some(state);
        now
    }
}

/// What a chart drew (`Viz::draw`), kept in the module until the page reads it (hover, the
/// residual chart's chips, export, the tests): made into JS objects for every chart at every
/// keystroke, it took about a tenth of the keystroke (docs/benchmarks.md). The page frees it.
#[wasm_bindgen]
pub struct ChartDrawn(Drawn);

#[wasm_bindgen]
impl ChartDrawn {
    /// Where the chart's cells and labels are and their values, as JS objects.
    pub fn value(&self) -> Result<JsValue, JsError> {
        to_js(&self.0)
    }
}

#[wasm_bindgen]
impl Viz {
    /// How far the last patching sweep has come: `{id, done, total, finished, shared,
    /// milliseconds}`, or null before any.
    pub fn patch_progress(&self) -> Result<JsValue, JsError> {
        match self.patch.borrow().as_ref() {
            Some(s) => to_js(&s.progress()),
            None => Ok(JsValue::NULL),
        }
    }

    /// Makes patches of the sweep under way for about `budget_ms` (at least one), then says
    /// how far it has come (as `patch_progress`). The page calls it between frames until the
    /// sweep is done or the student stops it.
    pub fn patch_step(&self, budget_ms: f64) -> Result<JsValue, JsError> {
        if !budget_ms.is_finite() || budget_ms < 0.0 {
            return Err(js_err(crate::error::VizError::BadEdit(format!(
                "a time to patch for must be a number of milliseconds, not {budget_ms}"
            ))));
        }
        let mut slot = self.patch.borrow_mut();
        let Some(s) = slot.as_mut() else {
            return Ok(JsValue::NULL);
        };
        s.advance(&self.model, budget_ms);
        to_js(&s.progress())
    }

    /// A view from its JSON text (the page has it already: it keys each chart's drawing by
    /// it), read by serde_json in the module rather than property by property from a JS object.
    /// The page asks for the same score of views at every keystroke: each is read once and
    /// found again by its text (`VIEWS_READ`).
    fn view(spec: &str) -> Result<Rc<AnyView>, JsError> {
        if let Some(view) = VIEWS_READ.with_borrow(|read| read.get(spec).cloned()) {
            return Ok(view);
        }
        let view: Rc<AnyView> = Rc::new(
            serde_json::from_str(spec).map_err(|e| JsError::new(&format!("unknown view: {e}")))?,
        );
        VIEWS_READ.with_borrow_mut(|read| {
            if read.len() >= VIEWS_KEPT {
                read.clear();
            }
            read.insert(spec.to_string(), view.clone());
        });
        Ok(view)
    }

    fn draw_any<DB: crate::draw::Canvas>(
        &self,
        area: &plotters::drawing::DrawingArea<DB, plotters::coord::Shift>,
        view: &AnyView,
        vector: bool,
    ) -> Result<Drawn, JsError> {
        let trace = self.current()?;
        match view {
            // The votes of a post-LN model switch each part off on top of those already off.
            AnyView::Single(View::Votes { token, .. }) => {
                let view = View::Votes {
                    token: *token,
                    off: self.switches.clone(),
                };
                draw_view(area, &self.model, trace, &view, vector)
            }
            AnyView::Single(view) => draw_view(area, &self.model, trace, view, vector),
            AnyView::Compare(view) => {
                let patch = match (view.patch_answers(), self.compare.as_ref()) {
                    (Some((answer, wrong)), Some(b)) => {
                        Some(self.patch_sweep(trace, b, answer, wrong))
                    }
                    _ => None,
                };
                // The difference a switched-off part made is drawn against the intact pass.
                let b = match view {
                    CompareView::OffDifference { .. } => self.intact.as_ref(),
                    _ => self.compare.as_ref(),
                };
                let shown = match &patch {
                    Some(PatchNow::Done(grid)) => Some(PatchShown::Grid(grid)),
                    Some(PatchNow::Running { done, total }) => Some(PatchShown::Running {
                        done: *done,
                        total: *total,
                    }),
                    None => None,
                };
                draw_compare_view(area, trace, b, view, vector, shown)
            }
        }
        .map_err(js_err)
    }

    /// Draws a view on a canvas; returns what it drew (`ChartDrawn`: where its cells and
    /// labels are, in CSS pixels, and their values, for hover). A canvas whose `data-scale`
    /// attribute is 2 has two backing pixels a CSS pixel (a HiDPI screen, or a PNG export at
    /// twice the size): the view is laid out at its CSS size and drawn at the full resolution.
    pub fn draw(&self, canvas: HtmlCanvasElement, spec: &str) -> Result<ChartDrawn, JsError> {
        let view = Self::view(spec)?;
        let scale = canvas
            .get_attribute("data-scale")
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(1.0);
        let report_texts = canvas.has_attribute("data-report-texts");
        let mut backend = FastCanvas::new(canvas, scale)
            .ok_or_else(|| JsError::new("the canvas has no 2D context"))?;
        let painted = report_texts.then(|| backend.report_texts());
        let area = plotters::drawing::IntoDrawingArea::into_drawing_area(backend);
        let mut drawn = self.draw_any(&area, &view, false)?;
        area.present().map_err(|e| JsError::new(&e.to_string()))?;
        drawn.scale = scale;
        drawn.texts = painted.map(|p| p.take());
        Ok(ChartDrawn(drawn))
    }

    /// A view as SVG text, for export: text stays text; large heatmaps are one embedded PNG.
    pub fn svg(&self, spec: &str, width: u32, height: u32) -> Result<String, JsError> {
        let view = Self::view(spec)?;
        match &*view {
            AnyView::Single(view) => {
                view_svg(&self.model, self.current()?, view, (width, height)).map_err(js_err)
            }
            compare => {
                let mut out = String::new();
                {
                    let area = plotters::drawing::IntoDrawingArea::into_drawing_area(
                        plotters::prelude::SVGBackend::with_string(&mut out, (width, height)),
                    );
                    self.draw_any(&area, compare, true)?;
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
        serde_json::to_string(&DescribedTrace::new(trace)).map_err(|e| JsError::new(&e.to_string()))
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
        self.pass.trace.as_ref().is_some_and(Trace::awaits_device)
    }

    /// True when one of the steps `names` (`steps_read` of a chart) still waits for its values
    /// on the GPU: the page then keeps the chart as it is and asks for them
    /// (`GpuSession::read_rest`) before drawing it.
    pub fn steps_wait(&self, names: Vec<String>) -> bool {
        self.pass
            .trace
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

    /// Cross-attention weights of one head of an encoder-decoder's decoder layer, row-major
    /// (T x S: the tokens it wrote down, the source's across); an error for other models.
    pub fn cross_attention(&self, layer: usize, head: usize) -> Result<Vec<f32>, JsError> {
        Ok(self
            .current()?
            .cross_attention(layer, head)
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

    /// The `top` most likely next tokens after the sentence, as the model computes them
    /// (temperature 1, nothing cut; `analysis::prediction`, as the CLI's `predict`):
    /// `[{id, token, prob}]`, most likely first. An encoder has no language-model head: an
    /// error that says so.
    pub fn next_tokens(&self, top: usize) -> Result<JsValue, JsError> {
        let predicted = prediction(&self.model, self.current()?, top.min(64)).map_err(js_err)?;
        to_js(&predicted.next)
    }

    /// The sentence's pronouns, each with the tokens of the word it stands for by agreement
    /// (`analysis::antecedents`): what the antecedent score measures.
    pub fn references(&self) -> Result<JsValue, JsError> {
        to_js(&references(&self.current()?.tokens))
    }
}
