//! A canvas backend for plotters that draws like `plotters_canvas::CanvasBackend`, but with
//! a few calls where plotters-canvas makes hundreds, which is what makes redrawing every view
//! on each keystroke affordable:
//!
//! - a heatmap's cells become a small image, one pixel a cell, which is drawn enlarged with
//!   smoothing off (`blit_cells`), instead of a rectangle a cell or a full-size image;
//! - lines of one colour and width (a mesh, a dashed rule) are stroked as one path, and
//!   filled rectangles and circles of one colour (bars, a scatter plot's dots) filled as one,
//!   also when other things are drawn between them, wherever painting them together leaves
//!   the picture as it was (`path_in`);
//! - a path goes to JavaScript as one array of numbers (`paint_path`), which one loop there
//!   turns into the context's own path calls: no SVG path text to write, copy out and parse;
//! - texts wait and are drawn grouped by font, all of a chart's in one call to JavaScript
//!   with their styles, points and lengths (`draw_texts`, `paint_texts`);
//! - the fill colour, font and text alignment are set only when they change (each setter
//!   parses its string again), fonts and colours are made into JavaScript strings once
//!   (`js_string`), and the widths `measureText` reported are kept (labels repeat from one
//!   keystroke to the next).
//!
//! On a HiDPI screen the canvas has `scale` device pixels a CSS pixel. The backend then
//! reports its size in CSS pixels and scales the context, so every view is laid out as on a
//! plain screen (same text sizes, margins and strokes, same geometry for the page's hover
//! code) while the browser renders text and lines at the full device resolution.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    CanvasRenderingContext2d, HtmlCanvasElement, ImageBitmap, ImageData, OffscreenCanvas,
    OffscreenCanvasRenderingContext2d,
};

use crate::draw::pixels::{Canvas, Cells};
use crate::draw::view::TextDrawn;

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
        DrawingErrorKind::DrawingError(inner) => {
            DrawingErrorKind::DrawingError(WebDrawError(inner.to_string()))
        }
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
    /// Lines, rectangles and circles not yet painted, a group an ink, in the order each
    /// group began (see `path_in`).
    waiting: Vec<Group>,
    /// Text not yet drawn (see `draw_texts`).
    texts: Vec<QueuedText>,
    /// Every text painted so far with its box, when the canvas was asked to report them
    /// (`report_texts`), shared with whoever asked.
    painted: Option<Rc<RefCell<Vec<TextDrawn>>>>,
}

/// How a path is painted: filled in a colour, or stroked in a colour and a width.
#[derive(Clone, Copy, PartialEq)]
enum Ink {
    Fill(Rgba),
    Stroke(Rgba, u32),
}

/// Shapes of one ink waiting to be painted as one path (see `PathOp`), and a box that holds
/// them all.
struct Group {
    ink: Ink,
    path: Vec<f32>,
    bounds: Bounds,
}

/// A box on the canvas, CSS pixels: left, top, right, bottom.
type Bounds = [f32; 4];

/// Nothing: the box a union starts from.
const NO_BOUNDS: Bounds = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];

/// True when `a` and `b` share some area (boxes that only touch do not).
fn overlaps(a: &Bounds, b: &Bounds) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

fn union(a: Bounds, b: Bounds) -> Bounds {
    [
        a[0].min(b[0]),
        a[1].min(b[1]),
        a[2].max(b[2]),
        a[3].max(b[3]),
    ]
}

/// Groups waiting at most: past it they are painted and begin again.
const MAX_GROUPS: usize = 16;

/// `bounds` larger by `by` on every side.
fn grown(bounds: Bounds, by: f32) -> Bounds {
    [
        bounds[0] - by,
        bounds[1] - by,
        bounds[2] + by,
        bounds[3] + by,
    ]
}

/// The box of `points`, larger by `by` on every side.
fn bounds_of(points: impl IntoIterator<Item = (f32, f32)>, by: f32) -> Bounds {
    let b = points
        .into_iter()
        .fold(NO_BOUNDS, |b, (x, y)| union(b, [x, y, x, y]));
    grown(b, by)
}

/// A box sure to hold what a text of `size` pixels at `at` paints: each character at most
/// 1.25 em wide, 1.5 em above and below its point, every side as far when it is turned, and
/// two pixels more. Larger than the text: it only tells that a shape cannot touch it.
fn text_bounds(text: &str, size: f64, align: &str, degrees: f64, at: (f64, f64)) -> Bounds {
    let (x, y) = (at.0 as f32, at.1 as f32);
    let em = size as f32;
    let width = text.chars().count() as f32 * 1.25 * em + 2.0;
    let half_height = 1.5 * em + 2.0;
    if degrees != 0.0 {
        let r = width.max(half_height);
        return [x - r, y - r, x + r, y + r];
    }
    let (left, right) = match align {
        "end" => (x - width, x + 2.0),
        "center" => (x - width / 2.0, x + width / 2.0),
        _ => (x - 2.0, x + width),
    };
    [left, y - half_height, right, y + half_height]
}

/// A text waiting to be drawn: what `fillText` needs and the context state it needs.
struct QueuedText {
    font: String,
    /// The font's size (CSS pixels).
    size: f64,
    fill: Rgba,
    baseline: &'static str,
    align: &'static str,
    degrees: f64,
    at: (f64, f64),
    text: String,
    /// A box that holds it (`text_bounds`).
    bounds: Bounds,
}

/// A colour's rgb and alpha, comparable (BackendColor has no `PartialEq`).
type Rgba = ((u8, u8, u8), f64);

fn rgba(color: BackendColor) -> Rgba {
    (color.rgb, color.alpha)
}

fn css((r, g, b): (u8, u8, u8), alpha: f64) -> String {
    format!("rgba({r},{g},{b},{alpha})")
}

#[derive(Clone, Default)]
struct ContextState {
    fill: Option<Rgba>,
    font: Option<String>,
}

/// Most text widths kept; past it the cache starts again.
const MEASURED_MAX: usize = 8192;

thread_local! {
    /// `measureText` widths by (font, text).
    static MEASURED: RefCell<HashMap<(String, String), u32>> = RefCell::new(HashMap::new());
}

thread_local! {
    /// JavaScript strings made from Rust ones, by text: fonts and colours repeat from chart to
    /// chart and keystroke to keystroke, and each new string costs a copy out of the module's
    /// memory and a UTF-8 decoding.
    static JS_STRINGS: RefCell<HashMap<String, JsValue>> = RefCell::new(HashMap::new());
}

/// The CSS colour `rgba(r,g,b,alpha)` as a JavaScript string, made once a colour (its alpha
/// printed as a float each time was most of setting a fill or a stroke).
fn css_js(color: Rgba) -> JsValue {
    let ((r, g, b), alpha) = color;
    CSS_COLOURS.with_borrow_mut(|cache| {
        cache
            .entry((r, g, b, alpha.to_bits()))
            .or_insert_with(|| JsValue::from_str(&css((r, g, b), alpha)))
            .clone()
    })
}

thread_local! {
    /// `css_js`'s strings by colour (a chart uses a few dozen).
    static CSS_COLOURS: RefCell<HashMap<(u8, u8, u8, u64), JsValue>> = RefCell::new(HashMap::new());
}

/// The JavaScript string for `text`, made once.
fn js_string(text: &str) -> JsValue {
    JS_STRINGS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(value) = cache.get(text) {
            return value.clone();
        }
        if cache.len() >= MEASURED_MAX {
            cache.clear();
        }
        let value = JsValue::from_str(text);
        cache.insert(text.to_string(), value.clone());
        value
    })
}

/// What a path is made of, as `paint_path` reads it: each operation's code, then its numbers
/// (CSS pixels).
#[derive(Clone, Copy)]
#[repr(u8)]
enum PathOp {
    /// A new subpath at x, y.
    Move = 0,
    /// A line to x, y.
    Line = 1,
    /// A rectangle x, y, width, height (clockwise on screen when both sizes are positive, as
    /// `rect()` draws it).
    Rect = 2,
    /// A circle at x, y of radius r, clockwise on screen.
    Circle = 3,
}

/// Appends `op` and its numbers to `path`.
fn push_op(path: &mut Vec<f32>, op: PathOp, numbers: &[f32]) {
    path.push(op as u8 as f32);
    path.extend_from_slice(numbers);
}

// A path's numbers become the context's own path calls in one JavaScript loop (one call
// from the module a path rather than one an operation). Clockwise shapes, so that shapes of
// one path overlapping add up rather than cancel (the canvas fills by the non-zero rule).
#[wasm_bindgen(inline_js = r#"
export function paint_path(context, ops, fill) {
  context.beginPath();
  let i = 0;
  while (i < ops.length) {
    const op = ops[i];
    if (op === 0) { context.moveTo(ops[i + 1], ops[i + 2]); i += 3; }
    else if (op === 1) { context.lineTo(ops[i + 1], ops[i + 2]); i += 3; }
    else if (op === 2) { context.rect(ops[i + 1], ops[i + 2], ops[i + 3], ops[i + 4]); i += 5; }
    else if (op === 3) {
      const [x, y, r] = [ops[i + 1], ops[i + 2], ops[i + 3]];
      context.moveTo(x + r, y);
      context.arc(x, y, r, 0, 2 * Math.PI);
      i += 4;
    } else throw new Error(`path operation ${op} unknown at ${i}`);
  }
  if (fill) context.fill(); else context.stroke();
}

export function paint_texts(context, texts, stylesLength, numbers, scale) { // texts: the styles first
  const table = texts.slice(0, stylesLength).split('\u001e').map((style) => style.split('\u001f'));
  let [style, at, turned] = [-1, stylesLength, false];
  for (let i = 0; i < numbers.length; i += 5) {
    const [s, x, y, degrees, length] = [numbers[i], numbers[i + 1], numbers[i + 2], numbers[i + 3], numbers[i + 4]];
    if (s !== style) {
      const [font, fill, baseline, align] = table[s];
      const old = table[style];
      if (!old || old[0] !== font) context.font = font;
      if (!old || old[1] !== fill) context.fillStyle = fill;
      if (!old || old[2] !== baseline) context.textBaseline = baseline;
      if (!old || old[3] !== align) context.textAlign = align;
      style = s;
    }
    const text = texts.slice(at, at + length);
    at += length;
    if (degrees !== 0) {
      // Turned about the text's point, keeping the device-pixel scale.
      const [sin, cos] = [Math.sin(degrees * Math.PI / 180), Math.cos(degrees * Math.PI / 180)];
      context.setTransform(scale * cos, scale * sin, -scale * sin, scale * cos, scale * x, scale * y);
      context.fillText(text, 0, 0);
      turned = true;
    } else {
      if (turned) context.setTransform(scale, 0, 0, scale, 0, 0);
      turned = false;
      context.fillText(text, x, y);
    }
  }
  if (turned) context.setTransform(scale, 0, 0, scale, 0, 0);
}
"#)]
extern "C" {
    /// Builds the path `ops` (see `PathOp`) on `context` and fills or strokes it.
    #[wasm_bindgen(catch)]
    fn paint_path(
        context: &CanvasRenderingContext2d,
        ops: &[f32],
        fill: bool,
    ) -> Result<(), JsValue>;
    /// Draws texts. `styles_and_texts`: the styles, whose entries are joined by U+001E, each
    /// "font U+001F fill U+001F baseline U+001F align", `styles_length` UTF-16 units long, then
    /// the texts one after another (one string: each string handed to JavaScript is decoded
    /// on its own, and a keystroke draws texts in about 140 calls). For each text
    /// `TEXT_NUMBERS` numbers: its style (an index into the styles), its point, its turn in
    /// degrees and its length in UTF-16 units. `scale`: device pixels a CSS pixel.
    #[wasm_bindgen(catch)]
    fn paint_texts(
        context: &CanvasRenderingContext2d,
        styles_and_texts: &str,
        styles_length: u32,
        numbers: &[f64],
        scale: f64,
    ) -> Result<(), JsValue>;
}

/// Numbers a text takes in `paint_texts`.
const TEXT_NUMBERS: usize = 5;

#[wasm_bindgen]
extern "C" {
    /// The same 2D context, seen through setters taking a JavaScript string already made
    /// (web-sys's take a `&str` and make a new one each call).
    type StringContext;
    #[wasm_bindgen(method, setter = font)]
    fn set_font(this: &StringContext, font: &JsValue);
    #[wasm_bindgen(method, setter = fillStyle)]
    fn set_fill_style(this: &StringContext, style: &JsValue);
    #[wasm_bindgen(method, setter = strokeStyle)]
    fn set_stroke_style(this: &StringContext, style: &JsValue);
}

fn font_of<S: BackendTextStyle>(style: &S) -> String {
    let (kind, family) = (style.style(), style.family());
    let (kind, size, family) = (kind.as_str(), style.size(), family.as_str());
    LAST_FONT.with_borrow_mut(|last| {
        if let Some((k, bits, f, font)) = last.as_ref() {
            if k == kind && *bits == size.to_bits() && f == family {
                return font.clone();
            }
        }
        let font = format!("{kind} {size}px {family}");
        *last = Some((
            kind.to_string(),
            size.to_bits(),
            family.to_string(),
            font.clone(),
        ));
        font
    })
}

thread_local! {
    /// The font `font_of` named last, by its style, size and family: labels come in runs of
    /// one font, and printing a size (a float) again for each was a good part of queueing one.
    static LAST_FONT: RefCell<Option<(String, u64, String, String)>> = const { RefCell::new(None) };
}

fn fail(e: wasm_bindgen::JsValue) -> DrawingErrorKind<WebDrawError> {
    DrawingErrorKind::DrawingError(WebDrawError(format!("{e:?}")))
}

impl FastCanvas {
    fn strings(&self) -> &StringContext {
        self.context.unchecked_ref()
    }

    fn fill_with(&self, color: BackendColor) {
        let mut set = self.set.borrow_mut();
        if set.fill != Some(rgba(color)) {
            self.strings().set_fill_style(&css_js(rgba(color)));
            set.fill = Some(rgba(color));
        }
    }

    /// The path that lines of `style` covering `bounds` join (None: they are transparent,
    /// draw nothing; see `path_in`).
    fn path_for<S: BackendStyle>(
        &mut self,
        style: &S,
        bounds: Bounds,
    ) -> Result<Option<&mut Vec<f32>>, DrawingErrorKind<WebDrawError>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(None);
        }
        self.path_in(Ink::Stroke(rgba(color), style.stroke_width()), bounds)
            .map(Some)
    }

    /// The width of `text` in `font` (CSS pixels), measured once.
    fn measure(&self, font: &str, text: &str) -> Result<u32, DrawingErrorKind<WebDrawError>> {
        let key = (font.to_string(), text.to_string());
        if let Some(width) = MEASURED.with(|m| m.borrow().get(&key).copied()) {
            return Ok(width);
        }
        self.font(font);
        let metrics = self.context.measure_text(text).map_err(fail)?;
        let width = metrics.width().ceil().max(0.0) as u32;
        MEASURED.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= MEASURED_MAX {
                m.clear();
            }
            m.insert(key, width);
        });
        Ok(width)
    }

    fn font(&self, font: &str) {
        let mut set = self.set.borrow_mut();
        if set.font.as_deref() != Some(font) {
            self.strings().set_font(&js_string(font));
            set.font = Some(font.to_string());
        }
    }

    /// Draws the texts waiting, those of one font, colour and anchor together (in the order
    /// they came within each group): setting a font makes the browser parse it and find its
    /// face again, and labels of two sizes or sides alternate (tick labels and axis names, a
    /// bar's name and its value). Texts wait while lines are drawn (an axis draws a tick,
    /// then its label, then the next tick), and go over those lines; a filled shape that
    /// overlaps one, an image or anything else draws them first. So the order differs from
    /// the drawing code's only where two texts overlap, or a line drawn after a text crosses
    /// it. All of them go to JavaScript in one call (`paint_texts`): a chart has a few hundred
    /// labels.
    fn draw_texts(&mut self) -> Res {
        if self.texts.is_empty() {
            return Ok(());
        }
        let mut texts = std::mem::take(&mut self.texts);
        texts.sort_by(|a, b| {
            a.font
                .cmp(&b.font)
                .then(
                    a.fill
                        .partial_cmp(&b.fill)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(a.baseline.cmp(b.baseline))
                .then(a.align.cmp(b.align))
        });
        let mut styles = String::new(); // "font\u{1f}fill\u{1f}baseline\u{1f}align", each style once, joined by \u{1e}
        let mut joined = String::new(); // every text, one after another
        let mut numbers = Vec::with_capacity(texts.len() * TEXT_NUMBERS);
        let mut style_count = 0usize;
        let mut last: Option<(&str, Rgba, &str, &str)> = None;
        for t in &texts {
            let style = (t.font.as_str(), t.fill, t.baseline, t.align);
            if last != Some(style) {
                if style_count > 0 {
                    styles.push('\u{1e}');
                }
                let (rgb, alpha) = t.fill;
                let _ = write!(
                    styles,
                    "{}\u{1f}{}\u{1f}{}\u{1f}{}",
                    t.font,
                    css(rgb, alpha),
                    t.baseline,
                    t.align
                );
                style_count += 1;
                last = Some(style);
            }
            joined.push_str(&t.text);
            let length = t.text.encode_utf16().count(); // JavaScript strings count UTF-16 units
            numbers.extend_from_slice(&[
                (style_count - 1) as f64,
                t.at.0,
                t.at.1,
                t.degrees,
                length as f64,
            ]);
        }
        if let Some(painted) = &self.painted {
            let mut painted = painted.borrow_mut();
            for t in &texts {
                painted.push(self.text_box(t));
            }
        }
        // Counted in UTF-16 units, as JavaScript cuts strings.
        let styles_length = styles.encode_utf16().count() as u32;
        styles.push_str(&joined);
        let result =
            paint_texts(&self.context, &styles, styles_length, &numbers, self.scale).map_err(fail);
        // The context now has the last text's style.
        let t = texts.last().expect("not empty");
        *self.set.borrow_mut() = ContextState {
            fill: Some(t.fill),
            font: Some(t.font.clone()),
        };
        result
    }

    /// The box `t` covers on the canvas (CSS pixels), from its measured width, the height
    /// the backend gives a line of its size, its anchor and its turn about that anchor.
    fn text_box(&self, t: &QueuedText) -> TextDrawn {
        let width = self.measure(&t.font, &t.text).unwrap_or(0) as f64;
        let height = t.size * 1.2;
        let x0 = match t.align {
            "end" => -width,
            "center" => -width / 2.0,
            _ => 0.0,
        };
        let y0 = match t.baseline {
            "middle" => -height / 2.0,
            "bottom" => -height,
            _ => 0.0,
        };
        // Turned clockwise on screen (y down) by a multiple of 90 degrees about the anchor.
        let (left, top, w, h) = match t.degrees as i32 {
            90 => (-(y0 + height), x0, height, width),
            180 => (-(x0 + width), -(y0 + height), width, height),
            270 => (y0, -(x0 + width), height, width),
            _ => (x0, y0, width, height),
        };
        let (r, g, b) = t.fill.0;
        TextDrawn {
            text: t.text.clone(),
            left: t.at.0 + left,
            top: t.at.1 + top,
            width: w,
            height: h,
            degrees: t.degrees,
            color: [r, g, b],
        }
    }

    /// Paints the shapes waiting, a path a group, in the order the groups began.
    fn paint_waiting(&mut self) -> Res {
        for group in std::mem::take(&mut self.waiting) {
            match group.ink {
                Ink::Fill((rgb, alpha)) => {
                    self.fill_with(BackendColor { rgb, alpha });
                    paint_path(&self.context, &group.path, true).map_err(fail)?;
                }
                Ink::Stroke(color, width) => {
                    self.strings().set_stroke_style(&css_js(color));
                    self.context.set_line_width(f64::from(width));
                    paint_path(&self.context, &group.path, false).map_err(fail)?;
                }
            }
        }
        Ok(())
    }

    /// The path that a filled shape of `color` covering `bounds` joins (None: transparent,
    /// draw nothing; see `path_in`).
    fn fill_path(
        &mut self,
        color: BackendColor,
        bounds: Bounds,
    ) -> Result<Option<&mut Vec<f32>>, DrawingErrorKind<WebDrawError>> {
        if color.alpha == 0.0 {
            return Ok(None);
        }
        self.path_in(Ink::Fill(rgba(color)), bounds).map(Some)
    }

    /// The path that a shape of `ink` covering `bounds` joins. Shapes wait in a group an ink,
    /// and texts wait after them: each call to the browser has a cost, and a chart alternates
    /// inks and texts (a bar chart's light bar, dark bar, rule and label, row after row).
    /// What waits is painted groups first, in the order they began, then the texts, so two
    /// things are painted in another order than they were drawn only where they do not
    /// overlap: a filled shape that overlaps a waiting text has what waits painted first,
    /// and a shape that overlaps its ink's group or one begun after it goes in a new group.
    /// So the picture is the one drawing them one by one makes, but for three things: texts
    /// go over the lines drawn after them (a tick's label over the next rule), as before
    /// shapes waited out of order; two shapes of one ink drawn one after the other that
    /// overlap are one path, where a translucent ink covers once rather than twice; and a
    /// shape's edge may be shaded a shade apart (1-4 of 255), as the browser smooths the
    /// edges of a path of many shapes another way than those of a lone circle.
    fn path_in(
        &mut self,
        ink: Ink,
        bounds: Bounds,
    ) -> Result<&mut Vec<f32>, DrawingErrorKind<WebDrawError>> {
        if matches!(ink, Ink::Fill(_)) && self.texts.iter().any(|t| overlaps(&t.bounds, &bounds)) {
            self.paint_waiting()?;
            self.draw_texts()?;
        }
        // The group just before takes a shape of its ink, as consecutive shapes always were
        // painted together; an earlier one only if the shape overlaps neither it nor any
        // group after it (in one path, overlapping edges are shaded once, not twice).
        let last = self.waiting.len().wrapping_sub(1);
        let joins = self
            .waiting
            .iter()
            .rposition(|g| g.ink == ink)
            .filter(|&i| {
                i == last
                    || !self.waiting[i..]
                        .iter()
                        .any(|g| overlaps(&g.bounds, &bounds))
            });
        let at = match joins {
            Some(i) => i,
            None => {
                if self.waiting.len() == MAX_GROUPS {
                    self.paint_waiting()?;
                }
                self.waiting.push(Group {
                    ink,
                    path: Vec::new(),
                    bounds: NO_BOUNDS,
                });
                self.waiting.len() - 1
            }
        };
        let group = &mut self.waiting[at];
        group.bounds = union(group.bounds, bounds);
        Ok(&mut group.path)
    }

    /// Draws what waits before anything else is drawn: the shapes, then the texts over them.
    fn flush(&mut self) -> Res {
        self.paint_waiting()?;
        self.draw_texts()
    }
}

impl FastCanvas {
    /// A backend for `canvas`, whose backing store has `scale` pixels a CSS pixel.
    pub fn new(canvas: HtmlCanvasElement, scale: f64) -> Option<Self> {
        let scale = if scale.is_finite() && scale >= 0.25 {
            scale
        } else {
            1.0
        };
        let context = canvas
            .get_context("2d")
            .ok()??
            .dyn_into::<CanvasRenderingContext2d>()
            .ok()?;
        let size = (
            (canvas.width() as f64 / scale).round() as u32,
            (canvas.height() as f64 / scale).round() as u32,
        );
        context
            .set_transform(scale, 0.0, 0.0, scale, 0.0, 0.0)
            .ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas)?;
        Some(Self {
            inner,
            context,
            scale,
            size,
            set: RefCell::default(),
            waiting: Vec::new(),
            texts: Vec::new(),
            painted: None,
        })
    }

    /// From now on every text painted is added to the list returned, with its box.
    pub fn report_texts(&mut self) -> Rc<RefCell<Vec<TextDrawn>>> {
        self.painted.get_or_insert_with(Rc::default).clone()
    }
}

impl Drop for FastCanvas {
    /// Lines still waiting are stroked even when a drawing stops early (an error before
    /// `present`).
    fn drop(&mut self) {
        let _ = self.flush();
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
        self.flush()?;
        lift(self.inner.present())
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res {
        self.flush()?;
        if color.alpha == 0.0 {
            return Ok(());
        }
        self.fill_with(color);
        self.context
            .fill_rect(f64::from(point.0), f64::from(point.1), 1.0, 1.0);
        Ok(())
    }
    /// Waits with the lines of its colour and width (see `path_in`); stroked later. A
    /// horizontal or vertical line sits half a pixel over, as plotters-canvas puts it, so that a
    /// one-pixel line covers one row of pixels.
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Res {
        let (mut a, mut b) = ((from.0 as f32, from.1 as f32), (to.0 as f32, to.1 as f32));
        if a.0 == b.0 {
            (a.0, b.0) = (a.0 - 0.5, b.0 - 0.5);
        }
        if a.1 == b.1 {
            (a.1, b.1) = (a.1 - 0.5, b.1 - 0.5);
        }
        // Half the width on either side of the line (its ends are cut square), and a pixel.
        let bounds = bounds_of([a, b], style.stroke_width() as f32 / 2.0 + 1.0);
        let Some(path) = self.path_for(style, bounds)? else {
            return Ok(());
        };
        push_op(path, PathOp::Move, &[a.0, a.1]);
        push_op(path, PathOp::Line, &[b.0, b.1]);
        Ok(())
    }
    /// A filled rectangle waits with the filled shapes of its colour, an outline with the
    /// lines of its colour and width (see `path_in`).
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Res {
        if !fill {
            // As plotters-canvas's strokeRect: from the first corner, sizes as given.
            let size = (
                (bottom_right.0 - upper_left.0) as f32,
                (bottom_right.1 - upper_left.1) as f32,
            );
            let corners = [
                (upper_left.0 as f32, upper_left.1 as f32),
                (bottom_right.0 as f32, bottom_right.1 as f32),
            ];
            // A corner's join reaches half the width times the square root of two out.
            let Some(path) =
                self.path_for(style, bounds_of(corners, style.stroke_width() as f32 + 1.0))?
            else {
                return Ok(());
            };
            push_op(
                path,
                PathOp::Rect,
                &[upper_left.0 as f32, upper_left.1 as f32, size.0, size.1],
            );
            return Ok(());
        }
        // Clockwise on screen whichever corners it was given.
        let (x0, x1) = (
            upper_left.0.min(bottom_right.0),
            upper_left.0.max(bottom_right.0),
        );
        let (y0, y1) = (
            upper_left.1.min(bottom_right.1),
            upper_left.1.max(bottom_right.1),
        );
        // A pixel more on every side: at a scale that is not whole, an edge shades the next.
        let bounds = grown([x0, y0, x1, y1].map(|v| v as f32), 1.0);
        let Some(path) = self.fill_path(style.color(), bounds)? else {
            return Ok(());
        };
        push_op(
            path,
            PathOp::Rect,
            &[x0 as f32, y0 as f32, (x1 - x0) as f32, (y1 - y0) as f32],
        );
        Ok(())
    }
    /// Waits with the lines of its colour and width, as `draw_line`.
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Res {
        let points: Vec<(f32, f32)> = path
            .into_iter()
            .map(|(x, y)| (x as f32, y as f32))
            .collect();
        // A sharp join's point reaches out up to the canvas's miter limit (10) times half the
        // width.
        let bounds = bounds_of(
            points.iter().copied(),
            5.0 * style.stroke_width() as f32 + 1.0,
        );
        let Some(out) = self.path_for(style, bounds)? else {
            return Ok(());
        };
        for (i, (x, y)) in points.into_iter().enumerate() {
            push_op(
                out,
                if i == 0 { PathOp::Move } else { PathOp::Line },
                &[x, y],
            );
        }
        Ok(())
    }
    /// A filled circle waits with the filled shapes of its colour (see
    /// `path_in`); an outline is drawn at once.
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Res {
        if !fill {
            self.flush()?;
            return lift(self.inner.draw_circle(center, radius, style, fill));
        }
        let (x, y, r) = (center.0 as f32, center.1 as f32, radius as f32 + 1.0);
        let Some(path) = self.fill_path(style.color(), [x - r, y - r, x + r, y + r])? else {
            return Ok(());
        };
        push_op(
            path,
            PathOp::Circle,
            &[center.0 as f32, center.1 as f32, radius as f32],
        );
        Ok(())
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Res {
        self.flush()?;
        self.set.borrow_mut().fill = None;
        lift(self.inner.fill_polygon(vert, style))
    }
    /// Waits with the texts before it (see `draw_texts`).
    fn draw_text<S: BackendTextStyle>(&mut self, text: &str, style: &S, pos: BackendCoord) -> Res {
        // Nothing to see: an axis's thinned-out labels come as empty texts, a tenth of a
        // keystroke's texts at some lengths.
        if style.color().alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let degrees: f64 = match style.transform() {
            FontTransform::None => 0.0,
            FontTransform::Rotate90 => 90.0,
            FontTransform::Rotate180 => 180.0,
            FontTransform::Rotate270 => 270.0,
        };
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
        // The shapes waiting go under it: they are painted before the texts (`path_in`).
        let at = (f64::from(pos.0), f64::from(pos.1));
        self.texts.push(QueuedText {
            font: font_of(style),
            size: style.size(),
            fill: rgba(style.color()),
            baseline,
            align,
            degrees,
            at,
            text: text.to_string(),
            bounds: text_bounds(text, style.size(), align, degrees, at),
        });
        Ok(())
    }
    /// Measured with the canvas's own `measureText`: plotters' default measures by adding a
    /// span to the page, which forces a layout of the whole document for every label.
    /// Widths are kept by font and text, so a label measured once is not measured again.
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let height = (style.size() * 1.2).round().max(1.0) as u32;
        Ok((self.measure(&font_of(style), text)?, height))
    }

    /// `putImageData` ignores the context's scale, so the bitmap (in CSS pixels) is enlarged
    /// here to device pixels, each pixel copied to the device pixels it covers.
    fn blit_bitmap(&mut self, pos: BackendCoord, (w, h): (u32, u32), src: &[u8]) -> Res {
        self.flush()?;
        let s = self.scale;
        let (dx, dy) = (
            (pos.0 as f64 * s).round() as i64,
            (pos.1 as f64 * s).round() as i64,
        );
        let (dw, dh) = (
            ((pos.0 as f64 + w as f64) * s).round() as i64 - dx,
            ((pos.1 as f64 + h as f64) * s).round() as i64 - dy,
        );
        let (dw, dh) = (dw.max(0) as usize, dh.max(0) as usize);
        if dw == 0 || dh == 0 {
            return Ok(());
        }
        if src.len() < w as usize * h as usize * 3 {
            return Err(DrawingErrorKind::DrawingError(WebDrawError(format!(
                "a {w}x{h} bitmap needs {} bytes, got {}",
                w as usize * h as usize * 3,
                src.len()
            ))));
        }
        // Byte offset in a source row of each device pixel's source pixel.
        let source_x: Vec<usize> = (0..dw)
            .map(|x| (((x as f64 + 0.5) / s) as usize).min(w as usize - 1) * 3)
            .collect();
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
        let image = image_data(&rgba, dw as u32, dh as u32)?;
        self.context
            .put_image_data(&image, dx as f64, dy as f64)
            .map_err(fail)
    }
}

/// `rgba` (width x height pixels) as an ImageData. The pixels are copied out of the module's
/// memory: ImageData refuses a view on shared memory, which the threaded build's memory is.
fn image_data(
    rgba: &[u8],
    width: u32,
    height: u32,
) -> Result<ImageData, DrawingErrorKind<WebDrawError>> {
    let pixels = js_sys::Uint8ClampedArray::new_with_length(rgba.len() as u32);
    pixels.copy_from(rgba);
    ImageData::new_with_js_u8_clamped_array_and_sh(&pixels, width, height).map_err(fail)
}

thread_local! {
    /// A canvas off the page that takes a heatmap's cells, one pixel a cell, and hands them
    /// over as an image; made once.
    static CELLS_CANVAS: RefCell<Option<(OffscreenCanvas, OffscreenCanvasRenderingContext2d)>> = const { RefCell::new(None) };
}

/// Cell images kept at most (`cells_image`).
const CELL_IMAGES_KEPT: usize = 8;

/// A cell image's cells: its columns, rows and colours (`Cells::rgb`).
type CellsKey = (usize, usize, Vec<u8>);

thread_local! {
    /// The cell images used last, by their cells, the latest last: a colour bar's cells are
    /// the same at every keystroke.
    static CELL_IMAGES: RefCell<Vec<(CellsKey, ImageBitmap)>> = const { RefCell::new(Vec::new()) };
}

/// `cells` as an image of cols x rows pixels, made again only for cells not used lately.
fn cells_image(cells: &Cells) -> Result<ImageBitmap, DrawingErrorKind<WebDrawError>> {
    let (cols, rows) = (cells.cols, cells.rows);
    let rgb = &cells.rgb[..cols * rows * 3];
    let kept = CELL_IMAGES.with_borrow_mut(|kept| {
        let at = kept
            .iter()
            .position(|((c, r, colours), _)| (*c, *r) == (cols, rows) && colours[..] == *rgb)?;
        let entry = kept.remove(at);
        let image = entry.1.clone();
        kept.push(entry); // used last: kept longest
        Some(image)
    });
    if let Some(image) = kept {
        return Ok(image);
    }
    let mut rgba = vec![255u8; cols * rows * 4];
    for (pixel, rgb) in rgba.chunks_exact_mut(4).zip(rgb.chunks_exact(3)) {
        pixel[..3].copy_from_slice(rgb);
    }
    let image = transferred(&image_data(&rgba, cols as u32, rows as u32)?)?;
    CELL_IMAGES.with_borrow_mut(|kept| {
        if kept.len() == CELL_IMAGES_KEPT {
            kept.remove(0);
        }
        kept.push(((cols, rows, rgb.to_vec()), image.clone()));
    });
    Ok(image)
}

/// `image` as an image to draw. It is handed over (`transferToImageBitmap`), not drawn from
/// the small canvas itself: changing a canvas that another one has drawn from makes the
/// browser carry out that drawing first, which cost more than all the rest.
fn transferred(image: &ImageData) -> Result<ImageBitmap, DrawingErrorKind<WebDrawError>> {
    CELLS_CANVAS.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let missing = || {
                DrawingErrorKind::DrawingError(WebDrawError(
                    "no 2D context for an offscreen canvas".into(),
                ))
            };
            let canvas = OffscreenCanvas::new(image.width(), image.height()).map_err(fail)?;
            let context = canvas
                .get_context("2d")
                .map_err(fail)?
                .ok_or_else(missing)?
                .dyn_into::<OffscreenCanvasRenderingContext2d>()
                .map_err(|_| missing())?;
            *slot = Some((canvas, context));
        }
        let (canvas, context) = slot.as_ref().expect("made above");
        if canvas.width() != image.width() {
            canvas.set_width(image.width());
        }
        if canvas.height() != image.height() {
            canvas.set_height(image.height());
        }
        context.put_image_data(image, 0.0, 0.0).map_err(fail)?;
        canvas.transfer_to_image_bitmap().map_err(fail)
    })
}

impl Canvas for FastCanvas {
    /// The cells (a few hundred to a few thousand pixels) become a small image, which this
    /// canvas draws enlarged with smoothing off, so each cell is a block of one colour: no
    /// full-size image is built in the module's memory, copied out and uploaded.
    fn blit_cells(&mut self, pos: BackendCoord, cells: &Cells) -> Res {
        self.flush()?;
        let (cols, rows) = (cells.cols, cells.rows);
        if cols == 0 || rows == 0 || cells.width == 0 || cells.height == 0 {
            return Ok(());
        }
        if cells.rgb.len() < cols * rows * 3 {
            return Err(DrawingErrorKind::DrawingError(WebDrawError(format!(
                "{cols}x{rows} cells need {} bytes, got {}",
                cols * rows * 3,
                cells.rgb.len()
            ))));
        }
        let small = cells_image(cells)?;
        self.context.set_image_smoothing_enabled(false);
        let drawn = self
            .context
            .draw_image_with_image_bitmap_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
                &small,
                0.0,
                0.0,
                cols as f64,
                rows as f64,
                pos.0 as f64,
                pos.1 as f64,
                cells.width as f64,
                cells.height as f64,
            );
        self.context.set_image_smoothing_enabled(true);
        drawn.map_err(fail)
    }
}
