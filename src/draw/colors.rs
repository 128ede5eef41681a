//! Colour maps that stay readable for colour-blind students and on a projector: viridis
//! for magnitudes (attention, norms) and a blue-white-red map for signed values.

use plotters::style::colors::colormaps::{ColorMap, ViridisRGB};
use plotters::style::RGBColor;

/// Entries in the viridis table `sequential` reads: finer than 8-bit colour, so a value's
/// colour is within one unit of plotters' own interpolation.
const VIRIDIS_STEPS: usize = 1024;

thread_local! {
    /// Viridis at `VIRIDIS_STEPS` evenly spaced points, made once: a heatmap colours
    /// thousands of cells on each keystroke, and plotters interpolates afresh for each.
    static VIRIDIS: [RGBColor; VIRIDIS_STEPS] = std::array::from_fn(|i| {
        let c = ViridisRGB.get_color(i as f32 / (VIRIDIS_STEPS - 1) as f32);
        RGBColor(c.0, c.1, c.2)
    });
}

/// Viridis at t in [0, 1] (NaN: the dark end).
pub fn sequential(t: f32) -> RGBColor {
    let index = (t.clamp(0.0, 1.0) * (VIRIDIS_STEPS - 1) as f32).round() as usize; // NaN casts to 0
    VIRIDIS.with(|table| table[index.min(VIRIDIS_STEPS - 1)])
}

/// Blue (-1) to near-white (0) to red (+1), after ColorBrewer's RdBu, which colour-blind
/// readers can tell apart.
pub fn diverging(t: f32) -> RGBColor {
    let t = t.clamp(-1.0, 1.0);
    let lerp = |a: (f32, f32, f32), b: (f32, f32, f32), s: f32| {
        RGBColor(
            (a.0 + (b.0 - a.0) * s).round() as u8,
            (a.1 + (b.1 - a.1) * s).round() as u8,
            (a.2 + (b.2 - a.2) * s).round() as u8,
        )
    };
    let blue = (33.0, 102.0, 172.0);
    let white = (247.0, 247.0, 247.0);
    let red = (178.0, 24.0, 43.0);
    if t < 0.0 {
        lerp(white, blue, -t)
    } else {
        lerp(white, red, t)
    }
}

/// Black or white, whichever contrasts more with `background` (WCAG's contrast ratio of
/// relative luminances): the colour of a number written on a cell of that colour.
pub fn ink_on(background: RGBColor) -> RGBColor {
    // sRGB channel to linear light.
    let linear = |c: u8| {
        let c = c as f32 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let RGBColor(r, g, b) = background;
    let luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    // Contrast with black (L + 0.05) / 0.05 against with white 1.05 / (L + 0.05).
    if (luminance + 0.05) * (luminance + 0.05) > 0.05 * 1.05 {
        RGBColor(0, 0, 0)
    } else {
        RGBColor(255, 255, 255)
    }
}

/// Colours for lines and bars: the Okabe-Ito palette, designed for colour-blind readers.
pub const CATEGORICAL: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// How a heatmap maps values to colours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// From `min` (dark) to `max` (bright), viridis.
    Sequential { min: f32, max: f32 },
    /// Symmetric around 0 with the given largest magnitude, blue-white-red.
    Diverging { limit: f32 },
}

impl Scale {
    pub fn color(&self, v: f32) -> RGBColor {
        if !v.is_finite() {
            // Masked (-inf) cells: a neutral grey, distinct from every colour of the maps.
            return RGBColor(200, 200, 200);
        }
        match *self {
            Scale::Sequential { min, max } => sequential(if max > min {
                (v - min) / (max - min)
            } else {
                0.5
            }),
            Scale::Diverging { limit } => diverging(if limit > 0.0 { v / limit } else { 0.0 }),
        }
    }

    /// A scale that fits the finite values of `data`: diverging if they change sign.
    pub fn fit(data: &[f32]) -> Scale {
        let finite = data.iter().copied().filter(|v| v.is_finite());
        let (min, max) = finite.fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        if !min.is_finite() {
            return Scale::Sequential { min: 0.0, max: 1.0 };
        }
        if min < 0.0 && max > 0.0 {
            Scale::Diverging {
                limit: min.abs().max(max),
            }
        } else {
            Scale::Sequential { min, max }
        }
    }

    /// Like `fit`, but the limit is the given quantile of |value| (e.g. 0.99), so a few
    /// outliers do not wash out the rest; values beyond it saturate.
    pub fn fit_robust(data: &[f32], quantile: f32) -> Scale {
        let mut mags: Vec<f32> = data
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .map(f32::abs)
            .collect();
        if mags.is_empty() {
            return Scale::Sequential { min: 0.0, max: 1.0 };
        }
        // The quantile's element only (linear time): the charts fit a scale on each keystroke.
        let at = ((mags.len() - 1) as f32 * quantile.clamp(0.0, 1.0)) as usize;
        let limit = mags.select_nth_unstable_by(at, f32::total_cmp).1.max(1e-6);
        match Scale::fit(data) {
            Scale::Diverging { .. } => Scale::Diverging { limit },
            Scale::Sequential { min, max } => Scale::Sequential {
                min: min.max(-limit),
                max: max.min(limit),
            },
        }
    }

    pub fn range(&self) -> (f32, f32) {
        match *self {
            Scale::Sequential { min, max } => (min, max),
            Scale::Diverging { limit } => (-limit, limit),
        }
    }
}

/// A colour scale narrower than its data: values beyond `low`/`high` take the end colours.
/// Reported with the chart, so the legend and the page can say so.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Clipped {
    /// The ends of the colour bar.
    pub low: f32,
    pub high: f32,
    /// The finite data's true range.
    pub min: f32,
    pub max: f32,
}

impl Clipped {
    /// Some when a finite value of `data` lies outside the scale's range.
    pub fn of(scale: Scale, data: &[f32]) -> Option<Clipped> {
        let (min, max) = data
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let (low, high) = scale.range();
        // A hair of tolerance: the scale's end may be the extreme value itself, rounded.
        let slack = (high - low).abs() * 1e-4;
        (min.is_finite() && (min < low - slack || max > high + slack)).then_some(Clipped {
            low,
            high,
            min,
            max,
        })
    }

    pub fn below(&self) -> bool {
        self.min < self.low
    }

    pub fn above(&self) -> bool {
        self.max > self.high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_table_is_within_one_unit_of_plotters() {
        for i in 0..=10_000 {
            let t = i as f32 / 10_000.0;
            let (RGBColor(r, g, b), exact) = (sequential(t), ViridisRGB.get_color(t));
            for (a, e) in [(r, exact.0), (g, exact.1), (b, exact.2)] {
                assert!(a.abs_diff(e) <= 1, "t = {t}: {a} against {e}");
            }
        }
        assert_eq!(sequential(f32::NAN), sequential(0.0));
        assert_eq!(sequential(-3.0), sequential(0.0));
        assert_eq!(sequential(7.0), sequential(1.0));
    }

    #[test]
    fn ink_is_white_on_viridis_dark_end_and_black_on_its_bright_end() {
        let white = RGBColor(255, 255, 255);
        let black = RGBColor(0, 0, 0);
        assert_eq!(ink_on(sequential(0.0)), white);
        assert_eq!(ink_on(sequential(0.3)), white);
        assert_eq!(ink_on(sequential(0.8)), black);
        assert_eq!(ink_on(sequential(1.0)), black);
        assert_eq!(ink_on(RGBColor(200, 200, 200)), black);
    }

    #[test]
    fn robust_scale_reports_what_it_clips() {
        let mut data = vec![0.01f32; 200];
        data[0] = 1.87;
        data[1] = -0.2;
        let scale = Scale::fit_robust(&data, 0.99);
        let clipped = Clipped::of(scale, &data).expect("the outliers are beyond the scale");
        assert!(clipped.below() && clipped.above());
        assert_eq!((clipped.min, clipped.max), (-0.2, 1.87));
        assert_eq!(
            Clipped::of(Scale::fit(&data), &data),
            None,
            "a fitted scale clips nothing"
        );
    }
}
