//! One query at a time: for the chosen token in one head, a row per key with the dot product
//! q·k, the same divided by sqrt(d_k), and the softmax weight, each as a bar with its number;
//! under them the output, the values weighted and summed, as one strip of d_k cells.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::{Scale, CATEGORICAL};
use super::furniture::fitting_title;
use super::prediction::token_label;
use super::Canvas;
use super::{anchored_text, draw_err, short_label};
use crate::analysis::query::{query_attention, KeyScore, QueryAttention};
use crate::error::Result;
use crate::trace::Trace;

/// Most keys drawn: past it, those with the most weight (in the sentence's order).
pub const MAX_KEYS: usize = 20;

/// Bars of the dot products and scores: grey-blue when positive, vermillion when negative.
const POSITIVE: RGBColor = CATEGORICAL[0];
const NEGATIVE: RGBColor = CATEGORICAL[5];
const WEIGHT: RGBColor = CATEGORICAL[2];
const MASKED: RGBColor = RGBColor(150, 150, 150);

/// A key's row as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct KeyRowDrawn {
    pub label: String,
    #[serde(flatten)]
    pub score: KeyScore,
    /// The row's top and bottom, in chart pixels.
    pub top: i32,
    pub bottom: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueryDrawn {
    pub query: usize,
    pub query_label: String,
    pub head_dim: usize,
    /// The rows drawn (every key, or the `MAX_KEYS` with the most weight).
    pub rows: Vec<KeyRowDrawn>,
    /// Keys in all, masked ones included.
    pub keys: usize,
    pub output: Vec<f32>,
}

/// Draws the attention of token `query` in `layer`, `head`.
pub fn draw_query<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    query: usize,
) -> Result<QueryDrawn> {
    let stages = query_attention(trace, layer, head, query)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let font = if w < 420 { 11u32 } else { 13 };
    let tokens = trace.token_texts();
    let label = |i: usize| token_label(tokens.get(i).map(String::as_str).unwrap_or("?"));
    let query_label = label(query);

    let title = fitting_title(
        area,
        font + 3,
        &[
            &format!(
                "One query: how “{}” (token {query}) attends, layer {layer}, head {head}",
                short_label(&query_label, 16)
            ),
            &format!("Token {query}'s attention, layer {layer}, head {head}"),
        ],
    );
    area.draw(&Text::new(
        title,
        (w / 2, 4),
        anchored_text(font + 3, HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;
    let root = (stages.head_dim as f32).sqrt();
    let formula = format!(
        "score = q·k ÷ √d_k (d_k = {}, √d_k = {root:.2});  weight = softmax of the scores;  output = Σ weight × value",
        stages.head_dim
    );
    area.draw(&Text::new(
        short_label(&formula, (w / (font as i32 * 11 / 20)).max(20) as usize),
        (w / 2, 4 + font as i32 + 10),
        anchored_text(font.saturating_sub(1), HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;

    let shown = shown_keys(&stages);
    let strip_h = 30;
    let head_y = 4 + 2 * (font as i32 + 10);
    let (top_y, bottom_y) = (head_y + font as i32 + 6, h - strip_h - 2 * font as i32 - 14);
    let row_h = ((bottom_y - top_y) / shown.len().max(1) as i32).clamp(6, 34);
    let label_w = (w / 6).clamp(60, 140);
    let gap = 14;
    let column_w = (w - label_w - 4 * gap) / 3;
    let columns = [
        label_w + gap,
        label_w + 2 * gap + column_w,
        label_w + 3 * gap + 2 * column_w,
    ];
    for (x, name) in columns
        .iter()
        .zip(["q · k", "÷ √d_k: the score", "softmax: the weight"])
    {
        area.draw(&Text::new(
            name,
            (*x, head_y),
            anchored_text(font, HPos::Left, VPos::Top),
        ))
        .map_err(draw_err)?;
    }
    // Dot products and scores share a scale each, centred on 0 (they can be negative).
    let largest = |f: fn(&KeyScore) -> Option<f32>| {
        shown
            .iter()
            .filter_map(f)
            .map(f32::abs)
            .fold(1e-6f32, f32::max)
    };
    let (dot_max, scaled_max) = (largest(|s| s.dot), largest(|s| s.scaled));
    let weight_max = shown.iter().map(|s| s.weight).fold(1e-6f32, f32::max);
    let text_style = anchored_text(font.min(row_h as u32), HPos::Left, VPos::Center);
    let mut rows = Vec::with_capacity(shown.len());
    for (r, s) in shown.iter().enumerate() {
        let y0 = top_y + r as i32 * row_h;
        let (y1, mid) = (y0 + row_h - 2, y0 + row_h / 2);
        let key_label = label(s.key);
        let mark = if s.key == query { " (itself)" } else { "" };
        area.draw(&Text::new(
            short_label(
                &format!("{key_label}{mark}"),
                (label_w / (font as i32 * 3 / 5)).max(4) as usize,
            ),
            (label_w, mid),
            anchored_text(font.min(row_h as u32), HPos::Right, VPos::Center),
        ))
        .map_err(draw_err)?;
        match (s.dot, s.scaled) {
            (Some(dot), Some(scaled)) => {
                signed_bar(
                    area,
                    columns[0],
                    column_w,
                    (y0, y1),
                    dot,
                    dot_max,
                    font,
                    &text_style,
                )?;
                signed_bar(
                    area,
                    columns[1],
                    column_w,
                    (y0, y1),
                    scaled,
                    scaled_max,
                    font,
                    &text_style,
                )?;
            }
            _ => {
                area.draw(&Text::new(
                    "masked: after the query",
                    (columns[0], mid),
                    text_style.color(&MASKED),
                ))
                .map_err(draw_err)?;
            }
        }
        let value_w = font as i32 * 4;
        let bar = ((s.weight / weight_max) * (column_w - value_w) as f32).round() as i32;
        area.draw(&Rectangle::new(
            [(columns[2], y0 + 1), (columns[2] + bar.max(1), y1)],
            (if s.dot.is_some() { WEIGHT } else { MASKED }).filled(),
        ))
        .map_err(draw_err)?;
        area.draw(&Text::new(
            format!("{:.0}%", s.weight * 100.0),
            (columns[2] + bar.max(1) + 4, mid),
            text_style.clone(),
        ))
        .map_err(draw_err)?;
        rows.push(KeyRowDrawn {
            label: key_label,
            score: s.clone(),
            top: y0,
            bottom: y1,
        });
    }
    draw_output(
        area,
        &stages,
        (label_w + gap, h - strip_h - font as i32 - 8),
        (w - label_w - 2 * gap, strip_h),
        font,
        &shown,
        &label,
    )?;
    Ok(QueryDrawn {
        query,
        query_label,
        head_dim: stages.head_dim,
        rows,
        keys: stages.keys.len(),
        output: stages.output,
    })
}

/// The keys drawn: all of them, or the `MAX_KEYS` with the most weight, in the sentence's order.
fn shown_keys(stages: &QueryAttention) -> Vec<KeyScore> {
    let mut keys = stages.keys.clone();
    if keys.len() > MAX_KEYS {
        keys.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.key.cmp(&b.key)));
        keys.truncate(MAX_KEYS);
        keys.sort_by_key(|s| s.key);
    }
    keys
}

/// A bar from the middle of its column, right for a positive value and left for a negative one,
/// with the value written at the column's right.
#[allow(clippy::too_many_arguments)]
fn signed_bar<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    x: i32,
    width: i32,
    (y0, y1): (i32, i32),
    value: f32,
    largest: f32,
    font: u32,
    style: &TextStyle,
) -> Result<()> {
    let value_w = font as i32 * 4;
    let half = (width - value_w) / 2;
    let centre = x + half;
    let length = ((value / largest) * half as f32).round() as i32;
    let (a, b) = if length >= 0 {
        (centre, centre + length.max(1))
    } else {
        (centre + length, centre)
    };
    area.draw(&Rectangle::new(
        [(a, y0 + 1), (b, y1)],
        (if value >= 0.0 { POSITIVE } else { NEGATIVE }).filled(),
    ))
    .map_err(draw_err)?;
    area.draw(&PathElement::new(
        vec![(centre, y0), (centre, y1)],
        RGBColor(120, 120, 120),
    ))
    .map_err(draw_err)?;
    area.draw(&Text::new(
        format!("{value:.2}"),
        (x + 2 * half + 4, (y0 + y1) / 2),
        style.clone(),
    ))
    .map_err(draw_err)
}

/// The output vector as a strip of d_k cells, with the keys that gave it most.
fn draw_output<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    stages: &QueryAttention,
    (x, y): (i32, i32),
    (width, height): (i32, i32),
    font: u32,
    shown: &[KeyScore],
    label: &dyn Fn(usize) -> String,
) -> Result<()> {
    let mut by_weight: Vec<&KeyScore> = shown.iter().filter(|s| s.weight > 0.0).collect();
    by_weight.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let most = by_weight
        .iter()
        .take(3)
        .map(|s| {
            format!(
                "“{}” {:.0}%",
                short_label(&label(s.key), 12),
                s.weight * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    area.draw(&Text::new(
        format!(
            "output: the values weighted and summed, {} numbers (mostly {most})",
            stages.head_dim
        ),
        (x, y - 2),
        anchored_text(font, HPos::Left, VPos::Bottom),
    ))
    .map_err(draw_err)?;
    let limit = stages
        .output
        .iter()
        .map(|v| v.abs())
        .fold(1e-6f32, f32::max);
    let scale = Scale::Diverging { limit };
    let n = stages.output.len().max(1) as i32;
    for (i, &v) in stages.output.iter().enumerate() {
        let (x0, x1) = (x + i as i32 * width / n, x + (i as i32 + 1) * width / n);
        area.draw(&Rectangle::new(
            [(x0, y), (x1, y + height)],
            scale.color(v).filled(),
        ))
        .map_err(draw_err)?;
    }
    area.draw(&Rectangle::new(
        [(x - 1, y - 1), (x + width, y + height)],
        RGBColor(160, 160, 160).stroke_width(1),
    ))
    .map_err(draw_err)?;
    area.draw(&Text::new(
        format!("dim 0 … {}", stages.head_dim.saturating_sub(1)),
        (x, y + height + 4),
        anchored_text(font.saturating_sub(2), HPos::Left, VPos::Top),
    ))
    .map_err(draw_err)
}
