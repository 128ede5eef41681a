//! Things computed from a trace or a forward pass rather than inside it.

pub mod ablation;
pub mod antecedents;
pub mod attribution;
pub mod generation;
pub mod heads;
pub mod logit_lens;
pub mod patching;
pub mod pooling;
pub mod position;
pub mod prediction;
pub mod query;
pub mod sampling;
