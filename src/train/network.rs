//! The trainer's view of a model: the same `ModelConfig` and the same tensor names as the
//! engine's own format (`checkpoints::generic`), written with candle's differentiable tensor
//! ops so that `loss.backward()` gives every gradient. Only what the lecture's models use is
//! here: token embedding plus the sinusoidal table, LayerNorm before or after each sublayer,
//! multi-head attention with biases (causal or not), a ReLU FFN and a tied unembedding.
//! Inference never runs through this file: the saved weights go through the engine, and
//! `tests/trainer.rs` checks both passes agree.

use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor, Var, D};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::checkpoints::generic;
use crate::error::{Result, VizError};
use crate::model::config::{Activation, LmHead, ModelConfig, NormKind, NormPlace, Position};
use crate::model::position::sinusoidal_table;
use crate::model::Weights;

pub fn candle_err(e: candle_core::Error) -> VizError {
    VizError::Training(e.to_string())
}

pub type CResult<T> = std::result::Result<T, candle_core::Error>;

/// The parameters by their engine names, and the fixed sinusoidal table.
pub struct Network {
    pub config: ModelConfig,
    /// name -> variable, in name order (the checkpoint's order).
    pub params: BTreeMap<String, Var>,
    /// (context, d_model): PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...).
    position_table: Tensor,
    /// (context, context): 0 on and below the diagonal, -inf above (a causal model), else 0.
    mask: Tensor,
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
    let supported = c.position == Position::Sinusoidal
        && c.norm == NormKind::Layer
        && c.activation == Activation::Relu
        && c.lm_head == LmHead::Tied
        && c.linear_bias
        && c.n_kv_heads == c.n_heads
        && c.n_heads * c.head_dim == c.d_model
        && c.token_types == 0
        && !c.embedding_norm;
    if supported {
        c.validate()
    } else {
        Err(VizError::Training("the trainer implements the notes' architecture only: sinusoidal positions, LayerNorm, ReLU FFN, tied unembedding, biases, n_heads x head_dim = d_model".into()))
    }
}

impl Network {
    /// Fresh weights: N(0, 0.02) for the projections (the two that write into the residual
    /// stream scaled by 1/sqrt(2 x layers), as GPT-2 does), N(0, 1/d_model) for the embedding
    /// (the paper's: times the embedding scale sqrt(d_model) each token's part of the stream
    /// has features of size 1, like the sinusoidal table's, while the same rows used as the
    /// unembedding give logits of size 1), zero biases, gamma 1, beta 0.
    pub fn init(config: &ModelConfig, seed: u64) -> Result<Self> {
        check_trainable(config)?;
        let c = config;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut params = BTreeMap::new();
        let dev = Device::Cpu;
        let mut put = |name: String, shape: &[usize], values: Vec<f32>| -> CResult<()> {
            params.insert(name, Var::from_tensor(&Tensor::from_vec(values, shape, &dev)?)?);
            Ok(())
        };
        let (d, f) = (c.d_model, c.d_ff);
        let residual_std = 0.02 / ((2 * c.n_layers) as f32).sqrt();
        (|| -> CResult<()> {
            put("token_embedding".into(), &[c.vocab_size, d], normal(&mut rng, c.vocab_size * d, 1.0 / (d as f32).sqrt()))?;
            for i in 0..c.n_layers {
                let p = format!("layers.{i}");
                for (name, out, inp, std) in [
                    ("attention.query", d, d, 0.02),
                    ("attention.key", d, d, 0.02),
                    ("attention.value", d, d, 0.02),
                    ("attention.output", d, d, residual_std),
                    ("ffn.up", f, d, 0.02),
                    ("ffn.down", d, f, residual_std),
                ] {
                    put(format!("{p}.{name}.weight"), &[out, inp], normal(&mut rng, out * inp, std))?;
                    put(format!("{p}.{name}.bias"), &[out], vec![0.0; out])?;
                }
                for norm in ["attention_norm", "ffn_norm"] {
                    put(format!("{p}.{norm}.gamma"), &[d], vec![1.0; d])?;
                    put(format!("{p}.{norm}.beta"), &[d], vec![0.0; d])?;
                }
            }
            if c.norm_place == NormPlace::Pre {
                put("final_norm.gamma".into(), &[d], vec![1.0; d])?;
                put("final_norm.beta".into(), &[d], vec![0.0; d])?;
            }
            Ok(())
        })()
        .map_err(candle_err)?;
        Self::with_params(config.clone(), params)
    }

    fn with_params(config: ModelConfig, params: BTreeMap<String, Var>) -> Result<Self> {
        let n = config.context;
        let table = sinusoidal_table(n, config.d_model); // (context, d)
        let position_table = Tensor::from_vec(table.iter().copied().collect(), (n, config.d_model), &Device::Cpu).map_err(candle_err)?;
        let mask: Vec<f32> = (0..n * n).map(|i| if config.causal && i % n > i / n { f32::NEG_INFINITY } else { 0.0 }).collect();
        let mask = Tensor::from_vec(mask, (n, n), &Device::Cpu).map_err(candle_err)?;
        Ok(Self { config, params, position_table, mask })
    }

    /// Weights saved by `to_safetensors` (or the engine's `generic::to_safetensors`).
    pub fn from_safetensors(config: &ModelConfig, bytes: &[u8]) -> Result<Self> {
        check_trainable(config)?;
        let weights = generic::from_safetensors(bytes, config)?; // every name and shape checked
        let mut params = BTreeMap::new();
        for (name, (shape, values)) in generic::named_tensors(&weights) {
            let t = Tensor::from_vec(values, shape, &Device::Cpu).and_then(|t| Var::from_tensor(&t)).map_err(candle_err)?;
            params.insert(name, t);
        }
        Self::with_params(config.clone(), params)
    }

    /// The weights in the engine's format (f32 safetensors under the generic names).
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let tensors: Vec<(String, Tensor)> = self.params.iter().map(|(n, v)| (n.clone(), v.as_tensor().clone())).collect();
        let mut data = Vec::new();
        for (name, t) in &tensors {
            let values: Vec<f32> = t.flatten_all().and_then(|t| t.to_vec1()).map_err(candle_err)?;
            data.push((name.clone(), t.dims().to_vec(), values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()));
        }
        let views = data
            .iter()
            .map(|(name, shape, bytes)| {
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes).map(|v| (name.clone(), v))
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
        self.params.get(name).unwrap_or_else(|| panic!("parameter `{name}` exists for this config")).as_tensor()
    }

    /// (N, in) -> (N, out): x W^T + b.
    fn linear(&self, x: &Tensor, name: &str) -> CResult<Tensor> {
        x.matmul(&self.p(&format!("{name}.weight")).t()?)?.broadcast_add(self.p(&format!("{name}.bias")))
    }

    /// LayerNorm of each row of (N, d): (x - mean) / sqrt(var + eps) * gamma + beta.
    fn layer_norm(&self, x: &Tensor, name: &str) -> CResult<Tensor> {
        let mean = x.mean_keepdim(D::Minus1)?; // (N, 1)
        let centred = x.broadcast_sub(&mean)?; // (N, d)
        let var = centred.sqr()?.mean_keepdim(D::Minus1)?; // (N, 1)
        let standard = centred.broadcast_div(&(var + self.config.norm_eps as f64)?.sqrt()?)?; // (N, d)
        standard.broadcast_mul(self.p(&format!("{name}.gamma")))?.broadcast_add(self.p(&format!("{name}.beta")))
    }

    /// Multi-head attention of x (B*T, d) over its own rows (the mask keeps a causal model
    /// from looking ahead); returns (B*T, d).
    fn attention(&self, x: &Tensor, b: usize, t: usize, layer: &str) -> CResult<Tensor> {
        let (h, hd) = (self.config.n_heads, self.config.head_dim);
        let heads = |name: &str| -> CResult<Tensor> {
            self.linear(x, &format!("{layer}.attention.{name}"))? // (B*T, d)
                .reshape((b, t, h, hd))?
                .transpose(1, 2)? // (B, H, T, hd)
                .contiguous()
        };
        let (q, k, v) = (heads("query")?, heads("key")?, heads("value")?);
        let scores = (q.matmul(&k.t()?)? / (hd as f64).sqrt())?; // (B, H, T, T)
        let scores = scores.broadcast_add(&self.mask.narrow(0, 0, t)?.narrow(1, 0, t)?)?; // (B, H, T, T)
        let weights = candle_nn::ops::softmax(&scores, D::Minus1)?; // (B, H, T, T)
        let mixed = weights.matmul(&v)?; // (B, H, T, hd)
        let joined = mixed.transpose(1, 2)?.reshape((b * t, h * hd))?; // (B*T, d)
        self.linear(&joined, &format!("{layer}.attention.output")) // (B*T, d)
    }

    /// ReLU FFN: max(0, x W1^T + b1) W2^T + b2, (B*T, d) -> (B*T, d).
    fn feed_forward(&self, x: &Tensor, layer: &str) -> CResult<Tensor> {
        let hidden = self.linear(x, &format!("{layer}.ffn.up"))?.relu()?; // (B*T, d_ff)
        self.linear(&hidden, &format!("{layer}.ffn.down")) // (B*T, d)
    }

    /// Token ids (B, T) -> logits (B*T, vocab), through exactly the engine's steps.
    pub fn logits(&self, ids: &Tensor) -> CResult<Tensor> {
        let c = &self.config;
        let (b, t) = ids.dims2()?;
        let embedding = self.p("token_embedding"); // (V, d)
        let tokens = (embedding.index_select(&ids.flatten_all()?, 0)? * c.embedding_scale as f64)?; // (B*T, d): sqrt(d) E[t]
        let positions = self.position_table.narrow(0, 0, t)?.repeat((b, 1))?; // (B*T, d)
        let mut x = (tokens + positions)?; // (B*T, d)
        for i in 0..c.n_layers {
            let l = format!("layers.{i}");
            x = match c.norm_place {
                NormPlace::Post => {
                    let x = self.layer_norm(&(&x + self.attention(&x, b, t, &l)?)?, &format!("{l}.attention_norm"))?; // (B*T, d)
                    self.layer_norm(&(&x + self.feed_forward(&x, &l)?)?, &format!("{l}.ffn_norm"))? // (B*T, d)
                }
                NormPlace::Pre => {
                    let h = self.layer_norm(&x, &format!("{l}.attention_norm"))?; // (B*T, d)
                    let x = (&x + self.attention(&h, b, t, &l)?)?; // (B*T, d)
                    let h = self.layer_norm(&x, &format!("{l}.ffn_norm"))?; // (B*T, d)
                    (&x + self.feed_forward(&h, &l)?)? // (B*T, d)
                }
            };
        }
        if c.norm_place == NormPlace::Pre {
            x = self.layer_norm(&x, "final_norm")?; // (B*T, d)
        }
        x.matmul(&embedding.t()?) // (B*T, V): the unembedding is the embedding, transposed
    }

    /// Mean cross-entropy of predicting `targets` (B, T) from `ids` (B, T).
    pub fn loss(&self, ids: &Tensor, targets: &Tensor) -> CResult<Tensor> {
        let logits = self.logits(ids)?; // (B*T, V)
        candle_nn::loss::cross_entropy(&logits, &targets.flatten_all()?)
    }
}

/// (B, T) u32 tensor from rows of ids.
pub fn id_tensor(rows: &[Vec<u32>]) -> Result<Tensor> {
    let t = rows.first().map_or(0, Vec::len);
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    Tensor::from_vec(flat, (rows.len(), t), &Device::Cpu).map_err(candle_err)
}

pub const DTYPE: DType = DType::F32;
