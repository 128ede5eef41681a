//! The KV cache of a causal model: every layer's keys (after rotary) and values of the tokens
//! already computed. In a causal model a token's keys and values depend only on the tokens
//! up to it, so text appended later never changes them: the next pass computes only the new
//! tokens' queries, keys and values and attends over the cached ones too.

//!
//! The cache holds its tensors where the backend that computes the pass keeps them (`H`): an
//! ndarray on the CPU, a buffer on a GPU (`Backend::Heads`).

use ndarray::{s, Array3};

use super::backend::Shaped;

/// One layer's cached keys and values.
#[derive(Debug, Clone)]
pub struct LayerCache<H = Array3<f32>> {
    /// (kv_heads, P, head_dim), rotated to their positions.
    pub keys: H,
    /// (kv_heads, P, head_dim)
    pub values: H,
}

#[derive(Debug, Clone)]
pub struct KvCache<H = Array3<f32>> {
    layers: Vec<LayerCache<H>>,
    /// Positions cached (the same in every layer).
    len: usize,
}

impl<H> Default for KvCache<H> {
    fn default() -> Self {
        KvCache {
            layers: Vec::new(),
            len: 0,
        }
    }
}

impl<H: Clone> KvCache<H> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Tokens whose keys and values are cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `keys` and `values` (kv_heads, n, hd) of the new tokens to layer `layer`, and
    /// returns all of that layer's keys and values (kv_heads, P + n, hd). `join` puts a
    /// layer's cached tensor and the new one together along the token axis (the backend's
    /// `Backend::append_tokens`); `tokens` counts a tensor's tokens.
    pub fn append(
        &mut self,
        layer: usize,
        keys: H,
        values: H,
        join: impl Fn(&H, &H) -> H,
        tokens: impl Fn(&H) -> usize,
    ) -> (H, H) {
        if layer == self.layers.len() {
            self.layers.push(LayerCache { keys, values });
        } else {
            let cached = &mut self.layers[layer];
            cached.keys = join(&cached.keys, &keys); // (kv, P + n, hd)
            cached.values = join(&cached.values, &values); // (kv, P + n, hd)
        }
        let cached = &self.layers[layer];
        // Every layer appends the same tokens: the last layer sets the cache's length.
        self.len = tokens(&cached.keys);
        (cached.keys.clone(), cached.values.clone())
    }
}

impl<H: Clone> KvCache<H> {
    /// Keeps the first `n` positions only (the tokens before the first one that changed);
    /// `first` keeps a tensor's first n tokens (the backend's `Backend::first_tokens`).
    pub fn truncate_with(&mut self, n: usize, first: impl Fn(&H, usize) -> H) {
        if n >= self.len {
            return;
        }
        for layer in &mut self.layers {
            layer.keys = first(&layer.keys, n); // (kv_heads, n, hd)
            layer.values = first(&layer.values, n); // (kv_heads, n, hd)
        }
        if n == 0 {
            self.layers.clear();
        }
        self.len = n;
    }
}

impl<H: Shaped> KvCache<H> {
    /// Bytes of keys and values held (f32 values, wherever the backend keeps them).
    pub fn bytes(&self) -> usize {
        let count = |h: &H| h.dims().iter().product::<usize>();
        self.layers
            .iter()
            .map(|l| (count(&l.keys) + count(&l.values)) * std::mem::size_of::<f32>())
            .sum()
    }
}

impl KvCache<Array3<f32>> {
    /// Keeps the first `n` positions only (the tokens before the first one that changed).
    pub fn truncate(&mut self, n: usize) {
        self.truncate_with(n, |h, n| h.slice(s![.., ..n, ..]).to_owned()); // (kv_heads, n, hd)
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Layer `layer`'s cache so far: keys and values (kv_heads, P, hd), or `None` when empty.
    pub fn layer(&self, layer: usize) -> Option<&LayerCache> {
        self.layers.get(layer)
    }
}
