//! How far apart two traces of one text are: the check that two backends computed the same
//! pass. Attention weights are compared as they are (each in [0, 1]); every other step
//! relative to its size, |b - a| / max(1, |a|), since hidden states and logits reach tens.

use serde::Serialize;

use super::{Op, Trace};
use crate::error::{Result, VizError};

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// The largest |b - a| of any attention weight (self- or cross-attention).
    pub attention: f32,
    /// The largest |b - a| / max(1, |a|) of any other value of any step.
    pub other: f32,
    /// The step where `other` is largest, by index (for "largest at ...").
    pub other_step: usize,
    /// How many values were compared.
    pub values: usize,
    /// How many steps were not compared: their values were still on a device (a GPU pass
    /// reads back what the views on screen show, the rest when asked: `trace::Readback`).
    pub unread_steps: usize,
}

impl Trace {
    /// The largest differences between this trace (`a`, the reference) and `b`, which must
    /// hold the same tokens and the same steps of the same shapes. Masked scores (-inf) must
    /// be -inf in both. An encoder-decoder's traces are compared with their encoder's passes
    /// (`source`) too; an encoder step's index counts after the decoder's steps.
    pub fn largest_difference(&self, b: &Trace) -> Result<Difference> {
        let mut d = self.largest_difference_of_steps(b)?;
        match (&self.source, &b.source) {
            (None, None) => {}
            (Some(sa), Some(sb)) => {
                let e = sa.largest_difference_of_steps(sb)?;
                d.attention = d.attention.max(e.attention);
                if e.other > d.other {
                    d.other = e.other;
                    d.other_step = self.steps.len() + e.other_step;
                }
                d.values += e.values;
                d.unread_steps += e.unread_steps;
            }
            _ => {
                return Err(VizError::Gpu(
                    "the two passes differ in their encoder's pass (one has none)".into(),
                ))
            }
        }
        Ok(d)
    }

    fn largest_difference_of_steps(&self, b: &Trace) -> Result<Difference> {
        let differ = |what: String| Err(VizError::Gpu(format!("the two passes differ in {what}")));
        if self.tokens != b.tokens {
            return differ("their tokens".into());
        }
        if self.steps.len() != b.steps.len() {
            return differ(format!(
                "their number of steps ({} and {})",
                self.steps.len(),
                b.steps.len()
            ));
        }
        let mut d = Difference {
            attention: 0.0,
            other: 0.0,
            other_step: 0,
            values: 0,
            unread_steps: 0,
        };
        for (index, (sa, sb)) in self.steps.iter().zip(&b.steps).enumerate() {
            let (va, vb) = (sa.tensor.view(), sb.tensor.view()); // the same shape, checked next
            if sa.name != sb.name || va.shape() != vb.shape() {
                return differ(format!(
                    "step {index} ({} {:?}, {} {:?})",
                    sa.name,
                    va.shape(),
                    sb.name,
                    vb.shape()
                ));
            }
            if sa.tensor.data.awaits_device() || sb.tensor.data.awaits_device() {
                d.unread_steps += 1;
                continue;
            }
            let is_attention = matches!(sa.op, Op::Softmax | Op::CrossSoftmax);
            for (&x, &y) in va.iter().zip(vb.iter()) {
                d.values += 1;
                if x.is_infinite() || y.is_infinite() || x.is_nan() || y.is_nan() {
                    if x.to_bits() != y.to_bits() && !(x.is_nan() && y.is_nan()) {
                        return differ(format!("{}: {x} against {y}", sa.name));
                    }
                    continue;
                }
                if is_attention {
                    d.attention = d.attention.max((x - y).abs());
                } else {
                    let gap = (x - y).abs() / x.abs().max(1.0);
                    if gap > d.other {
                        d.other = gap;
                        d.other_step = index;
                    }
                }
            }
        }
        Ok(d)
    }
}
