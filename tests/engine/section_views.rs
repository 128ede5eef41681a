//! The layer-norm, residual and positional views on other architectures than MiniLM (the
//! random-weight fixtures): the middle stage of an RMSNorm is x / rms, a pre-LN stream is
//! rescaled only by its final norm, and the sinusoidal pictures exist for any model.

use plotters::prelude::*;
use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, fixture};
use transformer_viz::draw::files::register_fonts;
use transformer_viz::draw::residual::PointKind;
use transformer_viz::draw::view::{draw_view, Drawn, Plotted, View};
use transformer_viz::{Trace, Transformer};

fn draw(model: &Transformer, trace: &Trace, view: View) -> transformer_viz::Result<Drawn> {
    register_fonts();
    let mut svg = String::new();
    let area = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
    draw_view(&area, model, trace, &view, true)
}

#[test]
fn rms_norm_stages_divide_by_the_root_mean_square() {
    let model = fixture(decoder_config(), 11).unwrap();
    let trace = model.trace("pre-norm decoder").unwrap();
    assert_eq!(
        trace.norms.len(),
        2 * 2 + 1,
        "two norms a layer and the final norm"
    );
    for index in 0..trace.norms.len() {
        let Some(Plotted::NormStages(stages)) =
            draw(&model, &trace, View::Norm { index }).unwrap().plotted
        else {
            panic!("norm {index} reported no stages");
        };
        assert_eq!(stages.norm_kind, "rms");
        let middle = &stages.stages[1];
        assert_eq!(middle.stage, "normalised");
        assert!(middle.title.contains("rms"), "{}", middle.title);
        for (t, rms) in middle.rms.iter().enumerate() {
            assert!(
                (rms - 1.0).abs() < 1e-3,
                "norm {index}, token {t}: rms of x / rms(x) is {rms}"
            );
        }
        // RMSNorm does not centre: the input's mean survives (scaled) in the middle stage.
        let moved = stages.stages[0]
            .mean
            .iter()
            .zip(&middle.mean)
            .any(|(a, b)| (a - b).abs() > 1e-6);
        assert!(moved || stages.stages[0].mean.iter().all(|m| m.abs() < 1e-6));
        let expected = if index + 1 == trace.norms.len() {
            "final norm"
        } else {
            "before"
        };
        assert!(
            stages.place.contains(expected),
            "pre-LN norms sit before their sublayer: {}",
            stages.place
        );
    }
}

#[test]
fn layer_norm_stages_of_a_post_ln_encoder_have_mean_zero_and_std_one() {
    let model = fixture(encoder_config(), 12).unwrap();
    let trace = model.trace("post-norm encoder").unwrap();
    for index in 0..trace.norms.len() {
        let Some(Plotted::NormStages(stages)) =
            draw(&model, &trace, View::Norm { index }).unwrap().plotted
        else {
            panic!("norm {index} reported no stages");
        };
        assert_eq!(stages.norm_kind, "layer");
        let middle = &stages.stages[1];
        assert!(
            middle.mean.iter().all(|m| m.abs() < 1e-4),
            "{:?}",
            middle.mean
        );
        assert!(
            middle.std.iter().all(|s| (s - 1.0).abs() < 1e-2),
            "{:?}",
            middle.std
        );
        assert!(stages.place.contains("after"), "{}", stages.place);
    }
}

#[test]
fn a_pre_ln_stream_is_rescaled_only_by_its_final_norm() {
    let model = fixture(decoder_config(), 13).unwrap();
    let trace = model.trace("residual").unwrap();
    let Some(Plotted::Residual(drawn)) = draw(&model, &trace, View::Residual { tokens: None })
        .unwrap()
        .plotted
    else {
        panic!("no residual report");
    };
    let kinds: Vec<PointKind> = drawn.points.iter().map(|p| p.kind).collect();
    assert_eq!(kinds.first(), Some(&PointKind::Embedding));
    assert_eq!(kinds.iter().filter(|&&k| k == PointKind::Add).count(), 4);
    assert_eq!(
        kinds.last(),
        Some(&PointKind::Norm),
        "the final norm ends the stream"
    );
    assert_eq!(kinds.iter().filter(|&&k| k == PointKind::Norm).count(), 1);
    assert!(drawn.titles.iter().any(|t| t.contains("pre-LN")));
    // A token that is not in the sentence is an error, not a panic.
    assert!(draw(
        &model,
        &trace,
        View::Residual {
            tokens: Some(vec![99])
        }
    )
    .is_err());
}

#[test]
fn the_sinusoidal_pictures_exist_for_a_rotary_model() {
    let model = fixture(decoder_config(), 14).unwrap();
    let trace = model.trace("rotary").unwrap();
    let d = model.config.d_model;
    let Some(Plotted::Waves(waves)) = draw(
        &model,
        &trace,
        View::SinusoidalWaves {
            dims: vec![0, 3, d - 1],
        },
    )
    .unwrap()
    .plotted
    else {
        panic!("no waves report");
    };
    for s in &waves.series {
        for (p, v) in s.values.iter().enumerate() {
            let angle = p as f64 / 10000f64.powf((s.dim - s.dim % 2) as f64 / d as f64);
            let want = if s.dim % 2 == 0 {
                angle.sin()
            } else {
                angle.cos()
            };
            assert!(
                (*v as f64 - want).abs() < 1e-6,
                "PE({p}, {}) = {v}, formula {want}",
                s.dim
            );
        }
    }
    assert!(draw(&model, &trace, View::SinusoidalTable)
        .unwrap()
        .geometry
        .is_some());
    assert!(
        draw(&model, &trace, View::SinusoidalWaves { dims: vec![d] }).is_err(),
        "feature d does not exist"
    );
    assert!(
        draw(&model, &trace, View::PositionTable).is_err(),
        "a rotary model adds no table"
    );
}
