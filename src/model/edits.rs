//! Changes to a pass that test what a part of the model does: a head's output, a feed-forward
//! layer's output or one token's residual stream replaced by given values (zeros switch the
//! part off, its mean over the sentence keeps its average and drops what it says about each
//! token, another run's values patch that run into this one), the positional encoding left
//! out, the causal mask lifted. The one pass (`forward`) applies each where the part's output
//! is made, so every later step, and every view of the trace, sees the change. Where the
//! replacement values come from (another run, a mean) is decided above, in `analysis::edits`.

use crate::error::{Result, VizError};
use crate::model::config::ModelConfig;

/// Where a replacement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Site {
    /// One head's output (its weighted sum of values, before the output projection):
    /// (T, head_dim) values.
    Head { layer: usize, head: usize },
    /// One cross-attention head's output in an encoder-decoder's decoder: (T, head_dim).
    CrossHead { layer: usize, head: usize },
    /// One layer's feed-forward output (before it joins the stream): (T, d_model).
    Ffn { layer: usize },
    /// The residual stream entering `layer` at one token: (d_model) values.
    Stream { layer: usize, position: usize },
}

/// What replaces a site's values.
#[derive(Debug, Clone, PartialEq)]
pub enum With {
    /// Zeros: the part switched off.
    Zeros,
    /// One row (head_dim or d_model values) at every token: a mean over the sentence. Fits a
    /// pass of any length (an encoder-decoder's decoder grows a token a pass).
    EveryToken(Vec<f32>),
    /// Every value, row-major, as long as the site's shape (see `Site`): another run's.
    Values(Vec<f32>),
}

/// A site and what replaces what the pass computes there.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub site: Site,
    pub with: With,
}

/// Everything a pass changes; `Edits::default()` changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edits {
    pub replacements: Vec<Replacement>,
    /// Leave the positional encoding out: no position added to the embeddings, no rotation
    /// of queries and keys.
    pub without_position: bool,
    /// Let every token see every other, the later ones too (a causal model never trained so).
    pub without_mask: bool,
}

/// Pieces of a row-major tensor to overwrite: each an offset and the values from there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overwrite {
    pub pieces: Vec<(usize, Vec<f32>)>,
}

impl Overwrite {
    /// Writes the pieces into `values` (the tensor, row-major).
    pub fn apply(&self, values: &mut [f32]) {
        for (offset, piece) in &self.pieces {
            values[*offset..offset + piece.len()].copy_from_slice(piece);
        }
    }

    /// The pieces as two tensors of `len` values: the replacement (0 where nothing is
    /// replaced) and 1 where a value is taken from it, 0 where the pass's own value stays
    /// (what a GPU kernel reads).
    pub fn spread(&self, len: usize) -> (Vec<f32>, Vec<f32>) {
        let mut values = vec![0.0; len];
        let mut take = vec![0.0; len];
        for (offset, piece) in &self.pieces {
            values[*offset..offset + piece.len()].copy_from_slice(piece);
            take[*offset..offset + piece.len()].fill(1.0);
        }
        (values, take)
    }
}

static NO_EDITS: Edits = Edits {
    replacements: Vec::new(),
    without_position: false,
    without_mask: false,
};

impl Edits {
    /// No change: the model as trained.
    pub const NONE: &'static Edits = &NO_EDITS;

    pub fn is_empty(&self) -> bool {
        self.replacements.is_empty() && !self.without_position && !self.without_mask
    }

    /// Checks every site against the model and every replacement's length against a pass
    /// over `tokens` tokens, before any value is written.
    pub fn check(&self, c: &ModelConfig, tokens: usize) -> Result<()> {
        let bad = |what: String| Err(VizError::BadEdit(what));
        let cross_layers = if c.is_encoder_decoder() {
            c.n_layers
        } else {
            0
        };
        for r in &self.replacements {
            let (layers, expected) = match r.site {
                Site::Head { layer, head } | Site::CrossHead { layer, head } => {
                    if head >= c.n_heads {
                        return bad(format!(
                            "head {head} does not exist: the model has {} heads a layer",
                            c.n_heads
                        ));
                    }
                    let layers = match r.site {
                        Site::CrossHead { .. } => cross_layers,
                        _ => c.n_layers,
                    };
                    (layers, (layer, tokens * c.head_dim))
                }
                Site::Ffn { layer } => (c.n_layers, (layer, tokens * c.d_model)),
                Site::Stream { layer, position } => {
                    if position >= tokens {
                        return bad(format!(
                            "position {position} does not exist: the text has {tokens} tokens"
                        ));
                    }
                    (c.n_layers, (layer, c.d_model))
                }
            };
            let (layer, len) = expected;
            let row = match r.site {
                Site::Head { .. } | Site::CrossHead { .. } => c.head_dim,
                _ => c.d_model,
            };
            if layer >= layers {
                return bad(match (r.site, layers) {
                    (Site::CrossHead { .. }, 0) => {
                        "only an encoder-decoder's decoder has cross-attention heads".into()
                    }
                    _ => format!("layer {layer} does not exist: the model has {layers} layers"),
                });
            }
            let given = match &r.with {
                With::Zeros => continue,
                With::EveryToken(v) => (v, row),
                With::Values(v) => (v, len),
            };
            if given.0.len() != given.1 {
                return bad(format!(
                    "{:?} takes {} values, not {} (another run of a different length?)",
                    r.site,
                    given.1,
                    given.0.len()
                ));
            }
            if !given.0.iter().all(|v| v.is_finite()) {
                return bad(format!("{:?} was given a value that is not finite", r.site));
            }
        }
        Ok(())
    }

    /// The changes for a pass over the tokens from `first` on that follows a KV cache of the
    /// first `first` (computed without changes): each replacement's values from that token
    /// on, a stream row counted from there. Only another run's values (`With::Values`) can be
    /// cut so, and only when they equal this run's own for the cached tokens (as when
    /// patching two texts that share their first `first` tokens): that is the caller's to
    /// know. Zeros, a mean, a stream row before `first`, no positional encoding or no mask
    /// would change the cached tokens too and are refused.
    pub fn from_token(&self, first: usize, c: &ModelConfig) -> Result<Edits> {
        if first == 0 {
            return Ok(self.clone());
        }
        let refuse = |what: &str| {
            Err(VizError::BadEdit(format!(
                "{what} changes the first {first} tokens too: the pass cannot follow their \
                 cached keys and values"
            )))
        };
        if self.without_position {
            return refuse("leaving the positional encoding out");
        }
        if self.without_mask {
            return refuse("lifting the causal mask");
        }
        let mut replacements = Vec::with_capacity(self.replacements.len());
        for r in &self.replacements {
            let With::Values(values) = &r.with else {
                return refuse(&format!("replacing {:?} by zeros or a mean", r.site));
            };
            let (site, values) = match r.site {
                Site::Head { .. } | Site::CrossHead { .. } | Site::Ffn { .. } => {
                    let row = match r.site {
                        Site::Ffn { .. } => c.d_model,
                        _ => c.head_dim,
                    };
                    let start = (first * row).min(values.len());
                    (r.site, values[start..].to_vec())
                }
                Site::Stream { layer, position } if position >= first => (
                    Site::Stream {
                        layer,
                        position: position - first,
                    },
                    values.clone(),
                ),
                Site::Stream { .. } => {
                    return refuse(&format!("replacing {:?}", r.site));
                }
            };
            replacements.push(Replacement {
                site,
                with: With::Values(values),
            });
        }
        Ok(Edits {
            replacements,
            without_position: false,
            without_mask: false,
        })
    }

    /// The head outputs of `layer` ((heads, T, hd), row-major, T = `tokens`) to overwrite, if
    /// any: a cross-attention's when `cross`.
    pub fn heads(
        &self,
        layer: usize,
        cross: bool,
        tokens: usize,
        head_dim: usize,
    ) -> Option<Overwrite> {
        self.collect(tokens, head_dim, |site| match site {
            Site::Head { layer: l, head } if !cross && l == layer => Some(head * tokens * head_dim),
            Site::CrossHead { layer: l, head } if cross && l == layer => {
                Some(head * tokens * head_dim)
            }
            _ => None,
        })
    }

    /// The feed-forward output of `layer` ((T, d), T = `tokens`) to overwrite, if any.
    pub fn ffn(&self, layer: usize, tokens: usize, d_model: usize) -> Option<Overwrite> {
        self.collect(tokens, d_model, |site| {
            matches!(site, Site::Ffn { layer: l } if l == layer).then_some(0)
        })
    }

    /// The rows of the stream entering `layer` ((T, d)) to overwrite, if any.
    pub fn stream(&self, layer: usize, d_model: usize) -> Option<Overwrite> {
        self.collect(1, d_model, |site| match site {
            Site::Stream { layer: l, position } if l == layer => Some(position * d_model),
            _ => None,
        })
    }

    /// The pieces of the sites `offset` places (where each starts), each `rows` rows of
    /// `width` values.
    fn collect(
        &self,
        rows: usize,
        width: usize,
        offset: impl Fn(Site) -> Option<usize>,
    ) -> Option<Overwrite> {
        let pieces: Vec<(usize, Vec<f32>)> = self
            .replacements
            .iter()
            .filter_map(|r| {
                let values = match &r.with {
                    With::Zeros => vec![0.0; rows * width],
                    With::EveryToken(row) => row.repeat(rows),
                    With::Values(v) => v.clone(),
                };
                offset(r.site).map(|o| (o, values))
            })
            .collect();
        (!pieces.is_empty()).then_some(Overwrite { pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overwrite_replaces_its_pieces_only() {
        let o = Overwrite {
            pieces: vec![(1, vec![7.0, 8.0]), (4, vec![9.0])],
        };
        let mut v = vec![0.0, 1.0, 2.0, 3.0, 4.0];
        o.apply(&mut v);
        assert_eq!(v, vec![0.0, 7.0, 8.0, 3.0, 9.0]);
        let (values, take) = o.spread(5);
        assert_eq!(values, vec![0.0, 7.0, 8.0, 0.0, 9.0]);
        assert_eq!(take, vec![0.0, 1.0, 1.0, 0.0, 1.0]);
    }
}
