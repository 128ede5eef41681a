//! Host of `layer_norm.wgsl`: LayerNorm or RMSNorm of each row, with the row statistics the
//! layer-norm view shows.
//! CPU twins: `crate::model::norm::apply` and `crate::model::norm::row_mean_std`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;
use crate::model::config::NormKind;

/// A norm's output and its statistics.
pub struct NormOutput {
    /// (T, d)
    pub y: GpuTensor,
    /// (T, 4): each row's input mean and standard deviation, then its output's.
    pub stats: GpuTensor,
}

/// The `kind` norm of each row of `x` (T, d) with `gamma` (d) and, for LayerNorm, the optional
/// `beta` (d).
pub fn layer_norm(
    ctx: &GpuContext,
    kind: NormKind,
    x: &GpuTensor,
    gamma: &GpuTensor,
    beta: Option<&GpuTensor>,
    eps: f32,
) -> Result<NormOutput, GpuError> {
    const WHAT: &str = "layer_norm";
    let &[t, d] = x.shape() else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("x {:?} must be a matrix", x.shape()),
        });
    };
    if gamma.shape() != [d] || beta.is_some_and(|b| b.shape() != [d]) {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("x {:?}, gamma {:?}", x.shape(), gamma.shape()),
        });
    }
    require_f32(&[x, gamma], WHAT)?;
    if let Some(b) = beta {
        require_f32(&[b], WHAT)?;
    }
    let y = GpuTensor::output(ctx, &[t, d], "norm output")?;
    let stats = GpuTensor::output(ctx, &[t, 4], "norm statistics")?;
    let no_beta;
    let beta_or_unread = match beta {
        Some(b) => b,
        None => {
            no_beta = GpuTensor::output(ctx, &[1], "no beta")?;
            &no_beta
        }
    };
    let kernel = ctx.kernel(WHAT, include_str!("layer_norm.wgsl"))?;
    let params = [
        Param::U(size(t, WHAT)?),
        Param::U(size(d, WHAT)?),
        Param::U((kind == NormKind::Rms) as u32),
        Param::U(beta.is_some() as u32),
        Param::F(eps),
    ];
    kernel.dispatch(
        ctx,
        &params,
        &[x, gamma, beta_or_unread, &y, &stats],
        grid(t, WHAT)?,
    )?;
    Ok(NormOutput { y, stats })
}
