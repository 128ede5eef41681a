//! Views drawn with plotters, written once against a `DrawingArea` so that the page's
//! canvases, SVG exports and PNG files share every line of drawing code.

pub mod attention;
pub mod colors;
pub mod compare;
pub mod cross_attention;
pub(crate) mod furniture;
pub mod head_grid;
pub mod heatmap;
pub mod layer_norm;
pub mod logit_lens;
pub mod patching;
pub mod pixels;
pub use pixels::Canvas;
pub mod position;
pub mod prediction;
pub mod query;
pub mod reads;
pub mod residual;
pub mod rotary;
pub mod token_ids;
pub mod training;
pub mod view;
pub mod votes;

#[cfg(not(target_arch = "wasm32"))]
pub mod files;

use crate::error::VizError;

/// Plotters' errors carry the backend's error type; views report them as `VizError::Draw`.
pub(crate) fn draw_err<E: std::fmt::Display>(e: E) -> VizError {
    VizError::Draw(e.to_string())
}

/// The font family every view asks for. Natively it is DejaVu Sans, registered by
/// `files::register_fonts`; in the browser the canvas uses the page's sans-serif.
pub const FONT: &str = "sans-serif";

/// The axes of every line and bar chart: labels and axis names in the views' font, light
/// grid lines, at most two between labelled ones (plotters' default of ten drew about a
/// hundred an axis: a grey wash on a projector, and most of the layer-norm chart's strokes at
/// every keystroke). The caller adds what is particular to its chart and draws.
pub(crate) fn house_mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
    font_px: u32,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
    DB: plotters::prelude::DrawingBackend,
{
    mesh.label_style((FONT, font_px))
        .axis_desc_style((FONT, font_px + 1))
        .light_line_style(plotters::style::RGBColor(235, 235, 235))
        .max_light_lines(2)
}

/// Labels for a category axis at x = 0, 1, 2, ...: every k-th one, so that labels of about
/// five characters never overlap across `width_px`; blank at the other tick positions.
pub(crate) fn category_labels(
    labels: Vec<String>,
    width_px: u32,
    font_px: u32,
) -> impl Fn(&f32) -> String {
    let n = labels.len();
    let fit = ((width_px as f32 - 60.0) / (font_px as f32 * 5.0)).max(1.0);
    let step = (n as f32 / fit).ceil().max(1.0) as usize;
    move |x: &f32| {
        let i = x.round() as usize;
        if (x - x.round()).abs() > 1e-3 || i >= n || i % step != 0 {
            String::new()
        } else {
            labels[i].clone()
        }
    }
}

/// Black label text of the views' font, anchored at `h`, `v` of its position.
pub(crate) fn anchored_text(
    font_px: u32,
    h: plotters::style::text_anchor::HPos,
    v: plotters::style::text_anchor::VPos,
) -> plotters::style::TextStyle<'static> {
    use plotters::prelude::*;
    TextStyle::from((FONT, font_px).into_font())
        .color(&BLACK)
        .pos(plotters::style::text_anchor::Pos::new(h, v))
}

/// Shortens a token for an axis label.
pub fn short_label(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max_chars.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}
