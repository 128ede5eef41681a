//! Times the forward pass of the real MiniLM-L6 at 8, 32 and 128 tokens, traced (every
//! intermediate kept) and untraced, so the cost of tracing is visible.
//! Needs the model files: run scripts/fetch-models.sh first.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use transformer_viz::checkpoints::{load_named, WeightPrecision};

fn sentence_of(
    model: &transformer_viz::Transformer,
    tokens: usize,
) -> transformer_viz::tokenize::Encoding {
    // Common one-token words, so the token count is exact: [CLS] + n words + [SEP].
    let words = [
        "the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "slept",
    ];
    let text: Vec<&str> = (0..tokens - 2).map(|i| words[i % words.len()]).collect();
    let encoding = model.encode(&text.join(" ")).expect("encode");
    assert_eq!(encoding.tokens.len(), tokens);
    encoding
}

fn forward(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let model = load_named(&root, "minilm-l6", WeightPrecision::F32)
        .expect("model files (run scripts/fetch-models.sh)");
    let mut group = c.benchmark_group("minilm-l6 forward");
    for tokens in [8usize, 32, 128] {
        let encoding = sentence_of(&model, tokens);
        let ids = encoding.ids();
        group.bench_with_input(BenchmarkId::new("untraced", tokens), &ids, |b, ids| {
            b.iter(|| model.run_ids(ids))
        });
        group.bench_with_input(BenchmarkId::new("traced", tokens), &encoding, |b, enc| {
            b.iter(|| model.trace_tokens(enc.clone(), ""))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = forward
}
criterion_main!(benches);
