//! Views drawn with plotters, written once against a `DrawingArea` so that the page's
//! canvases, SVG exports and PNG files share every line of drawing code.

pub mod attention;
pub mod colors;
pub mod compare;
pub mod heatmap;
pub mod layer_norm;
pub(crate) mod furniture;
pub mod pixels;
pub mod position;
pub mod residual;
pub mod token_ids;
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

/// How a legend entry shows its series: a filled square (bars) or a short line (lines).
#[derive(Debug, Clone, Copy)]
pub(crate) enum LegendMark {
    Swatch,
    Line,
}

/// One row of a legend.
pub(crate) struct LegendEntry {
    pub label: String,
    pub colour: plotters::style::RGBColor,
    pub mark: LegendMark,
}

impl LegendEntry {
    pub fn new(label: impl Into<String>, colour: plotters::style::RGBColor, mark: LegendMark) -> Self {
        Self { label: label.into(), colour, mark }
    }
}

/// The legend box every line and bar chart uses, in a corner of the chart's plotting area.
/// Drawn here rather than with plotters' series labels, which measure their text by adding
/// an element to the web page: that forces a layout of the whole document for every legend.
pub(crate) fn draw_legend<'a, DB: plotters::prelude::DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &plotters::prelude::ChartContext<'a, DB, CT>,
    entries: &[LegendEntry],
    position: plotters::prelude::SeriesLabelPosition,
    font_px: u32,
) -> crate::error::Result<()> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, VPos};
    if entries.is_empty() {
        return Ok(());
    }
    let area = chart.plotting_area().strip_coord_spec();
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    let mut text_w = 0;
    for e in entries {
        text_w = text_w.max(area.estimate_text_size(&e.label, &style).map_err(draw_err)?.0 as i32);
    }
    let (pad, mark_w, gap, margin) = (6, 16, 6, 8);
    let row_h = (font_px as f32 * 1.4).ceil() as i32;
    let (box_w, box_h) = (pad * 2 + mark_w + gap + text_w, pad * 2 + row_h * entries.len() as i32);
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let (x0, y0) = match position {
        SeriesLabelPosition::UpperLeft => (margin, margin),
        SeriesLabelPosition::LowerLeft => (margin, h - margin - box_h),
        SeriesLabelPosition::LowerRight => (w - margin - box_w, h - margin - box_h),
        _ => (w - margin - box_w, margin),
    };
    area.draw(&Rectangle::new([(x0, y0), (x0 + box_w, y0 + box_h)], WHITE.mix(0.85).filled())).map_err(draw_err)?;
    area.draw(&Rectangle::new([(x0, y0), (x0 + box_w, y0 + box_h)], BLACK.stroke_width(1))).map_err(draw_err)?;
    for (k, e) in entries.iter().enumerate() {
        let (x, y) = (x0 + pad, y0 + pad + row_h * k as i32 + row_h / 2);
        match e.mark {
            LegendMark::Swatch => area.draw(&Rectangle::new([(x + 3, y - 5), (x + 13, y + 5)], e.colour.filled())),
            LegendMark::Line => area.draw(&PathElement::new(vec![(x, y), (x + mark_w, y)], e.colour.stroke_width(2))),
        }
        .map_err(draw_err)?;
        area.draw(&Text::new(e.label.clone(), (x + mark_w + gap, y), style.clone())).map_err(draw_err)?;
    }
    Ok(())
}

/// The axes of every line and bar chart: labels and axis names in the views' font, light
/// grid lines. The caller adds what is particular to its chart and draws.
pub(crate) fn house_mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
    font_px: u32,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
    DB: plotters::prelude::DrawingBackend,
{
    mesh.label_style((FONT, font_px)).axis_desc_style((FONT, font_px + 1)).light_line_style(plotters::style::RGBColor(235, 235, 235))
}

/// Labels for a category axis at x = 0, 1, 2, ...: every k-th one, so that labels of about
/// five characters never overlap across `width_px`; blank at the other tick positions.
pub(crate) fn category_labels(labels: Vec<String>, width_px: u32, font_px: u32) -> impl Fn(&f32) -> String {
    let n = labels.len();
    let fit = ((width_px as f32 - 60.0) / (font_px as f32 * 5.0)).max(1.0);
    let step = (n as f32 / fit).ceil().max(1.0) as usize;
    move |x: &f32| {
        let i = x.round() as usize;
        if (x - x.round()).abs() > 1e-3 || i >= n || i % step != 0 { String::new() } else { labels[i].clone() }
    }
}

/// Black label text of the views' font, anchored at `h`, `v` of its position.
pub(crate) fn anchored_text(font_px: u32, h: plotters::style::text_anchor::HPos, v: plotters::style::text_anchor::VPos) -> plotters::style::TextStyle<'static> {
    use plotters::prelude::*;
    TextStyle::from((FONT, font_px).into_font()).color(&BLACK).pos(plotters::style::text_anchor::Pos::new(h, v))
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
