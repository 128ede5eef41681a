//! The residual stream: the length of chosen tokens' vectors at every point the stream passes
//! (the embedding, after each sublayer's addition, after each norm that rescales the stream),
//! and how much each sublayer wrote into it.

use std::ops::Range;

use ndarray::{ArrayView2, Axis};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::CATEGORICAL;
use super::furniture::{
    draw_legend_rows, fitting_title, legend_rows_height, tick_format, RowEntry, RowMark, TextBlock,
    NORM_BAND,
};
use super::Canvas;
use super::{anchored_text, draw_err, house_mesh, short_label, FONT};
use crate::error::{Result, VizError};
use crate::model::config::NormPlace;
use crate::trace::{Op, Trace};

/// At most this many tokens are drawn at once: one Okabe-Ito colour each, none repeated.
pub const MAX_SHOWN_TOKENS: usize = CATEGORICAL.len();

/// What happened to the stream just before a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// Token embedding (+ position, + segment): where the stream starts.
    Embedding,
    /// A sublayer's output was added.
    Add,
    /// A norm rescaled every vector of the stream.
    Norm,
}

/// One point the stream passes.
struct StreamPoint<'a> {
    /// Short name under the axis: "+attn", "norm", "+FFN".
    label: &'static str,
    /// The words the page uses: "layer 0, after attention's add".
    words: String,
    layer: Option<usize>,
    kind: PointKind,
    vectors: ArrayView2<'a, f32>, // (T, d)
}

/// Every point of the stream in order. Post-LN models (MiniLM, BERT) normalise the stream
/// itself after each addition; pre-LN models normalise only what each sublayer reads, so the
/// stream is rescaled only by an embedding norm and the final norm.
fn stream_points(trace: &Trace) -> Vec<StreamPoint<'_>> {
    let post = trace.config.norm_place == NormPlace::Post;
    let has_sum = trace.find(Op::AddPosition, None).is_some();
    let mut points = Vec::new();
    for step in &trace.steps {
        let (label, kind, words) = match (step.op, step.layer) {
            (Op::AddPosition, _) => (
                "embed",
                PointKind::Embedding,
                "embedding (token + position)".to_string(),
            ),
            (Op::TokenEmbedding, _) if !has_sum => {
                ("embed", PointKind::Embedding, "token embedding".to_string())
            }
            (Op::EmbeddingNorm, _) => ("norm", PointKind::Norm, "embedding norm".to_string()),
            (Op::AttentionResidual, Some(l)) => (
                "+attn",
                PointKind::Add,
                format!("layer {l}, attention added"),
            ),
            (Op::AttentionNorm, Some(l)) if post => (
                "norm",
                PointKind::Norm,
                format!("layer {l}, norm after attention"),
            ),
            (Op::FfnResidual, Some(l)) => (
                "+FFN",
                PointKind::Add,
                format!("layer {l}, feed-forward added"),
            ),
            (Op::FfnNorm, Some(l)) if post => (
                "norm",
                PointKind::Norm,
                format!("layer {l}, norm after feed-forward"),
            ),
            (Op::FinalNorm, _) => ("final", PointKind::Norm, "final norm".to_string()),
            _ => continue,
        };
        if let Ok(vectors) = step.tensor.view2() {
            points.push(StreamPoint {
                label,
                words,
                layer: step.layer,
                kind,
                vectors,
            });
        }
    }
    points
}

/// The length of each token's sublayer output (`output`, added to the stream by `sum`). A
/// trace that computes the output only when read (a deep model's `LayeredRecorder`, which
/// would run the layer again for it) gives it as what the addition changed: the sum minus the
/// stream it was added to, equal to the output up to rounding.
fn sublayer_output_lengths(trace: &Trace, output: Op, sum: Op, layer: usize) -> Option<Vec<f32>> {
    let out = trace.find(output, Some(layer))?;
    if !out.tensor.data.computed_when_read() {
        return out.tensor.view2().ok().map(row_norms);
    }
    let sum = trace.find(sum, Some(layer))?;
    let before = trace
        .steps
        .iter()
        .find(|s| Some(&s.name) == sum.inputs.first())?;
    let (after, before) = (sum.tensor.view2().ok()?, before.tensor.view2().ok()?); // (T, d), (T, d)
    Some(row_norms((&after - &before).view())) // (T)
}

/// Ticks 1, 2, 5, 10, 20, 50, ... between `lo` and `hi`, for a log axis.
fn one_two_five(lo: f32, hi: f32) -> Vec<f32> {
    let mut ticks = Vec::new();
    let mut decade = 10f32.powf(lo.log10().floor());
    while decade.is_finite() && decade <= hi {
        ticks.extend(
            [1.0, 2.0, 5.0]
                .iter()
                .map(|m| m * decade)
                .filter(|&v| v >= lo && v <= hi),
        );
        decade *= 10.0;
    }
    ticks
}

/// L2 norm of each row: (T, d) -> (T). Summed in f64, so finite values as large as f32 allows
/// give a finite length (at most f32::MAX), not an overflow to infinity.
fn row_norms(m: ArrayView2<f32>) -> Vec<f32> {
    m.map_axis(Axis(1), |r| {
        let squares: f64 = r.iter().map(|&x| f64::from(x).powi(2)).sum();
        squares.sqrt().min(f64::from(f32::MAX)) as f32
    })
    .to_vec()
}

/// The tokens shown when the student has not chosen: [CLS], the first word, one in the
/// middle and the last token ([SEP]), without repeats.
pub fn default_tokens(t: usize) -> Vec<usize> {
    let mut picks = vec![0, 1, t / 2, t.saturating_sub(1)];
    picks.retain(|&i| i < t);
    picks.sort_unstable();
    picks.dedup();
    picks
}

/// A shown token and its colour (`#rrggbb`), as the page's token picker paints it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownToken {
    pub index: usize,
    pub text: String,
    pub colour: String,
}

/// A point of the stream as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct PointDrawn {
    pub label: String,
    pub words: String,
    pub layer: Option<usize>,
    pub kind: PointKind,
}

/// What the residual chart showed.
#[derive(Debug, Clone, Serialize)]
pub struct ResidualDrawn {
    pub tokens: Vec<ShownToken>,
    pub points: Vec<PointDrawn>,
    /// Vector length of each shown token at each point: (shown tokens, points).
    pub lengths: Vec<Vec<f32>>,
    /// Every title and caption drawn on the chart.
    pub titles: Vec<String>,
}

fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// Labels every point with its short name and every layer with its number under its points.
fn draw_point_labels<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    to_px: impl Fn(f32) -> i32,
    y: i32,
    names: &[&str],
    layers: &[Option<usize>],
    font_px: u32,
) -> Result<()> {
    let spacing = if names.len() > 1 {
        (to_px(1.0) - to_px(0.0)).abs()
    } else {
        60
    };
    let per_point = spacing as f32 >= font_px as f32 * 2.8;
    let small = anchored_text(font_px, HPos::Center, VPos::Top);
    if per_point {
        for (i, name) in names.iter().enumerate() {
            area.draw(&Text::new(
                name.to_string(),
                (to_px(i as f32), y),
                small.clone(),
            ))
            .map_err(draw_err)?;
        }
    }
    // Group labels: "layer 3" centred under each layer's points ("L3" when space is short).
    let group_y = if per_point { y + font_px as i32 + 4 } else { y };
    let mut i = 0;
    while i < layers.len() {
        let j = (i..layers.len())
            .take_while(|&k| layers[k] == layers[i])
            .last()
            .unwrap_or(i);
        let width = to_px(j as f32) - to_px(i as f32) + spacing;
        let text = match layers[i] {
            Some(l) if width >= font_px as i32 * 4 => format!("layer {l}"),
            Some(l) => format!("L{l}"),
            // The embedding's points, named "emb" when there is no room for their own labels.
            None if i == 0 && !per_point => "emb".into(),
            None => String::new(),
        };
        if !text.is_empty() {
            let mid = (to_px(i as f32) + to_px(j as f32)) / 2;
            area.draw(&Text::new(
                text,
                (mid, group_y),
                anchored_text(font_px, HPos::Center, VPos::Top),
            ))
            .map_err(draw_err)?;
        }
        if layers[i].is_some() && j + 1 < layers.len() {
            // A light divider between layers.
            let x = (to_px(j as f32) + to_px(j as f32 + 1.0)) / 2;
            area.draw(&PathElement::new(
                vec![(x, y - 2), (x, group_y + font_px as i32)],
                RGBColor(200, 200, 200).stroke_width(1),
            ))
            .map_err(draw_err)?;
        }
        i = j + 1;
    }
    Ok(())
}

/// Draws the stream for the chosen `tokens` (indices into the sentence; `None`: a few
/// default tokens).
pub fn draw_residual<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    tokens: Option<&[usize]>,
) -> Result<ResidualDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let shown = shown_tokens(tokens, trace.len())?;
    let texts = trace.token_texts();
    let points = stream_points(trace);
    let lengths = lengths_at(&points, &shown); // (shown, points)

    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 500 { 10 } else { 12 };
    let title = "Residual stream: length ‖x‖ of each token's vector at every point".to_string();
    let caption = if trace.config.norm_place == NormPlace::Post {
        "Shaded: a layer norm rescales every vector (post-LN: a norm follows every addition)"
            .to_string()
    } else {
        "Shaded: a norm rescales the stream (pre-LN: the other norms only scale what a sublayer reads)".to_string()
    };
    let colours: Vec<RGBColor> = (0..shown.len()).map(|k| CATEGORICAL[k]).collect();
    let legend = token_legend(&shown, &colours, &texts);

    // Title and caption, the line chart and its legend, then the bar chart.
    let text = TextBlock::wrap(area, &[(&title, font_px + 3), (&caption, font_px)])?;
    let head_h = text.height();
    let (head, rest) = area.split_vertically(head_h);
    text.draw(&head, false)?;
    let (top, bottom) = rest.split_vertically(((h as i32 - head_h) as f32 * 0.64) as i32);
    let legend_h = legend_rows_height(&top, &legend, font_px)?;
    let (top_plot, legend_area) =
        top.split_vertically(top.dim_in_pixel().1 as i32 - legend_h as i32);
    draw_legend_rows(&legend_area, &legend, font_px)?;
    draw_lengths(&top_plot, &points, &lengths, &colours, font_px)?;
    let bars_title = draw_writes(&bottom, &sublayer_writes(trace), font_px)?;

    let mut titles = vec![title, caption, bars_title];
    titles.extend(legend.iter().map(|e| e.label.clone()));
    Ok(ResidualDrawn {
        tokens: shown
            .iter()
            .zip(&colours)
            .map(|(&i, &c)| ShownToken {
                index: i,
                text: texts[i].clone(),
                colour: hex(c),
            })
            .collect(),
        points: points
            .iter()
            .map(|p| PointDrawn {
                label: p.label.into(),
                words: p.words.clone(),
                layer: p.layer,
                kind: p.kind,
            })
            .collect(),
        lengths,
        titles,
    })
}

/// The tokens to draw: the chosen ones (each once, in the order chosen, at most
/// `MAX_SHOWN_TOKENS`) or, when none are chosen, the defaults for `t` tokens.
fn shown_tokens(chosen: Option<&[usize]>, t: usize) -> Result<Vec<usize>> {
    let mut shown: Vec<usize> = match chosen {
        Some(chosen) if !chosen.is_empty() => chosen.to_vec(),
        _ => default_tokens(t),
    };
    if let Some(&bad) = shown.iter().find(|&&i| i >= t) {
        return Err(VizError::Draw(format!(
            "token {bad} is not in the sentence, which has {t} tokens"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    shown.retain(|&i| seen.insert(i));
    shown.truncate(MAX_SHOWN_TOKENS);
    Ok(shown)
}

/// Each shown token's vector length at each point: (shown, points).
fn lengths_at(points: &[StreamPoint], shown: &[usize]) -> Vec<Vec<f32>> {
    let all: Vec<Vec<f32>> = points.iter().map(|p| row_norms(p.vectors)).collect(); // (points, T)
    shown
        .iter()
        .map(|&tok| all.iter().map(|row| row[tok]).collect())
        .collect()
}

/// A legend row per shown token in its colour, and one for the norms' marker.
fn token_legend(shown: &[usize], colours: &[RGBColor], texts: &[String]) -> Vec<RowEntry> {
    let mut legend: Vec<RowEntry> = shown
        .iter()
        .zip(colours)
        .map(|(&i, &c)| {
            RowEntry::new(
                format!("{} ({i})", short_label(&texts[i], 12)),
                RowMark::LineDot(c),
            )
        })
        .collect();
    legend.push(RowEntry::new(
        "after a norm",
        RowMark::NormMarker(RGBColor(60, 60, 60)),
    ));
    legend
}

/// The line chart: each shown token's length at every point, on a log scale (a norm
/// multiplies lengths, and [CLS] can be 30 times longer than a word), with the norms shaded.
fn draw_lengths<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    points: &[StreamPoint],
    lengths: &[Vec<f32>],
    colours: &[RGBColor],
    font_px: u32,
) -> Result<()> {
    let n = points.len();
    let (lo, hi) = lengths
        .iter()
        .flatten()
        .fold((f32::INFINITY, 0f32), |(a, b), &v| (a.min(v), b.max(v)));
    // Room above and below the lines, within what f32 holds.
    let (lo, hi) = (
        lo.max(1e-3) * 0.8,
        (hi * 1.25).min(f32::MAX).max(lo.max(1e-3) * 2.0),
    );
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .margin_right(14)
        .x_label_area_size(font_px * 2 + 12)
        .y_label_area_size(font_px * 3 + 16)
        .build_cartesian_2d(
            -0.5f32..(n as f32 - 0.5),
            (lo..hi).log_scale().with_key_points(one_two_five(lo, hi)),
        )
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("‖x‖ (length, log scale)")
        .y_label_formatter(&|y| format!("{y}"))
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_series(
            points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.kind == PointKind::Norm)
                .map(|(i, _)| {
                    Rectangle::new(
                        [(i as f32 - 0.42, lo), (i as f32 + 0.42, hi)],
                        NORM_BAND.filled(),
                    )
                }),
        )
        .map_err(draw_err)?;
    for (row, &colour) in lengths.iter().zip(colours) {
        chart
            .draw_series(LineSeries::new(
                row.iter().enumerate().map(|(p, &v)| (p as f32, v)),
                colour.stroke_width(2),
            ))
            .map_err(draw_err)?;
        // Adds (and the embedding) as filled dots, norms as hollow squares.
        chart
            .draw_series(row.iter().enumerate().map(|(p, &v)| {
                let style = if points[p].kind == PointKind::Norm {
                    colour.stroke_width(2)
                } else {
                    colour.filled()
                };
                EmptyElement::at((p as f32, v))
                    + match points[p].kind {
                        PointKind::Norm => Rectangle::new([(-4, -4), (4, 4)], style).into_dyn(),
                        _ => Circle::new((0, 0), 3, style).into_dyn(),
                    }
            }))
            .map_err(draw_err)?;
    }
    let names: Vec<&str> = points.iter().map(|p| p.label).collect();
    let layers: Vec<Option<usize>> = points.iter().map(|p| p.layer).collect();
    label_categories(
        area,
        chart.plotting_area().get_pixel_range(),
        &names,
        &layers,
        font_px,
    )
}

/// What one sublayer wrote into the stream: its short name, its layer and the mean length
/// of its output over all tokens.
type SublayerWrite = (&'static str, Option<usize>, f32);

/// Every sublayer's write, in the order of the stream.
fn sublayer_writes(trace: &Trace) -> Vec<SublayerWrite> {
    let t = trace.len();
    let mut writes = Vec::new();
    for layer in 0..trace.config.n_layers {
        for (op, sum, name) in [
            (Op::OutputProjection, Op::AttentionResidual, "attn"),
            (Op::FfnDown, Op::FfnResidual, "FFN"),
        ] {
            if let Some(lengths) = sublayer_output_lengths(trace, op, sum, layer) {
                writes.push((name, Some(layer), lengths.iter().sum::<f32>() / t as f32));
            }
        }
    }
    writes
}

/// The bar chart of what each sublayer wrote; returns its title.
fn draw_writes<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    writes: &[SublayerWrite],
    font_px: u32,
) -> Result<String> {
    let title = fitting_title(
        area,
        font_px + 2,
        &[
            "What each sublayer added: mean length of its output over all tokens",
            "What each sublayer added (mean length)",
        ],
    );
    let m = writes.len();
    let top_val = (writes.iter().map(|a| a.2).fold(0f32, f32::max) * 1.1).min(f32::MAX);
    let mut bars = ChartBuilder::on(area)
        .caption(&title, (FONT, font_px + 2))
        .margin(8)
        .margin_right(14)
        .x_label_area_size(font_px * 2 + 12)
        .y_label_area_size(font_px * 3 + 16)
        .build_cartesian_2d(-0.5f32..(m.max(1) as f32 - 0.5), 0f32..top_val.max(1e-3))
        .map_err(draw_err)?;
    house_mesh(&mut bars.configure_mesh(), font_px)
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("mean ‖output‖")
        .y_label_formatter(&tick_format(0.0, top_val))
        .draw()
        .map_err(draw_err)?;
    bars.draw_series(writes.iter().enumerate().map(|(i, (name, _, v))| {
        let colour = if *name == "attn" {
            CATEGORICAL[0]
        } else {
            CATEGORICAL[1]
        };
        Rectangle::new(
            [(i as f32 - 0.35, 0.0), (i as f32 + 0.35, *v)],
            colour.filled(),
        )
    }))
    .map_err(draw_err)?;
    let names: Vec<&str> = writes.iter().map(|w| w.0).collect();
    let layers: Vec<Option<usize>> = writes.iter().map(|w| w.1).collect();
    label_categories(
        area,
        bars.plotting_area().get_pixel_range(),
        &names,
        &layers,
        font_px,
    )?;
    Ok(title)
}

/// `draw_point_labels` under a chart of `area` whose plot spans the pixel ranges `x_px` and
/// `y_px` and whose x axis runs from -0.5 to `names.len()` - 0.5, a category at each whole
/// number.
fn label_categories<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    (x_px, y_px): (Range<i32>, Range<i32>),
    names: &[&str],
    layers: &[Option<usize>],
    font_px: u32,
) -> Result<()> {
    let n = names.len().max(1);
    let origin = area.get_base_pixel();
    let to_px = |x: f32| {
        x_px.start - origin.0 + ((x + 0.5) / n as f32 * (x_px.end - x_px.start) as f32) as i32
    };
    draw_point_labels(area, to_px, y_px.end - origin.1 + 4, names, layers, font_px)
}
