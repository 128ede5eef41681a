//! The parameters of a model, laid out by role rather than by checkpoint name; the files in
//! `checkpoints/` map each real model's tensor names onto this.

use ndarray::{Array1, Array2};

use super::config::{Activation, LmHead, ModelConfig, NormKind, Position};
use super::linear::Linear;
use super::matrix::Matrix;
use crate::error::{Result, VizError};

#[derive(Debug, Clone)]
pub struct NormWeights {
    /// (d_model)
    pub gamma: Array1<f32>,
    /// (d_model); `None` for RMSNorm.
    pub beta: Option<Array1<f32>>,
}

#[derive(Debug, Clone)]
pub struct AttentionWeights {
    /// (heads * head_dim, d_model)
    pub query: Linear,
    /// (kv_heads * head_dim, d_model)
    pub key: Linear,
    /// (kv_heads * head_dim, d_model)
    pub value: Linear,
    /// (d_model, heads * head_dim)
    pub output: Linear,
}

#[derive(Debug, Clone)]
pub struct FfnWeights {
    /// (d_ff, d_model)
    pub up: Linear,
    /// (d_ff, d_model); SwiGLU only.
    pub gate: Option<Linear>,
    /// (d_model, d_ff)
    pub down: Linear,
}

/// A decoder layer's cross-attention: its queries read the decoder's stream, its keys and
/// values the encoder's output.
#[derive(Debug, Clone)]
pub struct CrossWeights {
    /// Post-LN: the norm after the cross-attention residual; pre-LN: the norm before it.
    pub norm: NormWeights,
    pub attention: AttentionWeights,
}

#[derive(Debug, Clone)]
pub struct LayerWeights {
    /// Post-LN: the norm after the attention residual; pre-LN: the norm before attention.
    pub attention_norm: NormWeights,
    pub attention: AttentionWeights,
    /// Post-LN: after the FFN residual; pre-LN: before the FFN.
    pub ffn_norm: NormWeights,
    pub ffn: FfnWeights,
    /// Decoder layers of an encoder-decoder only.
    pub cross: Option<CrossWeights>,
}

#[derive(Debug, Clone)]
pub struct Weights {
    /// (vocab, d_model), f32 or quantized blocks.
    pub token_embedding: Matrix,
    /// (token_types, d_model)
    pub segment_embedding: Option<Array2<f32>>,
    /// (context, d_model), learned positions only.
    pub position_embedding: Option<Array2<f32>>,
    pub embedding_norm: Option<NormWeights>,
    pub layers: Vec<LayerWeights>,
    /// Pre-LN models only.
    pub final_norm: Option<NormWeights>,
    /// (vocab, d_model) for a separate head; tied heads reuse `token_embedding`.
    pub lm_head: Option<Matrix>,
    /// The encoder stack of an encoder-decoder (`encoder_layers` of them), else empty.
    pub encoder_layers: Vec<LayerWeights>,
    /// The encoder's final norm (pre-LN encoder-decoders only).
    pub encoder_final_norm: Option<NormWeights>,
}

fn expect(name: &str, found: &[usize], expected: &[usize]) -> Result<()> {
    if found != expected {
        return Err(VizError::ShapeMismatch {
            name: name.into(),
            expected: expected.to_vec(),
            found: found.to_vec(),
        });
    }
    Ok(())
}

impl NormWeights {
    fn check(&self, name: &str, kind: NormKind, d: usize) -> Result<()> {
        expect(&format!("{name}.gamma"), self.gamma.shape(), &[d])?;
        match (&self.beta, kind) {
            (Some(b), NormKind::Layer) => expect(&format!("{name}.beta"), b.shape(), &[d]),
            (None, NormKind::Rms) => Ok(()),
            (None, NormKind::Layer) => Err(VizError::MissingTensor {
                name: format!("{name}.beta"),
            }),
            (Some(_), NormKind::Rms) => {
                Err(VizError::BadConfig(format!("{name}: RMSNorm has no beta")))
            }
        }
    }
}

fn check_linear(name: &str, l: &Linear, out: usize, inp: usize, bias: bool) -> Result<()> {
    expect(&format!("{name}.weight"), &l.weight.shape(), &[out, inp])?;
    match (&l.bias, bias) {
        (Some(b), _) => expect(&format!("{name}.bias"), b.shape(), &[out]),
        (None, true) => Err(VizError::MissingTensor {
            name: format!("{name}.bias"),
        }),
        (None, false) => Ok(()),
    }
}

impl Weights {
    /// Checks every shape against the config, so a forward pass can never index out of bounds.
    pub fn check(&self, c: &ModelConfig) -> Result<()> {
        c.validate()?;
        let d = c.d_model;
        expect(
            "token_embedding",
            &self.token_embedding.shape(),
            &[c.vocab_size, d],
        )?;
        match (&self.segment_embedding, c.token_types) {
            (None, 0) => {}
            (Some(s), n) if n > 0 => expect("segment_embedding", s.shape(), &[n, d])?,
            _ => {
                return Err(VizError::BadConfig(
                    "segment embeddings do not match token_types".into(),
                ))
            }
        }
        match (&self.position_embedding, c.position) {
            (Some(p), Position::Learned) => {
                expect("position_embedding", p.shape(), &[c.context, d])?
            }
            (None, Position::Learned) => {
                return Err(VizError::MissingTensor {
                    name: "position_embedding".into(),
                })
            }
            (Some(_), _) => {
                return Err(VizError::BadConfig(
                    "a learned position table was given but the config does not use one".into(),
                ))
            }
            (None, _) => {}
        }
        if let Some(n) = &self.embedding_norm {
            n.check("embedding_norm", c.norm, d)?;
        } else if c.embedding_norm {
            return Err(VizError::MissingTensor {
                name: "embedding_norm".into(),
            });
        }
        if self.layers.len() != c.n_layers {
            return Err(VizError::BadConfig(format!(
                "config says {} layers, weights have {}",
                c.n_layers,
                self.layers.len()
            )));
        }
        let q = c.n_heads * c.head_dim;
        let kv = c.n_kv_heads * c.head_dim;
        if self.encoder_layers.len() != c.encoder_layers {
            return Err(VizError::BadConfig(format!(
                "config says {} encoder layers, weights have {}",
                c.encoder_layers,
                self.encoder_layers.len()
            )));
        }
        let stacks = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("layer{i}"), l, c.is_encoder_decoder()));
        let encoder = self
            .encoder_layers
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("encoder.layer{i}"), l, false));
        for (p, l, crossed) in stacks.chain(encoder) {
            match (&l.cross, crossed) {
                (Some(x), true) => {
                    x.norm.check(&format!("{p}.cross_norm"), c.norm, d)?;
                    check_linear(
                        &format!("{p}.cross_attention.query"),
                        &x.attention.query,
                        q,
                        d,
                        c.linear_bias,
                    )?;
                    check_linear(
                        &format!("{p}.cross_attention.key"),
                        &x.attention.key,
                        kv,
                        d,
                        c.linear_bias,
                    )?;
                    check_linear(
                        &format!("{p}.cross_attention.value"),
                        &x.attention.value,
                        kv,
                        d,
                        c.linear_bias,
                    )?;
                    check_linear(
                        &format!("{p}.cross_attention.output"),
                        &x.attention.output,
                        d,
                        q,
                        c.linear_bias,
                    )?;
                }
                (None, true) => {
                    return Err(VizError::MissingTensor {
                        name: format!("{p}.cross_attention"),
                    })
                }
                (Some(_), false) => {
                    return Err(VizError::BadConfig(format!(
                    "{p} has cross-attention, which only an encoder-decoder's decoder layers have"
                )))
                }
                (None, false) => {}
            }
            l.attention_norm
                .check(&format!("{p}.attention_norm"), c.norm, d)?;
            l.ffn_norm.check(&format!("{p}.ffn_norm"), c.norm, d)?;
            check_linear(
                &format!("{p}.query"),
                &l.attention.query,
                q,
                d,
                c.linear_bias,
            )?;
            check_linear(&format!("{p}.key"), &l.attention.key, kv, d, c.linear_bias)?;
            check_linear(
                &format!("{p}.value"),
                &l.attention.value,
                kv,
                d,
                c.linear_bias,
            )?;
            check_linear(
                &format!("{p}.output"),
                &l.attention.output,
                d,
                q,
                c.linear_bias,
            )?;
            check_linear(&format!("{p}.ffn_up"), &l.ffn.up, c.d_ff, d, c.linear_bias)?;
            check_linear(
                &format!("{p}.ffn_down"),
                &l.ffn.down,
                d,
                c.d_ff,
                c.linear_bias,
            )?;
            match (&l.ffn.gate, c.activation) {
                (Some(g), Activation::SwiGlu) => {
                    check_linear(&format!("{p}.ffn_gate"), g, c.d_ff, d, c.linear_bias)?
                }
                (None, Activation::SwiGlu) => {
                    return Err(VizError::MissingTensor {
                        name: format!("{p}.ffn_gate"),
                    })
                }
                (Some(_), _) => {
                    return Err(VizError::BadConfig(
                        "a gate projection needs the SwiGLU activation".into(),
                    ))
                }
                (None, _) => {}
            }
        }
        match (
            c.norm_place,
            &self.encoder_final_norm,
            c.is_encoder_decoder(),
        ) {
            (super::config::NormPlace::Pre, Some(n), true) => {
                n.check("encoder_final_norm", c.norm, d)?
            }
            (super::config::NormPlace::Pre, None, true) => {
                return Err(VizError::MissingTensor {
                    name: "encoder_final_norm".into(),
                })
            }
            (_, Some(_), _) => {
                return Err(VizError::BadConfig(
                    "an encoder final norm was given but the model has no pre-LN encoder".into(),
                ))
            }
            _ => {}
        }
        match (c.norm_place, &self.final_norm) {
            (super::config::NormPlace::Pre, Some(n)) => n.check("final_norm", c.norm, d)?,
            (super::config::NormPlace::Pre, None) => {
                return Err(VizError::MissingTensor {
                    name: "final_norm".into(),
                })
            }
            _ => {}
        }
        match (c.lm_head, &self.lm_head) {
            (LmHead::Separate, Some(h)) => expect("lm_head", &h.shape(), &[c.vocab_size, d])?,
            (LmHead::Separate, None) => {
                return Err(VizError::MissingTensor {
                    name: "lm_head".into(),
                })
            }
            (_, Some(_)) => {
                return Err(VizError::BadConfig(
                    "a separate lm_head was given but the config does not use one".into(),
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// The unembedding matrix (vocab, d_model), if the model has a head.
    pub fn unembedding(&self, c: &ModelConfig) -> Option<&Matrix> {
        match c.lm_head {
            LmHead::None => None,
            LmHead::Tied => Some(&self.token_embedding),
            LmHead::Separate => self.lm_head.as_ref(),
        }
    }
}
