//! Views drawn with plotters, written once against a `DrawingArea` so the page's canvas,
//! SVG and PNG files share them.

#[cfg(not(target_arch = "wasm32"))]
pub mod files;
