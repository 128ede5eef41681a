//! Rotary positions (RoPE): no vector is added to the embeddings; instead each query and key is
//! cut into pairs of features and each pair is turned by an angle proportional to the token's
//! position, pair i at the frequency theta_i = base^(-2i/head_dim). Three views: the
//! frequencies (fast pairs turn a lot within a sentence, slow pairs hardly move), one pair of
//! a real head's queries turning with position, and the score of a fixed query and key moved
//! to positions m and n, which depends only on m - n.

use ndarray::{Array2, Array3};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::{sequential, Scale, CATEGORICAL};
use super::furniture::{fitting_title, tick_format};
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::Canvas;
use super::{anchored_text, draw_err, house_mesh, FONT};
use crate::error::{Result, VizError};
use crate::model::config::Position;
use crate::model::position::{apply_rotary_from, rotary_frequencies};
use crate::trace::{Op, Trace};

/// Positions the distance view spans.
const DISTANCE_POSITIONS: usize = 48;

/// The model's rotary base and whether pairs are adjacent, or why it has none.
fn rotary(trace: &Trace) -> Result<(f32, bool)> {
    match trace.config.position {
        Position::Rotary { base, adjacent_pairs } => Ok((base, adjacent_pairs)),
        other => Err(VizError::Draw(format!(
            "{} does not use rotary positions (it uses {} positions), so there is no rotation to show",
            trace.model,
            format!("{other:?}").to_lowercase()
        ))),
    }
}

/// The two features of pair `pair` in a head: (2i, 2i+1) when adjacent, else (i, i + hd/2).
fn pair_features(pair: usize, head_dim: usize, adjacent: bool) -> (usize, usize) {
    if adjacent {
        (2 * pair, 2 * pair + 1)
    } else {
        (pair, pair + head_dim / 2)
    }
}

fn check_head(trace: &Trace, layer: usize, head: usize, pair: usize) -> Result<()> {
    let c = &trace.config;
    if layer >= c.n_layers || head >= c.n_heads {
        return Err(VizError::OutOfRange {
            layer,
            head,
            layers: c.n_layers,
            heads: c.n_heads,
        });
    }
    if pair >= c.head_dim / 2 {
        return Err(VizError::Draw(format!(
            "pair {pair} does not exist: a head has pairs 0 to {}",
            c.head_dim / 2 - 1
        )));
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
pub struct FrequenciesDrawn {
    /// theta_i per pair, radians per position.
    pub frequencies: Vec<f32>,
    /// 2 pi / theta_i: positions for a full turn.
    pub wavelengths: Vec<f32>,
    pub sentence_tokens: usize,
}

/// Each pair's wavelength (positions per full turn), log scale, with the sentence's length.
pub fn draw_frequencies<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
) -> Result<FrequenciesDrawn> {
    let (base, _) = rotary(trace)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let hd = trace.config.head_dim;
    let frequencies = rotary_frequencies(hd, base);
    let wavelengths: Vec<f32> = frequencies
        .iter()
        .map(|t| std::f32::consts::TAU / t)
        .collect();
    let (w, _) = area.dim_in_pixel();
    let font = if w < 400 { 10 } else { 12 };
    let top = wavelengths.iter().copied().fold(1.0f32, f32::max) * 2.0;
    let title = fitting_title(
        area,
        font + 3,
        &[
            &format!(
                "Rotary: positions per full turn of each feature pair (θᵢ = {base}^(−2i/{hd}))"
            ),
            "Rotary: each pair's wavelength",
        ],
    );
    let mut chart = ChartBuilder::on(area)
        .caption(&title, (FONT, font + 3))
        .margin(8)
        .margin_right(16)
        .x_label_area_size(font * 3 + 8)
        .y_label_area_size(font * 4 + 16)
        .build_cartesian_2d(
            -0.5f32..(frequencies.len() as f32 - 0.5),
            (1.0f32..top).log_scale(),
        )
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font)
        .x_desc("feature pair i (dims 2i, 2i+1)")
        .y_desc("positions per turn (log)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| {
            if *y >= 1000.0 {
                format!("{:.0}k", y / 1000.0)
            } else {
                format!("{y:.0}")
            }
        })
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_series(wavelengths.iter().enumerate().map(|(i, &wl)| {
            Rectangle::new(
                [(i as f32 - 0.4, 1.0), (i as f32 + 0.4, wl)],
                CATEGORICAL[0].filled(),
            )
        }))
        .map_err(draw_err)?;
    let t = trace.len().max(1) as f32;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(-0.5, t), (frequencies.len() as f32 - 0.5, t)],
            CATEGORICAL[5].stroke_width(2),
        )))
        .map_err(draw_err)?
        .label(format!("this text: {} tokens", trace.len()))
        .legend(|(x, y)| {
            PathElement::new(vec![(x, y), (x + 16, y)], CATEGORICAL[5].stroke_width(2))
        });
    chart
        .configure_series_labels()
        .label_font((FONT, font))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(draw_err)?;
    Ok(FrequenciesDrawn {
        frequencies,
        wavelengths,
        sentence_tokens: trace.len(),
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct PairDrawn {
    pub layer: usize,
    pub head: usize,
    pub pair: usize,
    pub features: (usize, usize),
    pub theta: f32,
    /// The pair's (x, y) at each position: the query as projected and after rotation.
    pub unrotated: Vec<(f32, f32)>,
    pub rotated: Vec<(f32, f32)>,
}

/// One pair of one head's queries at every position: each as projected (faint) and as
/// rotated to its position (solid), drawn as arrows from the origin coloured by position.
pub fn draw_pair<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    pair: usize,
) -> Result<PairDrawn> {
    let (base, adjacent) = rotary(trace)?;
    check_head(trace, layer, head, pair)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let hd = trace.config.head_dim;
    let (a, b) = pair_features(pair, hd, adjacent);
    let (unrotated, rotated) = pair_points(trace, layer, head, (a, b))?;
    let t = trace.len();
    let reach = unrotated
        .iter()
        .chain(&rotated)
        .map(|(x, y)| x.abs().max(y.abs()))
        .fold(1e-3f32, f32::max)
        * 1.15;
    let theta = rotary_frequencies(hd, base)[pair];
    let (w, h) = area.dim_in_pixel();
    let font = if w < 400 { 10 } else { 12 };
    let title = fitting_title(area, font + 3, &[
        &format!("Layer {layer}, head {head}: query features {a} and {b} turned by p·θ (θ = {theta:.3} rad a position)"),
        &format!("L{layer} H{head}: pair {pair} turning with position"),
    ]);
    let side = (w.min(h) as i32 - 20).max(80) as u32;
    let square = area
        .clone()
        .shrink(((w as i32 - side as i32) / 2, 0), (side, h));
    let mut chart = ChartBuilder::on(&square)
        .caption(&title, (FONT, font + 3))
        .margin(8)
        .x_label_area_size(font * 3)
        .y_label_area_size(font * 4)
        .build_cartesian_2d(-reach..reach, -reach..reach)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font)
        .x_desc(format!("feature {a}"))
        .y_desc(format!("feature {b}"))
        .x_label_formatter(&tick_format(-reach, reach))
        .y_label_formatter(&tick_format(-reach, reach))
        .draw()
        .map_err(draw_err)?;
    for p in 0..t {
        let colour = sequential(if t > 1 {
            p as f32 / (t - 1) as f32
        } else {
            0.0
        });
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), unrotated[p]],
                colour.mix(0.35).stroke_width(1),
            )))
            .map_err(draw_err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), rotated[p]],
                colour.stroke_width(2),
            )))
            .map_err(draw_err)?;
        chart
            .draw_series(std::iter::once(Circle::new(rotated[p], 3, colour.filled())))
            .map_err(draw_err)?;
    }
    let note =
        "faint: as projected; solid: rotated to its position (colour: position, dark = first)";
    square
        .draw(&Text::new(
            note,
            (side as i32 / 2, h as i32 - 4),
            anchored_text(font - 1, HPos::Center, VPos::Bottom),
        ))
        .map_err(draw_err)?;
    Ok(PairDrawn {
        layer,
        head,
        pair,
        features: (a, b),
        theta,
        unrotated,
        rotated,
    })
}

/// A feature pair's (x, y) at each position.
type PairPoints = Vec<(f32, f32)>;

/// Features `a` and `b` of one head's query at every position: as projected, and as rotated
/// to its position.
fn pair_points(
    trace: &Trace,
    layer: usize,
    head: usize,
    (a, b): (usize, usize),
) -> Result<(PairPoints, PairPoints)> {
    let q = trace
        .find(Op::Query, Some(layer))
        .ok_or_else(|| VizError::NoSuchStep("queries".into()))?
        .tensor
        .view3()?; // (heads, T, hd)
    let r = trace
        .find(Op::RotaryQuery, Some(layer))
        .ok_or_else(|| VizError::NoSuchStep("rotated queries".into()))?
        .tensor
        .view3()?; // (heads, T, hd)
    let t = trace.len();
    let unrotated = (0..t).map(|p| (q[[head, p, a]], q[[head, p, b]])).collect();
    let rotated = (0..t).map(|p| (r[[head, p, a]], r[[head, p, b]])).collect();
    Ok((unrotated, rotated))
}

#[derive(Debug, Clone, Serialize)]
pub struct DistanceDrawn {
    pub layer: usize,
    pub head: usize,
    /// (m, n) scores, row-major, `positions` x `positions`.
    pub positions: usize,
    pub scores: Vec<f32>,
}

/// The score q·k/√d of one real query and key of a head (the last token's query, the first
/// token's key) after rotating them to positions m (rows) and n (columns): constant along
/// every diagonal, because a rotation by m·θ dotted with one by n·θ is a rotation by (m − n)·θ.
pub fn draw_distance<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    vector: bool,
) -> Result<(HeatmapDrawn, DistanceDrawn)> {
    let (base, adjacent) = rotary(trace)?;
    check_head(trace, layer, head, 0)?;
    area.fill(&WHITE).map_err(draw_err)?;
    let c = &trace.config;
    let hd = c.head_dim;
    let q = trace
        .find(Op::Query, Some(layer))
        .ok_or_else(|| VizError::NoSuchStep("queries".into()))?
        .tensor
        .view3()?; // (heads, T, hd)
    let k = trace
        .find(Op::Key, Some(layer))
        .ok_or_else(|| VizError::NoSuchStep("keys".into()))?
        .tensor
        .view3()?; // (kv_heads, T, hd)
    let query = q.slice(ndarray::s![head, trace.len() - 1, ..]).to_owned(); // (hd)
    let key = k
        .slice(ndarray::s![head / c.group_size(), 0, ..])
        .to_owned(); // (hd)
    let n = DISTANCE_POSITIONS;
    // The same vector at every position, then rotated: row p turned by p·θ.
    let mut qs = Array3::<f32>::zeros((1, n, hd)); // (1, P, hd)
    let mut ks = Array3::<f32>::zeros((1, n, hd)); // (1, P, hd)
    for p in 0..n {
        qs.slice_mut(ndarray::s![0, p, ..]).assign(&query);
        ks.slice_mut(ndarray::s![0, p, ..]).assign(&key);
    }
    apply_rotary_from(&mut qs, base, adjacent, 0);
    apply_rotary_from(&mut ks, base, adjacent, 0);
    let scale = 1.0 / (hd as f32).sqrt();
    let scores: Array2<f32> = qs
        .index_axis(ndarray::Axis(0), 0)
        .dot(&ks.index_axis(ndarray::Axis(0), 0).t())
        * scale; // (P, P)
    let values: Vec<f32> = scores.iter().copied().collect();
    let labels: Vec<String> = (0..n).map(|p| p.to_string()).collect();
    let title = format!("L{layer} H{head}: one query and one key moved to positions m, n: the score depends only on m − n");
    let drawn = draw_heatmap(
        area,
        scores.view(),
        &Heatmap {
            title: &title,
            x_desc: "key position n",
            y_desc: "query position m",
            col_labels: &labels,
            row_labels: &labels,
            scale: Scale::fit(&values),
            legend: "q·k/√d",
            vector,
        },
    )?;
    Ok((
        drawn,
        DistanceDrawn {
            layer,
            head,
            positions: n,
            scores: values,
        },
    ))
}
