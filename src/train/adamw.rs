//! AdamW (Loshchilov & Hutter) with its moments kept where a checkpoint can save them:
//! m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
//! w = w - lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd w).
//! Decay applies to matrices only (not to biases, gamma and beta), as nanoGPT does.

use candle_core::{backprop::GradStore, Tensor, Var};

use super::network::CResult;

pub struct AdamW {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub step: usize,
    /// (variable, first moment, second moment) in the network's parameter order.
    pub state: Vec<(Var, Tensor, Tensor)>,
}

impl AdamW {
    pub fn new(vars: Vec<Var>, weight_decay: f64) -> CResult<Self> {
        let state = vars
            .into_iter()
            .map(|v| {
                let zeros = v.as_tensor().zeros_like()?;
                Ok((v, zeros.clone(), zeros))
            })
            .collect::<CResult<_>>()?;
        Ok(Self {
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            weight_decay,
            step: 0,
            state,
        })
    }

    /// One update with learning rate `lr`.
    pub fn step(&mut self, grads: &GradStore, lr: f64) -> CResult<()> {
        self.step += 1;
        let (b1, b2) = (self.beta1, self.beta2);
        let correction1 = 1.0 - b1.powi(self.step as i32);
        let correction2 = 1.0 - b2.powi(self.step as i32);
        for (var, m, v) in &mut self.state {
            let Some(g) = grads.get(var.as_tensor()) else {
                continue;
            };
            *m = ((&*m * b1)? + (g * (1.0 - b1))?)?;
            *v = ((&*v * b2)? + (g.sqr()? * (1.0 - b2))?)?;
            let update = ((&*m / correction1)? / ((&*v / correction2)?.sqrt()? + self.eps)?)?;
            let decay = if var.rank() >= 2 {
                self.weight_decay
            } else {
                0.0
            };
            let w = var.as_tensor();
            var.set(&((w * (1.0 - lr * decay))? - (update * lr)?)?)?;
        }
        Ok(())
    }
}

/// Scales every gradient so that their joint L2 norm is at most `max_norm`; returns the norm
/// before clipping.
pub fn clip_gradients(grads: &mut GradStore, vars: &[Var], max_norm: f64) -> CResult<f64> {
    let mut sum = 0f64;
    for var in vars {
        if let Some(g) = grads.get(var.as_tensor()) {
            sum += g.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
        }
    }
    let norm = sum.sqrt();
    if norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for var in vars {
            if let Some(g) = grads.get(var.as_tensor()) {
                let scaled = (g * scale)?;
                grads.insert(var.as_tensor(), scaled);
            }
        }
    }
    Ok(norm)
}
