//! A causal model's pass that continues an earlier one (its KV cache and trace rows) gives the
//! numbers of a pass from scratch; a layer's detailed steps, computed again from the layer's
//! stored input when read, equal the steps of a trace that kept everything.

use crate::common;
use transformer_viz::checkpoints::fixture::{decoder_config, fixture};
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::model::{forward, ModelConfig};
use transformer_viz::tokenize::Encoding;
use transformer_viz::trace::{token_axis, Readback, Trace, TraceRecorder};
use transformer_viz::transformer::{Keep, Pass, PassRequest, Transformer};

/// The trace of a pass from scratch that keeps every step (MiniLM's kind of trace).
fn kept_trace(model: &Transformer, text: &str) -> Trace {
    let encoding = model.encode(text).unwrap();
    let mut rec = TraceRecorder::new(&model.config);
    forward(&encoding.ids(), &model.weights, &model.config, &mut rec);
    let (steps, norms) = rec.into_parts();
    Trace {
        model: model.config.name.clone(),
        config: model.config.clone(),
        text: text.into(),
        tokens: encoding.tokens,
        truncated: encoding.truncated,
        steps,
        norms,
        source: None,
    }
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| if x == y { 0.0 } else { (x - y).abs() })
        .fold(0.0, f32::max)
}

/// Every step of `got` has the name, shape and (within `tol`) values of `want`'s, and the
/// norms' statistics agree.
fn assert_traces_agree(got: &Trace, want: &Trace, tol: f32, what: &str) {
    assert_eq!(got.tokens, want.tokens, "{what}: tokens");
    let names = |t: &Trace| t.steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(got),
        names(want),
        "{what}: the same steps in the same order"
    );
    for (g, w) in got.steps.iter().zip(&want.steps) {
        assert_eq!(
            g.tensor.shape, w.tensor.shape,
            "{what}: shape of {}",
            g.name
        );
        assert_eq!(g.inputs, w.inputs, "{what}: inputs of {}", g.name);
        let d = max_diff(&g.tensor.data, &w.tensor.data);
        assert!(d <= tol, "{what}: {} differs by {d}", g.name);
    }
    assert_eq!(got.norms.len(), want.norms.len());
    for (g, w) in got.norms.iter().zip(&want.norms) {
        assert_eq!(g.step, w.step);
        for (a, b) in [
            (&g.stats.input_mean, &w.stats.input_mean),
            (&g.stats.input_std, &w.stats.input_std),
            (&g.stats.output_std, &w.stats.output_std),
        ] {
            assert!(max_diff(a, b) <= tol, "{what}: statistics of {}", g.step);
        }
    }
}

fn decoder() -> Transformer {
    let c: ModelConfig = decoder_config();
    fixture(c, 11).unwrap()
}

#[test]
fn a_trace_computed_on_read_equals_one_that_kept_everything() {
    let model = decoder();
    for text in ["a", "hello", "the cat sat on the mat"] {
        let lazy = model.trace(text).unwrap();
        assert!(
            lazy.bytes_in_memory() < kept_trace(&model, text).bytes_in_memory() || text.len() < 2,
            "{text}: keeps less"
        );
        assert_traces_agree(&lazy, &kept_trace(&model, text), 1e-6, text);
    }
}

/// Appending, editing in the middle, deleting, and the same text again.
const EDITS: [&str; 7] = [
    "the cat",
    "the cat sat on",
    "the dog sat on",
    "the dog",
    "the dog",
    "x",
    "the dog sat on the mat!",
];

/// Types `EDITS` one after the other, each pass continuing the last through `continued`
/// (the cache and the last trace); each reuses exactly the unchanged tokens but the last, the
/// cache holds every token, and the trace agrees with `scratch`'s pass on the same tokens.
fn check_edits(
    model: &Transformer,
    continued: impl Fn(Encoding, &str, Option<&Trace>, &mut KvCache) -> Pass,
    scratch: impl Fn(Encoding, &str) -> Trace,
) {
    let mut cache = KvCache::new();
    let mut previous: Option<Trace> = None;
    for text in EDITS {
        let encoding = model.encode(text).unwrap();
        let common = previous.as_ref().map_or(0, |p| {
            p.tokens
                .iter()
                .zip(&encoding.tokens)
                .take_while(|(a, b)| a.id == b.id)
                .count()
        });
        let t = encoding.tokens.len();
        let next = continued(encoding.clone(), text, previous.as_ref(), &mut cache);
        assert_eq!(
            next.reused,
            common.min(t - 1),
            "{text}: reuses the unchanged tokens but the last"
        );
        assert_eq!(cache.len(), t, "{text}: the cache holds every token");
        let trace = next.into_trace();
        assert_traces_agree(&trace, &scratch(encoding, text), 1e-5, text);
        previous = Some(trace);
    }
}

#[test]
fn continuing_a_trace_gives_the_numbers_of_a_pass_from_scratch() {
    let model = decoder();
    check_edits(
        &model,
        |encoding, text, previous, cache| {
            let request = PassRequest::tokens(encoding, text).continuing(previous, cache);
            on_cpu(model.pass(&Cpu, request)).unwrap()
        },
        |_, text| kept_trace(&model, text),
    );
}

#[test]
fn continuing_a_trace_that_records_every_step_gives_the_steps_of_a_pass_from_scratch() {
    // Every step kept (the GPU's way, here on the CPU, as the page checks a GPU pass):
    // each step the earlier trace's rows then the new ones, the scores and head outputs
    // derived from the joined steps, every step as a pass from the first token records it.
    let model = decoder();
    check_edits(
        &model,
        |encoding, text, previous, cache| {
            let request = PassRequest::tokens(encoding, text)
                .continuing(previous, cache)
                .keeping(Keep::Steps(Readback::Everything));
            on_cpu(model.pass(&Cpu, request)).unwrap()
        },
        |encoding, text| {
            let request =
                PassRequest::tokens(encoding, text).keeping(Keep::Steps(Readback::Everything));
            on_cpu(model.pass(&Cpu, request)).unwrap().into_trace()
        },
    );
}

#[test]
fn joins_of_continued_traces_never_nest_however_long_the_typing() {
    // Typed a letter at a time, with a word deleted on the way: each step of the last trace
    // is one join whose parts are tensors some pass computed (never joins), covering every
    // token once; so earlier traces dropped, no chain of them stays behind.
    let model = decoder();
    let full = "the cat sat on the mat and the dog ran";
    let mut states: Vec<String> = (1..=full.len()).map(|n| full[..n].to_string()).collect();
    states.insert(20, "the cat sat on the".into()); // a deletion back to a word
    let mut cache = KvCache::new();
    let mut previous: Option<Trace> = None;
    let mut reused_passes = 0;
    for text in &states {
        let encoding = model.encode(text).unwrap();
        let request = PassRequest::tokens(encoding, text)
            .continuing(previous.as_ref(), &mut cache)
            .keeping(Keep::Steps(Readback::Everything));
        let continued = on_cpu(model.pass(&Cpu, request)).unwrap();
        reused_passes += usize::from(continued.reused > 0);
        previous = Some(continued.into_trace());
    }
    assert!(
        reused_passes > states.len() / 2,
        "most passes continued the one before ({reused_passes} of {})",
        states.len()
    );
    let last = previous.unwrap();
    let tokens = last.tokens.len();
    let mut joins = 0;
    for step in &last.steps {
        let parts = step.tensor.data.joined_parts();
        if parts.is_empty() {
            continue;
        }
        joins += 1;
        assert!(
            parts.iter().all(|p| p.data.joined_parts().is_empty()),
            "{}: a join's parts are no joins",
            step.name
        );
        let rows: usize = parts.iter().map(|p| p.rows.len()).sum();
        assert_eq!(
            rows,
            step.tensor.shape[token_axis(step.tensor.shape.len())],
            "{}: every row once",
            step.name
        );
        assert_eq!(rows, tokens);
        assert!(
            parts.len() <= tokens,
            "{}: at most a part a token",
            step.name
        );
    }
    assert!(
        joins > 10,
        "the continued trace's steps are joins ({joins})"
    );
}

#[test]
fn next_logits_through_the_cache_equal_the_logits_of_a_whole_pass() {
    let model = decoder();
    let ids = model
        .encode("generating one token at a time")
        .unwrap()
        .ids();
    let whole = model.run_ids(&ids).unwrap().logits.unwrap(); // (T, vocab)
    let mut cache = KvCache::new();
    // The first two tokens in one go, then one at a time.
    let mut logits = model.next_logits(&ids[..2], &mut cache).unwrap();
    assert!(max_diff(logits.as_slice().unwrap(), whole.row(1).as_slice().unwrap()) < 1e-5);
    for (i, &id) in ids.iter().enumerate().skip(2) {
        logits = model.next_logits(&[id], &mut cache).unwrap();
        let d = max_diff(logits.as_slice().unwrap(), whole.row(i).to_vec().as_slice());
        assert!(d < 1e-5, "position {i}: cached logits differ by {d}");
    }
    assert_eq!(cache.len(), ids.len());
    // Past the context: a typed error, the cache untouched.
    let room = model.config.context - cache.len();
    assert!(model.next_logits(&vec![1; room + 1], &mut cache).is_err());
    assert_eq!(cache.len(), ids.len());
}

#[test]
fn smollm2_cached_passes_agree_with_passes_from_scratch() {
    let Some(model) = common::smollm2() else {
        return;
    };
    let mut cache = KvCache::new();
    let request = PassRequest::tokens(model.encode("The capital of France is").unwrap(), "")
        .continuing(None, &mut cache);
    let first = on_cpu(model.pass(&Cpu, request)).unwrap().into_trace();
    let text = "The capital of France is Paris, and the capital of Italy is";
    let request =
        PassRequest::tokens(model.encode(text).unwrap(), text).continuing(Some(&first), &mut cache);
    let continued = on_cpu(model.pass(&Cpu, request)).unwrap();
    let reused = continued.reused;
    let continued = continued.into_trace();
    assert_eq!(reused, 5, "the five tokens of the first text are reused");
    let scratch = model.trace(text).unwrap();
    let (a, b) = (
        continued.next_token_probabilities().unwrap(),
        scratch.next_token_probabilities().unwrap(),
    );
    let d = max_diff(a.as_slice().unwrap(), b.as_slice().unwrap());
    assert!(d < 1e-4, "next-token probabilities differ by {d}");
    // Logits: through the cache one token at a time, and in one pass.
    let ids = model.encode(text).unwrap().ids();
    let whole = model.run_ids(&ids).unwrap().logits.unwrap(); // (T, vocab)
    let mut cache = KvCache::new();
    model
        .next_logits(&ids[..ids.len() - 3], &mut cache)
        .unwrap();
    for i in ids.len() - 3..ids.len() {
        let logits = model.next_logits(&ids[i..i + 1], &mut cache).unwrap();
        let d = max_diff(logits.as_slice().unwrap(), whole.row(i).to_vec().as_slice());
        assert!(
            d < 1e-4,
            "SmolLM2 position {i}: cached logits differ by {d}"
        );
    }
    // Attention of a layer in the middle, read from both traces.
    for layer in [0, 14, 29] {
        let (a, b) = (
            continued.attention_layer(layer).unwrap(),
            scratch.attention_layer(layer).unwrap(),
        );
        let d = max_diff(
            a.as_standard_layout().as_slice().unwrap(),
            b.as_standard_layout().as_slice().unwrap(),
        );
        assert!(d < 1e-5, "layer {layer} attention differs by {d}");
    }
}

/// SmolLM2's trace at 256 tokens keeps every layer's stream, attention weights and norm
/// statistics (about 3.5 MB a layer), not every step (about 12 MB a layer); a detailed step
/// read later is computed from its layer's input and equals a trace that kept everything.
#[test]
fn smollm2_trace_at_256_tokens_keeps_what_the_views_need() {
    let Some(model) = common::smollm2() else {
        return;
    };
    let text = "The quick brown fox jumps over the lazy dog while the children watch and laugh. "
        .repeat(16);
    let encoding = model.encode(&text).unwrap();
    let encoding = transformer_viz::tokenize::Encoding {
        tokens: encoding.tokens[..256].to_vec(),
        truncated: None,
    };
    let started = std::time::Instant::now();
    let trace = model.trace_tokens(encoding, &text).unwrap();
    eprintln!(
        "SmolLM2 traced pass at 256 tokens: {:.2} s natively",
        started.elapsed().as_secs_f64()
    );
    let kept = trace.bytes_in_memory();
    let every_step = trace
        .steps
        .iter()
        .map(|s| s.tensor.shape.iter().product::<usize>() * 4)
        .sum::<usize>();
    eprintln!(
        "kept {:.1} MB of {:.1} MB of steps",
        kept as f64 / 1e6,
        every_step as f64 / 1e6
    );
    assert!(kept < 130_000_000, "kept {kept} bytes");
    assert!(
        every_step > 3 * kept,
        "most of the trace is computed on read ({every_step} bytes in all)"
    );
    // Reading one layer's FFN gate computes that step only.
    let gate = trace.find(transformer_viz::Op::FfnGate, Some(7)).unwrap();
    let before = trace.bytes_in_memory();
    let values = gate.tensor.data.to_vec();
    assert_eq!(trace.bytes_in_memory() - before, values.len() * 4);
    assert_eq!(gate.tensor.shape, vec![256, model.config.d_ff]);
}
