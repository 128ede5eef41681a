//! A canvas backend for plotters that draws like `plotters_canvas::CanvasBackend` but blits
//! bitmaps (heatmap cells, thumbnails) with one `putImageData` instead of a rectangle per
//! pixel, which is what makes redrawing every view on each keystroke affordable.
//!
//! Consecutive lines of one colour and width (a mesh, a dashed rule) are stroked as one path,
//! given to the canvas as one SVG path string, rather than one stroke a line.
//!
//! It also remembers the fill colour, font and text alignment it last gave the context and
//! sets them only when they change (each setter parses its string again, and a chart sets
//! the same few hundreds of times), and the widths `measureText` reported (labels repeat
//! from one keystroke to the next).
//!
//! On a HiDPI screen the canvas has `scale` device pixels a CSS pixel. The backend then
//! reports its size in CSS pixels and scales the context, so every view is laid out as on a
//! plain screen (same text sizes, margins and strokes, same geometry for the page's hover
//! code) while the browser renders text and lines at the full device resolution.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind, FontTransform};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData, Path2d};

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
    /// What the context was last given (None: not known, set it). In a cell: measuring text
    /// (`&self`) sets the font too.
    set: RefCell<ContextState>,
    /// Lines not yet stroked: their colour and width, and the path ("M x y L x y ...").
    lines: Option<(LineStyle, String)>,
}

/// A colour's rgb and alpha, comparable (BackendColor has no `PartialEq`).
type Rgba = ((u8, u8, u8), f64);

fn rgba(color: BackendColor) -> Rgba {
    (color.rgb, color.alpha)
}

fn css((r, g, b): (u8, u8, u8), alpha: f64) -> String {
    format!("rgba({r},{g},{b},{alpha})")
}

/// A line's colour and width.
type LineStyle = (Rgba, u32);

#[derive(Clone, Default)]
struct ContextState {
    fill: Option<Rgba>,
    font: Option<String>,
    align: Option<&'static str>,
    baseline: Option<&'static str>,
}

/// Most text widths kept; past it the cache starts again.
const MEASURED_MAX: usize = 8192;

thread_local! {
    /// `measureText` widths by (font, text).
    static MEASURED: RefCell<HashMap<(String, String), u32>> = RefCell::new(HashMap::new());
}

fn font_of<S: BackendTextStyle>(style: &S) -> String {
    format!("{} {}px {}", style.style().as_str(), style.size(), style.family().as_str())
}

fn fail(e: wasm_bindgen::JsValue) -> DrawingErrorKind<WebDrawError> {
    DrawingErrorKind::DrawingError(WebDrawError(format!("{e:?}")))
}

impl FastCanvas {
    fn fill_with(&self, color: BackendColor) {
        let mut set = self.set.borrow_mut();
        if set.fill != Some(rgba(color)) {
            self.context.set_fill_style_str(&css(color.rgb, color.alpha));
            set.fill = Some(rgba(color));
        }
    }

    /// The path that lines of `style` join (None: they are transparent, draw nothing); lines of
    /// another style waiting are stroked first.
    fn path_for<S: BackendStyle>(&mut self, style: &S) -> Result<Option<&mut String>, DrawingErrorKind<WebDrawError>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(None);
        }
        let key = (rgba(color), style.stroke_width());
        if self.lines.as_ref().is_some_and(|(k, _)| *k != key) {
            self.stroke_lines()?;
        }
        Ok(Some(&mut self.lines.get_or_insert_with(|| (key, String::new())).1))
    }

    /// Strokes the lines drawn so far; called before anything else is drawn, and at the end.
    fn stroke_lines(&mut self) -> Res {
        let Some((((rgb, alpha), width), path)) = self.lines.take() else { return Ok(()) };
        self.context.set_stroke_style_str(&css(rgb, alpha));
        self.context.set_line_width(f64::from(width));
        let path = Path2d::new_with_path_string(&path).map_err(fail)?;
        self.context.stroke_with_path(&path);
        Ok(())
    }

    fn font(&self, font: &str) {
        let mut set = self.set.borrow_mut();
        if set.font.as_deref() != Some(font) {
            self.context.set_font(font);
            set.font = Some(font.to_string());
        }
    }

    /// Where text sits against its point: the canvas's textBaseline and textAlign.
    fn anchor(&self, baseline: &'static str, align: &'static str) {
        let mut set = self.set.borrow_mut();
        if set.baseline != Some(baseline) {
            self.context.set_text_baseline(baseline);
            set.baseline = Some(baseline);
        }
        if set.align != Some(align) {
            self.context.set_text_align(align);
            set.align = Some(align);
        }
    }

    /// `text` at `(x, y)`, turned by `degrees` about that point.
    fn fill_text<S: BackendTextStyle>(&self, text: &str, style: &S, (mut x, mut y): (f64, f64), degrees: f64) -> Res {
        if degrees != 0.0 {
            self.context.translate(x, y).map_err(fail)?;
            self.context.rotate(degrees.to_radians()).map_err(fail)?;
            (x, y) = (0.0, 0.0);
        }
        let baseline = match style.anchor().v_pos {
            VPos::Top => "top",
            VPos::Center => "middle",
            VPos::Bottom => "bottom",
        };
        let align = match style.anchor().h_pos {
            HPos::Left => "start",
            HPos::Right => "end",
            HPos::Center => "center",
        };
        self.anchor(baseline, align);
        self.fill_with(style.color());
        self.font(&font_of(style));
        self.context.fill_text(text, x, y).map_err(fail)
    }
}

impl FastCanvas {
    /// A backend for `canvas`, whose backing store has `scale` pixels a CSS pixel.
    pub fn new(canvas: HtmlCanvasElement, scale: f64) -> Option<Self> {
        let scale = if scale.is_finite() && scale >= 0.25 { scale } else { 1.0 };
        let context = canvas.get_context("2d").ok()??.dyn_into::<CanvasRenderingContext2d>().ok()?;
        let size = ((canvas.width() as f64 / scale).round() as u32, (canvas.height() as f64 / scale).round() as u32);
        context.set_transform(scale, 0.0, 0.0, scale, 0.0, 0.0).ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas)?;
        Some(Self { inner, context, scale, size, set: RefCell::default(), lines: None })
    }
}

impl Drop for FastCanvas {
    /// Lines still waiting are stroked even when a drawing stops early (an error before
    /// `present`).
    fn drop(&mut self) {
        let _ = self.stroke_lines();
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
        self.stroke_lines()?;
        lift(self.inner.present())
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res {
        self.stroke_lines()?;
        if color.alpha == 0.0 {
            return Ok(());
        }
        self.fill_with(color);
        self.context.fill_rect(f64::from(point.0), f64::from(point.1), 1.0, 1.0);
        Ok(())
    }
    /// Kept with the lines before it when it has their colour and width; stroked later. A
    /// horizontal or vertical line sits half a pixel over, as plotters-canvas puts it, so that a
    /// one-pixel line covers one row of pixels.
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Res {
        let Some(path) = self.path_for(style)? else { return Ok(()) };
        let (mut a, mut b) = ((f64::from(from.0), f64::from(from.1)), (f64::from(to.0), f64::from(to.1)));
        if a.0 == b.0 {
            (a.0, b.0) = (a.0 - 0.5, b.0 - 0.5);
        }
        if a.1 == b.1 {
            (a.1, b.1) = (a.1 - 0.5, b.1 - 0.5);
        }
        let _ = write!(path, "M{} {}L{} {}", a.0, a.1, b.0, b.1);
        Ok(())
    }
    fn draw_rect<S: BackendStyle>(&mut self, upper_left: BackendCoord, bottom_right: BackendCoord, style: &S, fill: bool) -> Res {
        self.stroke_lines()?;
        if !fill {
            return lift(self.inner.draw_rect(upper_left, bottom_right, style, fill));
        }
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        self.fill_with(style.color());
        let (x0, y0) = (f64::from(upper_left.0), f64::from(upper_left.1));
        self.context.fill_rect(x0, y0, f64::from(bottom_right.0) - x0, f64::from(bottom_right.1) - y0);
        Ok(())
    }
    /// Kept with the lines before it, as `draw_line`.
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, path: I, style: &S) -> Res {
        let Some(out) = self.path_for(style)? else { return Ok(()) };
        for (i, (x, y)) in path.into_iter().enumerate() {
            let _ = write!(out, "{}{x} {y}", if i == 0 { 'M' } else { 'L' });
        }
        Ok(())
    }
    fn draw_circle<S: BackendStyle>(&mut self, center: BackendCoord, radius: u32, style: &S, fill: bool) -> Res {
        self.stroke_lines()?;
        if fill {
            self.set.borrow_mut().fill = None; // plotters-canvas sets the fill colour itself
        }
        lift(self.inner.draw_circle(center, radius, style, fill))
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(&mut self, vert: I, style: &S) -> Res {
        self.stroke_lines()?;
        self.set.borrow_mut().fill = None;
        lift(self.inner.fill_polygon(vert, style))
    }
    /// As plotters-canvas draws text, setting only what changed.
    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Res {
        self.stroke_lines()?;
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let degrees: f64 = match style.transform() {
            FontTransform::None => 0.0,
            FontTransform::Rotate90 => 90.0,
            FontTransform::Rotate180 => 180.0,
            FontTransform::Rotate270 => 270.0,
        };
        let at = (f64::from(pos.0), f64::from(pos.1));
        if degrees == 0.0 {
            return self.fill_text(text, style, at, degrees);
        }
        // Turned text is drawn between save() and restore(), which bring the context (and so
        // what it was last given) back to what it was before, whether drawing failed or not.
        let before = self.set.borrow().clone();
        self.context.save();
        let drawn = self.fill_text(text, style, at, degrees);
        self.context.restore();
        *self.set.borrow_mut() = before;
        drawn
    }
    /// Measured with the canvas's own `measureText`: plotters' default measures by adding a
    /// span to the page, which forces a layout of the whole document for every label.
    /// Widths are kept by font and text, so a label measured once is not measured again.
    fn estimate_text_size<S: BackendTextStyle>(&self, text: &str, style: &S) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let font = font_of(style);
        let height = (style.size() * 1.2).round().max(1.0) as u32;
        let key = (font, text.to_string());
        if let Some(width) = MEASURED.with(|m| m.borrow().get(&key).copied()) {
            return Ok((width, height));
        }
        self.font(&key.0);
        let metrics = self.context.measure_text(text).map_err(fail)?;
        let width = metrics.width().ceil().max(0.0) as u32;
        MEASURED.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= MEASURED_MAX {
                m.clear();
            }
            m.insert(key, width);
        });
        Ok((width, height))
    }

    /// `putImageData` ignores the context's scale, so the bitmap (in CSS pixels) is enlarged
    /// here to device pixels, each pixel copied to the device pixels it covers.
    fn blit_bitmap(&mut self, pos: BackendCoord, (w, h): (u32, u32), src: &[u8]) -> Res {
        self.stroke_lines()?;
        let s = self.scale;
        let (dx, dy) = ((pos.0 as f64 * s).round() as i64, (pos.1 as f64 * s).round() as i64);
        let (dw, dh) = (((pos.0 as f64 + w as f64) * s).round() as i64 - dx, ((pos.1 as f64 + h as f64) * s).round() as i64 - dy);
        let (dw, dh) = (dw.max(0) as usize, dh.max(0) as usize);
        if dw == 0 || dh == 0 {
            return Ok(());
        }
        if src.len() < w as usize * h as usize * 3 {
            return Err(DrawingErrorKind::DrawingError(WebDrawError(format!("a {w}x{h} bitmap needs {} bytes, got {}", w as usize * h as usize * 3, src.len()))));
        }
        // Byte offset in a source row of each device pixel's source pixel.
        let source_x: Vec<usize> = (0..dw).map(|x| (((x as f64 + 0.5) / s) as usize).min(w as usize - 1) * 3).collect();
        let row_bytes = w as usize * 3;
        let mut rgba = vec![255u8; dw * dh * 4];
        for (y, out) in rgba.chunks_exact_mut(dw * 4).enumerate() {
            let sy = (((y as f64 + 0.5) / s) as usize).min(h as usize - 1);
            let row = &src[sy * row_bytes..(sy + 1) * row_bytes];
            // Three byte stores, not a three-byte copy_from_slice (a memcpy call in wasm).
            for (pixel, &sx) in out.chunks_exact_mut(4).zip(&source_x) {
                let [r, g, b] = [row[sx], row[sx + 1], row[sx + 2]];
                pixel[0] = r;
                pixel[1] = g;
                pixel[2] = b;
            }
        }
        // The pixels are copied out of the module's memory: ImageData refuses a view on shared
        // memory, which the threaded build's memory is.
        let pixels = js_sys::Uint8ClampedArray::new_with_length(rgba.len() as u32);
        pixels.copy_from(&rgba);
        let image = ImageData::new_with_js_u8_clamped_array_and_sh(&pixels, dw as u32, dh as u32).map_err(fail)?;
        self.context.put_image_data(&image, dx as f64, dy as f64).map_err(fail)
    }
}
