//! Two copies of the engine sharing the matrix products of one forward pass.
//!
//! Each copy (a "member") holds the whole model and runs the same forward pass on the same
//! tokens. At every dense layer member 0 computes the first half of the output features and
//! member 1 the second half; they swap halves through `Team::exchange`, and both go on with
//! the whole result. Everything between the products (norms, attention weights, GELU) is
//! cheap and both members compute it. Each output number is computed exactly as a single
//! copy would compute it, so the shared pass gives the same numbers.
//!
//! The engine does not know how the halves travel: the page joins a Web Worker through shared
//! memory (`web.rs`), the tests join two threads through channels. With no team joined, every
//! product is computed whole.

use std::cell::RefCell;
use std::rc::Rc;

use ndarray::{s, Array2};

pub trait Team {
    /// 0 computes the first half of every product's output features, 1 the second half.
    fn member(&self) -> usize;
    /// Sends this member's half (T x its features, row-major) and receives the other's.
    /// False when the partner did not answer: the caller then computes the other half itself
    /// and the team is left.
    fn exchange(&self, mine: &[f32], theirs: &mut [f32]) -> bool;
}

thread_local! {
    static TEAM: RefCell<Option<Rc<dyn Team>>> = const { RefCell::new(None) };
}

/// Joins a team: from now on, this thread's dense layers share their work with the partner.
pub fn join(team: Rc<dyn Team>) {
    TEAM.with(|t| *t.borrow_mut() = Some(team));
}

/// Leaves the team (if any): products are computed whole again.
pub fn leave() {
    TEAM.with(|t| *t.borrow_mut() = None);
}

/// The team this thread belongs to.
pub fn current() -> Option<Rc<dyn Team>> {
    TEAM.with(|t| t.borrow().clone())
}

/// Output features [start, end) of member 0 and member 1 for a layer with `out` features. The
/// split falls on a multiple of `block`, so that both halves keep the kernel's blocks whole.
pub fn halves(out: usize, block: usize) -> [(usize, usize); 2] {
    let split = (out / 2) / block * block;
    [(0, split), (split, out)]
}

/// Runs `f` with every product computed whole on this thread, then rejoins the team (if any):
/// for work the partner does not share, such as computing one layer again for a view.
pub fn alone<T>(f: impl FnOnce() -> T) -> T {
    let team = current();
    leave();
    let out = f();
    if let Some(team) = team {
        join(team);
    }
    out
}

/// A product of `out` output features shared with the team (if any): `features(lo, hi)`
/// computes output features [lo, hi) as a (T, hi - lo) array; this member computes its half,
/// swaps it with the partner's and returns all `out` features (T, out). Without a team, or
/// when the partner does not answer (the team is then left), this member computes the rest.
/// The split falls on a multiple of `block` features.
pub fn shared_product(t: usize, out: usize, block: usize, features: impl Fn(usize, usize) -> Array2<f32>) -> Array2<f32> {
    let Some(team) = current() else {
        return features(0, out);
    };
    let halves = halves(out, block);
    let member = team.member().min(1);
    let ((lo, hi), (other_lo, other_hi)) = (halves[member], halves[1 - member]);
    let mine = features(lo, hi).as_standard_layout().into_owned(); // (T, hi - lo)
    let mut theirs = Array2::<f32>::zeros((t, other_hi - other_lo)); // (T, other half)
    let swapped = match (mine.as_slice(), theirs.as_slice_mut()) {
        (Some(m), Some(o)) => team.exchange(m, o),
        _ => false,
    };
    if !swapped {
        // The partner did not answer (or this half could not be sent): finish alone.
        leave();
        theirs = features(other_lo, other_hi);
    }
    let mut y = Array2::<f32>::zeros((t, out)); // (T, out)
    y.slice_mut(s![.., lo..hi]).assign(&mine);
    y.slice_mut(s![.., other_lo..other_hi]).assign(&theirs);
    y
}
