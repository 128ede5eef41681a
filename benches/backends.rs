//! The traced forward pass on each backend: the CPU and the first GPU adapter wgpu finds (on a
//! machine without a GPU, lavapipe: a software adapter, whose figures say nothing about a real
//! GPU). MiniLM at 32 and 256 tokens, the lecture decoder at 32 and 128 (its context), the same
//! `trace_with` on both so only the backend differs. The adapter is printed first. At 32 tokens
//! the GPU also runs with its attention one operation at a time (`OpByOp`: the scores and the
//! weights read back and uploaded again between kernels), the peer of its `attend`, which keeps
//! them on the device.
//! Needs the model files: run scripts/fetch-models.sh first.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::gpu::{GpuBackend, GpuContext};
use ndarray::{Array2, Array3, ArrayView2, ArrayView3};
use transformer_viz::model::backend::{on_cpu, Backend, Cpu};
use transformer_viz::model::config::{Activation, NormKind};
use transformer_viz::model::linear::Linear;
use transformer_viz::model::matrix::Matrix;
use transformer_viz::model::weights::NormWeights;

/// The GPU backend with `Backend::attend`'s default: scores, mask, softmax and weighted values
/// as separate operations, each read back.
struct OpByOp<'a>(&'a GpuBackend);

impl Backend for OpByOp<'_> {
    fn name(&self) -> String {
        self.0.name()
    }
    async fn linear(&self, x: ArrayView2<'_, f32>, layer: &Linear) -> Array2<f32> {
        self.0.linear(x, layer).await
    }
    async fn unembed(&self, x: ArrayView2<'_, f32>, u: &Matrix) -> Array2<f32> {
        self.0.unembed(x, u).await
    }
    async fn norm(&self, kind: NormKind, w: &NormWeights, x: ArrayView2<'_, f32>, eps: f32) -> Array2<f32> {
        self.0.norm(kind, w, x, eps).await
    }
    async fn scores(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, group: usize, scale: f32) -> Array3<f32> {
        self.0.scores(q, k, group, scale).await
    }
    async fn softmax(&self, scores: &mut Array3<f32>) {
        self.0.softmax(scores).await
    }
    async fn weighted_values(&self, weights: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize) -> Array3<f32> {
        self.0.weighted_values(weights, v, group).await
    }
    async fn pointwise(&self, hidden: &mut Array2<f32>, activation: Activation) {
        self.0.pointwise(hidden, activation).await
    }
    async fn gate(&self, up: &mut Array2<f32>, gate: ArrayView2<'_, f32>) {
        self.0.gate(up, gate).await
    }
    async fn rotary(&self, x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize) {
        self.0.rotary(x, base, adjacent_pairs, first).await
    }
}

fn text_of(tokens: usize) -> String {
    // One-token words for both tokenizers, about `tokens` of them.
    let words = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "slept"];
    (0..tokens).map(|i| words[i % words.len()]).collect::<Vec<_>>().join(" ")
}

fn backends(c: &mut Criterion) {
    std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    for (name, lengths) in [("minilm-l6", [32usize, 256]), ("lecture-post-ln", [32, 128])] {
        let model = load_named(&root, name, WeightPrecision::F32).expect("model files (run scripts/fetch-models.sh)");
        let ctx = pollster::block_on(GpuContext::new()).expect("a GPU adapter (apt-get install mesa-vulkan-drivers)");
        eprintln!("GPU adapter: {}", ctx.adapter_description());
        let gpu = GpuBackend::new(ctx, &model.weights);
        let mut group = c.benchmark_group(format!("{name} traced pass"));
        for tokens in lengths {
            let text = text_of(tokens);
            group.bench_with_input(BenchmarkId::new("cpu", tokens), &text, |b, text| b.iter(|| on_cpu(model.trace_with(&Cpu, text)).expect("trace")));
            group.bench_with_input(BenchmarkId::new("gpu", tokens), &text, |b, text| b.iter(|| pollster::block_on(model.trace_with(&gpu, text)).expect("trace")));
            if tokens == 32 {
                let op_by_op = OpByOp(&gpu);
                group.bench_with_input(BenchmarkId::new("gpu, attention op by op", tokens), &text, |b, text| b.iter(|| pollster::block_on(model.trace_with(&op_by_op, text)).expect("trace")));
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
