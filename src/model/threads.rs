//! Threads sharing one matrix product on one memory: the output features of a product are cut
//! into a few runs per thread, each thread takes runs until none is left (every output number
//! computed exactly as one thread alone would compute it), each run written straight into its
//! own columns of the product.
//!
//! The threads are rayon's: natively its global pool; in the page's threaded build (feature
//! `threads`, wasm threads on one shared memory through `wasm-bindgen-rayon`) a pool the page
//! starts with `start` once the module runs. The calling thread takes runs too, and rayon's
//! workers take theirs as helpers that stay awake between the products of a pass
//! (`spinning_helpers`), so a page asking for n threads starts a pool of n - 1 workers.
//! In the page's plain build there is no pool: every product is computed whole.

use ndarray::{Array2, ArrayViewMut2, Axis};

/// Below this many multiply-adds a product is computed whole: waking the other threads would
/// cost about what they save. SmolLM2's one-token products (331k and 885k multiply-adds) gain
/// from being shared; the lecture decoder's short pass neither gains nor loses (measured in the
/// page: docs/benchmarks.md, thresholds).
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// Below this many multiply-adds a product is computed whole unless a helper is already awake
/// (`spinning_helpers::awake`): in a browser, waking one (`memory.atomic.notify`, then rayon's
/// wake-up) costs about what sharing such a product saves. The lecture decoder's products at a
/// sentence's length, and those a chart computes after the pass (the logit lens, a layer run
/// again for the query view), are under it; SmolLM2's and MiniLM's at 32 tokens are over it.
/// Natively a wake-up is cheap: the bound is `PARALLEL_MIN_MACS`.
const WAKE_MIN_MACS: usize = if cfg!(target_arch = "wasm32") {
    1 << 22
} else {
    PARALLEL_MIN_MACS
};

/// The threads a piece of work of `macs` multiply-adds is shared among.
fn threads_for(macs: usize) -> usize {
    if macs < PARALLEL_MIN_MACS || (macs < WAKE_MIN_MACS && !helpers_awake()) {
        1
    } else {
        threads()
    }
}

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
fn helpers_awake() -> bool {
    super::spinning_helpers::awake()
}

#[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
fn helpers_awake() -> bool {
    false
}

#[cfg(all(target_arch = "wasm32", feature = "threads"))]
mod pool {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Threads computing a product: the page's thread and its pool's workers (1: no pool yet).
    static THREADS: AtomicUsize = AtomicUsize::new(1);

    pub fn threads() -> usize {
        THREADS.load(Ordering::Relaxed)
    }

    pub fn set_threads(n: usize) {
        THREADS.store(n, Ordering::Relaxed);
    }
}

/// How many threads share a product now.
pub fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    return rayon::current_num_threads();
    #[cfg(all(target_arch = "wasm32", feature = "threads"))]
    return pool::threads();
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    return 1;
}

/// Starts the page's pool so that `threads` threads (the page's own among them) share every
/// product. Only in the threaded build; a second call is refused (rayon's pool is global).
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
pub async fn start(threads: usize) -> Result<usize, String> {
    if pool::threads() > 1 {
        return Err("the page's threads are already started".into());
    }
    start_pool(threads, threads - 1).await?;
    pool::set_threads(threads);
    Ok(threads)
}

/// Starts a pool of `threads` workers for work handed to rayon by a thread outside the pool,
/// which waits while they compute: the trainer's worker (`train::step::loss_and_gradients`).
/// Products stay whole (on the thread that computes them). Only in the threaded build, once.
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
pub async fn start_outside(threads: usize) -> Result<usize, String> {
    start_pool(threads, threads).await?;
    Ok(threads)
}

/// rayon's global pool of `workers` wasm threads, for `threads` threads in all.
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
async fn start_pool(threads: usize, workers: usize) -> Result<(), String> {
    if !(2..=64).contains(&threads) {
        return Err(format!("{threads} threads: a pool has 2 to 64"));
    }
    let started = wasm_bindgen_rayon::init_thread_pool(workers);
    wasm_bindgen_futures::JsFuture::from(started)
        .await
        .map_err(|e| format!("the threads did not start: {e:?}"))?;
    Ok(())
}

/// Runs of features handed out per thread at first: a thread that starts late (the machine busy
/// with something else) finds the runs already taken by the others.
const RUNS_PER_THREAD: usize = 4;

/// The shortest run, in multiply-adds (docs/benchmarks.md, thresholds): besides its work, each run costs taking it (an atomic counter, a lock no one waits for) and
/// the kernel's start on a fresh block of weight rows.
const MIN_RUN_MACS: usize = 1 << 16;

/// Output features [lo, hi) cut into the runs `threads` threads take one at a time, in order:
/// at most 1/(threads · RUNS_PER_THREAD) of the product each, and shorter towards the end (at
/// most 1/(2 · threads) of the features left, down to MIN_RUN_MACS multiply-adds at
/// `macs_per_feature` a feature). When one thread runs out of runs, the others' runs under way
/// are short ones, so it waits little for them: with eight equal runs for two threads the page's
/// thread waited a twelfth of a MiniLM pass at 32 tokens for the other's last run. Each run but
/// the last is a multiple of `block` features. The runs depend only on the arguments, never on
/// which thread takes them.
pub fn runs(
    lo: usize,
    hi: usize,
    threads: usize,
    block: usize,
    macs_per_feature: usize,
) -> Vec<(usize, usize)> {
    let block = block.max(1);
    let threads = threads.max(1);
    let whole_blocks = |n: usize| n.div_ceil(block) * block;
    let shortest = whole_blocks(MIN_RUN_MACS.div_ceil(macs_per_feature.max(1)));
    let longest = whole_blocks((hi - lo) / (threads * RUNS_PER_THREAD))
        .max(block)
        .max(shortest);
    let mut runs = Vec::new();
    let mut start = lo;
    while start < hi {
        let size = whole_blocks((hi - start) / (2 * threads)).clamp(shortest, longest);
        let end = (start + size).min(hi);
        runs.push((start, end));
        start = end;
    }
    runs
}

/// A product's output features [lo, hi) for `t` tokens of `cols` inputs, shared among the
/// threads: `features(a, b, out)` computes features [a, b) into `out` (t, b - a), a view of the
/// result's columns, so that no run allocates or is copied afterwards. Gives (t, hi - lo),
/// the same numbers as `features(lo, hi, ..)` on one thread.
pub fn in_parts(
    t: usize,
    lo: usize,
    hi: usize,
    cols: usize,
    block: usize,
    features: impl Fn(usize, usize, ArrayViewMut2<f32>) + Sync,
) -> Array2<f32> {
    let mut y = Array2::<f32>::zeros((t, hi - lo)); // (T, hi - lo)
    let n = threads_for(t * (hi - lo) * cols);
    if n <= 1 {
        features(lo, hi, y.view_mut());
        return y;
    }
    // Each run's columns of y, as their own view: (T, b - a) each, side by side.
    let runs = runs(lo, hi, n, block, t * cols);
    let mut views = Vec::with_capacity(runs.len());
    let mut rest = y.view_mut(); // (T, features not yet cut off)
    for &(a, b) in &runs {
        let (run, after) = rest.split_at(Axis(1), b - a); // (T, b - a), (T, rest)
        views.push(((a, b), run));
        rest = after;
    }
    share_items(views, n, &|((a, b), out)| features(a, b, out));
    y
}

/// `data` cut into pieces of `piece` values (the last may be shorter) and `f(index, piece)`
/// applied to each: shared among the threads when there is a pool and the pieces' work
/// (`cost` multiply-adds or so a piece) is worth waking it. Each piece is computed as one
/// thread alone would compute it, so the numbers do not depend on the threads. For the work
/// between the products: a layer's attention scores, softmax and weighted values head by head,
/// its activation a run of values at a time.
pub fn for_each_piece(
    data: &mut [f32],
    piece: usize,
    cost: usize,
    f: impl Fn(usize, &mut [f32]) + Sync,
) {
    let piece = piece.max(1);
    let count = data.len().div_ceil(piece);
    let n = if count < 2 {
        1
    } else {
        threads_for(count.saturating_mul(cost)).min(count)
    };
    if n <= 1 {
        data.chunks_mut(piece)
            .enumerate()
            .for_each(|(i, p)| f(i, p));
        return;
    }
    share_items(data.chunks_mut(piece).enumerate().collect(), n, &|(
        i,
        p,
    )| {
        f(i, p)
    });
}

/// `f` applied to each item, in order of the items, by up to `threads` threads: each takes
/// the next item not yet taken until none is left.
#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
fn share_items<T: Send>(items: Vec<T>, threads: usize, f: &(impl Fn(T) + Sync)) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    // Each item is taken by exactly one thread (the counter hands each index out once), so
    // no lock is ever waited for: it only moves the item to the thread that took it.
    let slots: Vec<Mutex<Option<T>>> = items
        .into_iter()
        .map(|item| Mutex::new(Some(item)))
        .collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = slots.get(k) else { break };
        let taken = slot.lock().map(|mut item| item.take()).unwrap_or(None);
        if let Some(item) = taken {
            f(item);
        }
    };
    super::spinning_helpers::share(threads, &work);
}

/// The page's plain build has no other thread: the items one after another.
#[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
fn share_items<T: Send>(items: Vec<T>, _threads: usize, f: &(impl Fn(T) + Sync)) {
    items.into_iter().for_each(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::s;

    #[test]
    fn every_piece_is_given_once_with_its_index() {
        for (len, piece, cost) in [
            (0, 4, 1),
            (10, 3, 1),
            (1000, 7, 1 << 16),
            (4096, 64, 1 << 20),
            (5, 10, 1 << 20),
        ] {
            let mut data: Vec<f32> = (0..len).map(|i| i as f32).collect();
            for_each_piece(&mut data, piece, cost, |k, p| {
                for (j, v) in p.iter_mut().enumerate() {
                    assert_eq!(*v, (k * piece + j) as f32, "piece {k} holds its own values");
                    *v = -*v - 1.0;
                }
            });
            assert!(
                data.iter()
                    .enumerate()
                    .all(|(i, &v)| v == -(i as f32) - 1.0),
                "{len} values in pieces of {piece}: each changed once"
            );
        }
    }

    #[test]
    fn runs_cover_the_range_in_whole_blocks_shorter_towards_the_end() {
        for (lo, hi, n, block, macs) in [
            (0, 384, 2, 2, 32 * 384),
            (0, 385, 3, 2, 384),
            (10, 17, 4, 2, 1),
            (0, 1, 8, 2, 1),
            (0, 1536, 8, 2, 32 * 384),
            (0, 576, 2, 2, 576),
            (5, 5, 2, 2, 1),
        ] {
            let r = runs(lo, hi, n, block, macs);
            if lo == hi {
                assert!(r.is_empty());
                continue;
            }
            assert_eq!(r.first().unwrap().0, lo);
            assert_eq!(r.last().unwrap().1, hi);
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert!(
                    w[1].1 - w[1].0 <= w[0].1 - w[0].0,
                    "{lo}..{hi} for {n}: {r:?} grows"
                );
            }
            let longest = ((hi - lo) / (n * RUNS_PER_THREAD)).div_ceil(block).max(1) * block;
            let shortest = MIN_RUN_MACS.div_ceil(macs).div_ceil(block) * block;
            for &(a, b) in &r[..r.len() - 1] {
                assert!(b > a && (b - a) % block == 0, "{lo}..{hi} in {n}: {r:?}");
                assert!(b - a <= longest.max(shortest), "{lo}..{hi} in {n}: {r:?}");
            }
        }
        // MiniLM's attention products at 32 tokens on two threads: a few runs of an eighth,
        // then shorter ones, the last of six features (73,728 multiply-adds).
        let r = runs(0, 384, 2, 2, 32 * 384);
        assert_eq!(r[0], (0, 48));
        assert_eq!(r.last().unwrap().1 - r.last().unwrap().0, 6);
    }

    #[test]
    fn a_product_in_parts_equals_the_whole() {
        let x = Array2::from_shape_fn((7, 33), |(i, j)| ((i * 31 + j * 7) % 13) as f32 - 6.0); // (T, in)
        let w = Array2::from_shape_fn((301, 33), |(i, j)| {
            ((i * 17 + j * 3) % 11) as f32 * 0.25 - 1.0
        }); // (out, in)
        let product = |a: usize, b: usize| x.dot(&w.slice(s![a..b, ..]).t()); // (T, b - a)
        let features = |a: usize, b: usize, mut out: ArrayViewMut2<f32>| out.assign(&product(a, b)); // (T, b - a)
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let shared = pool.install(|| in_parts(7, 0, 301, 33 * 1000, 2, features));
        assert_eq!(product(0, 301), shared);
        let middle = pool.install(|| in_parts(7, 40, 120, 33 * 1000, 2, features));
        assert_eq!(product(40, 120), middle);
    }
}
