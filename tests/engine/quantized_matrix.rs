//! The quantized dense kernel (a panel of rows dequantized at a time, then multiplied) gives the
//! numbers of dequantize-then-multiply, for Q8_0 and Q4_1, any token count, any row range.

use half::f16;
use ndarray::Array2;
use transformer_viz::model::linear::Linear;
use transformer_viz::model::matrix::Matrix;
use transformer_viz::model::quantized::{GgmlType, GgufTensor, QK};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
    fn unit(&mut self) -> f32 {
        self.next() as f32 / (1u64 << 31) as f32 - 0.5
    }
}

/// Random blocks of `kind` for a (rows, cols) matrix, with scales like a real checkpoint's.
fn random_blocks(kind: GgmlType, rows: usize, cols: usize, rng: &mut Lcg) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..rows * cols / QK {
        let d = f16::from_f32(0.01 + 0.02 * rng.unit().abs()).to_le_bytes();
        bytes.extend_from_slice(&d);
        match kind {
            GgmlType::Q8_0 => bytes.extend((0..QK).map(|_| rng.next() as u8)),
            GgmlType::Q4_1 => {
                bytes.extend_from_slice(&f16::from_f32(-0.1 * rng.unit().abs()).to_le_bytes());
                bytes.extend((0..QK / 2).map(|_| rng.next() as u8));
            }
            _ => unreachable!(),
        }
    }
    bytes
}

/// x W^T in f64 from the dequantized matrix: the exact product of the same numbers.
fn exact(x: &Array2<f32>, w: &Array2<f32>) -> Array2<f64> {
    Array2::from_shape_fn((x.nrows(), w.nrows()), |(t, o)| {
        (0..x.ncols())
            .map(|i| x[[t, i]] as f64 * w[[o, i]] as f64)
            .sum()
    })
}

#[test]
fn quantized_kernel_equals_dequantize_then_multiply() {
    let mut rng = Lcg(5);
    for kind in [GgmlType::Q8_0, GgmlType::Q4_1] {
        // Rows around the 32-row panel, widths of one and several blocks, 1 to 70 tokens.
        for (rows, cols) in [(1, 32), (31, 64), (33, 96), (70, 576)] {
            let tensor = GgufTensor::new(
                "w",
                vec![rows, cols],
                kind,
                random_blocks(kind, rows, cols, &mut rng),
            )
            .unwrap();
            let dense = Array2::from_shape_vec((rows, cols), tensor.to_f32().unwrap()).unwrap(); // (rows, cols)
            let quantized = Linear {
                weight: Matrix::quantized(tensor).unwrap(),
                bias: None,
            };
            assert_eq!(quantized.weight.storage(), kind.name());
            assert_eq!(
                quantized.weight.to_dense(),
                dense,
                "the matrix dequantizes to the reader's values"
            );
            for t in [1, 2, 3, 5, 64, 70] {
                let x = Array2::from_shape_fn((t, cols), |_| rng.unit()); // (T, cols)
                let want = exact(&x, &dense); // (T, rows)
                let got = quantized.forward(x.view()); // (T, rows)
                let scale = want.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
                for ((t_, o), g) in got.indexed_iter() {
                    let err = (*g as f64 - want[[t_, o]]).abs() / scale;
                    assert!(
                        err < 1e-5,
                        "{kind:?} {rows}x{cols}, T={t}: y[{t_},{o}] = {g}, exact {}",
                        want[[t_, o]]
                    );
                }
                // A row range (what each thread computes, `model::threads`) gives the same columns.
                let (lo, hi) = (rows / 3, rows);
                let part = quantized.weight.multiply_rows(x.view(), lo, hi); // (T, hi - lo), no bias
                assert_eq!(
                    part,
                    got.slice(ndarray::s![.., lo..hi]),
                    "{kind:?}: rows {lo}..{hi} alone"
                );
            }
        }
    }
}

#[test]
fn quantized_embedding_rows_are_the_dequantized_rows() {
    let mut rng = Lcg(9);
    let tensor = GgufTensor::new(
        "embd",
        vec![40, 64],
        GgmlType::Q8_0,
        random_blocks(GgmlType::Q8_0, 40, 64, &mut rng),
    )
    .unwrap();
    let dense = Array2::from_shape_vec((40, 64), tensor.to_f32().unwrap()).unwrap();
    let m = Matrix::quantized(tensor).unwrap();
    let rows = m.select_rows(&[3, 0, 39, 3]).unwrap(); // (4, 64)
    for (r, id) in [3, 0, 39, 3].into_iter().enumerate() {
        assert_eq!(rows.row(r), dense.row(id));
    }
    assert!(
        m.select_rows(&[40]).is_none(),
        "an id past the table is refused"
    );
    assert_eq!(
        m.bytes_in_memory(),
        40 * 64 / 32 * 34,
        "kept as blocks, not f32"
    );
}

#[test]
fn the_inlined_f16_conversion_equals_half_for_every_value() {
    for bits in 0..=u16::MAX {
        let (ours, theirs) = (
            transformer_viz::model::quantized::f16_bits_to_f32(bits),
            f16::from_bits(bits).to_f32(),
        );
        assert!(
            ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
            "{bits:#06x}: {ours} vs {theirs}"
        );
    }
}
