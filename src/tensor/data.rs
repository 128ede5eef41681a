//! A step's tensor. Its values are either kept, or computed again from earlier steps the first
//! time someone reads them: a (heads, T, T) score tensor is 12.6 MB at 512 tokens, and
//! WebAssembly memory never shrinks, so keeping every one of them would pin hundreds of
//! megabytes in the tab for good. Steps whose values equal an earlier step's (the mask of a
//! model that hides nothing) share that step's storage.

use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use ndarray::{ArrayD, ArrayView1, ArrayView2, ArrayView3, ArrayViewD, Ix1, Ix2, Ix3};
use serde::{Deserialize, Serialize};

use super::row_major;
use crate::error::{Result, VizError};

/// Computes a tensor's values (row-major) from the steps it was derived from.
pub type Recipe = Box<dyn Fn() -> Vec<f32> + Send + Sync>;

struct Storage {
    values: OnceLock<Vec<f32>>,
    /// How to compute `values` when they were not kept. Small: handles to its inputs'
    /// storage and a few numbers.
    recipe: Option<Recipe>,
    /// The storages `recipe` reads, when they may still be on a device (a GPU pass's derived
    /// steps): its values wait for theirs.
    sources: Vec<TensorData>,
    /// For values a device computed: how many there will be when its readback fills them
    /// (`TensorData::filled_later`).
    pending: Option<usize>,
    /// When a device's readback brings the values: `UNMARKED` and `NOW` with the pass,
    /// `LATER` when asked for (`Fill::is_later`).
    readback: AtomicU8,
    /// What a read gets while the values are still on the device (zeros, or the recipe on
    /// its sources' zeros), never kept as the values: the readback fills them later.
    placeholder: OnceLock<Vec<f32>>,
    /// For a join of token rows (`TensorData::joined`): its parts, which are its sources.
    parts: Vec<RowsPart>,
}

const UNMARKED: u8 = 0;
const LATER: u8 = 1;
const NOW: u8 = 2;

thread_local! {
    /// The storages read on this thread while a `ReadLog` is open.
    static READS: RefCell<Option<Vec<usize>>> = const { RefCell::new(None) };
}

/// Notes every tensor read on this thread while it lives (`TensorData`'s values, a derived
/// tensor's sources when it is computed): what a view reads, found by drawing it once
/// (`draw::reads`), so that a GPU's readback can bring back only that.
pub struct ReadLog(());

impl ReadLog {
    /// Starts noting reads (a log already open on this thread is replaced).
    pub fn open() -> Self {
        READS.with(|r| *r.borrow_mut() = Some(Vec::new()));
        ReadLog(())
    }

    /// The storages read since `open` (`TensorData::storage_id`), each once, and stops.
    pub fn close(self) -> Vec<usize> {
        let mut ids = READS.with(|r| r.borrow_mut().take()).unwrap_or_default();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

impl Drop for ReadLog {
    fn drop(&mut self) {
        READS.with(|r| r.borrow_mut().take());
    }
}

/// The values of a tensor, row-major; cheap to clone (clones share the storage). Reads as a
/// `[f32]` slice: computed values are computed on the first read and kept from then on.
#[derive(Clone)]
pub struct TensorData(Arc<Storage>);

impl TensorData {
    /// Values computed by `recipe` when first read.
    pub fn computed_on_read(recipe: Recipe) -> Self {
        Self::new(OnceLock::new(), Some(recipe), Vec::new(), None)
    }

    /// Values computed by `recipe` from `sources` when first read; while any source is still
    /// on a device (`awaits_device`), reads get a placeholder and nothing is kept.
    pub fn derived(recipe: Recipe, sources: Vec<TensorData>) -> Self {
        Self::new(OnceLock::new(), Some(recipe), sources, None)
    }

    fn new(
        values: OnceLock<Vec<f32>>,
        recipe: Option<Recipe>,
        sources: Vec<TensorData>,
        pending: Option<usize>,
    ) -> Self {
        Self(Arc::new(Storage {
            values,
            recipe,
            sources,
            pending,
            readback: AtomicU8::new(UNMARKED),
            placeholder: OnceLock::new(),
            parts: Vec::new(),
        }))
    }

    /// The token rows of `parts`, one after the other, as a tensor of `shape` (see
    /// `trace::joined`): computed when first read, from parts that may still be on a device.
    pub fn joined(parts: Vec<RowsPart>, shape: Vec<usize>) -> Self {
        let read = parts.clone();
        let recipe: Recipe = Box::new(move || join_rows(&read, &shape));
        let sources = parts.iter().map(|p| p.data.clone()).collect();
        let storage = Storage {
            values: OnceLock::new(),
            recipe: Some(recipe),
            sources,
            pending: None,
            readback: AtomicU8::new(UNMARKED),
            placeholder: OnceLock::new(),
            parts,
        };
        Self(Arc::new(storage))
    }

    /// A join's parts (`joined`); empty for any other tensor.
    pub fn joined_parts(&self) -> &[RowsPart] {
        &self.0.parts
    }

    /// The first `rows` token rows of these values (of `shape`), as parts of a join: a join's
    /// own parts, cut to `rows`, so that joins never nest; any other tensor whole.
    pub fn first_rows(&self, shape: &[usize], rows: usize) -> Vec<RowsPart> {
        if self.0.parts.is_empty() {
            return vec![RowsPart {
                data: self.clone(),
                shape: shape.to_vec(),
                rows: 0..rows,
            }];
        }
        let mut left = rows;
        let mut parts = Vec::new();
        for part in &self.0.parts {
            let taken = part.rows.len().min(left);
            if taken == 0 {
                break;
            }
            parts.push(RowsPart {
                rows: part.rows.start..part.rows.start + taken,
                ..part.clone()
            });
            left -= taken;
        }
        parts
    }

    /// `len` values a device is computing: they are set by `Fill::fill` when the pass's one
    /// readback brings them back (a GPU keeps a pass's tensors on the device until then).
    /// Read before that (a pass whose device failed, say), they read as zeros.
    pub fn filled_later(len: usize) -> (Self, Fill) {
        let data = Self::new(OnceLock::new(), None, Vec::new(), Some(len));
        let fill = Fill(data.0.clone());
        (data, fill)
    }

    /// True while the values (or, for derived values, those of a source) are on a device and
    /// not yet read back: a read now gets zeros, not the values.
    pub fn awaits_device(&self) -> bool {
        self.0.awaits_device()
    }

    /// Asks the pass's readback to leave these values on the device until they are asked
    /// for, unless something else asked for them with the pass (`read_with_pass`).
    pub fn read_later(&self) {
        if self.0.pending.is_some() {
            let _ = self.0.readback.compare_exchange(
                UNMARKED,
                LATER,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        // A join's parts: its new rows are its own (no other step holds them); an earlier
        // pass's were read back or left on the device when that pass ended.
        for part in &self.0.parts {
            part.data.read_later();
        }
    }

    /// Asks the pass's readback to bring these values (a derived tensor: its sources'), even
    /// if they were marked `read_later`.
    pub fn read_with_pass(&self) {
        if self.0.pending.is_some() {
            self.0.readback.store(NOW, Ordering::Relaxed);
        }
        for source in &self.0.sources {
            source.read_with_pass();
        }
    }

    /// True when the values are computed from a recipe when first read (not kept by the pass).
    pub fn computed_when_read(&self) -> bool {
        self.0.recipe.is_some()
    }

    /// True when the values are in memory (kept, or computed by an earlier read).
    pub fn is_in_memory(&self) -> bool {
        self.0.values.get().is_some()
    }

    /// True when `self` and `other` are one storage (one set of values in memory).
    pub fn shares_storage_with(&self, other: &TensorData) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An address that identifies the storage, for counting shared storage once.
    pub(crate) fn storage_id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

/// Sets the values of a `TensorData::filled_later` storage, once.
pub struct Fill(Arc<Storage>);

impl Fill {
    /// How many values the storage expects.
    pub fn len(&self) -> usize {
        self.0.pending.unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the values stay on the device after the pass, until asked for
    /// (`TensorData::read_later`).
    pub fn is_later(&self) -> bool {
        self.0.readback.load(Ordering::Relaxed) == LATER
    }

    /// True while a trace still holds the storage: once every step that held it is gone,
    /// its values need never come back.
    pub fn is_wanted(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// Sets the values (`len()` of them; a shorter or longer readback is padded with zeros
    /// or cut, so a tensor's shape always matches its data).
    pub fn fill(self, mut values: Vec<f32>) {
        values.resize(self.len(), 0.0);
        let _ = self.0.values.set(values);
    }
}

impl Storage {
    fn awaits_device(&self) -> bool {
        self.values.get().is_none()
            && (self.pending.is_some() || self.sources.iter().any(TensorData::awaits_device))
    }

    /// The values, computing them on the first read; a device's values not yet read back
    /// read as a placeholder (zeros), which is not kept as the values.
    fn values(&self) -> &Vec<f32> {
        READS.with(|r| {
            if let Some(log) = r.borrow_mut().as_mut() {
                log.push(self as *const Storage as usize);
            }
        });
        if let Some(values) = self.values.get() {
            return values;
        }
        if self.awaits_device() {
            return self.placeholder.get_or_init(|| match &self.recipe {
                Some(recipe) => recipe(),
                None => vec![0.0; self.pending.unwrap_or(0)],
            });
        }
        self.values.get_or_init(|| match &self.recipe {
            Some(recipe) => recipe(),
            None => unreachable!(
                "kept values are set when the storage is made; a device's, by its readback"
            ),
        })
    }
}

impl From<Vec<f32>> for TensorData {
    fn from(values: Vec<f32>) -> Self {
        Self::new(OnceLock::from(values), None, Vec::new(), None)
    }
}

impl Deref for TensorData {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        self.0.values()
    }
}

impl<'a> IntoIterator for &'a TensorData {
    type Item = &'a f32;
    type IntoIter = std::slice::Iter<'a, f32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for TensorData {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for TensorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_in_memory() {
            f.debug_list().entries(self.iter()).finish()
        } else {
            f.write_str("[computed on read]")
        }
    }
}

impl Serialize for TensorData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        // serde_json writes the non-finite masked scores (-inf) as null. Values not yet in
        // memory are computed for the export and not kept: exporting a long pass's trace
        // must not pin every tensor in the tab.
        match (self.0.values.get(), &self.0.recipe) {
            (Some(values), _) => values.serialize(s),
            (None, Some(recipe)) => recipe().serialize(s),
            (None, None) => self.0.values().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TensorData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // JSON has no infinity: masked scores written as `null` are read back as -inf.
        let values: Vec<Option<f32>> = Deserialize::deserialize(d)?;
        Ok(values
            .into_iter()
            .map(|v| v.unwrap_or(f32::NEG_INFINITY))
            .collect::<Vec<_>>()
            .into())
    }
}

/// A dense f32 tensor in row-major order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

impl Tensor {
    /// The values of `array`, row-major, as a step keeps them.
    pub fn from_array(array: ArrayD<f32>) -> Self {
        Tensor {
            shape: array.shape().to_vec(),
            data: row_major(array).into(),
        }
    }

    /// The values as an array, without a copy when nothing else shares them.
    pub fn into_array(self) -> ArrayD<f32> {
        let Tensor { shape, data } = self;
        let values = match Arc::try_unwrap(data.0) {
            Ok(storage) => {
                storage.values();
                // Set just above, unless the values never came back from a device.
                match storage.values.into_inner() {
                    Some(values) => values,
                    None => storage.placeholder.into_inner().unwrap_or_default(),
                }
            }
            Err(shared) => TensorData(shared).to_vec(),
        };
        ArrayD::from_shape_vec(shape, values).expect("a Tensor's shape always matches its data")
    }

    pub fn view(&self) -> ArrayViewD<'_, f32> {
        ArrayViewD::from_shape(self.shape.clone(), &self.data)
            .expect("a Tensor's shape always matches its data")
    }
    pub fn view1(&self) -> Result<ArrayView1<'_, f32>> {
        self.view()
            .into_dimensionality::<Ix1>()
            .map_err(|e| VizError::BadConfig(e.to_string()))
    }
    pub fn view2(&self) -> Result<ArrayView2<'_, f32>> {
        self.view()
            .into_dimensionality::<Ix2>()
            .map_err(|e| VizError::BadConfig(e.to_string()))
    }
    pub fn view3(&self) -> Result<ArrayView3<'_, f32>> {
        self.view()
            .into_dimensionality::<Ix3>()
            .map_err(|e| VizError::BadConfig(e.to_string()))
    }
}

// ---------------------------------------------------------------------------------------
// A step's values made of token rows from several tensors: a pass through the KV cache
// computes only the new tokens, so each of its steps is an earlier trace's first rows then
// the new rows. On a GPU neither part may have come back yet (`TensorData::awaits_device`),
// so the join is computed when read (`TensorData::joined`), from its parts.
//
// A join's parts are never joins themselves (`TensorData::first_rows` hands out a join's own
// parts): however many passes continue one another, a step reads at most one tensor a pass.
/// Rows `rows` of a tensor of shape `shape`, along its token axis (`token_axis`).
#[derive(Clone)]
pub struct RowsPart {
    pub data: TensorData,
    pub shape: Vec<usize>,
    pub rows: Range<usize>,
}

/// The token axis of a step of `ndim` axes: (heads, T, ...) for per-head steps, (T, ...)
/// for the others.
pub fn token_axis(ndim: usize) -> usize {
    if ndim == 3 {
        1
    } else {
        0
    }
}

/// A shape seen as (outer, rows, inner) around its token axis: (T) is (1, T, 1), (T, w) is
/// (1, T, w), (heads, T, w) is itself.
fn around_rows(shape: &[usize]) -> (usize, usize, usize) {
    match *shape {
        [t] => (1, t, 1),
        [t, w] => (1, t, w),
        [h, t, w] => (h, t, w),
        _ => (0, 0, 0),
    }
}

/// The values of `parts`' rows one after the other, in a tensor of `shape` (row-major).
/// A part's row narrower than the result's is followed by zeros: an earlier query's attention
/// weights cover the keys of its own pass, and every later key is hidden from it (weight 0).
pub fn join_rows(parts: &[RowsPart], shape: &[usize]) -> Vec<f32> {
    let (outer, total, width) = around_rows(shape);
    let mut out = vec![0.0; shape.iter().product()];
    let mut at = 0;
    for part in parts {
        let (part_outer, rows, part_width) = around_rows(&part.shape);
        let values: &[f32] = &part.data;
        let copied = part_width.min(width);
        let taken = part.rows.len().min(total - at);
        for h in 0..outer.min(part_outer) {
            for r in 0..taken {
                let from = (h * rows + part.rows.start + r) * part_width;
                let to = (h * total + at + r) * width;
                out[to..to + copied].copy_from_slice(&values[from..from + copied]);
            }
        }
        at += taken;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(values: Vec<f32>, shape: &[usize], rows: Range<usize>) -> RowsPart {
        RowsPart {
            data: values.into(),
            shape: shape.to_vec(),
            rows,
        }
    }

    #[test]
    fn rows_of_two_tensors_follow_one_another() {
        // (T, w): the first two rows of a (3, 2) tensor, then a (1, 2) tensor.
        let a = part(vec![1., 2., 3., 4., 5., 6.], &[3, 2], 0..2);
        let b = part(vec![7., 8.], &[1, 2], 0..1);
        assert_eq!(join_rows(&[a, b], &[3, 2]), vec![1., 2., 3., 4., 7., 8.]);
        // (T): token ids.
        let a = part(vec![10., 11., 12.], &[3], 0..1);
        let b = part(vec![20., 21.], &[2], 0..2);
        assert_eq!(join_rows(&[a, b], &[3]), vec![10., 20., 21.]);
    }

    #[test]
    fn per_head_rows_join_head_by_head_and_narrower_rows_end_in_zeros() {
        // Two heads, weights over 2 keys for the first query, then one new query over 3 keys.
        let old = part(
            vec![1., 0., 0.5, 0.5, /* head 1 */ 1., 0., 0.25, 0.75],
            &[2, 2, 2],
            0..1,
        );
        let new = part(
            vec![0.2, 0.3, 0.5, /* head 1 */ 0.1, 0.1, 0.8],
            &[2, 1, 3],
            0..1,
        );
        let joined = join_rows(&[old, new], &[2, 2, 3]);
        assert_eq!(
            joined,
            vec![1., 0., 0., 0.2, 0.3, 0.5, /* head 1 */ 1., 0., 0., 0.1, 0.1, 0.8]
        );
    }
}
