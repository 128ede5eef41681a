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
