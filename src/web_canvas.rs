//! A canvas backend for plotters that draws like `plotters_canvas::CanvasBackend` but blits
//! bitmaps (heatmap cells, thumbnails) with one `putImageData` instead of a rectangle per
//! pixel, which is what makes redrawing every view on each keystroke affordable.

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
}

impl FastCanvas {
    pub fn new(canvas: HtmlCanvasElement) -> Option<Self> {
        let context = canvas.get_context("2d").ok()??.dyn_into::<CanvasRenderingContext2d>().ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas)?;
        Some(Self { inner, context })
    }
}

impl DrawingBackend for FastCanvas {
    type ErrorType = WebDrawError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
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

    fn blit_bitmap(&mut self, pos: BackendCoord, (w, h): (u32, u32), src: &[u8]) -> Res {
        let mut rgba = Vec::with_capacity((w * h * 4) as usize);
        for px in src.chunks_exact(3) {
            rgba.extend_from_slice(&[px[0], px[1], px[2], 255]);
        }
        let fail = |e: wasm_bindgen::JsValue| DrawingErrorKind::DrawingError(WebDrawError(format!("{e:?}")));
        let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(&rgba), w, h).map_err(fail)?;
        self.context.put_image_data(&image, pos.0 as f64, pos.1 as f64).map_err(fail)
    }
}
