//! The loss curve as SVG: training loss (a moving average) and held-out loss against tokens
//! seen, with the bigram baseline as a line to beat.

use plotters::prelude::*;

use crate::error::{Result, VizError};

pub struct CurvePoint {
    pub tokens: f64,
    pub loss: f64,
}

pub fn loss_curve_svg(
    title: &str,
    train: &[CurvePoint],
    held_out: &[CurvePoint],
    baseline: Option<f64>,
) -> Result<String> {
    let mut svg = String::new();
    {
        crate::draw::files::register_fonts();
        let area = SVGBackend::with_string(&mut svg, (900, 520)).into_drawing_area();
        let draw = |e: String| VizError::Training(format!("drawing the loss curve: {e}"));
        area.fill(&WHITE).map_err(|e| draw(e.to_string()))?;
        let max_tokens = train
            .iter()
            .chain(held_out)
            .map(|p| p.tokens)
            .fold(1.0, f64::max);
        let all = train.iter().chain(held_out).map(|p| p.loss).chain(baseline);
        let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = if lo < hi {
            (lo.floor().max(0.0), hi.ceil().min(lo.floor() + 8.0))
        } else {
            (0.0, 10.0)
        };
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..max_tokens / 1e6, lo..hi)
            .map_err(|e| draw(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("tokens seen (millions)")
            .y_desc("cross-entropy (nats per token)")
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| draw(e.to_string()))?;
        let smooth: Vec<(f64, f64)> = train
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let from = i.saturating_sub(19);
                let avg =
                    train[from..=i].iter().map(|q| q.loss).sum::<f64>() / (i + 1 - from) as f64;
                (p.tokens / 1e6, avg.clamp(lo, hi))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(smooth, BLUE.stroke_width(2)))
            .map_err(|e| draw(e.to_string()))?
            .label("training (mean of 20 logged steps)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                held_out
                    .iter()
                    .map(|p| (p.tokens / 1e6, p.loss.clamp(lo, hi))),
                RED.stroke_width(2),
            ))
            .map_err(|e| draw(e.to_string()))?
            .label("held-out text")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
        if let Some(b) = baseline {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, b), (max_tokens / 1e6, b)],
                    BLACK.stroke_width(1),
                ))
                .map_err(|e| draw(e.to_string()))?
                .label(format!("bigram baseline, held out ({b:.2})"))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(|e| draw(e.to_string()))?;
        area.present().map_err(|e| draw(e.to_string()))?;
    }
    Ok(svg)
}
