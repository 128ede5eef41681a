//! Layer normalisation in the three stages the notes teach, per token: the vector that goes
//! in, the normalised vector (x - mean) / std with mean 0 and standard deviation 1 (x / rms
//! for RMSNorm), and what comes out after gamma and beta. Also the learned gamma and beta.

use ndarray::{ArrayView1, ArrayView2, Axis};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use super::colors::CATEGORICAL;
use super::furniture::{
    draw_legend_rows, legend_rows_height, tick_format, RowEntry, RowMark, TextBlock,
};
use super::Canvas;
use super::{category_labels, draw_err, house_mesh, short_label};
use crate::error::{Result, VizError};
use crate::model::config::{NormKind, NormPlace};
use crate::model::norm::{rms_scale, standardize};
use crate::trace::{Op, Trace};

/// Where a norm sits, in the words the page uses ("layer 0, after attention").
pub fn norm_place_words(trace: &Trace, index: usize) -> Result<String> {
    let rec = trace
        .norms
        .get(index)
        .ok_or_else(|| VizError::NoSuchStep(format!("norm {index}")))?;
    let op = trace.step(&rec.step)?.op;
    let when = if trace.config.norm_place == NormPlace::Post {
        "after"
    } else {
        "before"
    };
    Ok(match (op, rec.layer) {
        (Op::EmbeddingNorm, _) => "embedding norm (before layer 0)".into(),
        (Op::FinalNorm, _) => "final norm (after the last layer)".into(),
        (Op::AttentionNorm, Some(l)) => format!("layer {l}, {when} attention"),
        (Op::CrossNorm, Some(l)) => format!("layer {l}, {when} cross-attention"),
        (Op::FfnNorm, Some(l)) => format!("layer {l}, {when} feed-forward"),
        (_, Some(l)) => format!("layer {l}"),
        (_, None) => "norm".into(),
    })
}

/// One token's d_model values at one stage, summarised.
#[derive(Debug, Clone, Copy)]
struct TokenSpread {
    mean: f32,
    std: f32,
    rms: f32,
    /// The 2.5th and 97.5th percentiles: the middle 95% of the features (a few outlier
    /// features, which BERT-style models have, would otherwise set the scale).
    low: f32,
    high: f32,
}

fn spread(row: ArrayView1<f32>) -> TokenSpread {
    // f64 sums: the normalised stage's mean is ~1e-8, which f32 sums would blur.
    let d = row.len().max(1) as f64;
    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / d;
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / d;
    let rms = (row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / d).sqrt();
    // The two percentiles' elements only (linear time, not a sort: a keystroke redraws this
    // for every token and stage).
    let mut values = row.to_vec();
    let mut at = |q: f64| {
        if values.is_empty() {
            return 0.0;
        }
        let index = ((values.len() as f64 - 1.0) * q).round() as usize;
        *values.select_nth_unstable_by(index, f32::total_cmp).1
    };
    let (low, high) = (at(0.025), at(0.975));
    TokenSpread {
        mean: mean as f32,
        std: var.sqrt() as f32,
        rms: rms as f32,
        low,
        high,
    }
}

/// One stage as the page reports it: per token mean, standard deviation and root mean square.
#[derive(Debug, Clone, Serialize)]
pub struct StageDrawn {
    /// `input`, `normalised` or `output`.
    pub stage: String,
    pub title: String,
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    pub rms: Vec<f32>,
}

/// What the three-stage chart showed.
#[derive(Debug, Clone, Serialize)]
pub struct NormStagesDrawn {
    /// `layer` or `rms`, from the model's config.
    pub norm_kind: String,
    /// Where the norm sits, e.g. "layer 0, after attention".
    pub place: String,
    /// Every title and caption drawn on the chart.
    pub titles: Vec<String>,
    pub stages: Vec<StageDrawn>,
}

struct Stage {
    key: &'static str,
    title: String,
    note: String,
    spreads: Vec<TokenSpread>,
    colour: RGBColor,
}

fn stage(key: &'static str, title: String, m: ArrayView2<f32>, colour: RGBColor) -> Stage {
    let spreads: Vec<TokenSpread> = m.axis_iter(Axis(0)).map(spread).collect();
    // Two decimals, without a "-0.00" for a tiny negative number.
    let fmt = |v: f32| {
        if v.abs() < 0.005 {
            "0.00".to_string()
        } else {
            format!("{v:.2}")
        }
    };
    let range = |f: fn(&TokenSpread) -> f32| {
        let (lo, hi) = spreads
            .iter()
            .map(f)
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if fmt(lo) == fmt(hi) {
            format!("{} for every token", fmt(lo))
        } else {
            format!("{} to {}", fmt(lo), fmt(hi))
        }
    };
    let note = format!("mean {}, std {}", range(|s| s.mean), range(|s| s.std));
    Stage {
        key,
        title,
        note,
        spreads,
        colour,
    }
}

/// The whiskers and their legend mark.
const WHISKER: RGBColor = RGBColor(90, 90, 90);

/// The three stages of norm `index` of the trace, per token, as three panels side by side
/// (stacked on a narrow screen): each token's mean +- one standard deviation as a box, its
/// smallest and largest feature as a thin line.
pub fn draw_norm_stages<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    index: usize,
) -> Result<NormStagesDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (kind, d, stages) = norm_stages(trace, index)?;
    let place = norm_place_words(trace, index)?;

    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 500 { 10 } else { 12 };
    let title = format!("Layer norm, {place}: each token's {d} features at three stages");
    let head = TextBlock::wrap(area, &[(&title, font_px + 3)])?;
    let title_h = head.height();
    let (title_area, rest) = area.split_vertically(title_h);
    head.draw(&title_area, false)?;
    let legend = vec![
        RowEntry::new(
            "box: mean ± 1 std of the token's features",
            RowMark::Swatch(RGBColor(150, 150, 150)),
        ),
        RowEntry::new("dot: mean", RowMark::Dot(BLACK)),
        RowEntry::new(
            "line: middle 95% of the features",
            RowMark::Whisker(WHISKER),
        ),
    ];
    let legend_h = legend_rows_height(&rest, &legend, font_px)?;
    let (panels_area, legend_area) = rest.split_vertically(h as i32 - title_h - legend_h as i32);
    draw_legend_rows(&legend_area, &legend, font_px)?;
    let panels = if w < 640 {
        panels_area.split_evenly((3, 1))
    } else {
        panels_area.split_evenly((1, 3))
    };

    let tokens = trace.token_texts();
    let mut titles = vec![title];
    // Each panel's name and its statistics in words, wrapped to the panel; all panels give
    // their heads the same height so that their plots line up.
    let heads = panels
        .iter()
        .zip(&stages)
        .map(|(panel, s)| TextBlock::wrap(panel, &[(&s.title, font_px + 2), (&s.note, font_px)]))
        .collect::<Result<Vec<_>>>()?;
    let head_h = heads.iter().map(TextBlock::height).max().unwrap_or(0);
    for ((panel, s), text) in panels.iter().zip(&stages).zip(&heads) {
        let (head, body) = panel.split_vertically(head_h);
        text.draw(&head, true)?;
        draw_stage(
            &body,
            panel.dim_in_pixel().0,
            s,
            &tokens,
            font_px,
            trace.config.norm,
        )?;
        titles.push(s.title.clone());
        titles.push(s.note.clone());
    }
    titles.extend(legend.iter().map(|e| e.label.clone()));
    let stages = stages
        .iter()
        .map(|s| StageDrawn {
            stage: s.key.into(),
            title: s.title.clone(),
            mean: s.spreads.iter().map(|v| v.mean).collect(),
            std: s.spreads.iter().map(|v| v.std).collect(),
            rms: s.spreads.iter().map(|v| v.rms).collect(),
        })
        .collect();
    Ok(NormStagesDrawn {
        norm_kind: kind.into(),
        place,
        titles,
        stages,
    })
}

/// Norm `index`'s kind (`layer` or `rms`), its width d and its three stages: input,
/// normalised, output.
fn norm_stages(trace: &Trace, index: usize) -> Result<(&'static str, usize, [Stage; 3])> {
    let (_, input, output) = trace.norm_input_output(index)?; // (T, d), (T, d)
    let c = &trace.config;
    let (kind, normalised, middle_title) = match c.norm {
        NormKind::Layer => (
            "layer",
            standardize(input, c.norm_eps),
            "② normalised: (x − μ) / σ",
        ), // (T, d)
        NormKind::Rms => (
            "rms",
            rms_scale(input, c.norm_eps),
            "② normalised: x / rms(x)",
        ), // (T, d)
    };
    let out_title = if c.norm == NormKind::Layer {
        "③ output: γ ⊙ ② + β"
    } else {
        "③ output: γ ⊙ ②"
    };
    let stages = [
        stage("input", "① input x".into(), input, CATEGORICAL[0]),
        stage(
            "normalised",
            middle_title.into(),
            normalised.view(),
            CATEGORICAL[2],
        ),
        stage("output", out_title.into(), output, CATEGORICAL[5]),
    ];
    Ok((kind, input.ncols(), stages))
}

/// One stage's panel under its head: per token a whisker (the middle 95% of its features),
/// a box (mean ± 1 std) and a dot (the mean); the normalised stage also gets dashed lines
/// at its targets. `pw`: the panel's width.
fn draw_stage<DB: Canvas>(
    body: &DrawingArea<DB, Shift>,
    pw: u32,
    s: &Stage,
    tokens: &[String],
    font_px: u32,
    norm: NormKind,
) -> Result<()> {
    let t = tokens.len();
    let (lo, hi) = s
        .spreads
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
            (
                a.min(v.low.min(v.mean - v.std)),
                b.max(v.high.max(v.mean + v.std)),
            )
        });
    let pad = ((hi - lo) * 0.05).max(0.05);
    let label = category_labels(
        tokens.iter().map(|s| short_label(s, 6)).collect(),
        pw,
        font_px,
    );
    let mut chart = ChartBuilder::on(body)
        .margin(6)
        .margin_top(2)
        .x_label_area_size(font_px * 2 + 8)
        .y_label_area_size(font_px * 3 + 8)
        .build_cartesian_2d(-0.5f32..t as f32 - 0.5, (lo - pad)..(hi + pad))
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_labels(t.min(200))
        .x_label_formatter(&label)
        .disable_x_mesh()
        .y_label_formatter(&tick_format(lo - pad, hi + pad))
        .draw()
        .map_err(draw_err)?;
    if s.key == "normalised" {
        // The targets of the normalisation: mean 0 and (for LayerNorm) one std either side.
        let lines: &[f32] = if norm == NormKind::Layer {
            &[-1.0, 0.0, 1.0]
        } else {
            &[0.0]
        };
        for &y in lines {
            chart
                .draw_series(DashedLineSeries::new(
                    [(-0.5, y), (t as f32 - 0.5, y)],
                    4,
                    3,
                    BLACK.mix(0.5).stroke_width(1),
                ))
                .map_err(draw_err)?;
        }
    }
    let half = 0.32f32
        .min(0.5 - 0.5 / (pw as f32 / t as f32).max(1.0))
        .max(0.05);
    chart
        .draw_series(s.spreads.iter().enumerate().map(|(i, v)| {
            PathElement::new(
                vec![(i as f32, v.low), (i as f32, v.high)],
                WHISKER.stroke_width(1),
            )
        }))
        .map_err(draw_err)?;
    chart
        .draw_series(s.spreads.iter().enumerate().map(|(i, v)| {
            let x = i as f32;
            Rectangle::new(
                [(x - half, v.mean - v.std), (x + half, v.mean + v.std)],
                s.colour.mix(0.75).filled(),
            )
        }))
        .map_err(draw_err)?;
    let dot = if pw as usize / t.max(1) >= 8 { 3 } else { 1 };
    chart
        .draw_series(
            s.spreads
                .iter()
                .enumerate()
                .map(|(i, v)| Circle::new((i as f32, v.mean), dot, BLACK.filled())),
        )
        .map_err(draw_err)?;
    Ok(())
}

/// What the gamma/beta chart showed.
#[derive(Debug, Clone, Serialize)]
pub struct NormParametersDrawn {
    pub place: String,
    pub titles: Vec<String>,
}

/// The norm's learned gamma (scale) and beta (shift) across the features.
pub fn draw_norm_parameters<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    index: usize,
) -> Result<NormParametersDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let rec = trace
        .norms
        .get(index)
        .ok_or_else(|| VizError::NoSuchStep(format!("norm {index}")))?;
    let place = norm_place_words(trace, index)?;
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 500 { 10 } else { 12 };
    let gamma = &rec.stats.gamma;
    let beta = rec.stats.beta.clone().unwrap_or_default();
    let mut legend = vec![RowEntry::new("γ (scale)", RowMark::Line(CATEGORICAL[0]))];
    if !beta.is_empty() {
        legend.push(RowEntry::new("β (shift)", RowMark::Line(CATEGORICAL[5])));
    }
    let title = if beta.is_empty() {
        format!("Learned γ (scale) per feature: {place}")
    } else {
        format!("Learned γ (scale) and β (shift) per feature: {place}")
    };
    let head = TextBlock::wrap(area, &[(&title, font_px + 3)])?;
    let (title_area, rest) = area.split_vertically(head.height());
    head.draw(&title_area, true)?;
    let legend_h = legend_rows_height(&rest, &legend, font_px)?;
    let (plot_area, legend_area) =
        rest.split_vertically(h as i32 - head.height() - legend_h as i32);
    draw_legend_rows(&legend_area, &legend, font_px)?;
    let d = gamma.len();
    let (lo, hi) = gamma
        .iter()
        .chain(beta.iter())
        .fold((0f32, 0f32), |(a, b), &v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.06).max(0.05);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(8)
        .x_label_area_size(font_px * 3 + 8)
        .y_label_area_size(font_px * 3 + 12)
        .build_cartesian_2d(0f32..d as f32, (lo - pad)..(hi + pad))
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_desc("feature")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&tick_format(lo - pad, hi + pad))
        .draw()
        .map_err(draw_err)?;
    for (values, colour) in [(gamma, CATEGORICAL[0]), (&beta, CATEGORICAL[5])] {
        if !values.is_empty() {
            chart
                .draw_series(LineSeries::new(
                    values.iter().enumerate().map(|(i, &v)| (i as f32, v)),
                    colour.stroke_width(1),
                ))
                .map_err(draw_err)?;
        }
    }
    let mut titles = vec![title];
    titles.extend(legend.iter().map(|e| e.label.clone()));
    Ok(NormParametersDrawn { place, titles })
}
