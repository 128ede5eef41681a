//! The next-token prediction and how decoding reshapes it: the model's top tokens as bars,
//! at temperature 1 (light) and after the chosen temperature (dark); tokens that top-k or
//! top-p remove (or greedy decoding, at temperature 0) crossed out in their own colours and
//! named by that rule; and, beside every token left, the renormalised probability that
//! sampling draws it with.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::CATEGORICAL;
use super::furniture::{draw_legend_rows, fitting_title, legend_rows_height, RowEntry, RowMark};
use super::Canvas;
use super::{anchored_text, draw_err, short_label};
use crate::analysis::sampling::{Cut, SamplingSettings, SamplingStages, TokenStage};
use crate::error::Result;
use crate::trace::Trace;
use crate::Transformer;

/// The model's distribution (temperature 1): light blue.
const BEFORE: RGBColor = RGBColor(170, 205, 232);
/// After temperature: the palette's blue.
const TEMPERED: RGBColor = CATEGORICAL[0];
/// Removed by top-k: vermillion; by top-p: orange (Okabe-Ito, told apart without colour by
/// their labels).
const CUT_BY_K: RGBColor = CATEGORICAL[5];
const CUT_BY_P: RGBColor = CATEGORICAL[1];
/// Left out by greedy decoding: grey.
const CUT_BY_GREEDY: RGBColor = RGBColor(150, 150, 150);

/// A rule's colour and the words beside a token it removed.
fn cut_style(cut: Cut) -> (RGBColor, &'static str) {
    match cut {
        Cut::Greedy => (CUT_BY_GREEDY, "✗ greedy"),
        Cut::TopK => (CUT_BY_K, "✗ top-k"),
        Cut::TopP => (CUT_BY_P, "✗ top-p"),
    }
}

/// A token as a label: a leading space shown as `·` (as editors show spaces), line breaks
/// and tabs as escapes.
pub fn token_label(text: &str) -> String {
    let escaped = text
        .replace('\n', "\\n")
        .replace('\t', "\\t")
        .replace('\r', "\\r");
    match escaped.strip_prefix(' ') {
        Some(rest) => format!("·{rest}"),
        None => escaped,
    }
}

/// One bar as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct BarDrawn {
    pub id: u32,
    pub label: String,
    pub before: f32,
    pub tempered: f32,
    pub renormalised: f32,
    /// The rule that removed it (None: sampling can draw it).
    pub removed_by: Option<Cut>,
    /// The bar's row on the chart, in chart pixels: top and bottom.
    pub top: i32,
    pub bottom: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct PredictionDrawn {
    pub settings: SamplingSettings,
    pub bars: Vec<BarDrawn>,
    /// Tokens left to sample from, and the share of the tempered probability they carried.
    pub kept: usize,
    pub kept_mass: f32,
    pub caption: String,
}

/// Draws the top `top` next tokens of `trace` under `settings`.
pub fn draw_prediction<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    top: usize,
    settings: &SamplingSettings,
) -> Result<PredictionDrawn> {
    let probabilities = trace.next_token_probabilities()?; // (vocab)
    let stages = SamplingStages::new(probabilities, settings)?;
    let shown = stages.top(top.clamp(1, 50));
    area.fill(&WHITE).map_err(draw_err)?;
    let (width, height) = area.dim_in_pixel();
    let (w, h) = (width as i32, height as i32);
    let font = if width < 420 { 12 } else { 14 };

    let caption = caption(settings, &stages);
    let caption_y = draw_heading(area, trace, shown.len(), &caption, font)?;
    let mut legend = vec![
        RowEntry::new(
            "model's probability (temperature 1)",
            RowMark::Swatch(BEFORE),
        ),
        RowEntry::new("after temperature", RowMark::Swatch(TEMPERED)),
    ];
    if settings.temperature == 0.0 {
        legend.push(RowEntry::new(
            "greedy: only the most likely token is taken",
            RowMark::Swatch(CUT_BY_GREEDY),
        ));
    } else {
        legend.push(RowEntry::new("removed by top-k", RowMark::Swatch(CUT_BY_K)));
        legend.push(RowEntry::new("removed by top-p", RowMark::Swatch(CUT_BY_P)));
    }
    let legend_h = legend_rows_height(area, &legend, font - 1)? as i32;
    let (top_y, bottom_y) = (caption_y + font as i32 + 8, h - legend_h - 4);
    let label_w = (w / 4).clamp(60, 150);
    let value_w = (font as i32) * 9; // "→ 100.0%"
    let rows = BarRows {
        top_y,
        row_h: ((bottom_y - top_y) / shown.len().max(1) as i32).max(6),
        label_w,
        x0: label_w + 6,
        x1: (w - value_w).max(label_w + 40),
        max_p: shown
            .iter()
            .map(|t| t.before.max(t.tempered))
            .fold(1e-6f32, f32::max),
        font,
    };
    let bars = shown
        .iter()
        .enumerate()
        .map(|(r, t)| draw_bar(area, model, &rows, r, t))
        .collect::<Result<Vec<_>>>()?;
    let legend_area = area
        .clone()
        .shrink((0, h - legend_h), (w as u32, legend_h as u32));
    draw_legend_rows(&legend_area, &legend, font - 1)?;
    Ok(PredictionDrawn {
        settings: *settings,
        bars,
        kept: stages.kept,
        kept_mass: stages.kept_mass,
        caption,
    })
}

/// The settings in words, and what they leave to sample from.
fn caption(settings: &SamplingSettings, stages: &SamplingStages) -> String {
    if settings.temperature == 0.0 {
        return "temperature 0: greedy decoding takes the most likely token (top-k and top-p do not matter)".to_string();
    }
    format!(
        "temperature {}, top-k {}, top-p {}: {} token{} kept, carrying {:.1}% of the probability after temperature",
        settings.temperature,
        if settings.top_k == 0 { "off".to_string() } else { settings.top_k.to_string() },
        if settings.top_p >= 1.0 { "off".to_string() } else { settings.top_p.to_string() },
        stages.kept,
        if stages.kept == 1 { "" } else { "s" },
        stages.kept_mass * 100.0
    )
}

/// The title (what comes after the last token) and the caption under it, shortened to the
/// width; returns the caption's top.
fn draw_heading<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    shown: usize,
    caption: &str,
    font: u32,
) -> Result<i32> {
    let w = area.dim_in_pixel().0 as i32;
    let last = trace
        .tokens
        .last()
        .map(|t| token_label(&t.text))
        .unwrap_or_default();
    let title = fitting_title(
        area,
        font + 3,
        &[
            &format!(
                "What comes after “{}”: the {} most likely next tokens",
                short_label(&last, 16),
                shown
            ),
            "Most likely next tokens",
        ],
    );
    area.draw(&Text::new(
        title,
        (w / 2, 4),
        anchored_text(font + 3, HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;
    let caption_y = 4 + font as i32 + 10;
    area.draw(&Text::new(
        short_label(caption, (w / (font as i32 * 11 / 20)).max(20) as usize),
        (w / 2, caption_y),
        anchored_text(font.saturating_sub(2), HPos::Center, VPos::Top),
    ))
    .map_err(draw_err)?;
    Ok(caption_y)
}

/// Where the bars go: a row of `row_h` per token from `top_y`; labels right-aligned at
/// `label_w`; bars from `x0`, the largest probability shown (`max_p`) reaching `x1`; the
/// values after `x1`.
struct BarRows {
    top_y: i32,
    row_h: i32,
    label_w: i32,
    x0: i32,
    x1: i32,
    max_p: f32,
    font: u32,
}

impl BarRows {
    fn bar_w(&self, p: f32) -> i32 {
        ((p / self.max_p) * (self.x1 - self.x0) as f32).round() as i32
    }
}

/// Token `t` in row `r`: its label, the model's probability as a light bar with the tempered
/// one as a narrower dark bar in it, and the chance sampling draws it with (or what removed
/// it, struck through).
fn draw_bar<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    rows: &BarRows,
    r: usize,
    t: &TokenStage,
) -> Result<BarDrawn> {
    let &BarRows {
        top_y,
        row_h,
        label_w,
        x0,
        x1,
        font,
        ..
    } = rows;
    let y0 = top_y + r as i32 * row_h;
    let (y1, mid) = (y0 + row_h - 2, y0 + row_h / 2);
    let label = token_label(model.tokenizer.token_text(t.id).unwrap_or("?"));
    area.draw(&Text::new(
        short_label(&label, (label_w / (font as i32 * 3 / 5)).max(4) as usize),
        (label_w, mid),
        anchored_text(font.min(row_h as u32), HPos::Right, VPos::Center),
    ))
    .map_err(draw_err)?;
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + rows.bar_w(t.before).max(1), y1)],
        BEFORE.filled(),
    ))
    .map_err(draw_err)?;
    let inset = (row_h / 4).max(1);
    let cut = t.removed_by.map(cut_style);
    let dark = cut.map(|(colour, _)| colour).unwrap_or(TEMPERED);
    area.draw(&Rectangle::new(
        [
            (x0, y0 + inset),
            (x0 + rows.bar_w(t.tempered).max(1), y1 - inset),
        ],
        dark.filled(),
    ))
    .map_err(draw_err)?;
    let value = match cut {
        Some((_, words)) => words.to_string(),
        None => format!("→ {:.1}%", t.renormalised * 100.0),
    };
    if cut.is_some() {
        // Struck through: this token cannot be drawn.
        area.draw(&PathElement::new(
            vec![(x0, mid), (x0 + rows.bar_w(t.before).max(8), mid)],
            dark.stroke_width(2),
        ))
        .map_err(draw_err)?;
    }
    area.draw(&Text::new(
        value,
        (x1 + 6, mid),
        anchored_text(font.min(row_h as u32), HPos::Left, VPos::Center),
    ))
    .map_err(draw_err)?;
    Ok(BarDrawn {
        id: t.id,
        label,
        before: t.before,
        tempered: t.tempered,
        renormalised: t.renormalised,
        removed_by: t.removed_by,
        top: y0,
        bottom: y1,
    })
}
