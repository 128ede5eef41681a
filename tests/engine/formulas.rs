//! Exact-formula properties of the building blocks, on small inputs where the answer is
//! known in closed form.

use ndarray::{array, Array2, Array3, Axis};
use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, fixture};
use transformer_viz::explain::step_text;
use transformer_viz::model::attention::{apply_causal_mask, softmax_rows};
use transformer_viz::model::norm::{rms_scale, row_mean_std, standardize};
use transformer_viz::model::position::{apply_rotary, rotary_frequencies, sinusoidal_table};
use transformer_viz::Op;

#[test]
fn sinusoidal_table_is_the_notes_formula() {
    let d = 64;
    let table = sinusoidal_table(100, d);
    for p in 0..100 {
        for i in 0..d / 2 {
            let angle = p as f64 / 10000f64.powf(2.0 * i as f64 / d as f64);
            assert!(
                (table[[p, 2 * i]] as f64 - angle.sin()).abs() < 1e-6,
                "PE({p}, {})",
                2 * i
            );
            assert!(
                (table[[p, 2 * i + 1]] as f64 - angle.cos()).abs() < 1e-6,
                "PE({p}, {})",
                2 * i + 1
            );
        }
    }
    // Position 0 is (0, 1, 0, 1, ...); all values lie in [-1, 1].
    assert!(table
        .row(0)
        .iter()
        .enumerate()
        .all(|(j, &v)| v == if j % 2 == 0 { 0.0 } else { 1.0 }));
    assert!(table.iter().all(|v| (-1.0..=1.0).contains(v)));
    // Distinct positions get distinct vectors.
    for p in 1..100 {
        let diff: f32 = (&table.row(p) - &table.row(p - 1)).mapv(f32::abs).sum();
        assert!(diff > 1e-3);
    }
}

#[test]
fn softmax_rows_sum_to_one_and_keep_order() {
    let mut x = array![
        [1.0f32, 2.0, 3.0],
        [1000.0, 1000.0, -1000.0],
        [-5.0, 0.0, 5.0]
    ];
    softmax_rows(x.view_mut());
    for row in x.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-6);
        assert!(row.iter().all(|&v| (0.0..=1.0).contains(&v)));
    }
    assert!(x[[0, 0]] < x[[0, 1]] && x[[0, 1]] < x[[0, 2]]);
    assert!((x[[1, 0]] - 0.5).abs() < 1e-6 && x[[1, 2]] == 0.0);
    // e^1 / (e^1 + e^2 + e^3)
    let e = std::f32::consts::E;
    assert!((x[[0, 0]] - e / (e + e * e + e * e * e)).abs() < 1e-6);
}

#[test]
fn causal_mask_zeroes_the_future_after_softmax() {
    let mut scores = Array3::from_shape_fn((2, 5, 5), |(h, i, j)| (h + i * 3 + j) as f32 * 0.1);
    apply_causal_mask(&mut scores);
    for mut head in scores.outer_iter_mut() {
        softmax_rows(head.view_mut());
    }
    for head in scores.outer_iter() {
        for i in 0..5 {
            for j in 0..5 {
                if j > i {
                    assert_eq!(head[[i, j]], 0.0, "query {i} sees future key {j}");
                } else {
                    assert!(head[[i, j]] > 0.0);
                }
            }
            assert!((head.row(i).sum() - 1.0).abs() < 1e-6);
        }
        assert_eq!(
            head[[0, 0]],
            1.0,
            "the first token can only attend to itself"
        );
    }
}

#[test]
fn layer_norm_output_has_mean_zero_and_std_one_before_gamma_beta() {
    let x = Array2::from_shape_fn((7, 48), |(t, j)| {
        ((t * 31 + j * 17) % 23) as f32 * (t as f32 + 1.0) - 5.0
    });
    let y = standardize(x.view(), 1e-12);
    let (mean, std) = row_mean_std(y.view());
    for t in 0..7 {
        assert!(mean[t].abs() < 1e-5, "token {t} mean {}", mean[t]);
        assert!((std[t] - 1.0).abs() < 1e-4, "token {t} std {}", std[t]);
    }
    let r = rms_scale(x.view(), 1e-12);
    for row in r.rows() {
        let rms = (row.iter().map(|v| v * v).sum::<f32>() / 48.0).sqrt();
        assert!((rms - 1.0).abs() < 1e-4);
    }
}

#[test]
fn rotary_keeps_lengths_and_makes_scores_depend_only_on_distance() {
    let hd = 8;
    assert_eq!(rotary_frequencies(hd, 10000.0), vec![1.0, 0.1, 0.01, 0.001]);
    for adjacent in [true, false] {
        // The same query vector and key vector placed at every position.
        let q0: Vec<f32> = (0..hd).map(|i| (i as f32 * 0.7).sin()).collect();
        let k0: Vec<f32> = (0..hd).map(|i| (i as f32 * 1.3).cos()).collect();
        let mut q = Array3::from_shape_fn((1, 10, hd), |(_, _, i)| q0[i]);
        let mut k = Array3::from_shape_fn((1, 10, hd), |(_, _, i)| k0[i]);
        apply_rotary(&mut q, 10000.0, adjacent);
        apply_rotary(&mut k, 10000.0, adjacent);
        let norm = |v: ndarray::ArrayView1<f32>| v.dot(&v).sqrt();
        let n0 = (q0.iter().map(|v| v * v).sum::<f32>()).sqrt();
        for p in 0..10 {
            assert!((norm(q.slice(ndarray::s![0, p, ..])) - n0).abs() < 1e-5);
        }
        // q at m, k at n: the dot product depends on m - n only.
        let dot = |m: usize, n: usize| -> f32 {
            let a: ndarray::ArrayView1<f32> = q.slice(ndarray::s![0, m, ..]);
            let b: ndarray::ArrayView1<f32> = k.slice(ndarray::s![0, n, ..]);
            a.dot(&b)
        };
        for shift in 1..5 {
            assert!((dot(2, 1) - dot(2 + shift, 1 + shift)).abs() < 1e-5);
            assert!((dot(5, 2) - dot(5 + shift, 2 + shift)).abs() < 1e-5);
        }
        assert!(
            (dot(3, 1) - dot(3, 2)).abs() > 1e-4,
            "different distances give different scores"
        );
    }
}

#[test]
fn decoder_fixture_trace_is_causal_and_grouped() {
    let model = fixture(decoder_config(), 7).unwrap();
    let trace = model.trace("causal!").unwrap();
    let t = trace.len();
    assert_eq!(t, 8);
    for layer in 0..2 {
        for head in 0..4 {
            let a = trace.attention(layer, head).unwrap();
            for i in 0..t {
                assert!((a.row(i).sum() - 1.0).abs() < 1e-5);
                assert!(a.row(i).iter().skip(i + 1).all(|&v| v == 0.0));
            }
        }
        let masked = trace
            .find(Op::Mask, Some(layer))
            .unwrap()
            .tensor
            .view3()
            .unwrap();
        assert_eq!(masked[[0, 0, 1]], f32::NEG_INFINITY);
        // Grouped-query attention: 2 key heads for 4 query heads.
        assert_eq!(
            trace.find(Op::Key, Some(layer)).unwrap().tensor.shape,
            vec![2, t, 4]
        );
        assert_eq!(
            trace.find(Op::Query, Some(layer)).unwrap().tensor.shape,
            vec![4, t, 4]
        );
        assert!(trace.find(Op::RotaryQuery, Some(layer)).is_some());
        assert!(trace.find(Op::FfnGate, Some(layer)).is_some());
    }
    // A causal model's earlier positions do not change when text is appended.
    let longer = model.trace("causal!!! more").unwrap();
    let a = trace.final_hidden().unwrap();
    let b = longer.final_hidden().unwrap();
    for i in 0..t {
        let d: f32 = (&a.row(i) - &b.row(i)).mapv(f32::abs).sum();
        assert!(
            d < 1e-4,
            "position {i} changed by {d} when later text was added"
        );
    }
    let p = trace.next_token_probabilities().unwrap();
    assert_eq!(p.len(), 257);
    assert!((p.sum() - 1.0).abs() < 1e-4);
}

#[test]
fn encoder_fixture_is_bidirectional_with_sinusoidal_positions() {
    let model = fixture(encoder_config(), 3).unwrap();
    let trace = model.trace("both ways").unwrap();
    let pe = trace.position_encoding().unwrap();
    let expected = sinusoidal_table(trace.len(), 16);
    assert_eq!(pe, expected.view());
    let a = trace.attention(1, 2).unwrap();
    assert!(
        a.iter().all(|&v| v > 0.0),
        "an encoder attends to every token"
    );
    // Changing the last token changes the first token's output.
    let other = model.trace("both wayz").unwrap();
    let d: f32 = (&trace.final_hidden().unwrap().row(0) - &other.final_hidden().unwrap().row(0))
        .mapv(f32::abs)
        .sum();
    assert!(d > 1e-4);
    assert!(matches!(
        trace.next_token_probabilities(),
        Err(transformer_viz::VizError::NoLmHead)
    ));
    // Norm statistics: post-LN outputs have mean beta-ish; inputs recorded per token.
    for rec in trace.norms_of(Some(0)) {
        assert_eq!(rec.stats.input_mean.len(), trace.len());
        assert_eq!(rec.stats.gamma.len(), 16);
    }
    let sums = trace.attention_layer(0).unwrap().sum_axis(Axis(2));
    assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-5));
}

#[test]
fn masked_scores_survive_a_json_round_trip() {
    let trace = fixture(decoder_config(), 5).unwrap().trace("mask").unwrap();
    let back: transformer_viz::Trace =
        serde_json::from_str(&serde_json::to_string(&trace).unwrap()).unwrap();
    let masked = back
        .find(Op::Mask, Some(0))
        .unwrap()
        .tensor
        .view3()
        .unwrap();
    assert_eq!(masked[[1, 0, 3]], f32::NEG_INFINITY);
    assert_eq!(
        back.attention(1, 3).unwrap(),
        trace.attention(1, 3).unwrap()
    );
}

/// The stepper's "Add position" equation writes the token's part as the step before computed
/// it: scaled by sqrt(d_model) when the model scales its embeddings, as the original paper.
#[test]
fn the_add_position_equation_matches_the_embedding_step() {
    use transformer_viz::model::config::Position;
    for scale in [1.0f32, 4.0] {
        let mut config = encoder_config();
        config.position = Position::Sinusoidal;
        config.embedding_scale = scale;
        let trace = fixture(config, 11).unwrap().trace("abc").unwrap();
        let equation = |op: Op| {
            trace
                .steps
                .iter()
                .find(|s| s.op == op)
                .map(|s| step_text(s, &trace.config).equation)
                .unwrap()
        };
        let (embed, add) = (equation(Op::TokenEmbedding), equation(Op::AddPosition));
        assert_eq!(
            embed.contains(r"\sqrt{d_{model}}"),
            add.contains(r"\sqrt{d_{model}}"),
            "embedding {embed:?}, then {add:?}"
        );
        assert_eq!(add.contains(r"\sqrt{d_{model}}"), scale != 1.0, "{add}");
    }
}

/// One query's stages, computed again from the pass's queries, keys and values, are the pass's
/// own: the scores (q·k / sqrt(d_k), after rotary, with grouped keys), the weights, and the
/// weighted sum of the values; a decoder's later keys are masked with weight 0.
#[test]
fn one_query_stages_equal_the_pass() {
    use transformer_viz::analysis::query::query_attention;
    for (config, text) in [
        (decoder_config(), "one query"),
        (encoder_config(), "all keys"),
    ] {
        let causal = config.causal;
        let trace = fixture(config, 21).unwrap().trace(text).unwrap();
        let t = trace.tokens.len();
        for (layer, head, query) in [(0, 0, t - 1), (1, 3, 2), (1, 1, 0)] {
            let stages = query_attention(&trace, layer, head, query).unwrap();
            let scores = trace.scores(layer, head).unwrap(); // (T, T), before the mask
            let weights = trace.attention(layer, head).unwrap(); // (T, T)
            for s in &stages.keys {
                assert_eq!(s.weight, weights[[query, s.key]]);
                match s.scaled {
                    Some(scaled) => {
                        assert!(
                            (scaled - scores[[query, s.key]]).abs() < 1e-5,
                            "{scaled} vs {}",
                            scores[[query, s.key]]
                        );
                        let root = (stages.head_dim as f32).sqrt();
                        assert!((s.dot.unwrap() / root - scaled).abs() < 1e-6);
                    }
                    None => {
                        assert!(
                            causal && s.key > query,
                            "key {} masked for query {query}",
                            s.key
                        );
                        assert_eq!(s.weight, 0.0);
                    }
                }
            }
            let summed = trace
                .find(Op::WeightedSum, Some(layer))
                .unwrap()
                .tensor
                .view3()
                .unwrap()
                .index_axis(ndarray::Axis(0), head)
                .row(query)
                .to_vec(); // (d_k)
            for (a, b) in stages.output.iter().zip(&summed) {
                assert!((a - b).abs() < 1e-5, "output {a} vs the pass's {b}");
            }
        }
        assert!(
            query_attention(&trace, 0, 0, t).is_err(),
            "a token past the sentence is a typed error"
        );
    }
}
