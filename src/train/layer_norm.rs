//! LayerNorm over each row, as one candle operation with its own backward pass.
//!
//! Put together from candle's tensor operations (a mean, a subtraction, a square, another
//! mean, a square root, a division, a product and a sum, each broadcast), a LayerNorm walks its
//! rows eight times forward and about twice that backward, each time into a freshly allocated
//! tensor; a training step runs seven of them on 4,096 rows. Here the forward pass reads each
//! row twice and the backward pass reads it twice, writing the gradients of the input, the
//! gain and the bias in one go. candle-nn's `layer_norm` fuses the forward pass only (it has no
//! backward pass, so a trainer cannot use it), hence this file. `tests/engine/trainer.rs`
//! checks it against the composed operations, value and gradients.

use super::cpu_values::f32_values;
use candle_core::{CpuStorage, CustomOp3, Layout, Result as CResult, Shape, Tensor};

/// `(x - mean) / sqrt(var + eps) * gamma + beta` of each row of `x` (N, d), the mean and the
/// (biased) variance taken over the row; `gamma` and `beta` (d,). f32. Its backward pass
/// reaches all three.
pub fn layer_norm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> CResult<Tensor> {
    let (rows, d) = x.dims2()?; // (N, d)
    if d == 0 {
        candle_core::bail!("layer norm: rows of width 0 ({rows} of them) have no mean");
    }
    for (name, v) in [("gain", gamma), ("bias", beta)] {
        if v.dims() != [d] {
            candle_core::bail!(
                "layer norm: the {name} has shape {:?}, the rows are {d} wide",
                v.dims()
            );
        }
    }
    x.contiguous()?.apply_op3(
        &gamma.contiguous()?, // (d,)
        &beta.contiguous()?,  // (d,)
        LayerNorm { eps },
    ) // (N, d)
}

struct LayerNorm {
    eps: f32,
}

/// A row's mean and 1 / sqrt(var + eps), summed in f64.
fn moments(row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f64;
    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean as f32, (1.0 / (var + eps as f64).sqrt()) as f32)
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        gamma: &CpuStorage,
        gamma_layout: &Layout,
        beta: &CpuStorage,
        beta_layout: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let x_values = f32_values(x, x_layout, "layer norm")?; // (N*d)
        let gamma = f32_values(gamma, gamma_layout, "layer norm")?; // (d,)
        let beta = f32_values(beta, beta_layout, "layer norm")?; // (d,)
        let d = gamma.len();
        let mut out = Vec::with_capacity(x_values.len()); // (N*d)
        for row in x_values.chunks_exact(d) {
            let (mean, rstd) = moments(row, self.eps);
            out.extend(
                row.iter()
                    .zip(gamma.iter().zip(beta))
                    .map(|(&v, (&g, &b))| (v - mean) * rstd * g + b),
            );
        }
        Ok((CpuStorage::F32(out), x_layout.shape().clone()))
    }

    /// With x̂ = (x - mean) · rstd and g = dy · gamma, each row's
    /// dx = rstd · (g - mean(g) - x̂ · mean(g · x̂)); dgamma = Σ_rows dy · x̂, dbeta = Σ_rows dy.
    fn bwd(
        &self,
        x: &Tensor,
        gamma: &Tensor,
        _beta: &Tensor,
        _out: &Tensor,
        grad: &Tensor,
    ) -> CResult<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let rows = x.dim(0)?;
        // (N + 2, d): dx, then dgamma and dbeta as two more rows.
        let all = x.apply_op3_no_bwd(
            &grad.contiguous()?,
            gamma,
            &LayerNormBackward { eps: self.eps },
        )?;
        Ok((
            Some(all.narrow(0, 0, rows)?),                 // (N, d)
            Some(all.narrow(0, rows, 1)?.squeeze(0)?),     // (d,)
            Some(all.narrow(0, rows + 1, 1)?.squeeze(0)?), // (d,)
        ))
    }
}

/// `LayerNorm`'s gradients: (x (N, d), dy (N, d), gamma (d,)) -> (N + 2, d).
struct LayerNormBackward {
    eps: f32,
}

impl CustomOp3 for LayerNormBackward {
    fn name(&self) -> &'static str {
        "layer-norm-backward"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
        gamma: &CpuStorage,
        gamma_layout: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let x_values = f32_values(x, x_layout, "layer norm")?; // (N*d)
        let grad = f32_values(grad, grad_layout, "layer norm")?; // (N*d)
        let gamma = f32_values(gamma, gamma_layout, "layer norm")?; // (d,)
        let d = gamma.len();
        let rows = x_values.len() / d;
        let mut out = Vec::with_capacity(x_values.len() + 2 * d); // (N*d + 2d)
        let mut d_gamma = vec![0f64; d];
        let mut d_beta = vec![0f64; d];
        let mut g = vec![0f32; d]; // dy · gamma of one row
        for (row, dy) in x_values.chunks_exact(d).zip(grad.chunks_exact(d)) {
            let (mean, rstd) = moments(row, self.eps);
            let (mut sum_g, mut sum_gx) = (0f64, 0f64);
            for j in 0..d {
                let x_hat = (row[j] - mean) * rstd;
                g[j] = dy[j] * gamma[j];
                sum_g += g[j] as f64;
                sum_gx += (g[j] * x_hat) as f64;
                d_gamma[j] += (dy[j] * x_hat) as f64;
                d_beta[j] += dy[j] as f64;
            }
            let (mean_g, mean_gx) = ((sum_g / d as f64) as f32, (sum_gx / d as f64) as f32);
            out.extend((0..d).map(|j| rstd * (g[j] - mean_g - (row[j] - mean) * rstd * mean_gx)));
        }
        out.extend(d_gamma.iter().map(|&v| v as f32));
        out.extend(d_beta.iter().map(|&v| v as f32));
        Ok((CpuStorage::F32(out), Shape::from((rows + 2, d))))
    }
}
