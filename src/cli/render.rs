//! `render`: every view of a trace as SVG and PNG files.

use std::path::Path;

use crate::error::Result;
use crate::trace::Trace;

pub fn render_all(model: &crate::Transformer, trace: &Trace, out: &Path, layer: Option<usize>) -> Result<usize> {
    crate::draw::files::render_all(model, trace, out, layer)
}
