//! A canvas backend for plotters that draws like `plotters_canvas::CanvasBackend` but blits
//! bitmaps (heatmap cells, thumbnails) with one `putImageData` instead of a rectangle per
//! pixel, which is what makes redrawing every view on each keystroke affordable.
//!
//! On a HiDPI screen the canvas has `scale` device pixels a CSS pixel. The backend then
//! reports its size in CSS pixels and scales the context, so every view is laid out as on a
//! plain screen (same text sizes, margins and strokes, same geometry for the page's hover
//! code) while the browser renders text and lines at the full device resolution.

use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

#[derive(Debug)]
pub struct WebDrawError(String);

impl std::fmt::Display for WebDrawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "canvas: {}", self.0)
    }
}

impl std::error::Error for WebDrawError {}

type Res = Result<(), DrawingErrorKind<WebDrawError>>;

fn lift<E: std::error::Error + Send + Sync>(r: Result<(), DrawingErrorKind<E>>) -> Res {
    r.map_err(|e| match e {
        DrawingErrorKind::DrawingError(inner) => DrawingErrorKind::DrawingError(WebDrawError(inner.to_string())),
        DrawingErrorKind::FontError(f) => DrawingErrorKind::FontError(f),
    })
}

pub struct FastCanvas {
    inner: CanvasBackend,
    context: CanvasRenderingContext2d,
    /// Device pixels a CSS pixel.
    scale: f64,
    /// The canvas's size in CSS pixels.
    size: (u32, u32),
}

impl FastCanvas {
    /// A backend for `canvas`, whose backing store has `scale` pixels a CSS pixel.
    pub fn new(canvas: HtmlCanvasElement, scale: f64) -> Option<Self> {
        let scale = if scale.is_finite() && scale >= 0.25 { scale } else { 1.0 };
        let context = canvas.get_context("2d").ok()??.dyn_into::<CanvasRenderingContext2d>().ok()?;
        let size = ((canvas.width() as f64 / scale).round() as u32, (canvas.height() as f64 / scale).round() as u32);
        context.set_transform(scale, 0.0, 0.0, scale, 0.0, 0.0).ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas)?;
        Some(Self { inner, context, scale, size })
    }
}

impl DrawingBackend for FastCanvas {
    type ErrorType = WebDrawError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }
    fn ensure_prepared(&mut self) -> Res {
        lift(self.inner.ensure_prepared())
    }
    fn present(&mut self) -> Res {
        lift(self.inner.present())
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res {
        lift(self.inner.draw_pixel(point, color))
    }
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Res {
        lift(self.inner.draw_line(from, to, style))
    }
    fn draw_rect<S: BackendStyle>(&mut self, upper_left: BackendCoord, bottom_right: BackendCoord, style: &S, fill: bool) -> Res {
        lift(self.inner.draw_rect(upper_left, bottom_right, style, fill))
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Res {
        lift(self.inner.draw_path(path, style))
    }
    fn draw_circle<S: BackendStyle>(&mut self, center: BackendCoord, radius: u32, style: &S, fill: bool) -> Res {
        lift(self.inner.draw_circle(center, radius, style, fill))
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Res {
        lift(self.inner.fill_polygon(vert, style))
    }
    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Res {
        lift(self.inner.draw_text(text, style, pos))
    }
    /// Measured with the canvas's own `measureText`: plotters' default measures by adding a
    /// span to the page, which forces a layout of the whole document for every label.
    fn estimate_text_size<S: BackendTextStyle>(&self, text: &str, style: &S) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let font = format!("{} {}px {}", style.style().as_str(), style.size(), style.family().as_str());
        self.context.set_font(&font);
        let metrics = self.context.measure_text(text).map_err(|e| DrawingErrorKind::DrawingError(WebDrawError(format!("{e:?}"))))?;
        Ok((metrics.width().ceil().max(0.0) as u32, (style.size() * 1.2).round().max(1.0) as u32))
    }

    /// `putImageData` ignores the context's scale, so the bitmap (in CSS pixels) is enlarged
    /// here to device pixels, each pixel copied to the device pixels it covers.
    fn blit_bitmap(&mut self, pos: BackendCoord, (w, h): (u32, u32), src: &[u8]) -> Res {
        let s = self.scale;
        let (dx, dy) = ((pos.0 as f64 * s).round() as i64, (pos.1 as f64 * s).round() as i64);
        let (dw, dh) = (((pos.0 as f64 + w as f64) * s).round() as i64 - dx, ((pos.1 as f64 + h as f64) * s).round() as i64 - dy);
        let (dw, dh) = (dw.max(0) as usize, dh.max(0) as usize);
        if dw == 0 || dh == 0 {
            return Ok(());
        }
        let source_x: Vec<usize> = (0..dw).map(|x| (((x as f64 + 0.5) / s) as usize).min(w as usize - 1)).collect();
        let mut rgba = vec![255u8; dw * dh * 4];
        for y in 0..dh {
            let sy = (((y as f64 + 0.5) / s) as usize).min(h as usize - 1);
            let row = &src[sy * w as usize * 3..(sy + 1) * w as usize * 3];
            let out = &mut rgba[y * dw * 4..(y + 1) * dw * 4];
            for (x, &sx) in source_x.iter().enumerate() {
                out[x * 4..x * 4 + 3].copy_from_slice(&row[sx * 3..sx * 3 + 3]);
            }
        }
        let fail = |e: wasm_bindgen::JsValue| DrawingErrorKind::DrawingError(WebDrawError(format!("{e:?}")));
        let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(&rgba), dw as u32, dh as u32).map_err(fail)?;
        self.context.put_image_data(&image, dx as f64, dy as f64).map_err(fail)
    }
}
