//! Native rendering of every view to SVG and PNG files (the CLI's `render`), with the
//! DejaVu Sans font embedded so the output does not depend on the machine's fonts. Each file
//! is one `View` drawn by `draw_view`, the same code the page's canvases use.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;

use super::attention::GridOf;
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

impl Job {
    fn new(dir: &Path, name: impl Into<String>, view: View, size: (u32, u32)) -> Self {
        Job {
            dir: dir.to_path_buf(),
            name: name.into(),
            view,
            size,
        }
    }
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
    let layers = chosen_layers(trace, only_layer)?;
    let (attention_dir, norm_dir) = (out.join("attention"), out.join("layer_norm"));
    let mut jobs = attention_jobs(trace, &layers, out, &attention_dir);
    jobs.extend(position_jobs(trace, out));
    jobs.extend(norm_jobs(trace, &layers, &norm_dir));
    jobs.push(Job::new(
        out,
        "residual_stream",
        View::Residual { tokens: None },
        (1100, 760),
    ));
    jobs.extend(rotary_jobs(model, layers[0], out));
    for (name, pattern) in [
        ("previous", HeadPattern::Previous),
        ("first", HeadPattern::First),
    ] {
        jobs.push(Job::new(
            out,
            format!("head_grid_{name}"),
            View::HeadGrid { pattern },
            (760, 820),
        ));
    }
    jobs.extend(prediction_jobs(model, out));

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

/// `only_layer`, when the model has it, or every layer.
fn chosen_layers(trace: &Trace, only_layer: Option<usize>) -> Result<Vec<usize>> {
    let c = &trace.config;
    match only_layer {
        Some(l) if l >= c.n_layers => Err(VizError::OutOfRange {
            layer: l,
            head: 0,
            layers: c.n_layers,
            heads: c.n_heads,
        }),
        Some(l) => Ok(vec![l]),
        None => Ok((0..c.n_layers).collect()),
    }
}

/// Each head of `layers` as a heatmap, as lines and (an encoder-decoder's) as
/// cross-attention; then the grid of every head.
fn attention_jobs(trace: &Trace, layers: &[usize], out: &Path, dir: &Path) -> Vec<Job> {
    let c = &trace.config;
    let t = trace.len() as u32;
    let side = (t * 24 + 220).clamp(480, 1400);
    let mut jobs = Vec::new();
    for &layer in layers {
        for head in 0..c.n_heads {
            jobs.push(Job::new(
                dir,
                format!("layer{layer}_head{head}"),
                View::Head {
                    layer,
                    head,
                    encoder: false,
                },
                (side + 70, side),
            ));
            let lines = View::Lines {
                layer,
                head,
                focus: None,
                focus_key: None,
                heads: Vec::new(),
            };
            jobs.push(Job::new(
                dir,
                format!("lines_layer{layer}_head{head}"),
                lines,
                (640, (t * 20 + 80).clamp(300, 1400)),
            ));
            if trace.source.is_some() {
                jobs.push(Job::new(
                    dir,
                    format!("cross_layer{layer}_head{head}"),
                    View::CrossAttention { layer, head },
                    (side + 70, side),
                ));
            }
        }
    }
    let grid_size = (c.n_heads as u32 * 60 + 60, c.n_layers as u32 * 60 + 40);
    jobs.push(Job::new(
        out,
        "attention_grid",
        View::Grid {
            layer: layers[0],
            head: 0,
            of: GridOf::SelfAttention,
        },
        grid_size,
    ));
    if trace.source.is_some() {
        for (name, of) in [
            ("encoder_attention_grid", GridOf::Encoder),
            ("cross_attention_grid", GridOf::Cross),
        ] {
            jobs.push(Job::new(
                out,
                name,
                View::Grid {
                    layer: 0,
                    head: 0,
                    of,
                },
                grid_size,
            ));
        }
    }
    jobs
}

/// The position features the wave charts follow: these five, those the model has (a small
/// model has fewer than 121).
fn wave_features(trace: &Trace) -> Vec<usize> {
    [0, 1, 40, 80, 120]
        .into_iter()
        .filter(|&i| i < trace.config.d_model)
        .collect()
}

/// The model's position table (when it adds one), and the notes' sinusoidal table at this
/// model's width, whatever the model uses.
fn position_jobs(trace: &Trace, out: &Path) -> Vec<Job> {
    let position = trace.config.position;
    let mut jobs = Vec::new();
    if matches!(position, Position::Learned | Position::Sinusoidal) {
        jobs.push(Job::new(
            out,
            "position_table",
            View::PositionTable,
            (1100, 700),
        ));
        jobs.push(Job::new(
            out,
            "position_waves",
            View::PositionWaves {
                dims: wave_features(trace),
            },
            (1000, 480),
        ));
        jobs.push(Job::new(
            out,
            "position_similarity",
            View::PositionSimilarity,
            (760, 700),
        ));
        if position == Position::Learned {
            jobs.push(Job::new(
                out,
                "position_sinusoidal_comparison",
                View::SinusoidalSimilarity,
                (760, 700),
            ));
        }
    }
    jobs.push(Job::new(
        out,
        "sinusoidal_table",
        View::SinusoidalTable,
        (1100, 700),
    ));
    jobs.push(Job::new(
        out,
        "sinusoidal_waves",
        View::SinusoidalWaves {
            dims: wave_features(trace),
        },
        (1000, 480),
    ));
    jobs
}

/// Each norm of `layers` (and those outside any layer): its stages and its parameters.
fn norm_jobs(trace: &Trace, layers: &[usize], dir: &Path) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (index, rec) in trace.norms.iter().enumerate() {
        if rec.layer.is_none_or(|l| layers.contains(&l)) {
            let name = rec.step.replace('.', "_");
            jobs.push(Job::new(dir, &name, View::Norm { index }, (1100, 560)));
            jobs.push(Job::new(
                dir,
                format!("{name}_parameters"),
                View::NormParameters { index },
                (1000, 420),
            ));
        }
    }
    jobs
}

/// A rotary model's frequencies, and a pair and the distance view of `layer`'s first head.
fn rotary_jobs(model: &Transformer, layer: usize, out: &Path) -> Vec<Job> {
    let Position::Rotary { .. } = model.config.position else {
        return Vec::new();
    };
    vec![
        Job::new(
            out,
            "rotary_frequencies",
            View::RotaryFrequencies,
            (1000, 480),
        ),
        Job::new(
            out,
            "rotary_pair",
            View::RotaryPair {
                layer,
                head: 0,
                pair: 0,
            },
            (700, 700),
        ),
        Job::new(
            out,
            "rotary_distance",
            View::RotaryDistance { layer, head: 0 },
            (760, 700),
        ),
    ]
}

/// A model with a language-model head: its prediction as it is and reshaped by sampling
/// settings, the logit lens, and each part's vote on the next token.
fn prediction_jobs(model: &Transformer, out: &Path) -> Vec<Job> {
    if !model.config.has_lm_head() {
        return Vec::new();
    }
    let shaped = crate::analysis::sampling::SamplingSettings {
        temperature: 0.7,
        top_k: 10,
        top_p: 0.9,
        seed: 0,
    };
    vec![
        Job::new(
            out,
            "prediction",
            View::Prediction {
                top: 20,
                settings: crate::analysis::sampling::SamplingSettings::default(),
            },
            (900, 640),
        ),
        Job::new(
            out,
            "prediction_t0.7_k10_p0.9",
            View::Prediction {
                top: 20,
                settings: shaped,
            },
            (900, 640),
        ),
        Job::new(
            out,
            "logit_lens",
            View::LogitLens { positions: None },
            (1100, 820),
        ),
        Job::new(
            out,
            "votes",
            View::Votes {
                token: None,
                off: vec![],
            },
            (900, 700),
        ),
    ]
}
