//! Times SmolLM2-135M (Q4_1/Q8_0 weights kept quantized): the traced pass from scratch at 16,
//! 64 and 256 tokens, the same text continued by one token through the KV cache (what typing a
//! word or generating costs), and one generated token on its own (`next_logits`).
//! Needs the model file: run scripts/fetch-models.sh first.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::tokenize::Encoding;
use transformer_viz::trace::Trace;
use transformer_viz::transformer::{Pass, PassRequest, Transformer};

fn first_tokens(model: &transformer_viz::Transformer, n: usize) -> Encoding {
    let text = "The quick brown fox jumps over the lazy dog while the children watch and laugh. "
        .repeat(n / 8 + 1);
    let encoding = model.encode(&text).expect("encode");
    Encoding {
        tokens: encoding.tokens[..n].to_vec(),
        truncated: None,
    }
}

/// The page's traced pass on `encoding` on the CPU, continuing `previous` through `cache`.
fn traced(
    model: &Transformer,
    encoding: Encoding,
    previous: Option<&Trace>,
    cache: &mut KvCache,
) -> Pass {
    let request = PassRequest::tokens(encoding, "").continuing(previous, cache);
    on_cpu(model.pass(&Cpu, request)).expect("a pass on the CPU")
}

fn smollm2(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let model = load_named(&root, "smollm2-135m", WeightPrecision::F32)
        .expect("model file (run scripts/fetch-models.sh)");
    let mut group = c.benchmark_group("smollm2-135m");
    // Time to the first prediction: the whole prompt traced.
    for tokens in [16usize, 64, 256] {
        let encoding = first_tokens(&model, tokens);
        group.bench_with_input(
            BenchmarkId::new("traced from scratch", tokens),
            &encoding,
            |b, enc| b.iter(|| traced(&model, enc.clone(), None, &mut KvCache::new())),
        );
    }
    // A word appended (the last token new), and a generated token, after 32 and 256.
    for tokens in [33usize, 257] {
        let encoding = first_tokens(&model, tokens);
        // The first tokens-1 tokens cached; the pass computes the last one.
        let prefix = Encoding {
            tokens: encoding.tokens[..tokens - 1].to_vec(),
            truncated: None,
        };
        let mut cache = KvCache::new();
        let previous = traced(&model, prefix, None, &mut cache).into_trace();
        group.bench_with_input(
            BenchmarkId::new("traced, one new token through the cache", tokens),
            &encoding,
            |b, enc| {
                b.iter(|| {
                    let mut cache = cache.clone();
                    traced(&model, enc.clone(), Some(&previous), &mut cache)
                })
            },
        );
        let last = encoding.tokens[tokens - 1].id;
        group.bench_with_input(
            BenchmarkId::new("untraced, one new token (generation)", tokens),
            &last,
            |b, &id| {
                b.iter(|| {
                    let mut cache = cache.clone();
                    model
                        .next_logits(&[id], &mut cache)
                        .expect("fits the context")
                })
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(6));
    targets = smollm2
}
criterion_main!(benches);
