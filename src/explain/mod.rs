//! The words beside the numbers: what the stepper says about each step of a pass, and the
//! CLI's `trace --full`, which writes them with the trace. The trace itself carries only
//! names and values; this layer reads it and says what they mean.

mod described_trace;
mod step_text;

pub use described_trace::DescribedTrace;
pub use step_text::{op_text, step_text, StepText};
