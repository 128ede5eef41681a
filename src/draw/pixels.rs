//! Heatmap cells as one block of pixels. Drawing thousands of rectangles one by one is slow
//! on a canvas, so raster outputs (canvas, PNG) get the cells as a single RGB image that
//! the backend blits at once; SVG output keeps one vector rectangle per cell.

use ndarray::ArrayView2;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::colors::Scale;

/// An RGB image placed with its top-left corner at `origin` (pixels of the area).
pub struct Pixels {
    pub origin: (i32, i32),
    pub width: u32,
    pub height: u32,
    /// width * height * 3 bytes, row-major.
    pub rgb: Vec<u8>,
}

impl<'a> PointCollection<'a, (i32, i32)> for &'a Pixels {
    type Point = &'a (i32, i32);
    type IntoIter = std::iter::Once<&'a (i32, i32)>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.origin)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for Pixels {
    fn draw<I: Iterator<Item = BackendCoord>>(&self, mut pos: I, backend: &mut DB, _: (u32, u32)) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        match pos.next() {
            Some(p) if self.width > 0 && self.height > 0 => backend.blit_bitmap(p, (self.width, self.height), &self.rgb),
            _ => Ok(()),
        }
    }
}

/// The matrix resampled (nearest cell) to width x height pixels, coloured by `scale`.
pub fn matrix_pixels(m: ArrayView2<f32>, scale: Scale, origin: (i32, i32), width: u32, height: u32) -> Pixels {
    let (rows, cols) = m.dim();
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    if rows > 0 && cols > 0 {
        let col_of: Vec<usize> = (0..width).map(|x| ((x as usize * cols) / width as usize).min(cols - 1)).collect();
        for y in 0..height {
            let r = ((y as usize * rows) / height as usize).min(rows - 1);
            let row = m.row(r);
            for (x, &c) in col_of.iter().enumerate() {
                let colour = scale.color(row[c]);
                let i = (y as usize * width as usize + x) * 3;
                rgb[i] = colour.0;
                rgb[i + 1] = colour.1;
                rgb[i + 2] = colour.2;
            }
        }
    }
    Pixels { origin, width, height, rgb }
}
