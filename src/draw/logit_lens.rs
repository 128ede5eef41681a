//! The logit lens as a table: one row a depth (the embedding, then each layer's output), one
//! column a position, each cell the token the stream at that point would predict, coloured by
//! its probability; beside each row, a bar with the probability of the model's final
//! prediction at the last position, so a student sees at which depth the answer appears.

use ndarray::Array2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::{ink_on, Scale, CATEGORICAL};
use super::heatmap::{draw_heatmap, Geometry, Heatmap, HeatmapDrawn};
use super::prediction::token_label;
use super::Canvas;
use super::{anchored_text, draw_err, short_label};
use crate::analysis::logit_lens::{last_positions, logit_lens, LogitLens};
use crate::error::Result;
use crate::trace::Trace;
use crate::Transformer;

/// The cells' colours (each top token's probability), and so the ink of the tokens on them.
const PROBABILITY: Scale = Scale::Sequential { min: 0.0, max: 1.0 };

#[derive(Debug, Clone, Serialize)]
pub struct LensDrawn {
    pub lens: LogitLens,
}

/// Draws the lens at `positions` (default: the last eight).
pub fn draw_logit_lens<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    model: &Transformer,
    trace: &Trace,
    positions: Option<&[usize]>,
    vector: bool,
) -> Result<(HeatmapDrawn, LensDrawn)> {
    let positions = positions
        .map(<[usize]>::to_vec)
        .unwrap_or_else(|| last_positions(trace.len(), 8));
    let lens = logit_lens(model, trace, &positions)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let w = area.dim_in_pixel().0;
    let bars_w = (w / 4).clamp(90, 220);
    let (table_area, bars_area) = area.split_horizontally(w - bars_w);
    let probs = Array2::from_shape_fn((lens.depths.len(), positions.len()), |(r, c)| {
        lens.cells[r][c].prob
    }); // (depths, positions)
    let rows: Vec<String> = lens
        .depths
        .iter()
        .map(|d| d.replace("layer ", "L"))
        .collect();
    let cols: Vec<String> = positions
        .iter()
        .map(|&p| token_label(&trace.tokens[p].text))
        .collect();
    let title = "Logit lens: the top next token read from the stream at each depth";
    let drawn = draw_heatmap(
        &table_area,
        probs.view(),
        &Heatmap {
            title,
            x_desc: "position (its token)",
            y_desc: "depth",
            col_labels: &cols,
            row_labels: &rows,
            scale: PROBABILITY,
            legend: "probability",
            vector,
        },
    )?;
    draw_cell_tokens(&table_area, &lens, &drawn.geometry)?;
    draw_final_probabilities(&bars_area, &lens, &drawn.geometry, bars_w)?;
    Ok((drawn, LensDrawn { lens }))
}

/// A cell's width and height in pixels.
fn cell_size(g: &Geometry) -> (f32, f32) {
    (
        g.width as f32 / g.cols as f32,
        g.height as f32 / g.rows as f32,
    )
}

/// The token in each cell, where it fits: white on the dark (unlikely) end of the scale.
fn draw_cell_tokens<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    lens: &LogitLens,
    g: &Geometry,
) -> Result<()> {
    let (cell_w, cell_h) = cell_size(g);
    let font = ((cell_h * 0.7) as u32).min(13);
    if font < 8 {
        return Ok(());
    }
    let max_chars = ((cell_w / (font as f32 * 0.6)) as usize).max(1);
    for (r, row) in lens.cells.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (x, y) = (
                g.left + ((c as f32 + 0.5) * cell_w) as i32,
                g.top + ((r as f32 + 0.5) * cell_h) as i32,
            );
            let colour = ink_on(PROBABILITY.color(cell.prob));
            let style = anchored_text(font, HPos::Center, VPos::Center).color(&colour);
            area.draw(&Text::new(
                short_label(&token_label(&cell.text), max_chars),
                (x, y),
                style,
            ))
            .map_err(draw_err)?;
        }
    }
    Ok(())
}

/// Beside each depth (`bars_w` wide): the final prediction's probability there.
fn draw_final_probabilities<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    lens: &LogitLens,
    g: &Geometry,
    bars_w: u32,
) -> Result<()> {
    let cell_h = cell_size(g).1;
    let bar_font = 12;
    let header = format!(
        "p({}) at the last token",
        short_label(&token_label(&lens.final_token.text), 10)
    );
    area.draw(&Text::new(
        header,
        (4, (g.top - 4).max(bar_font as i32)),
        anchored_text(bar_font, HPos::Left, VPos::Bottom),
    ))
    .map_err(draw_err)?;
    let max_bar = bars_w as i32 - 50;
    for (r, p) in lens.final_prob_by_depth.iter().enumerate() {
        let y0 = g.top + (r as f32 * cell_h) as i32 + 1;
        let y1 = g.top + ((r + 1) as f32 * cell_h) as i32 - 1;
        let len = (p * max_bar as f32).round() as i32;
        area.draw(&Rectangle::new(
            [(4, y0), (4 + len.max(1), y1.max(y0 + 1))],
            CATEGORICAL[0].filled(),
        ))
        .map_err(draw_err)?;
        if cell_h >= 9.0 {
            let label = format!("{:.0}%", p * 100.0);
            area.draw(&Text::new(
                label,
                (8 + len, (y0 + y1) / 2),
                anchored_text((cell_h as u32).min(11), HPos::Left, VPos::Center),
            ))
            .map_err(draw_err)?;
        }
    }
    Ok(())
}
