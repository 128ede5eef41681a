//! Decoding: temperature, top-k and top-p exactly as defined, renormalisation, seeded draws that
//! repeat, greedy = temperature 0, and draws whose frequencies follow the renormalised
//! probabilities; generation through the cache equals the argmax of whole passes.

use crate::common;
use ndarray::{arr1, Array1};
use proptest::prelude::*;
use transformer_viz::analysis::generation::{generate, Generator};
use transformer_viz::analysis::sampling::{Cut, Sampler, SamplingSettings, SamplingStages};
use transformer_viz::VizError;

fn settings(temperature: f32, top_k: usize, top_p: f32) -> SamplingSettings {
    SamplingSettings {
        temperature,
        top_k,
        top_p,
        seed: 1,
    }
}

fn stage_of(stages: &SamplingStages, id: u32) -> transformer_viz::analysis::sampling::TokenStage {
    *stages.tokens.iter().find(|t| t.id == id).unwrap()
}

#[test]
fn temperature_is_softmax_of_logits_over_t() {
    let p = arr1(&[0.5f32, 0.3, 0.2]);
    for t in [0.5f32, 2.0] {
        let stages = SamplingStages::new(p.view(), &settings(t, 0, 1.0)).unwrap();
        // softmax(log p / T) = p^(1/T) / sum p^(1/T)
        let w: Vec<f64> = p
            .iter()
            .map(|&x| f64::from(x).powf(1.0 / f64::from(t)))
            .collect();
        let sum: f64 = w.iter().sum();
        for (id, wi) in w.iter().enumerate() {
            let got = stage_of(&stages, id as u32).tempered as f64;
            assert!(
                (got - wi / sum).abs() < 1e-6,
                "T={t}, token {id}: {got} vs {}",
                wi / sum
            );
        }
    }
    // T = 0.5 sharpens: the top token gains; T = 2 flattens: it loses.
    let sharp = SamplingStages::new(p.view(), &settings(0.5, 0, 1.0)).unwrap();
    let flat = SamplingStages::new(p.view(), &settings(2.0, 0, 1.0)).unwrap();
    assert!(stage_of(&sharp, 0).tempered > 0.5 && stage_of(&flat, 0).tempered < 0.5);
}

#[test]
fn top_k_and_top_p_remove_the_tail_and_renormalise() {
    let p = arr1(&[0.1f32, 0.4, 0.05, 0.25, 0.2]); // ranking: 1, 3, 4, 0, 2
    let k2 = SamplingStages::new(p.view(), &settings(1.0, 2, 1.0)).unwrap();
    assert_eq!(k2.kept, 2);
    assert!((stage_of(&k2, 1).renormalised - 0.4 / 0.65).abs() < 1e-6);
    assert!((stage_of(&k2, 3).renormalised - 0.25 / 0.65).abs() < 1e-6);
    assert!(stage_of(&k2, 4).removed_by == Some(Cut::TopK) && stage_of(&k2, 4).renormalised == 0.0);
    // top-p 0.7: 0.4 + 0.25 = 0.65 < 0.7, so the third token (0.2) is kept too (it crosses p).
    let p7 = SamplingStages::new(p.view(), &settings(1.0, 0, 0.7)).unwrap();
    assert_eq!(p7.kept, 3);
    assert_eq!(stage_of(&p7, 0).removed_by, Some(Cut::TopP));
    assert!((p7.kept_mass - 0.85).abs() < 1e-6);
    // Exactly reaching p keeps no more: 0.4 + 0.25 + 0.2 = 0.85.
    assert_eq!(
        SamplingStages::new(p.view(), &settings(1.0, 0, 0.85))
            .unwrap()
            .kept,
        3
    );
    // Both: top-k 4 then top-p 0.5 of what is left (0.4 / 0.95 < 0.5 <= 0.65 / 0.95).
    let both = SamplingStages::new(p.view(), &settings(1.0, 4, 0.5)).unwrap();
    assert_eq!(both.kept, 2);
    assert_eq!(stage_of(&both, 2).removed_by, Some(Cut::TopK));
    assert_eq!(stage_of(&both, 0).removed_by, Some(Cut::TopP));
    let sum: f32 = both.tokens.iter().map(|t| t.renormalised).sum();
    assert!((sum - 1.0).abs() < 1e-6);
}

#[test]
fn greedy_is_temperature_zero_and_draws_the_argmax() {
    let p = arr1(&[0.2f32, 0.35, 0.35, 0.1]);
    let stages = SamplingStages::new(p.view(), &SamplingSettings::greedy()).unwrap();
    assert_eq!(stages.kept, 1);
    let mut rng = Sampler::new(9);
    assert_eq!(stages.sample(&mut rng), 1, "ties go to the lower id");
    // Every other token is left out by greedy decoding, not by top-k or top-p (both off).
    assert_eq!(stage_of(&stages, 1).removed_by, None);
    for id in [0, 2, 3] {
        assert_eq!(
            stage_of(&stages, id).removed_by,
            Some(Cut::Greedy),
            "token {id}"
        );
    }
    // With top-k and top-p on as well, greedy is still the rule that decides.
    let filtered = SamplingSettings {
        top_k: 2,
        top_p: 0.5,
        ..SamplingSettings::greedy()
    };
    let stages = SamplingStages::new(p.view(), &filtered).unwrap();
    assert_eq!(stage_of(&stages, 3).removed_by, Some(Cut::Greedy));
}

#[test]
fn bad_settings_are_typed_errors() {
    let p = arr1(&[1.0f32]);
    for s in [
        settings(-1.0, 0, 1.0),
        settings(f32::NAN, 0, 1.0),
        settings(1e9, 0, 1.0),
        settings(1.0, 0, 0.0),
        settings(1.0, 0, 1.5),
        settings(1.0, 0, f32::NAN),
    ] {
        assert!(
            matches!(
                SamplingStages::new(p.view(), &s),
                Err(VizError::BadSampling { .. })
            ),
            "{s:?}"
        );
    }
}

#[test]
fn draws_repeat_with_a_seed_and_follow_the_probabilities() {
    let p = arr1(&[0.5f32, 0.3, 0.15, 0.05]);
    let stages = SamplingStages::new(p.view(), &settings(1.0, 3, 1.0)).unwrap();
    let draws = |seed| {
        let mut rng = Sampler::new(seed);
        (0..20_000)
            .map(|_| stages.sample(&mut rng))
            .collect::<Vec<u32>>()
    };
    let (a, b, c) = (draws(42), draws(42), draws(43));
    assert_eq!(a, b, "the same seed gives the same draws");
    assert_ne!(a, c, "another seed gives others");
    assert!(!a.contains(&3), "a token top-k removed is never drawn");
    for id in 0..3u32 {
        let want = f64::from(stage_of(&stages, id).renormalised);
        let got = a.iter().filter(|&&x| x == id).count() as f64 / a.len() as f64;
        let sd = (want * (1.0 - want) / a.len() as f64).sqrt();
        assert!(
            (got - want).abs() < 5.0 * sd,
            "token {id}: drawn {got}, probability {want}"
        );
    }
}

proptest! {
    #[test]
    fn stages_are_consistent(raw in proptest::collection::vec(0.0f32..1.0, 1..40), t in 0.0f32..5.0, k in 0usize..50, p in 0.01f32..=1.0, seed in any::<u64>()) {
        let sum: f32 = raw.iter().sum();
        prop_assume!(sum > 1e-3);
        let probs = Array1::from_iter(raw.iter().map(|x| x / sum));
        let s = SamplingSettings { temperature: t, top_k: k, top_p: p, seed };
        let stages = SamplingStages::new(probs.view(), &s).unwrap();
        prop_assert!(stages.kept >= 1);
        prop_assert!(k == 0 || stages.kept <= k);
        let total: f32 = stages.tokens.iter().map(|x| x.renormalised).sum();
        prop_assert!((total - 1.0).abs() < 1e-4);
        // The kept tokens are a prefix of the ranking, and the ranking is by probability.
        for (r, tok) in stages.tokens.iter().enumerate() {
            if r < stages.kept {
                prop_assert!(tok.renormalised > 0.0 || tok.tempered == 0.0);
            } else {
                prop_assert_eq!(tok.renormalised, 0.0);
            }
        }
        prop_assert!(stages.tokens.windows(2).all(|w| w[0].before >= w[1].before));
        let id = stages.sample(&mut Sampler::new(seed));
        prop_assert!(stages.tokens[..stages.kept].iter().any(|x| x.id == id));
    }
}

#[test]
fn greedy_generation_through_the_cache_is_the_argmax_of_whole_passes() {
    let model = transformer_viz::checkpoints::fixture::fixture(
        transformer_viz::checkpoints::fixture::decoder_config(),
        3,
    )
    .unwrap();
    let out = generate(&model, "abc", 6, &SamplingSettings::greedy()).unwrap();
    let mut ids = model.encode("abc").unwrap().ids();
    for g in &out.generated {
        let logits = model.run_ids(&ids).unwrap().logits.unwrap(); // (T, vocab)
        let last = logits.row(ids.len() - 1);
        let argmax = (0..last.len())
            .max_by(|&a, &b| last[a].total_cmp(&last[b]).then(b.cmp(&a)))
            .unwrap() as u32;
        assert_eq!(g.id, argmax);
        ids.push(g.id);
    }
    // Sampling with a seed repeats; another seed may differ, never errs.
    let s = SamplingSettings {
        temperature: 1.5,
        top_k: 0,
        top_p: 1.0,
        seed: 7,
    };
    let a: Vec<u32> = generate(&model, "abc", 8, &s)
        .unwrap()
        .generated
        .iter()
        .map(|g| g.id)
        .collect();
    let b: Vec<u32> = generate(&model, "abc", 8, &s)
        .unwrap()
        .generated
        .iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(a, b);
    // An encoder cannot continue a text.
    let encoder = transformer_viz::checkpoints::fixture::fixture(
        transformer_viz::checkpoints::fixture::encoder_config(),
        3,
    )
    .unwrap();
    assert!(Generator::new(&encoder, &[1, 2]).is_err());
}

#[test]
fn smollm2_greedy_continues_and_temperature_zero_equals_greedy() {
    let Some(model) = common::smollm2() else {
        return;
    };
    let greedy = generate(
        model,
        "The capital of France is",
        3,
        &SamplingSettings::greedy(),
    )
    .unwrap();
    assert_eq!(greedy.generated[0].token, " Paris");
    let zero = generate(
        model,
        "The capital of France is",
        3,
        &SamplingSettings {
            temperature: 0.0,
            top_k: 5,
            top_p: 0.5,
            seed: 99,
        },
    )
    .unwrap();
    assert_eq!(greedy.text, zero.text);
    let s = SamplingSettings {
        temperature: 0.9,
        top_k: 40,
        top_p: 0.95,
        seed: 2024,
    };
    assert_eq!(
        generate(model, "Once upon a", 8, &s).unwrap().text,
        generate(model, "Once upon a", 8, &s).unwrap().text
    );
}
