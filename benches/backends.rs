//! The traced forward pass on each backend: the CPU and the first GPU adapter wgpu finds (on a
//! machine without a GPU, lavapipe: a software adapter, whose figures say nothing about a real
//! GPU). MiniLM at 32 and 256 tokens, the lecture decoder at 32 and 128 (its context), SmolLM2
//! at 32 and 256 when asked for (`BACKENDS_SMOLLM2=1`), the same `Transformer::pass` (every step kept) on both so only
//! the backend differs. The adapter is printed first. The GPU also
//! runs the pass untraced (`gpu, untraced`: only the output comes back), the peer that shows
//! what reading back every step the trace keeps costs. A causal model's pass of its last token
//! through the KV cache (`gpu, last token cached`, `Transformer::pass` continuing one on
//! the others) is the peer that shows what the cache saves a student typing on.
//! Needs the model files: run scripts/fetch-models.sh first.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::gpu::{GpuBackend, GpuContext};
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::edits::Edits;
use transformer_viz::model::forward::{forward_with, Logits};
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::trace::{NoRecorder, Readback};
use transformer_viz::transformer::{Keep, PassRequest};

/// A pass on `text` keeping every step, on whichever backend runs it.
fn every_step<H>(text: &str) -> PassRequest<'_, H> {
    PassRequest::text(text).keeping(Keep::Steps(Readback::Everything))
}

fn text_of(tokens: usize) -> String {
    // One-token words for both tokenizers, about `tokens` of them.
    let words = [
        "the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "slept",
    ];
    (0..tokens)
        .map(|i| words[i % words.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn backends(c: &mut Criterion) {
    std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    // SmolLM2 on a software adapter takes tens of seconds a pass: only when asked for
    // (`BACKENDS_SMOLLM2=1`, with a filter such as `-- smollm2`).
    let smollm2 = std::env::var("BACKENDS_SMOLLM2").is_ok_and(|v| v == "1");
    let models = [
        ("minilm-l6", [32usize, 256]),
        ("lecture-post-ln", [32, 128]),
        ("smollm2-135m", [32, 256]),
    ];
    for (name, lengths) in models
        .into_iter()
        .filter(|(name, _)| smollm2 || !name.starts_with("smollm2"))
    {
        let model = load_named(&root, name, WeightPrecision::F32)
            .expect("model files (run scripts/fetch-models.sh)");
        let ctx = pollster::block_on(GpuContext::new())
            .expect("a GPU adapter (apt-get install mesa-vulkan-drivers)");
        eprintln!("GPU adapter: {}", ctx.adapter_description());
        let gpu = GpuBackend::new(ctx, &model.weights);
        let mut group = c.benchmark_group(format!("{name} traced pass"));
        for tokens in lengths {
            let text = text_of(tokens);
            group.bench_with_input(BenchmarkId::new("cpu", tokens), &text, |b, text| {
                b.iter(|| on_cpu(model.pass(&Cpu, every_step(text))).expect("trace"))
            });
            group.bench_with_input(BenchmarkId::new("gpu", tokens), &text, |b, text| {
                b.iter(|| pollster::block_on(model.pass(&gpu, every_step(text))).expect("trace"))
            });
            let ids = model.encode(&text).expect("tokens").ids();
            group.bench_with_input(BenchmarkId::new("gpu, untraced", tokens), &ids, |b, ids| {
                b.iter(|| {
                    pollster::block_on(forward_with(
                        &gpu,
                        ids,
                        None,
                        &model.weights,
                        &model.config,
                        &mut NoRecorder,
                        Logits::All,
                        Edits::NONE,
                    ))
                    .expect("a pass on the GPU")
                })
            });
            if model.config.causal {
                // The text but its last token, traced with its keys and values kept on the
                // device; each iteration continues it from a copy of that cache (the copy
                // shares its buffers: appending makes new ones).
                let encoding = model.encode(&text).expect("tokens");
                group.bench_with_input(
                    BenchmarkId::new("gpu, last token cached", tokens),
                    &encoding,
                    |b, encoding| {
                        let mut head = encoding.clone();
                        head.tokens.pop();
                        let mut cached = KvCache::new();
                        let request = PassRequest::tokens(head, &text)
                            .continuing(None, &mut cached)
                            .keeping(Keep::Steps(Readback::Everything));
                        let first = pollster::block_on(model.pass(&gpu, request))
                            .expect("trace")
                            .into_trace();
                        b.iter(|| {
                            let mut cache = cached.clone();
                            let request = PassRequest::tokens(encoding.clone(), &text)
                                .continuing(Some(&first), &mut cache)
                                .keeping(Keep::Steps(Readback::Everything));
                            let next =
                                pollster::block_on(model.pass(&gpu, request)).expect("trace");
                            assert_eq!(next.reused, encoding.tokens.len() - 1);
                            next
                        })
                    },
                );
            }
        }
        group.finish();
        assert_eq!(gpu.failure(), None, "the GPU ran every operation");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = backends
}
criterion_main!(benches);
