//! One name for every chart the page and the CLI can draw, and the single function that
//! draws any of them on any plotters backend (canvas, SVG string, PNG file).

use ndarray::{s, Array2, ArrayView2, Axis};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::attention::GridOf;
use super::colors::{Clipped, Scale};
use super::heatmap::{draw_heatmap, AxisLabels, Geometry, Heatmap, HeatmapDrawn};
use super::pixels::{embed_images, EmbeddedImage};
use super::Canvas;
use super::{
    attention, draw_err, head_grid, layer_norm, logit_lens, position, prediction, residual, rotary,
    token_ids, training, votes,
};
use crate::analysis::position::position_table;
use crate::analysis::sampling::SamplingSettings;
use crate::error::{Result, VizError};
use crate::explain::step_text;
use crate::model::position::sinusoidal_table;
use crate::trace::Trace;
use crate::Transformer;

/// A chart, as the page names it in its URL and its export buttons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum View {
    /// One head's weights. `encoder`: an encoder-decoder's encoder (its unmasked
    /// self-attention over the source) rather than the decoder.
    Head {
        layer: usize,
        head: usize,
        #[serde(default)]
        encoder: bool,
    },
    /// Every head of every layer as thumbnails (`of`: which attention; the model's own by
    /// default), the chosen one framed.
    Grid {
        layer: usize,
        head: usize,
        #[serde(default)]
        of: GridOf,
    },
    /// BertViz's head view. `focus`: only that query's lines; `focus_key`: only the lines into
    /// that key; `heads`: several heads of the layer at once, each in its colour (empty: `head`).
    Lines {
        layer: usize,
        head: usize,
        focus: Option<usize>,
        #[serde(default)]
        focus_key: Option<usize>,
        #[serde(default)]
        heads: Vec<usize>,
    },
    /// One query's attention in one head, as the notes explain it: q·k for every key, divided
    /// by sqrt(d_k), the softmax, and the values weighted and summed.
    Query {
        layer: usize,
        head: usize,
        query: usize,
    },
    /// An encoder-decoder's cross-attention: target tokens down, source tokens across.
    CrossAttention {
        layer: usize,
        head: usize,
    },
    PositionTable,
    PositionWaves {
        dims: Vec<usize>,
    },
    PositionSimilarity,
    SinusoidalSimilarity,
    /// The notes' sinusoidal table, at this model's width, as waves of the chosen features.
    SinusoidalWaves {
        dims: Vec<usize>,
    },
    /// The notes' sinusoidal table, at this model's width, as a position x feature heatmap.
    SinusoidalTable,
    /// The norm at `index` in `Trace::norms`, in three stages per token: input, normalised,
    /// output after gamma and beta.
    Norm {
        index: usize,
    },
    /// The learned gamma and beta of the norm at `index`.
    NormParameters {
        index: usize,
    },
    /// Vector lengths along the residual stream for the chosen tokens (`None`: a few).
    Residual {
        #[serde(default)]
        tokens: Option<Vec<usize>>,
    },
    /// Step `index` of the trace; for per-head tensors, the slice of `head`.
    Step {
        index: usize,
        head: usize,
    },
    /// Every head of every layer coloured by one pattern score (`pattern`: previous,
    /// induction or first); a cell is a (layer, head).
    HeadGrid {
        pattern: head_grid::HeadPattern,
    },
    /// The logit lens: the top token read from the stream at every depth, at `positions`
    /// (default: the last eight), and the final prediction's probability by depth.
    LogitLens {
        #[serde(default)]
        positions: Option<Vec<usize>>,
    },
    /// Rotary positions: each feature pair's wavelength; one pair of a head's queries turning
    /// with position; a query-key score at positions (m, n), a function of m - n only.
    RotaryFrequencies,
    RotaryPair {
        layer: usize,
        head: usize,
        pair: usize,
    },
    RotaryDistance {
        layer: usize,
        head: usize,
    },
    /// The `top` most likely next tokens and what temperature, top-k and top-p do to them.
    Prediction {
        #[serde(default = "default_top")]
        top: usize,
        #[serde(flatten)]
        settings: SamplingSettings,
    },
    /// Each part's vote on `token` (default: the most likely next token); `off`: the parts the
    /// trace was computed without (the page fills it in).
    Votes {
        #[serde(default)]
        token: Option<u32>,
        #[serde(default)]
        off: Vec<crate::analysis::ablation::Switch>,
    },
    /// A training run's losses against steps (the page's Training section measured them):
    /// (step, loss) pairs of the training loss, the held-out loss and the loss on a repeated
    /// run's second copy.
    TrainingLoss {
        train: Vec<(usize, f32)>,
        held_out: Vec<(usize, f32)>,
        #[serde(default)]
        held_out_text: training::HeldOutText,
        #[serde(default)]
        second_copy: Vec<(usize, f32)>,
    },
    /// A training run's heads: every head's `pattern` score at each evaluation (`scores[e]`,
    /// layer-major, measured at `steps[e]`), as lines over the steps.
    HeadTimeline {
        pattern: head_grid::HeadPattern,
        steps: Vec<usize>,
        scores: Vec<Vec<f32>>,
        n_heads: usize,
    },
}

fn default_top() -> usize {
    20
}

/// What the page needs to show values on hover: where the cells are and what they hold.
#[derive(Debug, Clone, Serialize)]
pub struct Drawn {
    pub geometry: Option<Geometry>,
    pub grid: Option<attention::GridGeometry>,
    /// Row-major values of the cells, `rows x cols`.
    pub values: Vec<f32>,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
    /// A caption for the chart (e.g. "showing the first 512 of 30522 columns"; which labels
    /// are thinned; what the colour scale clips).
    pub note: Option<String>,
    /// A heatmap's axis labels as drawn (their boxes, and every how many rows/columns).
    pub labels: Option<AxisLabels>,
    /// Set when a heatmap's colour scale is narrower than its values (which stay unclipped).
    pub clipped: Option<Clipped>,
    /// The chart's size in the pixels every box above is given in: CSS pixels on the page.
    pub width: u32,
    pub height: u32,
    /// Device pixels a chart pixel (2 on a HiDPI screen): set by the page's `Viz::draw`.
    pub scale: f64,
    /// Cells an SVG embeds as images (see `pixels::embed_images`).
    #[serde(skip)]
    pub images: Vec<EmbeddedImage>,
    /// The lines view: where its tokens are and which lines it drew.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<attention::LinesGeometry>,
    /// What a line or bar chart plotted, for the page's controls and the tests.
    pub plotted: Option<Plotted>,
    /// Every text the canvas painted, when it was asked to report them (the page's
    /// `Viz::draw` on a canvas marked `data-report-texts`, for the tests): what a student
    /// should be able to read on the chart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub texts: Option<Vec<TextDrawn>>,
}

/// A text as painted: the box it covers (CSS pixels, turned with the text), its turn and its
/// colour.
#[derive(Debug, Clone, Serialize)]
pub struct TextDrawn {
    pub text: String,
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub degrees: f64,
    pub color: [u8; 3],
}

/// What a line or bar chart plotted.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Plotted {
    NormStages(layer_norm::NormStagesDrawn),
    NormParameters(layer_norm::NormParametersDrawn),
    Residual(residual::ResidualDrawn),
    Waves(position::WavesDrawn),
    Prediction(prediction::PredictionDrawn),
    Query(super::query::QueryDrawn),
    LogitLens(logit_lens::LensDrawn),
    RotaryFrequencies(rotary::FrequenciesDrawn),
    RotaryPair(rotary::PairDrawn),
    RotaryDistance(rotary::DistanceDrawn),
    Votes(votes::VotesDrawn),
    Training(training::TrainingDrawn),
}

impl Drawn {
    pub(crate) fn plain() -> Self {
        Drawn {
            geometry: None,
            grid: None,
            values: Vec::new(),
            row_labels: Vec::new(),
            col_labels: Vec::new(),
            note: None,
            labels: None,
            clipped: None,
            width: 0,
            height: 0,
            scale: 1.0,
            images: Vec::new(),
            lines: None,
            plotted: None,
            texts: None,
        }
    }

    /// A line or bar chart's report.
    pub(crate) fn plotted(plotted: Plotted) -> Self {
        Drawn {
            plotted: Some(plotted),
            ..Drawn::plain()
        }
    }

    /// A heatmap of `values` (row-major) with the labels the page shows on hover.
    pub(crate) fn heatmap(
        drawn: HeatmapDrawn,
        values: Vec<f32>,
        row_labels: Vec<String>,
        col_labels: Vec<String>,
    ) -> Self {
        Drawn {
            geometry: Some(drawn.geometry),
            values,
            row_labels,
            col_labels,
            note: drawn.note,
            labels: Some(drawn.labels),
            clipped: drawn.clipped,
            images: drawn.image.into_iter().collect(),
            ..Drawn::plain()
        }
    }
}

/// Positions shown in the positional-encoding views: the sentence's, but at least 64.
pub fn shown_positions(trace: &Trace) -> usize {
    trace.len().max(64).min(trace.config.context)
}

/// A step's matrix, its row and column labels, and a note on what was cut.
pub type StepMatrix = (Array2<f32>, Vec<String>, Vec<String>, Option<String>);

/// The 2-D matrix a step shows: (T, x) as is, one head of (heads, T, x), a row for 1-D.
/// Very wide matrices keep their first `max_cols` columns.
pub fn step_matrix(
    trace: &Trace,
    index: usize,
    head: usize,
    max_cols: usize,
) -> Result<StepMatrix> {
    let step = trace
        .steps
        .get(index)
        .ok_or_else(|| VizError::NoSuchStep(format!("step {index}")))?;
    let tokens = trace.token_texts();
    let source = trace.source.as_ref().map(|s| s.token_texts());
    // An axis's labels: the source's tokens on an encoder-decoder's source axes (the encoder's
    // steps, cross-attention's keys and values), else the tokens, when the sizes agree.
    let labels = |axis: Option<&String>, n: usize| -> Vec<String> {
        let on_source = axis.is_some_and(|a| a.starts_with("source"));
        match (on_source, &source) {
            (true, Some(source)) if source.len() == n => source.clone(),
            (false, _) if tokens.len() == n => tokens.clone(),
            _ => Vec::new(),
        }
    };
    let view = step.tensor.view();
    let (matrix, rows, cols): (Array2<f32>, Vec<String>, Vec<String>) = match view.ndim() {
        1 => {
            let m = view
                .insert_axis(Axis(0))
                .into_dimensionality::<ndarray::Ix2>()
                .map_err(|e| VizError::Draw(e.to_string()))?
                .to_owned(); // (1, n)
            let cols = labels(step.axes.first(), m.ncols());
            (
                m,
                vec![step.axes.first().cloned().unwrap_or_default()],
                cols,
            )
        }
        2 => {
            let m = step.tensor.view2()?.to_owned(); // (tokens, features)
            let rows = labels(step.axes.first(), m.nrows());
            (m, rows, Vec::new())
        }
        3 => {
            let all = step.tensor.view3()?; // (heads, rows, cols)
            let h = head.min(all.len_of(Axis(0)) - 1);
            let m = all.index_axis(Axis(0), h).to_owned(); // (rows, cols)
            let rows = labels(step.axes.get(1), m.nrows());
            let cols = labels(step.axes.get(2), m.ncols());
            (m, rows, cols)
        }
        n => return Err(VizError::Draw(format!("cannot show a {n}-D tensor"))),
    };
    if matrix.ncols() > max_cols {
        let note = format!("showing the first {max_cols} of {} columns", matrix.ncols());
        let cut = matrix.slice(s![.., ..max_cols]).to_owned();
        let cols = cols.into_iter().take(max_cols).collect();
        return Ok((cut, rows, cols, Some(note)));
    }
    Ok((matrix, rows, cols, None))
}

/// The longest of `titles` that fits over a heatmap of `area` (whose caption is 17 px, 14 px
/// under 360 px, as `draw_heatmap` draws it).
fn heatmap_title<DB: Canvas>(area: &DrawingArea<DB, Shift>, titles: &[&str]) -> String {
    let caption_px = if area.dim_in_pixel().0 < 360 { 14 } else { 17 };
    super::furniture::fitting_title(area, caption_px, titles)
}

/// "learned" or "sinusoidal", for titles.
fn position_kind(model: &Transformer) -> String {
    format!("{:?}", model.config.position).to_lowercase()
}

fn flat(m: ArrayView2<f32>) -> Vec<f32> {
    m.iter().copied().collect()
}

/// Draws `view` of `trace` on `area`.
/// `vector`: one rectangle per cell (SVG) rather than one blitted image (canvas, PNG).
/// `vector`: SVG output (small heatmaps as rectangles, large ones as one embedded image that
/// `view_svg` puts in); otherwise cells are blitted as one image (canvas, PNG).
pub fn draw_view<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    view: &View,
    vector: bool,
) -> Result<Drawn> {
    let mut drawn = draw_view_parts(area, model, trace, view, vector)?;
    (drawn.width, drawn.height) = area.dim_in_pixel();
    Ok(drawn)
}

fn draw_view_parts<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    view: &View,
    vector: bool,
) -> Result<Drawn> {
    match view {
        View::Head {
            layer,
            head,
            encoder,
        } => {
            // An encoder-decoder has two self-attentions, named apart: the encoder's over the
            // source, unmasked, and the decoder's, masked.
            let (shown, kind) = match (encoder, &trace.source) {
                (true, Some(source)) => (source.as_ref(), "Encoder self-attention"),
                (true, None) => {
                    return Err(VizError::NoSuchStep(
                        "the encoder's self-attention: this model has no encoder stack".into(),
                    ))
                }
                (false, Some(_)) => (trace, "Decoder self-attention (masked)"),
                (false, None) => (trace, "Attention"),
            };
            let drawn = attention::draw_head(area, shown, *layer, *head, kind, vector)?;
            let weights = flat(shown.attention(*layer, *head)?);
            let labels = shown.token_texts();
            Ok(Drawn::heatmap(drawn, weights, labels.clone(), labels))
        }
        View::CrossAttention { layer, head } => {
            draw_cross_attention(area, trace, *layer, *head, vector)
        }
        View::Query { layer, head, query } => Ok(Drawn::plotted(Plotted::Query(
            super::query::draw_query(area, trace, *layer, *head, *query)?,
        ))),
        View::Grid { layer, head, of } => {
            let (grid, image) =
                attention::draw_grid(area, trace, *of, Some((*layer, *head)), vector)?;
            Ok(Drawn {
                grid: Some(grid),
                images: image.into_iter().collect(),
                ..Drawn::plain()
            })
        }
        View::Lines {
            layer,
            head,
            focus,
            focus_key,
            heads,
        } => {
            let heads = if heads.is_empty() {
                vec![*head]
            } else {
                heads.clone()
            };
            let focus = line_focus(*focus, *focus_key);
            let lines = attention::draw_lines(area, trace, *layer, &heads, focus)?;
            Ok(Drawn {
                lines: Some(lines),
                ..Drawn::plain()
            })
        }
        View::PositionTable => draw_table_view(area, model, trace, Table::Model, vector),
        View::SinusoidalTable => draw_table_view(area, model, trace, Table::Sinusoidal, vector),
        View::PositionWaves { dims } => draw_waves_view(area, model, trace, Table::Model, dims),
        View::SinusoidalWaves { dims } => {
            draw_waves_view(area, model, trace, Table::Sinusoidal, dims)
        }
        View::PositionSimilarity => draw_similarity_view(area, model, trace, Table::Model, vector),
        View::SinusoidalSimilarity => {
            draw_similarity_view(area, model, trace, Table::Sinusoidal, vector)
        }
        View::Norm { index } => Ok(Drawn::plotted(Plotted::NormStages(
            layer_norm::draw_norm_stages(area, trace, *index)?,
        ))),
        View::NormParameters { index } => Ok(Drawn::plotted(Plotted::NormParameters(
            layer_norm::draw_norm_parameters(area, trace, *index)?,
        ))),
        View::Residual { tokens } => Ok(Drawn::plotted(Plotted::Residual(
            residual::draw_residual(area, trace, tokens.as_deref())?,
        ))),
        View::HeadGrid { pattern } => {
            let (drawn, grid) = head_grid::draw_head_grid(area, trace, *pattern, vector)?;
            let rows = (0..grid.nrows()).map(|l| format!("layer {l}")).collect();
            let cols = (0..grid.ncols()).map(|h| format!("head {h}")).collect();
            Ok(Drawn::heatmap(drawn, flat(grid.view()), rows, cols))
        }
        View::LogitLens { positions } => {
            draw_logit_lens(area, model, trace, positions.as_deref(), vector)
        }
        View::RotaryFrequencies => Ok(Drawn::plotted(Plotted::RotaryFrequencies(
            rotary::draw_frequencies(area, trace)?,
        ))),
        View::RotaryPair { layer, head, pair } => Ok(Drawn::plotted(Plotted::RotaryPair(
            rotary::draw_pair(area, trace, *layer, *head, *pair)?,
        ))),
        View::RotaryDistance { layer, head } => {
            draw_rotary_distance(area, trace, *layer, *head, vector)
        }
        View::Prediction { top, settings } => Ok(Drawn::plotted(Plotted::Prediction(
            prediction::draw_prediction(area, model, trace, *top, settings)?,
        ))),
        View::Votes { token, off } => Ok(Drawn::plotted(Plotted::Votes(votes::draw_votes(
            area, model, trace, *token, off,
        )?))),
        View::TrainingLoss {
            train,
            held_out,
            held_out_text,
            second_copy,
        } => Ok(Drawn::plotted(Plotted::Training(training::draw_loss(
            area,
            train,
            held_out,
            *held_out_text,
            second_copy,
        )?))),
        View::HeadTimeline {
            pattern,
            steps,
            scores,
            n_heads,
        } => Ok(Drawn::plotted(Plotted::Training(
            training::draw_head_timeline(area, *pattern, steps, scores, *n_heads)?,
        ))),
        View::Step { index, head } => {
            // The last step's whole vocabulary as the prediction chart draws it: its most
            // likely tokens by name, not a row of unlabelled cells.
            let step = trace.steps.get(*index);
            if step.is_some_and(|s| s.op == crate::Op::NextTokenProbabilities) {
                let settings = SamplingSettings::default();
                let drawn = prediction::draw_prediction(area, model, trace, 20, &settings)?;
                return Ok(Drawn::plotted(Plotted::Prediction(drawn)));
            }
            draw_step(area, trace, *index, *head, vector)
        }
    }
}

/// An encoder-decoder's cross-attention: target tokens down, source tokens across.
fn draw_cross_attention<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    vector: bool,
) -> Result<Drawn> {
    let drawn = super::cross_attention::draw_cross_attention(area, trace, layer, head, vector)?;
    let source = trace
        .source
        .as_ref()
        .ok_or(VizError::NoCrossAttention)?
        .token_texts();
    let weights = flat(trace.cross_attention(layer, head)?);
    Ok(Drawn::heatmap(drawn, weights, trace.token_texts(), source))
}

/// The logit lens's table with each cell's probability and the tokens of its rows and
/// columns for the page's hover, and the lens itself.
fn draw_logit_lens<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    positions: Option<&[usize]>,
    vector: bool,
) -> Result<Drawn> {
    let (drawn, lens) = logit_lens::draw_logit_lens(area, model, trace, positions, vector)?;
    let values = lens.lens.cells.iter().flatten().map(|c| c.prob).collect();
    let rows = lens.lens.depths.clone();
    let cols = lens
        .lens
        .positions
        .iter()
        .map(|&p| trace.tokens[p].text.clone())
        .collect();
    let mut out = Drawn::heatmap(drawn, values, rows, cols);
    out.plotted = Some(Plotted::LogitLens(lens));
    Ok(out)
}

/// The rotary distance view's (m, n) scores, its positions named for the page's hover.
fn draw_rotary_distance<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    vector: bool,
) -> Result<Drawn> {
    let (drawn, distance) = rotary::draw_distance(area, trace, layer, head, vector)?;
    let labels: Vec<String> = (0..distance.positions)
        .map(|p| format!("position {p}"))
        .collect();
    let mut out = Drawn::heatmap(drawn, distance.scores.clone(), labels.clone(), labels);
    out.plotted = Some(Plotted::RotaryDistance(distance));
    Ok(out)
}

/// The lines view's focus: a query's lines when one is chosen, else a key's, else all.
fn line_focus(query: Option<usize>, key: Option<usize>) -> attention::LineFocus {
    match (query, key) {
        (Some(q), _) => attention::LineFocus::From(q),
        (None, Some(k)) => attention::LineFocus::To(k),
        (None, None) => attention::LineFocus::All,
    }
}

/// Which position table a position view shows: the model's own, or the notes' sinusoidal
/// one at this model's width (whatever the model uses).
#[derive(Debug, Clone, Copy)]
enum Table {
    Model,
    Sinusoidal,
}

impl Table {
    /// The table over the shown positions: (P, d).
    fn values(self, model: &Transformer, trace: &Trace) -> Result<Array2<f32>> {
        let positions = shown_positions(trace);
        match self {
            Table::Model => position_table(model, positions).ok_or_else(|| {
                VizError::Draw("this model adds no position table to its embeddings".into())
            }),
            Table::Sinusoidal => Ok(sinusoidal_table(positions, model.config.d_model)),
        }
    }
}

/// A position table as a position x feature heatmap.
fn draw_table_view<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    table: Table,
    vector: bool,
) -> Result<Drawn> {
    let values = table.values(model, trace)?; // (P, d)
    let (full, short) = match table {
        Table::Model => {
            let kind = position_kind(model);
            (
                format!("The model's {kind} position table: position × feature"),
                format!("The {kind} position table"),
            )
        }
        Table::Sinusoidal => {
            let d = model.config.d_model;
            (
                format!("Sinusoidal encoding (d = {d}): position × feature"),
                format!("Sinusoidal table (d = {d})"),
            )
        }
    };
    let title = heatmap_title(area, &[&full, &short]);
    let drawn = position::draw_table(area, values.view(), &title, vector)?;
    Ok(Drawn::heatmap(
        drawn,
        flat(values.view()),
        Vec::new(),
        Vec::new(),
    ))
}

/// A position table's chosen features (`dims`) as curves across positions.
fn draw_waves_view<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    table: Table,
    dims: &[usize],
) -> Result<Drawn> {
    let values = table.values(model, trace)?; // (P, d)
    let waves = match table {
        Table::Model => {
            let kind = position_kind(model);
            let full =
                format!("The model's {kind} position table: chosen features across positions");
            let short = format!("The {kind} table: chosen features");
            position::draw_waves(area, values.view(), dims, &[&full, &short], |i| {
                format!("feature {i}")
            })?
        }
        Table::Sinusoidal => {
            let d = model.config.d_model;
            let full = format!("Sinusoidal encoding (d = {d}): chosen features across positions");
            let short = format!("Sinusoidal table (d = {d}): chosen features");
            position::draw_waves(area, values.view(), dims, &[&full, &short], |i| {
                position::sinusoidal_label(i, d)
            })?
        }
    };
    Ok(Drawn::plotted(Plotted::Waves(waves)))
}

/// The cosine similarity of every two positions' vectors of a position table.
fn draw_similarity_view<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    table: Table,
    vector: bool,
) -> Result<Drawn> {
    let values = table.values(model, trace)?; // (P, d)
    let titles = match table {
        Table::Model => [
            "Cosine similarity between the model's position vectors",
            "Learned: cosine similarity",
        ],
        Table::Sinusoidal => [
            "The sinusoidal table's similarity, for comparison",
            "Sinusoidal: cosine similarity",
        ],
    };
    let similarity = position::position_similarity(values.view()); // (P, P)
    let drawn = position::draw_similarity(
        area,
        similarity.view(),
        &heatmap_title(area, &titles),
        vector,
    )?;
    Ok(Drawn::heatmap(
        drawn,
        flat(similarity.view()),
        Vec::new(),
        Vec::new(),
    ))
}

/// Step `index` of the trace: its tensor as a heatmap (one head's slice of a per-head tensor,
/// the first 512 columns of a wide one), or the tokens' ids as text.
fn draw_step<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    index: usize,
    head: usize,
    vector: bool,
) -> Result<Drawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let step = trace
        .steps
        .get(index)
        .ok_or_else(|| VizError::NoSuchStep(format!("step {index}")))?;
    let step_title = step_text(step, &trace.config).title;
    if step.op == crate::Op::Tokenize {
        // Token ids are names, not amounts: shown as text, never as colours.
        token_ids::draw_token_ids(
            area,
            &trace.tokens,
            &format!("{}: each token with its id in the vocabulary", step_title),
        )?;
        return Ok(Drawn::plain());
    }
    let (m, rows, cols, cut) = step_matrix(trace, index, head, 512)?;
    let values = flat(m.view());
    let scale = match step.op {
        crate::Op::Softmax => Scale::Sequential { min: 0.0, max: 1.0 },
        _ => Scale::fit_robust(&values, 0.99),
    };
    let title = if step.tensor.shape.len() == 3 {
        format!("{step_title}, head {head}")
    } else {
        step_title
    };
    let x_desc = step.axes.last().cloned().unwrap_or_default();
    let y_desc = if step.tensor.shape.len() >= 2 {
        step.axes[step.axes.len() - 2].clone()
    } else {
        String::new()
    };
    let drawn = draw_heatmap(
        area,
        m.view(),
        &Heatmap {
            title: &title,
            x_desc: &x_desc,
            y_desc: &y_desc,
            col_labels: &cols,
            row_labels: &rows,
            scale,
            legend: "value",
            vector,
        },
    )?;
    let mut drawn = Drawn::heatmap(drawn, values, rows, cols);
    drawn.note = match (cut, drawn.note) {
        (Some(cut), Some(more)) => Some(format!("{cut}. {more}")),
        (cut, more) => cut.or(more),
    };
    Ok(drawn)
}

/// Any view as an SVG document (the page's "export SVG").
pub fn view_svg(
    model: &Transformer,
    trace: &Trace,
    view: &View,
    size: (u32, u32),
) -> Result<String> {
    let mut out = String::new();
    let drawn;
    {
        let area = SVGBackend::with_string(&mut out, size).into_drawing_area();
        drawn = draw_view(&area, model, trace, view, true)?;
        area.present().map_err(draw_err)?;
    }
    Ok(embed_images(&out, &drawn.images))
}
