//! Attention views: one head as a heatmap, every head of every layer as a grid of
//! thumbnails, and the "lines" view (each query joined to each key, weight as opacity).

use ndarray::ArrayView2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::{Deserialize, Serialize};

use super::colors::{Scale, CATEGORICAL};
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::pixels::{matrix_cells, EmbeddedImage, Pixels};
use super::Canvas;
use super::{anchored_text, draw_err, short_label, FONT};
use crate::error::{Result, VizError};
use crate::trace::Trace;

/// One head, tokens on both axes: rows are queries, columns are keys. `kind` names the
/// attention in the title ("Attention", "Encoder self-attention", ...).
pub fn draw_head<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    kind: &str,
    vector: bool,
) -> Result<HeatmapDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let a = trace.attention(layer, head)?; // (T, T)
                                           // A causal model's masked cells (a key after its query) drawn grey, apart from weights
                                           // that are merely near 0: not finite only in the picture, the values stay the weights.
    let mut shown = a.to_owned(); // (T, T)
    if trace.config.causal {
        for ((query, key), w) in shown.indexed_iter_mut() {
            if key > query {
                *w = f32::NEG_INFINITY;
            }
        }
    }
    let title = format!("{kind}, layer {layer}, head {head}");
    draw_token_matrix(
        area,
        shown.view(),
        &trace.token_texts(),
        &title,
        Scale::Sequential { min: 0.0, max: 1.0 },
        "weight",
        vector,
    )
}

/// A (T, T) matrix over one sentence's tokens, queries down and keys across: a head's weights,
/// or a difference of two heads' weights (the comparison of two sentences).
pub fn draw_token_matrix<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    matrix: ArrayView2<f32>,
    labels: &[String],
    title: &str,
    scale: Scale,
    legend: &str,
    vector: bool,
) -> Result<HeatmapDrawn> {
    draw_heatmap(
        area,
        matrix,
        &Heatmap {
            title,
            x_desc: "key (attended to)",
            y_desc: "query (attending)",
            col_labels: labels,
            row_labels: labels,
            scale,
            legend,
            vector,
        },
    )
}

/// Pixel boxes of the grid's thumbnails, so the page can tell which one was clicked.
#[derive(Debug, Clone, Serialize)]
pub struct GridGeometry {
    pub left: i32,
    pub top: i32,
    pub cell_width: i32,
    pub cell_height: i32,
    pub layers: usize,
    pub heads: usize,
    /// Which attention the thumbnails show.
    pub of: GridOf,
}

/// Which attention a grid of every head shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GridOf {
    /// The model's self-attention (an encoder-decoder's decoder: masked).
    #[default]
    SelfAttention,
    /// An encoder-decoder's encoder: unmasked self-attention over the source.
    Encoder,
    /// An encoder-decoder's cross-attention: target tokens down, source tokens across.
    Cross,
}

/// Every head of every layer: layers as rows, heads as columns; the selected one framed.
pub fn draw_grid<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    of: GridOf,
    selected: Option<(usize, usize)>,
    vector: bool,
) -> Result<(GridGeometry, Option<EmbeddedImage>)> {
    area.fill(&WHITE).map_err(draw_err)?;
    let stack = match (of, &trace.source) {
        (GridOf::Encoder, Some(source)) => source.as_ref(),
        (GridOf::Encoder | GridOf::Cross, None) => return Err(VizError::NoCrossAttention),
        _ => trace,
    };
    let (layers, heads) = (stack.config.n_layers, stack.config.n_heads);
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 400 { 10 } else { 12 };
    let (left, top) = (font_px * 3 + 6, font_px * 2 + 8);
    let cell_w = ((w as i32 - left - 4) / heads as i32).max(4);
    let cell_h = ((h as i32 - top - 4) / layers as i32).max(4);
    let side = cell_w.min(cell_h);
    let scale = Scale::Sequential { min: 0.0, max: 1.0 };
    let style = TextStyle::from((FONT, font_px).into_font()).color(&BLACK);
    area.draw(&Text::new("head →", (left, 2), style.clone()))
        .map_err(draw_err)?;
    // An SVG gets every thumbnail in one embedded image (72 thumbnails of rectangles made a
    // 1.6 MB file); a canvas or PNG gets each thumbnail's cells, enlarged as they are drawn.
    let mut raster = vector.then(|| {
        Pixels::white(
            (left, top),
            (side * heads as i32) as u32,
            (side * layers as i32) as u32,
        )
    });
    for layer in 0..layers {
        let a = match of {
            GridOf::Cross => trace.cross_attention_layer(layer)?, // (heads, T, S)
            _ => stack.attention_layer(layer)?,                   // (heads, T, T)
        };
        let y0 = top + layer as i32 * side;
        area.draw(&Text::new(
            format!("L{layer}"),
            (2, y0 + side / 2 - font_px / 2),
            style.clone(),
        ))
        .map_err(draw_err)?;
        for head in 0..heads {
            let x0 = left + head as i32 * side;
            if layer == 0 && (heads <= 16 || head % 2 == 0) {
                area.draw(&Text::new(
                    head.to_string(),
                    (x0 + side / 2 - 4, font_px + 4),
                    style.clone(),
                ))
                .map_err(draw_err)?;
            }
            let m = a.index_axis(ndarray::Axis(0), head); // (T, T)
            let inner = (side - 2).max(1);
            let cells = matrix_cells(m, scale, (x0 + 1, y0 + 1), inner as u32, inner as u32);
            match raster.as_mut() {
                Some(raster) => raster.paste(&cells.enlarged()),
                None => area.draw(&cells).map_err(draw_err)?,
            }
        }
    }
    let image = match raster {
        Some(raster) => {
            let (ox, oy) = area.get_base_pixel();
            let marker = format!("tviz-cells-{}-{}", ox + left, oy + top);
            let place = (
                ox + left,
                oy + top,
                raster.width as i32,
                raster.height as i32,
            );
            area.draw(&Text::new(marker.clone(), (left, top), style.clone()))
                .map_err(draw_err)?;
            Some(EmbeddedImage::new(marker, place, &raster)?)
        }
        None => None,
    };
    if let Some((layer, head)) = selected.filter(|&(l, h)| l < layers && h < heads) {
        let (x0, y0) = (left + head as i32 * side, top + layer as i32 * side);
        area.draw(&Rectangle::new(
            [(x0, y0), (x0 + side, y0 + side)],
            CATEGORICAL[5].stroke_width(3),
        ))
        .map_err(draw_err)?;
    }
    Ok((
        GridGeometry {
            left,
            top,
            cell_width: side,
            cell_height: side,
            layers,
            heads,
            of,
        },
        image,
    ))
}

/// Which lines the lines view draws: all of them, or only those of one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFocus {
    All,
    /// Only the lines from this query (a token of the left column).
    From(usize),
    /// Only the lines into this key (a token of the right column).
    To(usize),
}

/// One line the lines view drew: query `query` (left) to key `key` (right) in head `head`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DrawnLine {
    pub head: usize,
    pub query: usize,
    pub key: usize,
    pub weight: f32,
}

/// Where the lines view put its tokens and which lines it drew, so the page can tell which
/// token or line is under the mouse. Token i's row is centred at `top + row_height * (i + 0.5)`;
/// query labels end at `left_x`, key labels start at `right_x`, each `label_width` wide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinesGeometry {
    pub left_x: i32,
    pub right_x: i32,
    pub label_width: i32,
    pub top: f32,
    pub row_height: f32,
    pub tokens: usize,
    pub heads: Vec<usize>,
    pub lines: Vec<DrawnLine>,
}

/// Line colours for several heads at once: Okabe-Ito (colour-blind safe), the yellow last
/// because it is the hardest to see on white.
pub const HEAD_COLOURS: [usize; 8] = [0, 5, 2, 3, 4, 1, 7, 6];

/// Lines lighter than this are not drawn (nor reported): they would be invisible.
const MIN_WEIGHT: f32 = 0.01;

/// Tokens in two columns, queries on the left and keys on the right, joined by lines whose
/// opacity is the attention weight. Several heads of one layer can be drawn at once, each in
/// its own colour with a legend; `focus` keeps only one token's lines.
pub fn draw_lines<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    heads: &[usize],
    focus: LineFocus,
) -> Result<LinesGeometry> {
    area.fill(&WHITE).map_err(draw_err)?;
    if heads.is_empty() || heads.len() > HEAD_COLOURS.len() {
        return Err(crate::error::VizError::Draw(format!(
            "the lines view draws 1 to {} heads at once, not {}",
            HEAD_COLOURS.len(),
            heads.len()
        )));
    }
    let patterns = heads
        .iter()
        .map(|&h| trace.attention(layer, h))
        .collect::<Result<Vec<_>>>()?; // each (T, T)
    let t = trace.len();
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 400 { 10 } else { 13 };
    let title_style = TextStyle::from((FONT, font_px + 3).into_font()).color(&BLACK);
    let title = match heads {
        [one] => format!("Attention lines, layer {layer}, head {one}"),
        _ => format!("Attention lines, layer {layer}, {} heads", heads.len()),
    };
    area.draw(&Text::new(title, (8, 4), title_style))
        .map_err(draw_err)?;
    let mut top = font_px as i32 * 2 + 14;
    if heads.len() > 1 {
        draw_head_legend(area, heads, top - 4, font_px)?;
        top += font_px as i32 + 6;
    }
    let text_w = (w as i32 / 4).min(120);
    let columns = Columns {
        xl: 8 + text_w,
        xr: w as i32 - 8 - text_w,
        top,
        row_h: ((h as i32 - top - 8) as f32 / t as f32).max(1.0),
    };
    draw_token_columns(area, &trace.token_texts(), &columns, focus, font_px)?;
    let mut drawn = Vec::new();
    for (i, (&a, &head)) in patterns.iter().zip(heads).enumerate() {
        let colour = line_colour(heads.len(), i);
        drawn.extend(draw_head_lines(area, a, head, colour, &columns, focus)?);
    }
    Ok(LinesGeometry {
        left_x: columns.xl,
        right_x: columns.xr,
        label_width: text_w,
        top: top as f32,
        row_height: columns.row_h,
        tokens: t,
        heads: heads.to_vec(),
        lines: drawn,
    })
}

/// The `i`-th of `heads` heads' colour: the palette's blue for one head alone.
fn line_colour(heads: usize, i: usize) -> RGBColor {
    if heads == 1 {
        CATEGORICAL[0]
    } else {
        CATEGORICAL[HEAD_COLOURS[i]]
    }
}

/// The legend: one short line and "head N" per head, in a row at height `y`.
fn draw_head_legend<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    heads: &[usize],
    y: i32,
    font_px: u32,
) -> Result<()> {
    let mut x = 8;
    for (i, head) in heads.iter().enumerate() {
        area.draw(&PathElement::new(
            vec![(x, y), (x + 18, y)],
            line_colour(heads.len(), i).stroke_width(3),
        ))
        .map_err(draw_err)?;
        let label = format!("head {head}");
        area.draw(&Text::new(
            label.clone(),
            (x + 22, y),
            anchored_text(font_px, HPos::Left, VPos::Center),
        ))
        .map_err(draw_err)?;
        x += 22 + (label.len() as i32 * font_px as i32 * 62 / 100) + 14;
    }
    Ok(())
}

/// The lines view's two columns: query labels end at `xl`, key labels start at `xr`, and
/// token i's row is centred at `top + row_h * (i + 0.5)`.
struct Columns {
    xl: i32,
    xr: i32,
    top: i32,
    row_h: f32,
}

impl Columns {
    fn row_y(&self, i: usize) -> i32 {
        self.top + (self.row_h * (i as f32 + 0.5)) as i32
    }
}

/// Every token's label in both columns (every n-th when the rows are too low for them all),
/// the focused token's marked with a bar beside it.
fn draw_token_columns<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    labels: &[String],
    columns: &Columns,
    focus: LineFocus,
    font_px: u32,
) -> Result<()> {
    let Columns { xl, xr, row_h, .. } = *columns;
    let show_every = ((font_px as f32 + 1.0) / row_h).ceil().max(1.0) as usize;
    for (i, label) in labels.iter().enumerate().step_by(show_every) {
        let y = columns.row_y(i);
        let text = short_label(label, 12);
        let (from, to) = (focus == LineFocus::From(i), focus == LineFocus::To(i));
        if from || to {
            let x = if from { xl - 3 } else { xr + 1 };
            area.draw(&Rectangle::new(
                [
                    (x, y - font_px as i32 / 2 - 2),
                    (x + 2, y + font_px as i32 / 2 + 2),
                ],
                BLACK.filled(),
            ))
            .map_err(draw_err)?;
        }
        area.draw(&Text::new(
            text.clone(),
            (xl - 6, y),
            anchored_text(font_px, HPos::Right, VPos::Center),
        ))
        .map_err(draw_err)?;
        area.draw(&Text::new(
            text,
            (xr + 6, y),
            anchored_text(font_px, HPos::Left, VPos::Center),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// One head's lines, query to key, its weights `a` (T, T) as their opacity; those `focus`
/// leaves out and those too light to see are not drawn.
fn draw_head_lines<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    a: ArrayView2<f32>,
    head: usize,
    colour: RGBColor,
    columns: &Columns,
    focus: LineFocus,
) -> Result<Vec<DrawnLine>> {
    let t = a.nrows();
    let mut drawn = Vec::new();
    for q in 0..t {
        for k in 0..t {
            let keep = match focus {
                LineFocus::All => true,
                LineFocus::From(f) => q == f,
                LineFocus::To(f) => k == f,
            };
            let weight = a[[q, k]];
            if !keep || weight < MIN_WEIGHT {
                continue;
            }
            let style = ShapeStyle {
                color: colour.mix(weight as f64),
                filled: false,
                stroke_width: 2,
            };
            area.draw(&PathElement::new(
                vec![
                    (columns.xl, columns.row_y(q)),
                    (columns.xr, columns.row_y(k)),
                ],
                style,
            ))
            .map_err(draw_err)?;
            drawn.push(DrawnLine {
                head,
                query: q,
                key: k,
                weight,
            });
        }
    }
    Ok(drawn)
}
