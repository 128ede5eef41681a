//! Native rendering of every view to SVG and PNG files (the CLI's `render`), with the
//! DejaVu Sans font embedded so the output does not depend on the machine's fonts. Each file
//! is one `View` drawn by `draw_view`, the same code the page's canvases use.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;

use super::draw_err;
use super::head_grid::HeadPattern;
use super::view::{draw_view, view_svg, View};
use crate::error::{Result, VizError};
use crate::model::config::Position;
use crate::trace::Trace;
use crate::Transformer;

/// Registers DejaVu Sans as the "sans-serif" family for plotters' native text rendering.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let faces = [
            (FontStyle::Normal, dejavu::sans::regular()),
            (FontStyle::Bold, dejavu::sans::bold()),
            (FontStyle::Italic, dejavu::sans::oblique()),
            (FontStyle::Oblique, dejavu::sans::oblique()),
        ];
        for (style, bytes) in faces {
            // Both fonts ship inside the crate, so this cannot fail on a good build.
            let _ = plotters::style::register_font(super::FONT, style, bytes);
        }
    });
}

/// One file pair to write: `DIR/NAME.svg` and `DIR/NAME.png`.
struct Job {
    dir: PathBuf,
    name: String,
    view: View,
    size: (u32, u32),
}

/// Draws one view as SVG (vector text; cells as rectangles, or one embedded image when there
/// are many) and as PNG (blitted cells).
fn svg_and_png(model: &Transformer, trace: &Trace, job: &Job) -> Result<()> {
    let svg = job.dir.join(format!("{}.svg", job.name));
    let text = view_svg(model, trace, &job.view, job.size)?;
    std::fs::write(&svg, text).map_err(|e| VizError::Io {
        path: svg.display().to_string(),
        reason: e.to_string(),
    })?;
    let png = job.dir.join(format!("{}.png", job.name));
    let area = BitMapBackend::new(&png, job.size).into_drawing_area();
    draw_view(&area, model, trace, &job.view, false)?;
    area.present().map_err(draw_err)
}

/// Every view of the trace (head heatmaps and lines for `only_layer`, or for every layer);
/// returns how many files were written.
pub fn render_all(
    model: &Transformer,
    trace: &Trace,
    out: &Path,
    only_layer: Option<usize>,
) -> Result<usize> {
    register_fonts();
    let c = &trace.config;
    if let Some(l) = only_layer {
        if l >= c.n_layers {
            return Err(VizError::OutOfRange {
                layer: l,
                head: 0,
                layers: c.n_layers,
                heads: c.n_heads,
            });
        }
    }
    let layers: Vec<usize> = only_layer
        .map(|l| vec![l])
        .unwrap_or_else(|| (0..c.n_layers).collect());
    let t = trace.len() as u32;
    let side = (t * 24 + 220).clamp(480, 1400);
    let (attention_dir, norm_dir) = (out.join("attention"), out.join("layer_norm"));
    let job = |dir: &Path, name: String, view: View, size: (u32, u32)| Job {
        dir: dir.to_path_buf(),
        name,
        view,
        size,
    };

    let mut jobs = Vec::new();
    for &layer in &layers {
        for head in 0..c.n_heads {
            jobs.push(job(
                &attention_dir,
                format!("layer{layer}_head{head}"),
                View::Head { layer, head },
                (side + 70, side),
            ));
            let lines = View::Lines {
                layer,
                head,
                focus: None,
                focus_key: None,
                heads: Vec::new(),
            };
            jobs.push(job(
                &attention_dir,
                format!("lines_layer{layer}_head{head}"),
                lines,
                (640, (t * 20 + 80).clamp(300, 1400)),
            ));
            if trace.source.is_some() {
                jobs.push(job(
                    &attention_dir,
                    format!("cross_layer{layer}_head{head}"),
                    View::CrossAttention { layer, head },
                    (side + 70, side),
                ));
            }
        }
    }
    let grid_size = (c.n_heads as u32 * 60 + 60, c.n_layers as u32 * 60 + 40);
    jobs.push(job(
        out,
        "attention_grid".into(),
        View::Grid {
            layer: layers[0],
            head: 0,
        },
        grid_size,
    ));
    if matches!(c.position, Position::Learned | Position::Sinusoidal) {
        jobs.push(job(
            out,
            "position_table".into(),
            View::PositionTable,
            (1100, 700),
        ));
        jobs.push(job(
            out,
            "position_waves".into(),
            View::PositionWaves {
                dims: vec![0, 1, 40, 80, 120],
            },
            (1000, 480),
        ));
        jobs.push(job(
            out,
            "position_similarity".into(),
            View::PositionSimilarity,
            (760, 700),
        ));
        if c.position == Position::Learned {
            jobs.push(job(
                out,
                "position_sinusoidal_comparison".into(),
                View::SinusoidalSimilarity,
                (760, 700),
            ));
        }
    }
    // The notes' sinusoidal table at this model's width, whatever the model uses.
    jobs.push(job(
        out,
        "sinusoidal_table".into(),
        View::SinusoidalTable,
        (1100, 700),
    ));
    jobs.push(job(
        out,
        "sinusoidal_waves".into(),
        View::SinusoidalWaves {
            dims: vec![0, 1, 40, 80, 120],
        },
        (1000, 480),
    ));
    for (index, rec) in trace.norms.iter().enumerate() {
        if rec.layer.is_none_or(|l| layers.contains(&l)) {
            jobs.push(job(
                &norm_dir,
                rec.step.replace('.', "_"),
                View::Norm { index },
                (1100, 560),
            ));
            jobs.push(job(
                &norm_dir,
                format!("{}_parameters", rec.step.replace('.', "_")),
                View::NormParameters { index },
                (1000, 420),
            ));
        }
    }
    jobs.push(job(
        out,
        "residual_stream".into(),
        View::Residual { tokens: None },
        (1100, 760),
    ));
    if let Position::Rotary { .. } = model.config.position {
        jobs.push(job(
            out,
            "rotary_frequencies".into(),
            View::RotaryFrequencies,
            (1000, 480),
        ));
        let layer = layers[0];
        jobs.push(job(
            out,
            "rotary_pair".into(),
            View::RotaryPair {
                layer,
                head: 0,
                pair: 0,
            },
            (700, 700),
        ));
        jobs.push(job(
            out,
            "rotary_distance".into(),
            View::RotaryDistance { layer, head: 0 },
            (760, 700),
        ));
    }
    for (name, pattern) in [
        ("previous", HeadPattern::Previous),
        ("first", HeadPattern::First),
    ] {
        jobs.push(job(
            out,
            format!("head_grid_{name}"),
            View::HeadGrid { pattern },
            (760, 820),
        ));
    }
    if model.config.has_lm_head() {
        let model_own = crate::analysis::sampling::SamplingSettings::default();
        jobs.push(job(
            out,
            "prediction".into(),
            View::Prediction {
                top: 20,
                settings: model_own,
            },
            (900, 640),
        ));
        let shaped = crate::analysis::sampling::SamplingSettings {
            temperature: 0.7,
            top_k: 10,
            top_p: 0.9,
            seed: 0,
        };
        jobs.push(job(
            out,
            "prediction_t0.7_k10_p0.9".into(),
            View::Prediction {
                top: 20,
                settings: shaped,
            },
            (900, 640),
        ));
        jobs.push(job(
            out,
            "logit_lens".into(),
            View::LogitLens { positions: None },
            (1100, 820),
        ));
    }

    for dir in [out, &attention_dir, &norm_dir] {
        std::fs::create_dir_all(dir).map_err(|e| VizError::Io {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    for j in &jobs {
        svg_and_png(model, trace, j)?;
    }
    Ok(jobs.len() * 2)
}
