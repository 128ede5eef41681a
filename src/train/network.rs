//! The trainer's view of a model: the same `ModelConfig` and the same tensor names as the
//! engine's own format (`checkpoints::generic`), written with candle's differentiable tensor
//! ops so that `loss.backward()` gives every gradient. Only what the lecture's models use is
//! here: token embedding plus the sinusoidal table, LayerNorm before or after each sublayer,
//! multi-head attention with biases (causal or not), a ReLU FFN and a tied unembedding.
//! Inference never runs through this file: the saved weights go through the engine, and
//! `tests/engine/trainer.rs` checks both passes agree.

use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor, Var};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::attention_softmax::attention_weights;
use super::bias::add_bias;
use super::cross_entropy::cross_entropy;
use super::layer_norm::layer_norm;
use super::relu::relu;
use crate::checkpoints::generic;
use crate::error::{Result, VizError};
use crate::model::config::{Activation, LmHead, ModelConfig, NormKind, NormPlace, Position};
use crate::model::position::sinusoidal_table;
use crate::model::Weights;

pub fn candle_err(e: candle_core::Error) -> VizError {
    VizError::Training(e.to_string())
}

/// The projections' standard deviation at initialisation unless a run chooses another.
pub const DEFAULT_PROJECTION_STD: f32 = 0.02;

pub type CResult<T> = std::result::Result<T, candle_core::Error>;

/// The parameters by their engine names, and the fixed sinusoidal table.
pub struct Network {
    pub config: ModelConfig,
    /// name -> variable, in name order (the checkpoint's order).
    pub params: BTreeMap<String, Var>,
    /// (context, d_model): PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...).
    position_table: Tensor,
}

/// Standard normal numbers from a seeded stream (Box-Muller), so that a seed fixes the
/// initial weights on any machine.
fn normal(rng: &mut ChaCha8Rng, n: usize, std: f32) -> Vec<f32> {
    let uniform = |rng: &mut ChaCha8Rng| ((rng.next_u32() >> 8) as f64 + 0.5) / (1u32 << 24) as f64; // (0, 1)
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(rng), uniform(rng));
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32 * std
        })
        .collect()
}

/// Checks that the config is one this trainer implements.
pub fn check_trainable(c: &ModelConfig) -> Result<()> {
    let supported = matches!(c.position, Position::Sinusoidal | Position::None)
        && c.norm == NormKind::Layer
        && c.activation == Activation::Relu
        && c.lm_head != LmHead::None
        && c.linear_bias
        && c.n_kv_heads == c.n_heads
        && c.n_heads * c.head_dim == c.d_model
        && c.token_types == 0
        && !c.embedding_norm;
    if supported {
        c.validate()
    } else {
        Err(VizError::Training("the trainer implements the notes' architecture only: sinusoidal positions (or none), LayerNorm, ReLU FFN, a language-model head, biases, n_heads x head_dim = d_model".into()))
    }
}

impl Network {
    /// Fresh weights: N(0, 0.02) for the projections (the two that write into the residual
    /// stream scaled by 1/sqrt(2 x layers), as GPT-2 does), N(0, 1/d_model) for the embedding
    /// (the paper's: times the embedding scale sqrt(d_model) each token's part of the stream
    /// has features of size 1, like the sinusoidal table's, while the same rows used as the
    /// unembedding give logits of size 1), zero biases, gamma 1, beta 0.
    pub fn init(config: &ModelConfig, seed: u64) -> Result<Self> {
        Self::init_scaled(config, seed, DEFAULT_PROJECTION_STD)
    }

    /// `init` with the projections' standard deviation `std` (the sublayers' output
    /// projections `std / sqrt(2 * layers)`, GPT-2's rule). The token embedding enters the
    /// stream with entries of standard deviation 1 (scaled by sqrt(d)); projections of
    /// 1/sqrt(d) (Xavier's, the original Transformer's) let each sublayer write into it on the
    /// same scale from the start, where 0.02 leaves them fifty times fainter.
    pub fn init_scaled(config: &ModelConfig, seed: u64, std: f32) -> Result<Self> {
        check_trainable(config)?;
        let c = config;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut params = BTreeMap::new();
        let dev = Device::Cpu;
        let mut put = |name: String, shape: &[usize], values: Vec<f32>| -> CResult<()> {
            params.insert(
                name,
                Var::from_tensor(&Tensor::from_vec(values, shape, &dev)?)?,
            );
            Ok(())
        };
        let (d, f) = (c.d_model, c.d_ff);
        // Sublayers writing into each stream: 2 a layer, 3 in an encoder-decoder's decoder.
        let writers = 2 * c.n_layers
            + if c.is_encoder_decoder() {
                c.n_layers
            } else {
                0
            };
        let residual_std = std / (writers as f32).sqrt();
        let crossed = c.is_encoder_decoder();
        (|| -> CResult<()> {
            put(
                "token_embedding".into(),
                &[c.vocab_size, d],
                normal(&mut rng, c.vocab_size * d, 1.0 / (d as f32).sqrt()),
            )?;
            let decoder = (0..c.n_layers).map(|i| (format!("layers.{i}"), crossed));
            let encoder = (0..c.encoder_layers).map(|i| (format!("encoder.layers.{i}"), false));
            for (p, crossed) in decoder.chain(encoder) {
                let mut linears = vec![
                    ("attention.query", d, d, std),
                    ("attention.key", d, d, std),
                    ("attention.value", d, d, std),
                    ("attention.output", d, d, residual_std),
                    ("ffn.up", f, d, std),
                    ("ffn.down", d, f, residual_std),
                ];
                let mut norms = vec!["attention_norm", "ffn_norm"];
                if crossed {
                    linears.extend([
                        ("cross_attention.query", d, d, std),
                        ("cross_attention.key", d, d, std),
                        ("cross_attention.value", d, d, std),
                        ("cross_attention.output", d, d, residual_std),
                    ]);
                    norms.push("cross_norm");
                }
                for (name, out, inp, std) in linears {
                    put(
                        format!("{p}.{name}.weight"),
                        &[out, inp],
                        normal(&mut rng, out * inp, std),
                    )?;
                    put(format!("{p}.{name}.bias"), &[out], vec![0.0; out])?;
                }
                for norm in norms {
                    put(format!("{p}.{norm}.gamma"), &[d], vec![1.0; d])?;
                    put(format!("{p}.{norm}.beta"), &[d], vec![0.0; d])?;
                }
            }
            if c.norm_place == NormPlace::Pre {
                let finals = if crossed {
                    vec!["final_norm", "encoder.final_norm"]
                } else {
                    vec!["final_norm"]
                };
                for name in finals {
                    put(format!("{name}.gamma"), &[d], vec![1.0; d])?;
                    put(format!("{name}.beta"), &[d], vec![0.0; d])?;
                }
            }
            // Drawn last, so a tied model's weights are the same draws with or without it.
            if c.lm_head == LmHead::Separate {
                put(
                    "lm_head".into(),
                    &[c.vocab_size, d],
                    normal(&mut rng, c.vocab_size * d, std),
                )?;
            }
            Ok(())
        })()
        .map_err(candle_err)?;
        Self::with_params(config.clone(), params)
    }

    fn with_params(config: ModelConfig, params: BTreeMap<String, Var>) -> Result<Self> {
        let n = config.context;
        let table: Vec<f32> = match config.position {
            Position::Sinusoidal => sinusoidal_table(n, config.d_model)
                .iter()
                .copied()
                .collect(), // (context, d)
            _ => vec![0.0; n * config.d_model], // (context, d): no positions
        };
        let position_table =
            Tensor::from_vec(table, (n, config.d_model), &Device::Cpu).map_err(candle_err)?;
        Ok(Self {
            config,
            params,
            position_table,
        })
    }

    /// Weights saved by `to_safetensors` (or the engine's `generic::to_safetensors`).
    pub fn from_safetensors(config: &ModelConfig, bytes: &[u8]) -> Result<Self> {
        check_trainable(config)?;
        let weights = generic::from_safetensors(bytes, config)?; // every name and shape checked
        let mut params = BTreeMap::new();
        for (name, (shape, values)) in generic::named_tensors(&weights) {
            let t = Tensor::from_vec(values, shape, &Device::Cpu)
                .and_then(|t| Var::from_tensor(&t))
                .map_err(candle_err)?;
            params.insert(name, t);
        }
        Self::with_params(config.clone(), params)
    }

    /// The weights in the engine's format (f32 safetensors under the generic names).
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let tensors: Vec<(String, Tensor)> = self
            .params
            .iter()
            .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
            .collect();
        let mut data = Vec::new();
        for (name, t) in &tensors {
            let values: Vec<f32> = t
                .flatten_all()
                .and_then(|t| t.to_vec1())
                .map_err(candle_err)?;
            data.push((
                name.clone(),
                t.dims().to_vec(),
                values
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>(),
            ));
        }
        let views = data
            .iter()
            .map(|(name, shape, bytes)| {
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
                    .map(|v| (name.clone(), v))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| VizError::Training(e.to_string()))?;
        safetensors::serialize(views, None).map_err(|e| VizError::Training(e.to_string()))
    }

    /// The same weights as the engine holds them.
    pub fn to_weights(&self) -> Result<Weights> {
        generic::from_safetensors(&self.to_safetensors()?, &self.config)
    }

    pub fn vars(&self) -> Vec<Var> {
        self.params.values().cloned().collect()
    }

    pub fn parameter_count(&self) -> usize {
        self.params.values().map(|v| v.elem_count()).sum()
    }

    fn p(&self, name: &str) -> &Tensor {
        self.params
            .get(name)
            .unwrap_or_else(|| panic!("parameter `{name}` exists for this config"))
            .as_tensor()
    }

    /// (N, in) -> (N, out): x W^T + b.
    fn linear(&self, x: &Tensor, name: &str) -> CResult<Tensor> {
        let product = x.matmul(&self.p(&format!("{name}.weight")).t()?)?; // (N, out)
        add_bias(&product, self.p(&format!("{name}.bias"))) // (N, out)
    }

    /// LayerNorm of each row of (N, d): (x - mean) / sqrt(var + eps) * gamma + beta.
    fn layer_norm(&self, x: &Tensor, name: &str) -> CResult<Tensor> {
        layer_norm(
            x,
            self.p(&format!("{name}.gamma")),
            self.p(&format!("{name}.beta")),
            self.config.norm_eps,
        ) // (N, d)
    }

    /// Queries from `x` (B*T, d), keys and values from `memory` (B*S, d), through the
    /// projections under `name`; `masked` hides later keys (T = S then). Returns (B*T, d).
    #[allow(clippy::too_many_arguments)]
    fn attend(
        &self,
        x: &Tensor,
        memory: &Tensor,
        b: usize,
        t: usize,
        s: usize,
        name: &str,
        masked: bool,
    ) -> CResult<Tensor> {
        let (h, hd) = (self.config.n_heads, self.config.head_dim);
        let heads = |input: &Tensor, rows: usize, which: &str| -> CResult<Tensor> {
            self.linear(input, &format!("{name}.{which}"))? // (B*rows, d)
                .reshape((b, rows, h, hd))?
                .transpose(1, 2)? // (B, H, rows, hd)
                .contiguous()
        };
        let (q, k, v) = (
            heads(x, t, "query")?,
            heads(memory, s, "key")?,
            heads(memory, s, "value")?,
        );
        let scores = q.matmul(&k.t()?)?; // (B, H, T, S)
        let weights = attention_weights(&scores, 1.0 / (hd as f32).sqrt(), masked)?; // (B, H, T, S)
        let mixed = weights.matmul(&v)?; // (B, H, T, hd)
        let joined = mixed.transpose(1, 2)?.reshape((b * t, h * hd))?; // (B*T, d)
        self.linear(&joined, &format!("{name}.output")) // (B*T, d)
    }

    /// The embedding and sinusoidal table of ids (B, T): (B*T, d).
    fn embed(&self, ids: &Tensor) -> CResult<Tensor> {
        let (b, t) = ids.dims2()?;
        let embedding = self.p("token_embedding"); // (V, d)
        let tokens =
            (embedding.index_select(&ids.flatten_all()?, 0)? * self.config.embedding_scale as f64)?; // (B*T, d): sqrt(d) E[t]
        let positions = self.position_table.narrow(0, 0, t)?.repeat((b, 1))?; // (B*T, d)
        tokens + positions // (B*T, d)
    }

    /// One layer under `prefix` on x (B*T, d): self-attention (masked if `masked`), then, with
    /// `memory` (B*S, d), cross-attention to it, then the FFN; each sublayer's residual and
    /// norm where the config puts them. The engine's `layer_forward`, step for step.
    fn layer(
        &self,
        x: &Tensor,
        b: usize,
        t: usize,
        prefix: &str,
        masked: bool,
        memory: Option<(&Tensor, usize)>,
    ) -> CResult<Tensor> {
        let p = prefix;
        let self_attend =
            |h: &Tensor| self.attend(h, h, b, t, t, &format!("{p}.attention"), masked);
        let cross = |h: &Tensor, (m, s): (&Tensor, usize)| {
            self.attend(h, m, b, t, s, &format!("{p}.cross_attention"), false)
        };
        match self.config.norm_place {
            NormPlace::Post => {
                let mut x =
                    self.layer_norm(&(x + self_attend(x)?)?, &format!("{p}.attention_norm"))?; // (B*T, d)
                if let Some(m) = memory {
                    x = self.layer_norm(&(&x + cross(&x, m)?)?, &format!("{p}.cross_norm"))?;
                    // (B*T, d)
                }
                self.layer_norm(&(&x + self.feed_forward(&x, p)?)?, &format!("{p}.ffn_norm"))
                // (B*T, d)
            }
            NormPlace::Pre => {
                let mut x =
                    (x + self_attend(&self.layer_norm(x, &format!("{p}.attention_norm"))?)?)?; // (B*T, d)
                if let Some(m) = memory {
                    x = (&x + cross(&self.layer_norm(&x, &format!("{p}.cross_norm"))?, m)?)?;
                    // (B*T, d)
                }
                let h = self.layer_norm(&x, &format!("{p}.ffn_norm"))?; // (B*T, d)
                &x + self.feed_forward(&h, p)? // (B*T, d)
            }
        }
    }

    /// An encoder-decoder's logits (B*T, vocab) for target inputs `target` (B, T) given the
    /// source ids `source` (B, S): the encoder reads the source without a mask, the decoder
    /// reads the target causally and cross-attends to the encoder's output.
    pub fn seq2seq_logits(&self, source: &Tensor, target: &Tensor) -> CResult<Tensor> {
        let c = &self.config;
        let (b, s) = source.dims2()?;
        let (_, t) = target.dims2()?;
        let mut memory = self.embed(source)?; // (B*S, d)
        for i in 0..c.encoder_layers {
            memory = self.layer(&memory, b, s, &format!("encoder.layers.{i}"), false, None)?;
            // (B*S, d)
        }
        if c.norm_place == NormPlace::Pre {
            memory = self.layer_norm(&memory, "encoder.final_norm")?; // (B*S, d)
        }
        let mut x = self.embed(target)?; // (B*T, d)
        for i in 0..c.n_layers {
            x = self.layer(&x, b, t, &format!("layers.{i}"), true, Some((&memory, s)))?;
            // (B*T, d)
        }
        if c.norm_place == NormPlace::Pre {
            x = self.layer_norm(&x, "final_norm")?; // (B*T, d)
        }
        x.matmul(&self.p("token_embedding").t()?) // (B*T, V)
    }

    /// Mean cross-entropy of an encoder-decoder predicting `labels` (B, T) from the source
    /// (B, S) and the target inputs (B, T).
    pub fn seq2seq_loss(
        &self,
        source: &Tensor,
        target: &Tensor,
        labels: &Tensor,
    ) -> CResult<Tensor> {
        let logits = self.seq2seq_logits(source, target)?; // (B*T, V)
        cross_entropy(&logits, &labels.flatten_all()?) // ()
    }

    /// ReLU FFN: max(0, x W1^T + b1) W2^T + b2, (B*T, d) -> (B*T, d).
    fn feed_forward(&self, x: &Tensor, layer: &str) -> CResult<Tensor> {
        let hidden = relu(&self.linear(x, &format!("{layer}.ffn.up"))?)?; // (B*T, d_ff)
        self.linear(&hidden, &format!("{layer}.ffn.down")) // (B*T, d)
    }

    /// Token ids (B, T) -> logits (B*T, vocab), through exactly the engine's steps.
    pub fn logits(&self, ids: &Tensor) -> CResult<Tensor> {
        let c = &self.config;
        let (b, t) = ids.dims2()?;
        let mut x = self.embed(ids)?; // (B*T, d)
        for i in 0..c.n_layers {
            x = self.layer(&x, b, t, &format!("layers.{i}"), c.causal, None)?; // (B*T, d)
        }
        if c.norm_place == NormPlace::Pre {
            x = self.layer_norm(&x, "final_norm")?; // (B*T, d)
        }
        let unembedding = match c.lm_head {
            LmHead::Separate => self.p("lm_head"), // (V, d)
            _ => self.p("token_embedding"),        // (V, d): tied, the embedding itself
        };
        x.matmul(&unembedding.t()?) // (B*T, V)
    }

    /// Mean cross-entropy of predicting `targets` (B, T) from `ids` (B, T).
    pub fn loss(&self, ids: &Tensor, targets: &Tensor) -> CResult<Tensor> {
        let logits = self.logits(ids)?; // (B*T, V)
        cross_entropy(&logits, &targets.flatten_all()?) // ()
    }
}

/// (B, T) u32 tensor from rows of ids.
pub fn id_tensor(rows: &[Vec<u32>]) -> Result<Tensor> {
    let t = rows.first().map_or(0, Vec::len);
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    Tensor::from_vec(flat, (rows.len(), t), &Device::Cpu).map_err(candle_err)
}

pub const DTYPE: DType = DType::F32;
