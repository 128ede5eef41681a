//! A training run as it goes (the page's Training section): the loss curves against steps, and
//! every head's score of one pattern over the steps, where a head taking its job is a line
//! that rises. The numbers come with the chart's spec (the worker that trains measured them);
//! the model shown on the page plays no part.

use plotters::coord::types::RangedCoordf32;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use super::colors::CATEGORICAL;
use super::furniture::{
    draw_legend_rows, fitting_title, legend_rows_height, tick_format, RowEntry, RowMark,
};
use super::head_grid::HeadPattern;
use super::Canvas;
use super::{draw_err, house_mesh, FONT};
use crate::error::{Result, VizError};

/// A score a head must pass to be said to have the job (the tests' and the line).
pub const HAS_THE_JOB: f32 = 0.5;

/// The has-the-job line's colour: a dark grey, apart from the grey of the unnamed heads.
const THRESHOLD: RGBColor = RGBColor(90, 90, 90);

/// Heads drawn in colour and named in the legend: the strongest at the last evaluation.
const NAMED_HEADS: usize = 3;

/// One line as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesDrawn {
    pub label: String,
    pub points: Vec<(usize, f32)>,
}

/// What the held-out loss was measured on: the run's task decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeldOutText {
    /// Stories the run never trained on (the stories and repeated-run tasks).
    #[default]
    Stories,
    /// Held-out strings and their reverses (the reversal task).
    Strings,
    /// The corpus chapters after the ones trained on (the text task).
    Chapters,
}

impl HeldOutText {
    fn label(self) -> &'static str {
        match self {
            HeldOutText::Stories => "held-out stories",
            HeldOutText::Strings => "held-out strings",
            HeldOutText::Chapters => "held-out chapters",
        }
    }
}

/// What a training chart drew.
#[derive(Debug, Clone, Serialize)]
pub struct TrainingDrawn {
    pub title: String,
    /// The named lines (the timeline's strongest heads; every loss curve).
    pub series: Vec<SeriesDrawn>,
}

/// The training loss (every logged step), the held-out loss and, when measured, the loss on a
/// repeated run's second copy, against steps.
pub fn draw_loss<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    train: &[(usize, f32)],
    held_out: &[(usize, f32)],
    held_out_text: HeldOutText,
    second_copy: &[(usize, f32)],
) -> Result<TrainingDrawn> {
    let named = [
        ("training loss", train, CATEGORICAL[0]),
        (held_out_text.label(), held_out, CATEGORICAL[1]),
        ("second copy of a repeated run", second_copy, CATEGORICAL[2]),
    ];
    let all = named.iter().flat_map(|(_, s, _)| s.iter());
    let (steps, hi) = all.fold((1usize, 0.5f32), |(n, hi), &(s, l)| {
        (n.max(s), if l.is_finite() { hi.max(l) } else { hi })
    });
    let lines: Vec<_> = named.iter().filter(|(_, s, _)| !s.is_empty()).collect();
    let legend: Vec<RowEntry> = lines
        .iter()
        .map(|(label, _, c)| RowEntry::new(*label, RowMark::Line(*c)))
        .collect();
    let (chart_area, font_px, title) = frame(
        area,
        &legend,
        &[
            "Loss while training (nats per character; lower is better)",
            "Loss while training",
            "Loss",
        ],
    )?;
    let mut chart = axes(&chart_area, &title, font_px, steps, hi * 1.05, "loss")?;
    let mut series = Vec::new();
    for (label, points, colour) in lines {
        let finite = points.iter().filter(|p| p.1.is_finite());
        chart
            .draw_series(LineSeries::new(
                finite.map(|&(s, l)| (s as f32, l)),
                colour.stroke_width(2),
            ))
            .map_err(draw_err)?;
        series.push(SeriesDrawn {
            label: label.to_string(),
            points: points.to_vec(),
        });
    }
    Ok(TrainingDrawn { title, series })
}

/// Every head's score of `pattern` at each evaluation: `scores[e]` holds evaluation e's
/// scores, layer-major (`n_heads` a layer), measured at `steps[e]`. The strongest heads at the
/// last evaluation are drawn in colour and named; the others in grey.
pub fn draw_head_timeline<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    pattern: HeadPattern,
    steps: &[usize],
    scores: &[Vec<f32>],
    n_heads: usize,
) -> Result<TrainingDrawn> {
    let heads = scores.first().map_or(0, Vec::len);
    if scores.len() != steps.len() || scores.iter().any(|s| s.len() != heads) || n_heads == 0 {
        return Err(VizError::Draw(format!(
            "a head timeline needs one score a head at every step: {} steps, {} evaluations",
            steps.len(),
            scores.len()
        )));
    }
    let name = |i: usize| format!("layer {} head {}", i / n_heads, i % n_heads);
    let mut order: Vec<usize> = (0..heads).collect();
    if let Some(last) = scores.last() {
        order.sort_by(|&a, &b| last[b].total_cmp(&last[a]));
    }
    let named: Vec<usize> = order.iter().copied().take(NAMED_HEADS).collect();
    let grey = RGBColor(190, 190, 190);
    let mut legend: Vec<RowEntry> = named
        .iter()
        .enumerate()
        .map(|(k, &i)| RowEntry::new(name(i), RowMark::Line(CATEGORICAL[k])))
        .collect();
    if heads > named.len() {
        legend.push(RowEntry::new("the other heads", RowMark::Line(grey)));
    }
    legend.push(RowEntry::new(
        format!("{HAS_THE_JOB}: the head has the job"),
        RowMark::Line(THRESHOLD),
    ));
    let words = pattern.words();
    let (chart_area, font_px, title) = frame(
        area,
        &legend,
        &[
            &format!(
                "Every head's {words} while training: a head takes its job where its line rises"
            ),
            &format!("Every head's {words} while training"),
            &format!("Heads' {words}"),
        ],
    )?;
    let last_step = steps.last().copied().unwrap_or(1).max(1);
    let mut chart = axes(&chart_area, &title, font_px, last_step, 1.0, words)?;
    let line = |i: usize| -> Vec<(f32, f32)> {
        steps
            .iter()
            .zip(scores)
            .map(|(&s, row)| (s as f32, row[i].clamp(0.0, 1.0)))
            .collect()
    };
    for &i in order.iter().skip(NAMED_HEADS).rev() {
        chart
            .draw_series(LineSeries::new(line(i), grey.stroke_width(1)))
            .map_err(draw_err)?;
    }
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, HAS_THE_JOB), (last_step as f32, HAS_THE_JOB)],
            6,
            4,
            THRESHOLD.stroke_width(1),
        ))
        .map_err(draw_err)?;
    let mut series = Vec::new();
    for (k, &i) in named.iter().enumerate().rev() {
        let points = line(i);
        chart
            .draw_series(LineSeries::new(
                points.clone(),
                CATEGORICAL[k].stroke_width(3),
            ))
            .map_err(draw_err)?;
        series.push(SeriesDrawn {
            label: name(i),
            points: steps
                .iter()
                .zip(scores)
                .map(|(&s, row)| (s, row[i]))
                .collect(),
        });
    }
    series.reverse();
    Ok(TrainingDrawn { title, series })
}

/// The area under a legend of `legend`, the font size for the area's width, and the longest
/// of `titles` that fits.
fn frame<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    legend: &[RowEntry],
    titles: &[&str],
) -> Result<(DrawingArea<DB, Shift>, u32, String)> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 400 { 10 } else { 12 };
    let legend_h = legend_rows_height(area, legend, font_px)?;
    let (plot_area, legend_area) = area.split_vertically(h as i32 - legend_h as i32);
    draw_legend_rows(&legend_area, legend, font_px)?;
    let title = fitting_title(area, font_px + 3, titles);
    Ok((plot_area, font_px, title))
}

/// Both charts' axes: steps from 0 to `steps` across, 0 to `top` up (named `y_desc`), under
/// `title`, with the house's grid.
fn axes<'a, DB: Canvas>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    font_px: u32,
    steps: usize,
    top: f32,
    y_desc: &str,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf32, RangedCoordf32>>> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, font_px + 3))
        .margin(8)
        .margin_right(14)
        .x_label_area_size(font_px * 3 + 8)
        .y_label_area_size(font_px * 3 + 16)
        .build_cartesian_2d(0f32..steps as f32, 0f32..top)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_desc("step")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&tick_format(0.0, top))
        .draw()
        .map_err(draw_err)?;
    Ok(chart)
}
