//! The KV cache of a causal model: every layer's keys (after rotary) and values of the tokens
//! already computed. In a causal model a token's keys and values depend only on the tokens
//! up to it, so text appended later never changes them: the next pass computes only the new
//! tokens' queries, keys and values and attends over the cached ones too.

use ndarray::{concatenate, s, Array3, ArrayView3, Axis};

/// One layer's cached keys and values.
#[derive(Debug, Clone)]
pub struct LayerCache {
    /// (kv_heads, P, head_dim), rotated to their positions.
    pub keys: Array3<f32>,
    /// (kv_heads, P, head_dim)
    pub values: Array3<f32>,
}

#[derive(Debug, Clone, Default)]
pub struct KvCache {
    layers: Vec<LayerCache>,
    /// Positions cached (the same in every layer).
    len: usize,
}

impl KvCache {
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

    /// Keeps the first `n` positions only (the tokens before the first one that changed).
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        for layer in &mut self.layers {
            layer.keys = layer.keys.slice(s![.., ..n, ..]).to_owned(); // (kv_heads, n, hd)
            layer.values = layer.values.slice(s![.., ..n, ..]).to_owned(); // (kv_heads, n, hd)
        }
        if n == 0 {
            self.layers.clear();
        }
        self.len = n;
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(|l| (l.keys.len() + l.values.len()) * std::mem::size_of::<f32>()).sum()
    }

    /// Layer `layer`'s cache so far: keys and values (kv_heads, P, hd), or `None` when empty.
    pub fn layer(&self, layer: usize) -> Option<&LayerCache> {
        self.layers.get(layer)
    }

    /// Appends `keys` and `values` (kv_heads, n, hd) of the new tokens to layer `layer`, and
    /// returns all of that layer's keys and values (kv_heads, P + n, hd).
    pub fn append(&mut self, layer: usize, keys: ArrayView3<f32>, values: ArrayView3<f32>) -> (ArrayView3<'_, f32>, ArrayView3<'_, f32>) {
        if layer == self.layers.len() {
            let empty = Array3::<f32>::zeros((keys.dim().0, 0, keys.dim().2)); // (kv_heads, 0, hd)
            self.layers.push(LayerCache { keys: empty.clone(), values: empty });
        }
        let cached = &mut self.layers[layer];
        cached.keys = concatenate(Axis(1), &[cached.keys.view(), keys]).expect("same heads and width"); // (kv, P + n, hd)
        cached.values = concatenate(Axis(1), &[cached.values.view(), values]).expect("same heads and width"); // (kv, P + n, hd)
        // Every layer appends the same tokens: the last layer sets the cache's length.
        self.len = cached.keys.dim().1;
        (cached.keys.view(), cached.values.view())
    }
}
