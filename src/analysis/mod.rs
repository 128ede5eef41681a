//! Things computed from a trace or a forward pass rather than inside it.

pub mod heads;
pub mod pooling;
pub mod prediction;
pub mod position;
