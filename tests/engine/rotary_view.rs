//! The rotary views show what the engine computes: each pair turns by position x theta_i, the
//! frequencies are base^(-2i/d), and a rotated query-key score depends only on m - n.

use plotters::prelude::*;
use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, fixture};
use transformer_viz::draw::files::register_fonts;
use transformer_viz::draw::rotary::{draw_distance, draw_frequencies, draw_pair};
use transformer_viz::draw::view::{view_svg, View};
use transformer_viz::model::config::Position;

fn area_test<T>(
    f: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> T,
) -> (T, Vec<u8>) {
    register_fonts();
    let mut pixels = vec![0u8; 600 * 500 * 3];
    let out = {
        let area = BitMapBackend::with_buffer(&mut pixels, (600, 500)).into_drawing_area();
        let out = f(&area);
        area.present().unwrap();
        out
    };
    (out, pixels)
}

#[test]
fn rotary_views_match_the_formulas() {
    let model = fixture(decoder_config(), 4).unwrap();
    let Position::Rotary { base, .. } = model.config.position else {
        panic!("the decoder fixture is rotary")
    };
    let trace = model.trace("rotating queries").unwrap();
    let hd = model.config.head_dim;

    let (freq, _) = area_test(|a| draw_frequencies(a, &trace).unwrap());
    for (i, f) in freq.frequencies.iter().enumerate() {
        assert!((f - (base as f64).powf(-((2 * i) as f64) / hd as f64) as f32).abs() < 1e-7);
    }

    let (pair, pixels_a) = area_test(|a| draw_pair(a, &trace, 1, 2, 1).unwrap());
    for (p, (u, r)) in pair.unrotated.iter().zip(&pair.rotated).enumerate() {
        let turned = (r.1.atan2(r.0) - u.1.atan2(u.0)).rem_euclid(std::f32::consts::TAU);
        let want = (p as f32 * pair.theta).rem_euclid(std::f32::consts::TAU);
        let gap = (turned - want)
            .abs()
            .min(std::f32::consts::TAU - (turned - want).abs());
        assert!(gap < 1e-3, "position {p}: turned {turned}, want {want}");
        assert!(
            ((u.0 * u.0 + u.1 * u.1).sqrt() - (r.0 * r.0 + r.1 * r.1).sqrt()).abs() < 1e-4,
            "a rotation keeps the length"
        );
    }
    let (_, pixels_b) = area_test(|a| draw_pair(a, &trace, 1, 2, 0).unwrap());
    assert_ne!(pixels_a, pixels_b, "another pair draws other arrows");

    let ((_, distance), _) = area_test(|a| draw_distance(a, &trace, 0, 3, false).unwrap());
    let n = distance.positions;
    let at = |m: usize, k: usize| distance.scores[m * n + k];
    for (m, k, s) in [(0, 0, 5), (3, 1, 7), (1, 6, 20), (10, 2, 30)] {
        assert!(
            (at(m, k) - at(m + s, k + s)).abs() < 1e-4,
            "score({m},{k}) = {} but score({},{}) = {}",
            at(m, k),
            m + s,
            k + s,
            at(m + s, k + s)
        );
    }
    assert!(
        view_svg(&model, &trace, &View::RotaryFrequencies, (600, 400))
            .unwrap()
            .contains("<svg")
    );
    // Out of range: typed errors.
    assert!(area_test(|a| draw_pair(a, &trace, 9, 0, 0).is_err()).0);
    assert!(area_test(|a| draw_pair(a, &trace, 0, 0, hd).is_err()).0);
}

#[test]
fn a_model_without_rotary_positions_says_so() {
    let model = fixture(encoder_config(), 4).unwrap();
    let trace = model.trace("no rotation").unwrap();
    let err = area_test(|a| draw_frequencies(a, &trace).unwrap_err()).0;
    assert!(
        err.to_string().contains("does not use rotary positions"),
        "{err}"
    );
}
