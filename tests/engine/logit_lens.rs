//! The logit lens reads each depth's stream through the final norm and the unembedding: at the
//! last layer it is the pass's own prediction; on SmolLM2 " Paris" appears in the last layers.
//! Head grids and the induction score.

use crate::common;
use ndarray::arr2;
use transformer_viz::analysis::heads::{duplicate_targets, induction_score, induction_targets};
use transformer_viz::analysis::logit_lens::{last_positions, logit_lens, LogitLens, MAX_POSITIONS};
use transformer_viz::checkpoints::fixture::{decoder_config, fixture};
use transformer_viz::draw::head_grid::{score_grid, HeadPattern};
use transformer_viz::draw::view::{view_svg, View};
use transformer_viz::model::norm;
use transformer_viz::trace::Op;

#[test]
fn the_lens_at_the_last_layer_is_the_prediction_and_each_depth_is_norm_then_unembed() {
    let model = fixture(decoder_config(), 21).unwrap();
    let trace = model.trace("a lens on it").unwrap();
    let t = trace.len();
    let lens = logit_lens(&model, &trace, &[0, t - 1]).unwrap();
    assert_eq!(lens.depths.len(), model.config.n_layers + 1);
    let probs = trace.next_token_probabilities().unwrap();
    let last_layer = lens.final_prob_by_depth.last().unwrap();
    assert!((last_layer - probs[lens.final_token.id as usize]).abs() < 1e-5);
    assert_eq!(lens.cells.last().unwrap()[1].id, lens.final_token.id);
    // Depth 1 (layer 0's output) at position 0, computed by hand.
    let x = trace
        .find(Op::FfnResidual, Some(0))
        .unwrap()
        .tensor
        .view2()
        .unwrap();
    let normed = norm::apply(
        model.config.norm,
        model.weights.final_norm.as_ref().unwrap(),
        x.slice(ndarray::s![0..1, ..]),
        model.config.norm_eps,
    );
    let logits = model.weights.token_embedding.to_dense().dot(&normed.row(0)); // (vocab)
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|v| (v - max).exp()).sum();
    let top = (0..logits.len())
        .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
        .unwrap();
    assert_eq!(lens.cells[1][0].id as usize, top);
    assert!((lens.cells[1][0].prob - (logits[top] - max).exp() / sum).abs() < 1e-5);
    // Out of range: a typed error.
    assert!(logit_lens(&model, &trace, &[t]).is_err());
    transformer_viz::draw::files::register_fonts();
    let svg = view_svg(
        &model,
        &trace,
        &View::LogitLens { positions: None },
        (800, 600),
    )
    .unwrap();
    assert!(svg.contains("Logit lens"));
}

/// The lens's cells and curve: ids and exact probabilities.
fn lens_numbers(lens: &LogitLens) -> (Vec<Vec<(u32, u32)>>, Vec<u32>) {
    let cells = lens
        .cells
        .iter()
        .map(|depth| depth.iter().map(|c| (c.id, c.prob.to_bits())).collect())
        .collect();
    let curve = lens
        .final_prob_by_depth
        .iter()
        .map(|p| p.to_bits())
        .collect();
    (cells, curve)
}

#[test]
fn a_row_the_lens_read_before_is_not_read_again_and_gives_the_same_numbers() {
    let model = fixture(decoder_config(), 21).unwrap();
    let depths = model.config.n_layers + 1;
    let first = model.trace("a lens on it").unwrap();
    let positions = last_positions(first.len(), MAX_POSITIONS);
    let n = positions.len();
    assert_eq!(n, first.len(), "every position is read");
    logit_lens(&model, &first, &positions).unwrap();
    // Every row is kept, less those that are the same bits as another (a letter's embedding
    // where it comes twice).
    let kept = model.readout_memo.len();
    assert!(
        kept > depths * n / 2 && kept <= depths * n,
        "{kept} rows kept"
    );
    // The same text again: every row but the last position's (whose final-prediction
    // probability is read too) is found, none is added.
    let found = model.readout_memo.found();
    logit_lens(&model, &model.trace("a lens on it").unwrap(), &positions).unwrap();
    assert_eq!(model.readout_memo.found() - found, depths * (n - 1));
    assert_eq!(model.readout_memo.len(), kept);
    // A letter more at the end: the rows before the first changed token are found, and the
    // numbers are those of a model that never read a row before.
    let longer = model.trace("a lens on its").unwrap();
    let changed_from = (0..longer.len())
        .find(|&i| first.tokens.get(i).map(|t| t.id) != Some(longer.tokens[i].id))
        .unwrap();
    assert!(changed_from > 1, "the texts share their first tokens");
    let positions = last_positions(longer.len(), MAX_POSITIONS);
    let found = model.readout_memo.found();
    let with_memo = logit_lens(&model, &longer, &positions).unwrap();
    let unchanged = positions.iter().filter(|&&p| p < changed_from).count();
    assert!(
        model.readout_memo.found() - found >= depths * unchanged,
        "found {} of {} rows before position {changed_from}",
        model.readout_memo.found() - found,
        depths * unchanged
    );
    let afresh = fixture(decoder_config(), 21).unwrap();
    let without = logit_lens(&afresh, &afresh.trace("a lens on its").unwrap(), &positions).unwrap();
    assert_eq!(afresh.readout_memo.found(), 0, "read afresh: no row found");
    assert_eq!(lens_numbers(&with_memo), lens_numbers(&without));
    assert_eq!(with_memo.final_token.id, without.final_token.id);
}

#[test]
fn smollm2_lens_finds_paris_in_the_last_layers() {
    let Some(model) = common::smollm2() else {
        return;
    };
    let trace = model.trace("The capital of France is").unwrap();
    let t = trace.len();
    let lens = logit_lens(model, &trace, &[t - 1]).unwrap();
    assert_eq!(lens.final_token.text, " Paris");
    let by_depth = &lens.final_prob_by_depth;
    eprintln!(
        "p(Paris) by depth: {:?}",
        by_depth
            .iter()
            .map(|p| format!("{p:.3}"))
            .collect::<Vec<_>>()
    );
    assert!(by_depth[..10].iter().all(|&p| p < 0.05), "not known early");
    assert!(*by_depth.last().unwrap() > 0.7);
}

#[test]
fn induction_targets_and_score_are_exact() {
    // a b c a b: query 3 (a) -> key 1 (b, after the earlier a); query 4 (b) -> key 2.
    assert_eq!(induction_targets(&[1, 2, 3, 1, 2]), vec![(3, 1), (4, 2)]);
    // Immediate repeats point at the query itself: left out.
    assert_eq!(induction_targets(&[5, 5, 5]), vec![]);
    let mut a = ndarray::Array2::<f32>::zeros((5, 5));
    a[[3, 1]] = 0.8;
    a[[4, 2]] = 0.4;
    assert!(
        (induction_score(a.view(), &induction_targets(&[1, 2, 3, 1, 2])).unwrap() - 0.6).abs()
            < 1e-6
    );
    assert_eq!(induction_score(arr2(&[[1.0f32]]).view(), &[]), None);
}

#[test]
fn duplicate_targets_point_at_the_earlier_copy() {
    // a b c a b: query 3 (a) -> key 0 (the earlier a); query 4 (b) -> key 1.
    assert_eq!(duplicate_targets(&[1, 2, 3, 1, 2]), vec![(3, 0), (4, 1)]);
    // The most recent earlier copy; an immediate repeat is left out.
    assert_eq!(duplicate_targets(&[7, 8, 7, 9, 7, 7]), vec![(2, 0), (4, 2)]);
    let model = fixture(decoder_config(), 5).unwrap();
    let trace = model.trace("abcabc").unwrap();
    let grid = score_grid(&trace, HeadPattern::Duplicate).unwrap().unwrap();
    let a = trace.attention(1, 2).unwrap();
    let ids: Vec<u32> = trace.tokens.iter().map(|t| t.id).collect();
    let expected = induction_score(a, &duplicate_targets(&ids)).unwrap();
    assert!((grid[[1, 2]] - expected).abs() < 1e-6);
    // Nothing repeats: no head can show it.
    let once = model.trace("abc").unwrap();
    assert!(score_grid(&once, HeadPattern::Duplicate).unwrap().is_none());
}

#[test]
fn head_grid_holds_every_heads_scores() {
    let model = fixture(decoder_config(), 5).unwrap();
    let trace = model.trace("abcabc").unwrap();
    let grid = score_grid(&trace, HeadPattern::Previous).unwrap().unwrap();
    assert_eq!(grid.dim(), (model.config.n_layers, model.config.n_heads));
    let a = trace.attention(1, 2).unwrap();
    let previous = (1..trace.len()).map(|i| a[[i, i - 1]]).sum::<f32>() / (trace.len() - 1) as f32;
    assert!((grid[[1, 2]] - previous).abs() < 1e-6);
    assert!(score_grid(&trace, HeadPattern::Induction)
        .unwrap()
        .is_some());
    let no_repeat = model.trace("abc").unwrap();
    assert!(
        score_grid(&no_repeat, HeadPattern::Induction)
            .unwrap()
            .is_none(),
        "nothing repeats: no scores"
    );
    transformer_viz::draw::files::register_fonts();
    let svg = view_svg(
        &model,
        &no_repeat,
        &View::HeadGrid {
            pattern: HeadPattern::Induction,
        },
        (600, 500),
    )
    .unwrap();
    assert!(
        svg.contains("No token repeats"),
        "the chart says why it is empty"
    );
}
