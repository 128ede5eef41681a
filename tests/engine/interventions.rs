//! Switching parts off and patching one run into another (`analysis::ablation`,
//! `analysis::patching`, `model::edits`), checked against the numpy reference's own pass with
//! the same changes (tests/reference/reference.py, `generic` mode with edits) on the
//! committed lecture decoders and on a grouped-query, rotary fixture; and on the GPU against
//! the CPU.

use crate::common;
use common::*;
use serde_json::json;
use transformer_viz::analysis::ablation::{ablate, edits_for, Fill, Part, Switch};
use transformer_viz::analysis::patching::{patch, patched_from};
use transformer_viz::analysis::prediction::single_token;
use transformer_viz::checkpoints::lecture;
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::edits::{Edits, Replacement, Site, With};
use transformer_viz::model::forward::Logits;
use transformer_viz::train::behaviour::HELD_OUT_SEED;
use transformer_viz::train::head_probe::HeadProbe;
use transformer_viz::train::stories::{ioi_prompts, Split};
use transformer_viz::transformer::{Keep, PassRequest};
use transformer_viz::{Transformer, VizError};

const TEXT: &str = "When Mary and John went to the store, John gave a drink to";

/// Every position's logits (T, vocab) of `text` with `edits`, on the CPU.
fn logits(model: &Transformer, text: &str, edits: &Edits) -> ndarray::Array2<f32> {
    let request = PassRequest::text(text)
        .keeping(Keep::Output(Logits::All))
        .editing(edits);
    on_cpu(model.pass(&Cpu, request))
        .unwrap()
        .into_logits()
        .unwrap()
}

fn flat(a: &ndarray::Array2<f32>) -> Vec<f32> {
    a.iter().copied().collect()
}

fn largest(a: &ndarray::Array2<f32>) -> f64 {
    a.iter().fold(0f64, |m, v| m.max(v.abs() as f64))
}

/// The reference's edits for `switches` (its means are its own intact pass's).
fn reference_edits(switches: &[Switch]) -> serde_json::Value {
    let mut e = serde_json::Map::new();
    let mut push = |key: &str, v: serde_json::Value| {
        e.entry(key)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .unwrap()
            .push(v)
    };
    let mut flags = vec![];
    for s in switches {
        match (s.part, s.fill) {
            (Part::Head { layer, head }, Fill::Zero) => push("zero_heads", json!([layer, head])),
            (Part::Head { layer, head }, Fill::Mean) => push("mean_heads", json!([layer, head])),
            (Part::Ffn { layer }, Fill::Zero) => push("zero_ffn", json!(layer)),
            (Part::Ffn { layer }, Fill::Mean) => push("mean_ffn", json!(layer)),
            (Part::Position, _) => flags.push("no_position"),
            (Part::Mask, _) => flags.push("no_mask"),
            (Part::CrossHead { .. }, _) => unreachable!("decoders only"),
        }
    }
    for f in flags {
        e.insert(f.into(), json!(true));
    }
    serde_json::Value::Object(e)
}

fn head(layer: usize, head: usize, fill: Fill) -> Switch {
    Switch {
        part: Part::Head { layer, head },
        fill,
    }
}

fn ffn(layer: usize, fill: Fill) -> Switch {
    Switch {
        part: Part::Ffn { layer },
        fill,
    }
}

/// The sets of switches the reference checks, on a model of `layers` and `heads`.
fn cases(layers: usize, heads: usize) -> Vec<Vec<Switch>> {
    let (last, h) = (layers - 1, heads - 1);
    vec![
        vec![head(last.min(1), h.min(2), Fill::Zero)],
        vec![head(0, h.min(1), Fill::Mean), ffn(last, Fill::Zero)],
        vec![
            ffn(0, Fill::Mean),
            head(last, h, Fill::Zero),
            head(last, 0, Fill::Mean),
        ],
        vec![Switch::zero(Part::Position)],
        vec![Switch::zero(Part::Mask)],
    ]
}

/// Ablations and patches of `model` (saved in `dir` in this project's format) against the
/// reference, within `tolerance` of the largest logit.
fn check_against_reference(model: &Transformer, dir: &std::path::Path, tolerance: f64) {
    let c = &model.config;
    let (text, other_text) = one_token_apart(model);
    let ids = model.encode(&text).unwrap().ids();
    let other = model.encode(&other_text).unwrap().ids();
    let intact = model.trace(&text).unwrap();
    let all = cases(c.n_layers, c.n_heads);
    // Patches: a head, and the stream into the last layer at the token that differs.
    let differs = ids.iter().zip(&other).position(|(a, b)| a != b).unwrap();
    let mut inputs: Vec<serde_json::Value> = all
        .iter()
        .map(|s| json!({"ids": ids, "edits": reference_edits(s)}))
        .collect();
    let patched_head = (c.n_layers - 1, 1.min(c.n_heads - 1));
    inputs.push(json!({"ids": other, "patch_from": ids,
        "edits": {"patch_heads": [[patched_head.0, patched_head.1]]}}));
    inputs.push(json!({"ids": other, "patch_from": ids,
        "edits": {"patch_stream": [[c.n_layers - 1, differs]]}}));
    let want = reference("generic", dir, &json!(inputs));
    let want = want.as_array().unwrap();

    let unchanged = logits(model, &text, Edits::NONE);
    for (i, switches) in all.iter().enumerate() {
        let edits = edits_for(&intact, switches).unwrap();
        let got = logits(model, &text, &edits);
        let moved = unchanged
            .iter()
            .zip(got.iter())
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(moved > 1e-3, "{}: {switches:?} changes the logits", c.name);
        let d = max_abs_diff(&want[i]["logits"], &flat(&got));
        assert!(
            d <= tolerance * largest(&got).max(1.0),
            "{}: {switches:?}: logits differ from the reference by {d}",
            c.name
        );
        // The trace of the changed pass (what the page draws) holds the same numbers.
        let changed = ablate(model, &text, switches).unwrap().changed;
        let hidden = changed.final_hidden().unwrap();
        let d = max_abs_diff(
            &want[i]["hidden"],
            hidden.as_standard_layout().as_slice().unwrap(),
        );
        assert!(
            d <= tolerance * 10.0,
            "{}: {switches:?}: hidden differs by {d}",
            c.name
        );
    }
    // A head of the clean run patched into the other run.
    let edits = transformer_viz::analysis::patching::patched_from(
        &intact,
        Site::Head {
            layer: patched_head.0,
            head: patched_head.1,
        },
    )
    .unwrap();
    let got = logits(model, &other_text, &edits);
    let d = max_abs_diff(&want[all.len()]["logits"], &flat(&got));
    assert!(
        d <= tolerance * largest(&got).max(1.0),
        "{}: a patched head's logits differ by {d}",
        c.name
    );
    let edits = transformer_viz::analysis::patching::patched_from(
        &intact,
        Site::Stream {
            layer: c.n_layers - 1,
            position: differs,
        },
    )
    .unwrap();
    let got = logits(model, &other_text, &edits);
    let d = max_abs_diff(&want[all.len() + 1]["logits"], &flat(&got));
    assert!(
        d <= tolerance * largest(&got).max(1.0),
        "{}: a patched stream's logits differ by {d}",
        c.name
    );
}

#[test]
fn ablation_and_patching_match_the_numpy_reference_on_the_lecture_decoders() {
    for name in lecture::DECODERS {
        let model = load_named(&common::models_dir(), name, WeightPrecision::F32).unwrap();
        let dir = std::path::Path::new(lecture::TRAINED_DIR).join(name);
        check_against_reference(&model, &dir, 1e-4);
    }
}

#[test]
fn ablation_and_patching_match_the_numpy_reference_with_shared_key_heads_and_rotary_positions() {
    use transformer_viz::checkpoints::fixture::{decoder_config, random_weights};
    use transformer_viz::checkpoints::generic;
    use transformer_viz::tokenize::bytes::ByteTokenizer;
    let mut config = decoder_config(); // RMSNorm, SwiGLU, rotary, grouped-query heads
    config.name = "fixture-edits".into();
    config.context = 128;
    assert!(
        config.n_kv_heads < config.n_heads,
        "query heads share key heads"
    );
    let dir = std::env::temp_dir().join(format!("tviz-edits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let weights = random_weights(&config, 21);
    let bytes = generic::to_safetensors(&weights).unwrap();
    std::fs::write(dir.join("model.safetensors"), &bytes).unwrap();
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string(&config).unwrap(),
    )
    .unwrap();
    let loaded = generic::from_safetensors(&bytes, &config).unwrap();
    let model = Transformer::new(config, loaded, Box::new(ByteTokenizer::default())).unwrap();
    check_against_reference(&model, &dir, 1e-4);
    std::fs::remove_dir_all(&dir).ok();
}

/// Two texts that differ in one token, for `model`'s vocabulary: a digit of a code.
fn one_token_apart(model: &Transformer) -> (String, String) {
    let text = |d: char| format!("The code on the door was 4 9 {d} 2. He said it again: 4 9");
    for (a, b) in [('1', '7'), ('3', '5'), ('2', '8'), ('6', '0')] {
        let (x, y) = (text(a), text(b));
        let (i, j) = (
            model.encode(&x).unwrap().ids(),
            model.encode(&y).unwrap().ids(),
        );
        if i.len() == j.len() && i.iter().zip(&j).filter(|(p, q)| p != q).count() == 1 {
            return (x, y);
        }
    }
    panic!("no pair of digits one token apart");
}

#[test]
fn patching_restores_the_whole_difference_through_the_stream_at_the_changed_token() {
    let model = load_named(&common::models_dir(), lecture::PRE_LN, WeightPrecision::F32).unwrap();
    let (clean, corrupt) = one_token_apart(&model);
    // The clean run's two most likely next tokens.
    let top =
        transformer_viz::analysis::prediction::prediction(&model, &model.trace(&clean).unwrap(), 2)
            .unwrap()
            .next;
    let grid = patch(
        &model,
        &clean,
        &corrupt,
        Some(&top[0].token),
        Some(&top[1].token),
    )
    .unwrap();
    let t = grid.tokens.len();
    assert_eq!(grid.heads.len(), model.config.n_layers);
    assert!(grid.heads.iter().all(|r| r.len() == model.config.n_heads));
    assert!(grid.stream.iter().all(|r| r.len() == t));
    let differs = grid
        .tokens
        .iter()
        .zip(&grid.corrupt_tokens)
        .position(|(a, b)| a != b)
        .unwrap();
    for (layer, row) in grid.stream.iter().enumerate() {
        // Into the first layer, the token that differs is all the clean run has to give.
        if layer == 0 {
            assert!(
                (row[differs] - 1.0).abs() < 1e-3,
                "the clean token patched in before every layer restores the clean run: {}",
                row[differs]
            );
        }
        // Tokens before the first difference are the same in both runs: nothing moves.
        for (p, &share) in row.iter().enumerate().take(differs) {
            assert!(share.abs() < 1e-3, "layer {layer}, token {p}: {share}");
        }
        // The last token's stream into the last layer... carries what the last layer reads.
        assert!(row.iter().all(|s| s.is_finite()));
    }
}

#[test]
fn bad_changes_are_refused_with_a_typed_error() {
    let model = load_named(&common::models_dir(), lecture::PRE_LN, WeightPrecision::F32).unwrap();
    let off = |part| ablate(&model, TEXT, &[Switch::zero(part)]).map(|_| ());
    for part in [
        Part::Head { layer: 9, head: 0 },
        Part::Head { layer: 0, head: 99 },
        Part::Ffn { layer: 3 },
        Part::CrossHead { layer: 0, head: 0 },
    ] {
        assert!(
            matches!(off(part), Err(VizError::BadEdit(_))),
            "{part:?} is refused"
        );
    }
    let edits = Edits {
        replacements: vec![Replacement {
            site: Site::Head { layer: 0, head: 0 },
            with: With::Values(vec![1.0; 3]),
        }],
        ..Edits::default()
    };
    let request = PassRequest::text(TEXT).editing(&edits);
    assert!(matches!(
        on_cpu(model.pass(&Cpu, request)),
        Err(VizError::BadEdit(_))
    ));
    assert!(matches!(
        patch(&model, TEXT, "When Mary went", None, None),
        Err(VizError::BadEdit(_))
    ));
    let (clean, corrupt) = one_token_apart(&model);
    assert!(matches!(
        patch(&model, &clean, &corrupt, Some(" Mary Ann"), None),
        Err(VizError::NotOneToken { .. })
    ));
}

#[test]
fn a_changed_pass_gives_the_same_numbers_on_the_gpu_as_on_the_cpu() {
    use transformer_viz::gpu::GpuBackend;
    use transformer_viz::trace::Readback;
    let model = load_named(&common::models_dir(), lecture::PRE_LN, WeightPrecision::F32).unwrap();
    let (text, other) = one_token_apart(&model);
    let intact = model.trace(&text).unwrap();
    let mut edits = edits_for(
        &intact,
        &[
            head(1, 2, Fill::Zero),
            ffn(0, Fill::Mean),
            Switch::zero(Part::Mask),
        ],
    )
    .unwrap();
    let position = model.encode(&other).unwrap().ids().len() - 2;
    edits.replacements.push(Replacement {
        site: Site::Stream { layer: 2, position },
        with: With::Values(
            model
                .trace(&other)
                .unwrap()
                .stream_into(2)
                .unwrap()
                .row(position)
                .to_vec(),
        ),
    });
    let request = PassRequest::text(&text)
        .keeping(Keep::Steps(Readback::Everything))
        .editing(&edits);
    let cpu = pollster::block_on(model.pass(&Cpu, request))
        .unwrap()
        .into_trace();
    let gpu_backend = GpuBackend::new(common::gpu_context(), &model.weights);
    let request = PassRequest::text(&text)
        .keeping(Keep::Steps(Readback::Everything))
        .editing(&edits);
    let gpu = pollster::block_on(model.pass(&gpu_backend, request))
        .unwrap()
        .into_trace();
    assert_eq!(
        gpu_backend.failure(),
        None,
        "every operation ran on the GPU"
    );
    let gap = cpu.largest_difference(&gpu).unwrap();
    assert!(
        gap.attention < 1e-4,
        "attention differs by {}",
        gap.attention
    );
    assert!(gap.other < 1e-3, "a step differs by {} relative", gap.other);
    // The change is in both: the zeroed head's output is zeros on the GPU too.
    let zeroed = gpu
        .find(transformer_viz::Op::WeightedSum, Some(1))
        .unwrap()
        .tensor
        .view3()
        .unwrap()
        .index_axis(ndarray::Axis(0), 2)
        .iter()
        .fold(0f32, |m, v| m.max(v.abs()));
    assert_eq!(zeroed, 0.0);
}

/// The votes of a pre-LN model add up to the logit less the final norm's bias term, and the
/// writes they come from add up to the stream the final norm reads.
fn check_votes_add_up(model: &Transformer, text: &str) {
    use transformer_viz::analysis::attribution::attribution;
    let trace = model.trace(text).unwrap();
    let a = attribution(model, &trace, None, &[]).unwrap();
    assert!(
        a.exact,
        "{}: a pre-LN model's votes are exact",
        model.config.name
    );
    let sum: f32 = a.votes.iter().map(|v| v.logit).sum();
    let gap = (sum + a.bias_term - a.logit).abs();
    assert!(
        gap <= 1e-4 * a.logit.abs().max(1.0),
        "{}: the votes add up to {sum} + {} against the logit {}",
        model.config.name,
        a.bias_term,
        a.logit
    );
    let heads = a.votes.iter().filter(|v| v.head.is_some()).count();
    assert_eq!(heads, model.config.n_layers * model.config.n_heads);
    assert_eq!(a.votes[0].label, "token embedding");
    // The votes are not all alike: some part carries the answer more than another.
    let spread = a.votes.iter().map(|v| v.logit).fold(f32::MIN, f32::max)
        - a.votes.iter().map(|v| v.logit).fold(f32::MAX, f32::min);
    assert!(spread > 0.1, "{}: votes spread {spread}", model.config.name);
}

#[test]
fn a_pre_ln_models_votes_add_up_to_its_logit() {
    let model = load_named(&common::models_dir(), lecture::PRE_LN, WeightPrecision::F32).unwrap();
    check_votes_add_up(&model, TEXT);
    use transformer_viz::checkpoints::fixture::{decoder_config, random_weights};
    use transformer_viz::tokenize::bytes::ByteTokenizer;
    let config = decoder_config(); // RMSNorm, no biases
    let weights = random_weights(&config, 5);
    let fixture = Transformer::new(config, weights, Box::new(ByteTokenizer::default())).unwrap();
    check_votes_add_up(&fixture, "grouped query heads");
}

#[test]
fn a_post_ln_models_votes_are_the_logits_fall_without_each_part() {
    use transformer_viz::analysis::attribution::attribution;
    let model = load_named(
        &common::models_dir(),
        lecture::POST_LN,
        WeightPrecision::F32,
    )
    .unwrap();
    let trace = model.trace(TEXT).unwrap();
    let a = attribution(&model, &trace, None, &[]).unwrap();
    assert!(!a.exact);
    assert!(a.note.contains("switched off"));
    // Each vote is the fall of the logit when that one part is zeroed.
    let v = &a.votes[1];
    let (layer, head) = (v.layer.unwrap(), v.head.unwrap());
    let changed = ablate(&model, TEXT, &[Switch::zero(Part::Head { layer, head })])
        .unwrap()
        .changed;
    let logits = logits(
        &model,
        TEXT,
        &edits_for(&trace, &[Switch::zero(Part::Head { layer, head })]).unwrap(),
    );
    let without = logits[[logits.nrows() - 1, a.id as usize]];
    assert!(
        (a.logit - without - v.logit).abs() < 1e-4,
        "{} against {}",
        v.logit,
        a.logit - without
    );
    assert_eq!(changed.len(), trace.len());
}

/// The effect `part_tokens` gives `id`, asking for every token so none is left out.
fn effect_on(
    model: &Transformer,
    trace: &transformer_viz::Trace,
    part: Part,
    id: u32,
    off: &[Switch],
) -> f32 {
    use transformer_viz::analysis::attribution::part_tokens;
    let all = part_tokens(model, trace, part, model.config.vocab_size, off).unwrap();
    let token = model.tokenizer.token_text(id).unwrap();
    // Every token once, in order: promoted from the strongest, suppressed the reverse.
    assert_eq!(all.promoted.len(), model.config.vocab_size);
    assert!(all.promoted.windows(2).all(|w| w[0].logit >= w[1].logit));
    assert!(all.suppressed.windows(2).all(|w| w[0].logit <= w[1].logit));
    assert_eq!(all.promoted[0].token, all.suppressed.last().unwrap().token);
    // Token texts can repeat (byte tokens); the first entry with that text and that effect.
    let ids: Vec<usize> = (0..model.config.vocab_size)
        .filter(|&i| model.tokenizer.token_text(i as u32) == Some(token))
        .collect();
    assert_eq!(ids.len(), 1, "{token:?} is one token");
    all.promoted
        .iter()
        .find(|e| e.token == token)
        .unwrap()
        .logit
}

#[test]
fn the_tokens_a_part_promotes_carry_its_vote_on_each_token() {
    use transformer_viz::analysis::attribution::{attribution, part_tokens};
    for (name, exact) in [(lecture::PRE_LN, true), (lecture::POST_LN, false)] {
        let model = load_named(&common::models_dir(), name, WeightPrecision::F32).unwrap();
        let trace = model.trace(TEXT).unwrap();
        let votes = attribution(&model, &trace, None, &[]).unwrap();
        // A head and a feed-forward layer: the effect on the predicted token is its vote.
        for part in [Part::Head { layer: 1, head: 2 }, Part::Ffn { layer: 2 }] {
            let vote = votes.votes.iter().find(|v| v.part == Some(part)).unwrap();
            let effect = effect_on(&model, &trace, part, votes.id, &[]);
            assert!(
                (effect - vote.logit).abs() <= 1e-4 * vote.logit.abs().max(1.0),
                "{name} {part:?}: {effect} on {:?} against its vote {}",
                votes.token,
                vote.logit
            );
            let top = part_tokens(&model, &trace, part, 5, &[]).unwrap();
            assert_eq!(top.exact, exact);
            assert_eq!((top.promoted.len(), top.suppressed.len()), (5, 5));
            assert!(
                top.promoted[0].logit > top.suppressed[0].logit,
                "{name} {part:?}"
            );
        }
    }
}

#[test]
fn with_parts_switched_off_a_post_ln_models_votes_switch_each_other_part_off_on_top() {
    use transformer_viz::analysis::attribution::{attribution, part_tokens};
    let model = load_named(
        &common::models_dir(),
        lecture::POST_LN,
        WeightPrecision::F32,
    )
    .unwrap();
    let off = [Switch::zero(Part::Head { layer: 0, head: 3 })];
    let changed = ablate(&model, TEXT, &off).unwrap().changed;
    let a = attribution(&model, &changed, None, &off).unwrap();
    // The part already off has no vote; the others are the fall without both.
    assert!(a.votes.iter().all(|v| v.part != Some(off[0].part)));
    assert_eq!(
        a.votes.len(),
        model.config.n_layers * (model.config.n_heads + 1) - 1
    );
    let v = a
        .votes
        .iter()
        .find(|v| v.part == Some(Part::Ffn { layer: 1 }))
        .unwrap();
    let both = [off[0], Switch::zero(Part::Ffn { layer: 1 })];
    let intact = model.trace(TEXT).unwrap();
    let logits = logits(&model, TEXT, &edits_for(&intact, &both).unwrap());
    let without = logits[[logits.nrows() - 1, a.id as usize]];
    assert!(
        (a.logit - without - v.logit).abs() < 1e-4,
        "{} against {}",
        v.logit,
        a.logit - without
    );
    assert!(matches!(
        part_tokens(&model, &changed, off[0].part, 5, &off),
        Err(VizError::BadEdit(_))
    ));
}

#[test]
fn edits_for_a_pass_after_cached_tokens_keep_their_values_from_there_or_are_refused() {
    let c = transformer_viz::checkpoints::fixture::decoder_config();
    let (hd, d) = (c.head_dim, c.d_model);
    let head: Vec<f32> = (0..5 * hd).map(|v| v as f32).collect(); // 5 tokens
    let edits = Edits {
        replacements: vec![
            Replacement {
                site: Site::Head { layer: 0, head: 1 },
                with: With::Values(head.clone()),
            },
            Replacement {
                site: Site::Stream {
                    layer: 1,
                    position: 3,
                },
                with: With::Values(vec![1.0; d]),
            },
        ],
        ..Edits::default()
    };
    let after = edits.from_token(2, &c).unwrap();
    assert_eq!(
        after.replacements[0].with,
        With::Values(head[2 * hd..].to_vec())
    );
    assert_eq!(
        after.replacements[1].site,
        Site::Stream {
            layer: 1,
            position: 1
        }
    );
    assert_eq!(edits.from_token(0, &c).unwrap(), edits);
    // Each would change a cached token too.
    assert!(matches!(edits.from_token(4, &c), Err(VizError::BadEdit(_))));
    let zeros = Edits {
        replacements: vec![Replacement {
            site: Site::Ffn { layer: 0 },
            with: With::Zeros,
        }],
        ..Edits::default()
    };
    assert!(matches!(zeros.from_token(1, &c), Err(VizError::BadEdit(_))));
    let no_mask = Edits {
        without_mask: true,
        ..Edits::default()
    };
    assert!(matches!(
        no_mask.from_token(1, &c),
        Err(VizError::BadEdit(_))
    ));
}

/// The committed decoders copy through their induction heads, and attention alone does not
/// say how much each one does: on the head probe's random runs shown twice, several heads of
/// a layer can look from each token of the second copy at the token after its first
/// occurrence (induction score above 0.5). Switching off the one that matters most raises the
/// loss on the second copy by at least 1 nat a token; any other head of that layer whose
/// switch-off raises it by a quarter of that or more is an induction head too; and switching
/// off all of the layer's induction heads brings the second copy's loss at least halfway back
/// to the first's (which no earlier token can predict).
#[test]
fn committed_decoders_stop_copying_without_their_induction_heads() {
    for name in lecture::DECODERS {
        let model = load_named(&common::models_dir(), name, WeightPrecision::F32).unwrap();
        let heads = model.config.n_heads;
        let bos = model.tokenizer.encode("x", 4).unwrap().ids()[0];
        let probe = HeadProbe::new(&[], bos, None);
        let report = probe.measure(&model).unwrap();
        let is_induction = |i: usize| report.induction[i] > 0.5;
        let off = |i: usize| {
            Switch::zero(Part::Head {
                layer: i / heads,
                head: i % heads,
            })
        };
        // The rise of the second copy's loss (nats/token) with these heads switched off.
        let rise = |switches: &[Switch]| {
            probe.copy_loss(&model, switches).unwrap()[1] - report.copy_loss[1]
        };
        // Each head's rise alone (layer-major).
        let alone: Vec<f64> = (0..report.induction.len())
            .map(|i| rise(&[off(i)]))
            .collect();
        let copier = (0..alone.len())
            .filter(|&i| is_induction(i))
            .max_by(|&a, &b| alone[a].total_cmp(&alone[b]))
            .expect("an induction head");
        let most = alone[copier];
        let layer = copier / heads;
        let in_layer = layer * heads..(layer + 1) * heads;
        let each: Vec<(usize, f32, f64)> = in_layer
            .clone()
            .map(|i| (i % heads, report.induction[i], alone[i]))
            .collect();
        let all: Vec<Switch> = in_layer.filter(|&i| is_induction(i)).map(off).collect();
        let together = rise(&all);
        let halfway = (report.copy_loss[0] - report.copy_loss[1]) / 2.0;
        eprintln!(
            "{name}: copy loss {:.2} -> {:.2}; layer {layer}'s heads (induction score, rise \
             without it): {each:.2?}; without its {} induction heads +{together:.2}",
            report.copy_loss[0],
            report.copy_loss[1],
            all.len()
        );
        assert!(
            most >= 1.0,
            "{name}: +{most:.2} nats without L{layer} H{}",
            copier % heads
        );
        for (h, score, r) in each {
            assert!(
                r < most / 4.0 || score > 0.5,
                "{name}: head {h} of layer {layer} (induction score {score:.2}) raises it by {r:.2}"
            );
        }
        assert!(
            together >= halfway,
            "{name}: +{together:.2} nats, halfway is {halfway:.2}"
        );
    }
}

/// "… A and B …, B gave … to" (held-out prompts) and the same with A repeated instead of B:
/// the two runs' answers are A and B. `(clean, corrupt, answer, wrong)`, for the prompts
/// whose two names are one token each (so that the two runs are as long).
fn ioi_pairs(model: &Transformer, count: usize) -> Vec<(String, String, String, String)> {
    ioi_prompts(HELD_OUT_SEED, count, Split::HeldOut)
        .into_iter()
        .filter(|p| single_token(model, &p.answer).is_ok() && single_token(model, &p.other).is_ok())
        .map(|p| {
            let at = p.prompt.rfind(&p.other).expect("the repeated name");
            let corrupt = format!(
                "{}{}{}",
                &p.prompt[..at],
                p.answer,
                &p.prompt[at + p.other.len()..]
            );
            (p.prompt, corrupt, p.answer, p.other)
        })
        .collect()
}

/// The indirect object goes through a few heads. Each head of the clean run is patched into
/// the corrupt one (`analysis::patching`); the heads that alone restore at least a quarter of
/// the logit difference (answer minus the repeated name) over held-out prompts (at most three
/// of them), patched together, restore at least 70% of it, and docs/models.md names them.
/// Over the prompts is the difference restored, summed, over the difference between the clean
/// and the corrupt runs, summed: a mean of each prompt's share would let one prompt whose two
/// runs barely differ outweigh all the others.
#[test]
fn committed_decoders_indirect_object_goes_through_a_few_heads() {
    let docs = std::fs::read_to_string(common::root().join("docs/models.md")).unwrap();
    let mut unnamed = Vec::new();
    for name in lecture::DECODERS {
        let model = load_named(&common::models_dir(), name, WeightPrecision::F32).unwrap();
        let (layers, heads) = (model.config.n_layers, model.config.n_heads);
        let pairs = ioi_pairs(&model, 24);
        assert!(pairs.len() >= 20, "{name}: {} prompts", pairs.len());
        let grids: Vec<_> = pairs
            .iter()
            .map(|(clean, corrupt, answer, wrong)| {
                patch(&model, clean, corrupt, Some(answer), Some(wrong)).unwrap()
            })
            .collect();
        // The clean run's difference over the corrupt run's, summed over the prompts.
        let total: f32 = grids
            .iter()
            .map(|g| g.clean_difference - g.corrupt_difference)
            .sum();
        let mut restored = vec![0f32; layers * heads]; // each head's share of `total`
        for grid in &grids {
            let gap = grid.clean_difference - grid.corrupt_difference;
            for (i, share) in grid.heads.iter().flatten().enumerate() {
                restored[i] += share * gap / total;
            }
        }
        let mut order: Vec<usize> = (0..restored.len()).collect();
        order.sort_by(|a, b| restored[*b].total_cmp(&restored[*a]));
        // The heads that restore a quarter of the difference or more on their own, at most 3.
        let few: Vec<(usize, usize)> = order
            .iter()
            .take_while(|&&i| restored[i] >= 0.25)
            .take(3)
            .map(|i| (i / heads, i % heads))
            .collect();
        assert!(
            !few.is_empty(),
            "{name}: no head restores a quarter: {restored:.2?}"
        );
        let mut together = 0f32;
        for ((clean, corrupt, answer, wrong), grid) in pairs.iter().zip(&grids) {
            let (a, w) = (
                single_token(&model, answer).unwrap() as usize,
                single_token(&model, wrong).unwrap() as usize,
            );
            let from = model.trace(clean).unwrap();
            let mut edits = Edits::default();
            for &(layer, head) in &few {
                let one = patched_from(&from, Site::Head { layer, head }).unwrap();
                edits.replacements.extend(one.replacements);
            }
            let patched = logits(&model, corrupt, &edits); // (T, vocab)
            let row = patched.row(patched.nrows() - 1);
            let corrupt_d = grid.corrupt_difference;
            together += (row[a] - row[w] - corrupt_d) / total;
        }
        let shares: Vec<String> = order[..few.len()]
            .iter()
            .map(|&i| format!("L{} H{} {:.2}", i / heads, i % heads, restored[i]))
            .collect();
        eprintln!(
            "{name}: {} prompts; the heads that restore most: {shares:?}; together {together:.2}",
            pairs.len()
        );
        assert!(together >= 0.7, "{name}: together {together:.2}");
        unnamed.extend(
            few.iter()
                .map(|(layer, head)| format!("{name}: layer {layer} head {head}"))
                .filter(|named| !docs.contains(named)),
        );
    }
    assert!(
        unnamed.is_empty(),
        "docs/models.md does not name the indirect-object heads {unnamed:?}"
    );
}
