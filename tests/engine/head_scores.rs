//! Head scores (src/analysis/heads.rs): exact values on hand-built attention patterns, and the
//! heads the notes describe in the real MiniLM.

use crate::common;
use common::*;
use ndarray::Array2;
use transformer_viz::analysis::heads::{head_scores, heads_from, pattern_scores};
use transformer_viz::{Op, Trace, VizError};

const DEFAULT_SENTENCE: &str = "The animal didn't cross the street because it was too tired.";

/// Row i puts all its weight on column i + shift (clamped into the matrix).
fn shifted(t: usize, shift: isize) -> Array2<f32> {
    Array2::from_shape_fn((t, t), |(i, k)| {
        if k as isize == (i as isize + shift).clamp(0, t as isize - 1) {
            1.0
        } else {
            0.0
        }
    })
}

#[test]
fn shifted_identity_patterns_score_one_on_their_own_pattern() {
    let back = pattern_scores(shifted(6, -1).view(), true); // (6, 6): i -> i-1, row 0 -> 0
    assert_eq!(back.previous, 1.0);
    assert_eq!(back.next, 0.0);
    assert_eq!(
        back.first,
        2.0 / 6.0,
        "rows 0 and 1 both land on position 0"
    );
    assert_eq!(back.last, Some(0.0));

    let forward = pattern_scores(shifted(6, 1).view(), true); // i -> i+1, last row -> itself
    assert_eq!(forward.next, 1.0);
    assert_eq!(forward.previous, 0.0);
    assert_eq!(forward.first, 0.0);
    assert_eq!(forward.last, Some(2.0 / 6.0));

    let identity = pattern_scores(shifted(5, 0).view(), false);
    assert_eq!(
        (identity.previous, identity.next, identity.first),
        (0.0, 0.0, 0.2)
    );
    assert_eq!(
        identity.last, None,
        "no score for a final special token the sentence does not have"
    );
}

#[test]
fn uniform_and_boundary_patterns_give_their_means() {
    let t = 4;
    let uniform = Array2::from_elem((t, t), 0.25); // (4, 4)
    let s = pattern_scores(uniform.view(), true);
    assert_eq!(
        (s.previous, s.next, s.first, s.last),
        (0.25, 0.25, 0.25, Some(0.25))
    );
    // Every query splits its weight between [CLS] (0.7) and [SEP] (0.3).
    let parked = Array2::from_shape_fn((t, t), |(_, k)| match k {
        0 => 0.7,
        3 => 0.3,
        _ => 0.0,
    });
    let s = pattern_scores(parked.view(), true);
    assert!((s.first - 0.7).abs() < 1e-6 && (s.last.unwrap() - 0.3).abs() < 1e-6);
    // previous: rows 1..4 -> columns 0, 1, 2 = (0.7 + 0 + 0) / 3
    assert!((s.previous - 0.7 / 3.0).abs() < 1e-6, "{}", s.previous);
}

/// A real trace whose layer-0 weights are replaced by hand-built patterns: head h of layer 0
/// sends every query to key h (clamped), head 11 to the previous token.
fn trace_with_layer0(text: &str) -> Trace {
    let mut trace = minilm().trace(text).unwrap();
    let t = trace.len();
    let step = trace
        .steps
        .iter_mut()
        .find(|s| s.op == Op::Softmax && s.layer == Some(0))
        .unwrap();
    let mut data = Vec::with_capacity(12 * t * t);
    for head in 0..12 {
        let pattern = if head == 11 {
            shifted(t, -1)
        } else {
            Array2::from_shape_fn(
                (t, t),
                |(_, k)| if k == head.min(t - 1) { 1.0 } else { 0.0 },
            )
        };
        data.extend(pattern.iter());
    }
    step.tensor.data = data.into(); // (12, T, T)
    trace
}

#[test]
fn every_head_of_every_layer_is_scored_from_the_trace() {
    let trace = trace_with_layer0("one two three four five"); // [CLS] one two three four five [SEP]
    let t = trace.len();
    assert_eq!(t, 7);
    let scores = head_scores(&trace).unwrap();
    assert_eq!(scores.len(), 6 * 12);
    assert_eq!(
        (scores[13].layer, scores[13].head),
        (1, 1),
        "layer by layer, head by head"
    );
    assert_eq!(
        scores[11].scores.previous, 1.0,
        "layer 0 head 11 is the hand-built previous-token head"
    );
    assert_eq!(
        scores[0].scores.first, 1.0,
        "layer 0 head 0 sends everything to [CLS]"
    );
    assert_eq!(
        scores[6].scores.last,
        Some(1.0),
        "layer 0 head 6 sends everything to [SEP]"
    );
    assert_eq!(
        scores[3].scores.previous,
        1.0 / 6.0,
        "only query 4 has key 3 before it"
    );
}

#[test]
fn heads_from_a_token_skip_itself_and_special_tokens_and_rank_by_weight() {
    let trace = trace_with_layer0("one two three four five");
    let ranked = heads_from(&trace, 3, false).unwrap(); // from "three"
    assert_eq!(ranked.len(), 72);
    assert!(
        ranked.windows(2).all(|w| w[0].weight >= w[1].weight),
        "strongest first"
    );
    let of = |layer, head| {
        ranked
            .iter()
            .find(|r| r.layer == layer && r.head == head)
            .unwrap()
    };
    assert_eq!(
        (of(0, 11).key, of(0, 11).weight),
        (2, 1.0),
        "the previous-token head goes from three to two"
    );
    assert_eq!(
        (of(0, 5).key, of(0, 5).weight),
        (5, 1.0),
        "head 5 sends every query to key 5"
    );
    assert_eq!(
        of(0, 0).weight,
        0.0,
        "head 0 only attends to [CLS], which is not a candidate"
    );
    assert_ne!(of(0, 3).key, 3, "a token is never its own target");
    assert!(
        ranked.iter().all(|r| r.key != 0 && r.key != 6),
        "[CLS] and [SEP] are never targets"
    );
    assert_eq!(
        heads_from(&trace, 7, false).unwrap_err(),
        VizError::NoSuchToken {
            index: 7,
            tokens: 7
        }
    );
    // Beyond the neighbours: the previous-token head must now look elsewhere, with little weight.
    let distant = heads_from(&trace, 3, true).unwrap();
    let prev = distant
        .iter()
        .find(|r| r.layer == 0 && r.head == 11)
        .unwrap();
    assert_eq!(prev.weight, 0.0);
    assert!(
        distant.iter().all(|r| r.key.abs_diff(3) > 1),
        "neither two nor four is a target"
    );
}

#[test]
fn minilm_layer_zero_has_a_previous_token_head_and_layer_one_a_next_token_head() {
    let trace = minilm().trace(DEFAULT_SENTENCE).unwrap();
    let scores = head_scores(&trace).unwrap();
    let best = |layer: usize,
                score: fn(&transformer_viz::analysis::heads::PatternScores) -> f32| {
        scores
            .iter()
            .filter(|s| s.layer == layer)
            .map(|s| (s.head, score(&s.scores)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap()
    };
    let (prev_head, prev) = best(0, |s| s.previous);
    let (next_head, next) = best(1, |s| s.next);
    eprintln!("layer 0 head {prev_head}: previous-token {prev:.3}; layer 1 head {next_head}: next-token {next:.3}");
    assert!(prev > 0.5, "no previous-token head in layer 0 ({prev})");
    assert!(next > 0.5, "no next-token head in layer 1 ({next})");
    let cls = scores.iter().map(|s| s.scores.first).fold(0.0, f32::max);
    let sep = scores
        .iter()
        .filter_map(|s| s.scores.last)
        .fold(0.0, f32::max);
    eprintln!("strongest [CLS] score {cls:.3}, [SEP] score {sep:.3}");
    assert!(cls > 0.5, "no head parks its weight on [CLS] ({cls})");
    assert!(
        scores.iter().all(|s| s.scores.last.is_some()),
        "MiniLM's sentences end with [SEP]"
    );
}

#[test]
fn minilm_it_is_linked_to_animal_by_layer3_head1_or_layer5_head11() {
    let trace = minilm().trace(DEFAULT_SENTENCE).unwrap();
    let tokens = trace.token_texts();
    let it = tokens.iter().position(|t| t == "it").unwrap();
    // Over all other words the positional heads come first (it -> because, it -> was) ...
    let ranked = heads_from(&trace, it, false).unwrap();
    let top: Vec<(usize, usize)> = ranked[..2].iter().map(|r| (r.layer, r.head)).collect();
    assert_eq!(top, [(0, 2), (1, 8)], "the previous- and next-token heads");
    // ... beyond the neighbours, the heads that link the pronoun to its noun.
    let ranked = heads_from(&trace, it, true).unwrap();
    for r in &ranked[..5] {
        eprintln!(
            "layer {} head {} -> {:?} {:.3}",
            r.layer, r.head, tokens[r.key], r.weight
        );
    }
    let top3: Vec<(usize, usize, &str)> = ranked[..3]
        .iter()
        .map(|r| (r.layer, r.head, tokens[r.key].as_str()))
        .collect();
    assert!(
        top3.contains(&(3, 1, "animal")) || top3.contains(&(5, 11, "animal")),
        "top three heads from \"it\": {top3:?}"
    );
}

/// In a decoder a token sees only the tokens before it: the heads from it name only earlier
/// words (a later one always has weight 0).
#[test]
fn heads_from_a_decoder_token_name_only_earlier_words() {
    use transformer_viz::checkpoints::fixture::{decoder_config, fixture};
    let trace = fixture(decoder_config(), 9)
        .unwrap()
        .trace("abcdefg")
        .unwrap();
    for query in 1..trace.len() {
        for beyond in [false, true] {
            let ranked = heads_from(&trace, query, beyond).unwrap();
            assert!(
                ranked.iter().all(|r| r.key < query),
                "query {query}: a later key is named: {:?}",
                ranked.iter().map(|r| r.key).collect::<Vec<_>>()
            );
        }
    }
}

/// The antecedent rule on WordPiece (MiniLM) and byte-level BPE (SmolLM2) tokens: agreement
/// picks the nearest earlier name or noun; a pair of names is "they"; unknown words leave the
/// pronoun out; a name cut into pieces is found by its last piece, where the whole name has
/// been read.
#[test]
fn pronouns_find_the_nearest_earlier_word_that_agrees_with_them() {
    use transformer_viz::analysis::antecedents::references;
    // (text, [(pronoun, [its antecedent's words])])
    type Expected<'a> = &'a [(&'a str, &'a [&'a str])];
    let cases: [(&str, Expected); 4] = [
        (
            "Mary met John at the park. She was happy to see him.",
            &[("she", &["mary"]), ("him", &["john"])],
        ),
        (DEFAULT_SENTENCE, &[("it", &["animal"])]),
        (
            "Anna and Tom went home. They saw a fox, and it ran.",
            &[("they", &["anna", "tom"]), ("it", &["fox"])],
        ),
        ("The weather was bad, so it rained.", &[]),
    ];
    for model in [Some(minilm()), smollm2()].into_iter().flatten() {
        for (text, expected) in cases {
            let encoding = model.tokenizer.encode(text, 512).unwrap();
            let tokens = &encoding.tokens;
            let word = |i: usize| tokens[i].text.trim().trim_start_matches('Ġ').to_lowercase();
            let found: Vec<(String, Vec<String>)> = references(tokens)
                .iter()
                .map(|r| {
                    (
                        word(r.pronoun),
                        r.antecedent.iter().map(|&k| word(k)).collect(),
                    )
                })
                .collect();
            let expected: Vec<(String, Vec<String>)> = expected
                .iter()
                .map(|(p, a)| (p.to_string(), a.iter().map(|w| w.to_string()).collect()))
                .collect();
            assert_eq!(found, expected, "{text} ({})", model.config.name);
        }
    }
    // The lecture vocabulary cuts a name at the very start of a text (`M|ary`): its last piece.
    let lecture = transformer_viz::checkpoints::load_named(
        &common::models_dir(),
        "lecture-pre-ln",
        transformer_viz::checkpoints::WeightPrecision::F32,
    )
    .unwrap();
    let encoding = lecture
        .tokenizer
        .encode("Mary met John at the park. She smiled.", 64)
        .unwrap();
    let texts: Vec<&str> = encoding.tokens.iter().map(|t| t.text.as_str()).collect();
    let mary = texts
        .iter()
        .position(|t| *t == "ary")
        .expect("Mary in pieces");
    assert_eq!(texts[mary - 1], "M", "{texts:?}");
    assert_eq!(
        references(&encoding.tokens)[0].antecedent,
        vec![mary],
        "{texts:?}"
    );
    // The head scores carry the antecedent score only where a pronoun's word is known.
    let trace = minilm().trace(DEFAULT_SENTENCE).unwrap();
    let scores = head_scores(&trace).unwrap();
    assert!(scores.iter().all(|s| s.antecedent.is_some()));
    let it = trace.token_texts().iter().position(|t| t == "it").unwrap();
    let animal = trace
        .token_texts()
        .iter()
        .position(|t| t == "animal")
        .unwrap();
    let l3 = trace.attention_layer(3).unwrap(); // (heads, T, T)
    assert_eq!(scores[3 * 12 + 1].antecedent, Some(l3[[1, it, animal]]));
    let plain = minilm().trace("the quick brown fox jumps").unwrap();
    assert!(head_scores(&plain)
        .unwrap()
        .iter()
        .all(|s| s.antecedent.is_none()));
}
