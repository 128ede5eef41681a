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

impl Pixels {
    /// A white image.
    pub fn white(origin: (i32, i32), width: u32, height: u32) -> Self {
        Pixels { origin, width, height, rgb: vec![255; width as usize * height as usize * 3] }
    }

    /// Copies `other` into this image where their positions overlap.
    pub fn paste(&mut self, other: &Pixels) {
        let (dx, dy) = (other.origin.0 - self.origin.0, other.origin.1 - self.origin.1);
        for y in 0..other.height as i32 {
            let ty = y + dy;
            if ty < 0 || ty >= self.height as i32 {
                continue;
            }
            let x0 = dx.max(0);
            let x1 = (dx + other.width as i32).min(self.width as i32);
            if x1 <= x0 {
                continue;
            }
            let src = (y as usize * other.width as usize + (x0 - dx) as usize) * 3;
            let dst = (ty as usize * self.width as usize + x0 as usize) * 3;
            let n = (x1 - x0) as usize * 3;
            self.rgb[dst..dst + n].copy_from_slice(&other.rgb[src..src + n]);
        }
    }
}

/// The matrix resampled (nearest cell) to width x height pixels, coloured by `scale`.
/// Each cell is coloured once and each pixel row built once, then copied to the pixel rows
/// that show the same matrix row.
pub fn matrix_pixels(m: ArrayView2<f32>, scale: Scale, origin: (i32, i32), width: u32, height: u32) -> Pixels {
    let (rows, cols) = m.dim();
    let (w, h) = (width as usize, height as usize);
    let mut rgb = vec![0u8; w * h * 3];
    if rows > 0 && cols > 0 && w > 0 && h > 0 {
        let col_of: Vec<usize> = (0..w).map(|x| ((x * cols) / w).min(cols - 1)).collect();
        let mut line = vec![0u8; w * 3];
        let mut line_row = usize::MAX;
        for y in 0..h {
            let r = ((y * rows) / h).min(rows - 1);
            if r != line_row {
                let colours: Vec<[u8; 3]> = m.row(r).iter().map(|&v| {
                    let c = scale.color(v);
                    [c.0, c.1, c.2]
                }).collect();
                for (x, &c) in col_of.iter().enumerate() {
                    line[x * 3..x * 3 + 3].copy_from_slice(&colours[c]);
                }
                line_row = r;
            }
            rgb[y * w * 3..(y + 1) * w * 3].copy_from_slice(&line);
        }
    }
    Pixels { origin, width, height, rgb }
}
