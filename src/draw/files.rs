//! Native rendering of every view to SVG and PNG files (the CLI's `render`), with the
//! DejaVu Sans font embedded so the output does not depend on the machine's fonts.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;

use super::{attention, draw_err, layer_norm, position, residual};
use crate::analysis::position::position_table;
use crate::error::{Result, VizError};
use crate::model::position::sinusoidal_table;
use crate::trace::Trace;
use crate::Transformer;

/// Registers DejaVu Sans as the "sans-serif" family for plotters' native text rendering.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let faces = [
            (FontStyle::Normal, dejavu::sans::regular()),
            (FontStyle::Bold, dejavu::sans::bold()),
            (FontStyle::Italic, dejavu::sans::oblique()),
            (FontStyle::Oblique, dejavu::sans::oblique()),
        ];
        for (style, bytes) in faces {
            // Both fonts ship inside the crate, so this cannot fail on a good build.
            let _ = plotters::style::register_font(super::FONT, style, bytes);
        }
    });
}

/// Draws one view into `DIR/NAME.svg` and `DIR/NAME.png` at the given size.
macro_rules! svg_and_png {
    ($dir:expr, $name:expr, $size:expr, |$area:ident, $vector:ident| $body:expr) => {{
        let svg_path = $dir.join(format!("{}.svg", $name));
        {
            #[allow(unused_variables)]
            let $vector = true;
            let $area = SVGBackend::new(&svg_path, $size).into_drawing_area();
            $body?;
            $area.present().map_err(draw_err)?;
        }
        let png_path = $dir.join(format!("{}.png", $name));
        {
            #[allow(unused_variables)]
            let $vector = false;
            let $area = BitMapBackend::new(&png_path, $size).into_drawing_area();
            $body?;
            $area.present().map_err(draw_err)?;
        }
        2usize
    }};
}

fn mkdir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| VizError::Io { path: dir.display().to_string(), reason: e.to_string() })
}

/// Every view of the trace; returns how many files were written.
pub fn render_all(model: &Transformer, trace: &Trace, out: &Path, only_layer: Option<usize>) -> Result<usize> {
    register_fonts();
    let c = &trace.config;
    if let Some(l) = only_layer {
        if l >= c.n_layers {
            return Err(VizError::OutOfRange { layer: l, head: 0, layers: c.n_layers, heads: c.n_heads });
        }
    }
    let layers: Vec<usize> = only_layer.map(|l| vec![l]).unwrap_or_else(|| (0..c.n_layers).collect());
    let side = (trace.len() as u32 * 24 + 220).clamp(480, 1400);
    let mut written = 0;

    let dir = out.join("attention");
    mkdir(&dir)?;
    for &layer in &layers {
        for head in 0..c.n_heads {
            written += svg_and_png!(dir, format!("layer{layer}_head{head}"), (side + 70, side), |area, vector| attention::draw_head(&area, trace, layer, head, vector));
            written += svg_and_png!(dir, format!("lines_layer{layer}_head{head}"), (640, (trace.len() as u32 * 20 + 80).clamp(300, 1400)), |area, vector| {
                attention::draw_lines(&area, trace, layer, head, None)
            });
        }
    }
    written += svg_and_png!(out, "attention_grid", (c.n_heads as u32 * 60 + 60, c.n_layers as u32 * 60 + 40), |area, vector| attention::draw_grid(
        &area,
        trace,
        Some((layers[0], 0)),
        vector
    ));

    let positions = trace.len().max(64).min(c.context);
    if let Some(table) = position_table(model, positions) {
        let kind = match c.position {
            crate::model::config::Position::Learned => "learned",
            _ => "sinusoidal",
        };
        written += svg_and_png!(out, "position_table", (1100, 700), |area, vector| position::draw_table(
            &area,
            table.view(),
            &format!("Positional encoding ({kind}): position × feature"),
            vector
        ));
        written += svg_and_png!(out, "position_waves", (1000, 480), |area, vector| position::draw_waves(
            &area,
            table.view(),
            &[0, 1, 4, 5, 32, 33],
            &format!("Positional encoding ({kind}): selected features across positions")
        ));
        written += svg_and_png!(out, "position_similarity", (760, 700), |area, vector| position::draw_similarity(
            &area,
            table.view(),
            "Cosine similarity between positions",
            vector
        ));
        if kind == "learned" {
            let sin = sinusoidal_table(positions, c.d_model);
            written += svg_and_png!(out, "position_sinusoidal_comparison", (760, 700), |area, vector| position::draw_similarity(
                &area,
                sin.view(),
                "For comparison: the sinusoidal table's similarity",
                vector
            ));
        }
    }

    let dir = out.join("layer_norm");
    mkdir(&dir)?;
    let tokens = trace.token_texts();
    let mut norms: Vec<(String, &crate::trace::NormRecord)> = Vec::new();
    for rec in &trace.norms {
        if rec.layer.is_none() || layers.contains(&rec.layer.unwrap_or(usize::MAX)) {
            norms.push((rec.step.replace('.', "_"), rec));
        }
    }
    for (name, rec) in norms {
        written += svg_and_png!(dir, name, (1000, 700), |area, vector| layer_norm::draw_norm(&area, rec, &tokens, &format!("Norm statistics: {}", rec.step)));
    }
    written += svg_and_png!(out, "residual_stream", (1100, 760), |area, vector| residual::draw_residual(&area, trace));
    Ok(written)
}
