//! The real model behaves like the trained sentence model it is, and its trace has the
//! structure the stepper and the views rely on.

use crate::common;
use common::*;
use transformer_viz::analysis::pooling::{cosine, mean_pool};
use transformer_viz::explain::step_text;
use transformer_viz::Op;

fn embedding(text: &str) -> ndarray::Array1<f32> {
    let m = minilm();
    mean_pool(
        m.run_ids(&m.encode(text).unwrap().ids())
            .unwrap()
            .hidden
            .view(),
    )
}

#[test]
fn related_sentences_score_higher_than_unrelated_ones() {
    let pairs = [
        (
            "A man is playing a guitar.",
            "Someone is playing an instrument.",
            "The stock market fell sharply today.",
        ),
        (
            "How do I bake bread at home?",
            "What is a simple recipe for homemade bread?",
            "The train to Berlin leaves at noon.",
        ),
        (
            "The weather is sunny and warm.",
            "It is a bright, hot day outside.",
            "She submitted her tax return late.",
        ),
        (
            "Cats are popular pets.",
            "Many people keep a cat at home.",
            "Quantum computers use qubits.",
        ),
    ];
    for (a, related, unrelated) in pairs {
        let (ea, er, eu) = (embedding(a), embedding(related), embedding(unrelated));
        let (near, far) = (cosine(&ea, &er), cosine(&ea, &eu));
        eprintln!("{near:.3} vs {far:.3}: {a}");
        assert!(near > 0.5, "related pair only {near}: {a} / {related}");
        assert!(
            near > far + 0.3,
            "related {near} not clearly above unrelated {far}: {a}"
        );
    }
}

#[test]
fn traced_and_untraced_passes_agree_exactly() {
    let m = minilm();
    let text = "Tracing must not change a single number.";
    let trace = m.trace(text).unwrap();
    let plain = m.run_ids(&m.encode(text).unwrap().ids()).unwrap();
    assert_eq!(trace.final_hidden().unwrap(), plain.hidden.view());
}

#[test]
fn trace_walks_the_bert_block_in_order() {
    let trace = minilm().trace("The cat sat.").unwrap();
    let t = trace.len();
    let names: Vec<&str> = trace.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        &names[..7],
        [
            "tokens",
            "embed.tokens",
            "embed.segment",
            "embed.position",
            "embed.sum",
            "embed.norm",
            "layer0.q"
        ]
    );
    let layer0: Vec<&str> = names
        .iter()
        .filter(|n| n.starts_with("layer0."))
        .copied()
        .collect();
    assert_eq!(
        layer0,
        [
            "layer0.q",
            "layer0.k",
            "layer0.v",
            "layer0.scores",
            "layer0.masked",
            "layer0.attention",
            "layer0.heads",
            "layer0.concat",
            "layer0.attn_out",
            "layer0.resid_attn",
            "layer0.attn_norm",
            "layer0.ffn_up",
            "layer0.ffn_act",
            "layer0.ffn_down",
            "layer0.resid_ffn",
            "layer0.ffn_norm"
        ]
    );
    assert_eq!(names.len(), 6 + 6 * 16);
    let shape = |name: &str| trace.step(name).unwrap().tensor.shape.clone();
    assert_eq!(shape("layer3.q"), vec![12, t, 32]);
    assert_eq!(shape("layer3.scores"), vec![12, t, t]);
    assert_eq!(shape("layer3.concat"), vec![t, 384]);
    assert_eq!(shape("layer3.ffn_act"), vec![t, 1536]);
    // Scores are exactly Q K^T / sqrt(32) for one entry.
    let q = trace.step("layer2.q").unwrap().tensor.view3().unwrap();
    let k = trace.step("layer2.k").unwrap().tensor.view3().unwrap();
    let s = trace.scores(2, 5).unwrap();
    let manual: f32 = (0..32).map(|j| q[[5, 1, j]] * k[[5, 3, j]]).sum::<f32>() / 32f32.sqrt();
    assert!((s[[1, 3]] - manual).abs() < 1e-4);
    // Every step says what it reads, and the steps it names exist before it.
    for (i, step) in trace.steps.iter().enumerate().skip(1) {
        for input in &step.inputs {
            assert!(
                trace.steps[..i].iter().any(|s| &s.name == input),
                "{} reads {input} before it exists",
                step.name
            );
        }
        let text = step_text(step, &trace.config);
        assert!(!text.equation.is_empty() && !text.explanation.is_empty());
    }
    // Norm statistics: 1 embedding norm + 2 per layer, each with per-token stats.
    assert_eq!(trace.norms.len(), 13);
    for n in &trace.norms {
        assert_eq!(n.stats.input_mean.len(), t);
        assert!(n.stats.beta.is_some());
    }
    // Residual stream: embedding + 2 points per layer; sublayer writes: 2 per layer.
    assert_eq!(trace.residual_stream().len(), 13);
    assert_eq!(trace.sublayer_writes().len(), 12);
    assert!(trace.find(Op::Unembed, None).is_none());
}

#[test]
fn layer_zero_has_a_previous_token_head() {
    // The notes on heads: MiniLM layer 0 has a head that looks at the token before.
    let m = minilm();
    let trace = m
        .trace("the quick brown fox jumps over the lazy dog near the quiet river bank")
        .unwrap();
    let t = trace.len();
    let best = (0..12)
        .map(|h| {
            let a = trace.attention(0, h).unwrap();
            (2..t - 1).map(|i| a[[i, i - 1]]).sum::<f32>() / (t - 3) as f32
        })
        .fold(0.0f32, f32::max);
    assert!(
        best > 0.5,
        "no head in layer 0 puts half its weight on the previous token ({best})"
    );
}

#[test]
fn trace_serialises_to_json_and_back() {
    let trace = minilm().trace("Serialise me.").unwrap();
    let json = serde_json::to_string(&trace).unwrap();
    let back: transformer_viz::Trace = serde_json::from_str(&json).unwrap();
    assert_eq!(back.steps.len(), trace.steps.len());
    assert_eq!(
        back.attention(1, 1).unwrap(),
        trace.attention(1, 1).unwrap()
    );
}
