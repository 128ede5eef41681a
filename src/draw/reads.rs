//! What a view reads of a trace, found by drawing it once on a canvas that keeps nothing
//! while `trace::ReadLog` notes every tensor read. A GPU pass's readback then brings back
//! only the steps the views on screen read (`trace::Readback`), and before drawing a view the
//! page can tell whether the values it reads have come back (`waits_for_device`). Drawing is
//! the only way to know exactly: a view's reads depend on its settings and the drawing code,
//! and a list kept by hand beside the drawing code would drift from it.

use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, IntoDrawingArea};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

use super::pixels::{Canvas, Cells};
use crate::trace::{ReadLog, Trace};

/// A canvas of some size on which drawing does nothing (text is measured roughly: a view's
/// layout, not its look, decides what it reads).
pub struct NullCanvas {
    size: (u32, u32),
}

impl NullCanvas {
    pub fn new(size: (u32, u32)) -> Self {
        NullCanvas { size }
    }
}

type Done<E> = Result<(), DrawingErrorKind<E>>;

impl DrawingBackend for NullCanvas {
    type ErrorType = std::convert::Infallible;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }
    fn ensure_prepared(&mut self) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn present(&mut self) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_pixel(&mut self, _: BackendCoord, _: BackendColor) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: BackendCoord,
        _: &S,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: BackendCoord,
        _: &S,
        _: bool,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        _: I,
        _: &S,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        _: BackendCoord,
        _: u32,
        _: &S,
        _: bool,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        _: I,
        _: &S,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        _: &str,
        _: &S,
        _: BackendCoord,
    ) -> Done<Self::ErrorType> {
        Ok(())
    }
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let size = style.size();
        Ok((
            (text.chars().count() as f64 * size * 0.6).ceil() as u32,
            (size * 1.2).ceil() as u32,
        ))
    }
    fn blit_bitmap(&mut self, _: BackendCoord, _: (u32, u32), _: &[u8]) -> Done<Self::ErrorType> {
        Ok(())
    }
}

impl Canvas for NullCanvas {
    fn blit_cells(&mut self, _: BackendCoord, _: &Cells) -> Done<Self::ErrorType> {
        Ok(())
    }
}

/// The names of the steps of `trace` (`Trace::named_steps`: an encoder-decoder's encoder steps
/// too, behind `SOURCE_STEP`), in the trace's order, whose values `draw` reads when it draws
/// on a `size` canvas. Whether it succeeds does not matter: what it read before it stopped
/// is what it would read.
pub fn steps_read<R>(
    trace: &Trace,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<NullCanvas, Shift>) -> R,
) -> Vec<String> {
    let log = ReadLog::open();
    let area = NullCanvas::new(size).into_drawing_area();
    let _ = draw(&area);
    let read = log.close();
    trace
        .named_steps()
        .filter(|(_, s)| read.binary_search(&s.tensor.data.storage_id()).is_ok())
        .map(|(name, _)| name)
        .collect()
}

/// True when one of the steps `names` (as `steps_read` gives them) of `trace` still waits
/// for its values to come back from a device.
pub fn waits_for_device(trace: &Trace, names: &[String]) -> bool {
    trace
        .named_steps()
        .any(|(name, s)| s.tensor.data.awaits_device() && names.contains(&name))
}
