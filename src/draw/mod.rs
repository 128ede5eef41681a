//! Views drawn with plotters, written once against a `DrawingArea` so that the page's
//! canvases, SVG exports and PNG files share every line of drawing code.

pub mod attention;
pub mod colors;
pub mod heatmap;
pub mod layer_norm;
pub mod pixels;
pub mod position;
pub mod residual;
pub mod view;

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
