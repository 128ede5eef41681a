//! Heatmap cells as one block of pixels. Drawing thousands of rectangles one by one is slow
//! on a canvas, so raster outputs (canvas, PNG) get the cells as a single RGB image that
//! the backend blits at once. SVG output keeps one vector rectangle per cell for small
//! matrices and embeds larger ones (and the grid's thumbnails) as one PNG image, which keeps
//! an exported file small enough for slides.

use ndarray::ArrayView2;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::colors::Scale;
use crate::error::VizError;

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
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        match pos.next() {
            Some(p) if self.width > 0 && self.height > 0 => {
                backend.blit_bitmap(p, (self.width, self.height), &self.rgb)
            }
            _ => Ok(()),
        }
    }
}

impl Pixels {
    /// A white image.
    pub fn white(origin: (i32, i32), width: u32, height: u32) -> Self {
        Pixels {
            origin,
            width,
            height,
            rgb: vec![255; width as usize * height as usize * 3],
        }
    }

    /// Copies `other` into this image where their positions overlap.
    pub fn paste(&mut self, other: &Pixels) {
        let (dx, dy) = (
            other.origin.0 - self.origin.0,
            other.origin.1 - self.origin.1,
        );
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

/// A matrix's cells, one RGB pixel a cell, to be shown enlarged over `width` x `height`
/// pixels at `origin`, each cell a block of equal pixels (nearest cell). A browser canvas
/// scales the small image itself (one cell's colour is computed and copied once, not once a
/// screen pixel); other backends get the enlarged image (`enlarged`).
pub struct Cells {
    pub origin: (i32, i32),
    pub width: u32,
    pub height: u32,
    pub cols: usize,
    pub rows: usize,
    /// cols * rows * 3 bytes, row-major.
    pub rgb: Vec<u8>,
}

/// The matrix's cells coloured by `scale`, to be shown over width x height pixels.
pub fn matrix_cells(
    m: ArrayView2<f32>,
    scale: Scale,
    origin: (i32, i32),
    width: u32,
    height: u32,
) -> Cells {
    let (rows, cols) = m.dim();
    let rgb = m
        .iter()
        .flat_map(|&v| {
            let c = scale.color(v);
            [c.0, c.1, c.2]
        })
        .collect();
    Cells {
        origin,
        width,
        height,
        cols,
        rows,
        rgb,
    }
}

impl Cells {
    /// The cells resampled (nearest cell) to the full width x height: pixel (x, y) shows cell
    /// (y * rows / height, x * cols / width). Each pixel row is built once, then copied to the
    /// pixel rows that show the same matrix row.
    pub fn enlarged(&self) -> Pixels {
        let (rows, cols) = (self.rows, self.cols);
        let (w, h) = (self.width as usize, self.height as usize);
        let mut rgb = vec![0u8; w * h * 3];
        if rows > 0 && cols > 0 && w > 0 && h > 0 && self.rgb.len() >= rows * cols * 3 {
            let col_of: Vec<usize> = (0..w).map(|x| ((x * cols) / w).min(cols - 1)).collect();
            let mut line = vec![0u8; w * 3];
            let mut line_row = usize::MAX;
            for y in 0..h {
                let r = ((y * rows) / h).min(rows - 1);
                if r != line_row {
                    let colours = &self.rgb[r * cols * 3..(r + 1) * cols * 3];
                    for (x, &c) in col_of.iter().enumerate() {
                        line[x * 3..x * 3 + 3].copy_from_slice(&colours[c * 3..c * 3 + 3]);
                    }
                    line_row = r;
                }
                rgb[y * w * 3..(y + 1) * w * 3].copy_from_slice(&line);
            }
        }
        Pixels {
            origin: self.origin,
            width: self.width,
            height: self.height,
            rgb,
        }
    }
}

/// A drawing backend that can show `Cells`. By default it is given the enlarged image; a
/// browser canvas overrides this and lets the canvas enlarge the small one
/// (`web::canvas::FastCanvas`), which on a keystroke saves building, copying and uploading
/// a full-size image for every heatmap on the page.
pub trait Canvas: DrawingBackend {
    fn blit_cells(
        &mut self,
        origin: BackendCoord,
        cells: &Cells,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let pixels = cells.enlarged();
        if pixels.width == 0 || pixels.height == 0 {
            return Ok(());
        }
        self.blit_bitmap(origin, (pixels.width, pixels.height), &pixels.rgb)
    }
}

impl Canvas for SVGBackend<'_> {}

#[cfg(not(target_arch = "wasm32"))]
impl Canvas for BitMapBackend<'_> {}

impl<'a> PointCollection<'a, (i32, i32)> for &'a Cells {
    type Point = &'a (i32, i32);
    type IntoIter = std::iter::Once<&'a (i32, i32)>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.origin)
    }
}

impl<DB: Canvas> Drawable<DB> for Cells {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        match pos.next() {
            Some(p) => backend.blit_cells(p, self),
            None => Ok(()),
        }
    }
}

impl Pixels {
    /// The image as PNG file bytes.
    pub fn png(&self) -> crate::error::Result<Vec<u8>> {
        let fail = |e: png::EncodingError| VizError::Draw(format!("PNG encoding: {e}"));
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width.max(1), self.height.max(1));
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Best);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = encoder.write_header().map_err(fail)?;
        if self.width == 0 || self.height == 0 {
            writer.write_image_data(&[255, 255, 255]).map_err(fail)?;
        } else {
            writer.write_image_data(&self.rgb).map_err(fail)?;
        }
        writer.finish().map_err(fail)?;
        Ok(out)
    }
}

/// Cells that an SVG shows as one embedded PNG rather than as rectangles. The drawing code
/// writes `marker` as a text element where the image belongs (so that what is drawn after it,
/// a frame say, stays on top), and `embed_images` swaps the marker for the image.
#[derive(Debug, Clone)]
pub struct EmbeddedImage {
    pub marker: String,
    /// Where the image goes, in the SVG's pixels; the PNG may have more pixels than that.
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
    pub png: Vec<u8>,
}

impl EmbeddedImage {
    /// `pixels` shown over the box (x, y, width, height); `marker` names its place.
    pub fn new(
        marker: String,
        (x, y, width, height): (i32, i32, i32, i32),
        pixels: &Pixels,
    ) -> crate::error::Result<Self> {
        Ok(EmbeddedImage {
            marker,
            x,
            y,
            width,
            height,
            png: pixels.png()?,
        })
    }

    /// The SVG `<image>` element. Cells are blocks of equal pixels, so viewers are asked not
    /// to smooth them when they scale the image.
    pub fn svg_element(&self) -> String {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(&self.png);
        format!(
            r#"<image x="{}" y="{}" width="{}" height="{}" preserveAspectRatio="none" style="image-rendering:pixelated" href="data:image/png;base64,{data}"/>"#,
            self.x, self.y, self.width, self.height
        )
    }
}

/// Replaces the text element holding each image's marker in `svg` by the image itself.
pub fn embed_images(svg: &str, images: &[EmbeddedImage]) -> String {
    let mut out = svg.to_string();
    for image in images {
        let Some(at) = out.find(&image.marker) else {
            continue;
        };
        let (Some(start), Some(end)) = (out[..at].rfind("<text"), out[at..].find("</text>")) else {
            continue;
        };
        out.replace_range(start..at + end + "</text>".len(), &image.svg_element());
    }
    out
}

/// The matrix as blocks of `block.0 x block.1` equal pixels a cell: an image for an SVG that
/// stays sharp when the slide is scaled, and compresses to little (rows and runs repeat).
pub fn matrix_blocks(m: ArrayView2<f32>, scale: Scale, block: (u32, u32)) -> Pixels {
    let (rows, cols) = m.dim();
    matrix_cells(
        m,
        scale,
        (0, 0),
        cols as u32 * block.0.max(1),
        rows as u32 * block.1.max(1),
    )
    .enlarged()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn cells_are_coloured_once_each_and_enlarged_to_the_nearest_cell() {
        let scale = Scale::Sequential { min: 0.0, max: 1.0 };
        let m = array![[0.0f32, 0.5, 1.0], [0.25, 0.75, 0.1]]; // (2, 3)
        let cells = matrix_cells(m.view(), scale, (4, 9), 7, 5);
        assert_eq!((cells.rows, cells.cols, cells.rgb.len()), (2, 3, 18));
        for ((r, c), &v) in m.indexed_iter() {
            let colour = scale.color(v);
            assert_eq!(
                cells.rgb[(r * 3 + c) * 3..(r * 3 + c) * 3 + 3],
                [colour.0, colour.1, colour.2]
            );
        }
        let image = cells.enlarged();
        assert_eq!(
            (image.origin, image.width, image.height, image.rgb.len()),
            ((4, 9), 7, 5, 7 * 5 * 3)
        );
        for y in 0..5 {
            for x in 0..7 {
                let colour = scale.color(m[[y * 2 / 5, x * 3 / 7]]);
                assert_eq!(
                    image.rgb[(y * 7 + x) * 3..(y * 7 + x) * 3 + 3],
                    [colour.0, colour.1, colour.2],
                    "pixel ({x}, {y})"
                );
            }
        }
    }

    #[test]
    fn empty_cells_enlarge_to_an_image_of_the_asked_size() {
        let m = ndarray::Array2::<f32>::zeros((0, 4));
        let image = matrix_cells(
            m.view(),
            Scale::Sequential { min: 0.0, max: 1.0 },
            (0, 0),
            3,
            2,
        )
        .enlarged();
        assert_eq!(image.rgb.len(), 3 * 2 * 3);
    }
}
