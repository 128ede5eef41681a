//! Helper threads that stay awake between the products of one pass.
//!
//! A pass shares some fifty pieces of work among the threads (each product, each layer's
//! attention and activation). With `rayon::in_place_scope` alone, each of them costs two
//! sleeps and wake-ups when the work is short: rayon's workers fall asleep within microseconds
//! of running out of work, the page's thread wakes one for every product, and then blocks
//! until that worker has come, even when it did all the runs itself in the meantime. In a
//! browser a wake-up through `memory.atomic.wait` costs a large fraction of a short product,
//! so two threads gained nothing on short texts (docs/benchmarks.md, threads' scaling).
//!
//! Here the threads are still rayon's (natively its pool, in the page the wasm-bindgen-rayon
//! workers), but a product's work is handed to *helpers*: rayon jobs that, once started,
//! spin on an atomic generation counter for a while after their last piece of work (`SPINS`),
//! taking the next product's runs as soon as it is published. The calling thread never waits
//! for a helper that has not started: it takes runs itself, then waits only for the runs a
//! helper has under way. No kept crate offers this (rayon's workers cannot be told to spin
//! longer), hence these ~100 lines.
//!
//! Safety of the one unsafe step: the published job lives on the caller's stack. A helper first
//! counts itself `inside`, then reads the job; the caller withdraws the job, then waits until no
//! helper is inside. Both in sequentially consistent order, so a helper either counted itself
//! before the caller looked (the caller waits for it) or reads the withdrawn (null) job.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, TryLockError};

/// How long a helper spins for new work after its last, in checks of the generation counter:
/// long enough to span the gap between one product and the next of a pass (a wasm check is
/// one load; a native one also pauses the core, so it needs fewer).
const SPINS: u32 = if cfg!(target_arch = "wasm32") {
    1 << 20
} else {
    1 << 15
};

/// The work of one product, type-erased for the helpers: call it until it returns.
struct Job<'a> {
    work: &'a (dyn Fn() + Sync),
}

struct Helpers {
    /// The job being shared now, or null.
    job: AtomicPtr<Job<'static>>,
    /// Bumped each time a job is published.
    generation: AtomicUsize,
    /// Helpers between counting themselves in and leaving a job (see the module's comment).
    inside: AtomicUsize,
    /// Helper jobs started and not yet returned to rayon.
    running: AtomicUsize,
    /// One caller shares its work at a time; another computes its own alone meanwhile.
    caller: Mutex<()>,
}

static HELPERS: Helpers = Helpers {
    job: AtomicPtr::new(std::ptr::null_mut()),
    generation: AtomicUsize::new(0),
    inside: AtomicUsize::new(0),
    running: AtomicUsize::new(0),
    caller: Mutex::new(()),
};

/// True while a helper is spinning or working: sharing a product then wakes no thread.
pub fn awake() -> bool {
    HELPERS.running.load(SeqCst) > 0
}

/// Runs `work` on this thread and on up to `threads - 1` helpers at once, returning when every
/// call that started has returned. `work` must hand out its pieces itself (an atomic counter)
/// and return once none is left, so that any number of calls, one or many, does it all.
pub fn share(threads: usize, work: &(dyn Fn() + Sync)) {
    let h = &HELPERS;
    let _only_caller = match h.caller.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(guard)) => guard.into_inner(), // an earlier caller's work panicked; nothing is left half-done
        Err(TryLockError::WouldBlock) => {
            work(); // another thread is sharing its own work: this one does its alone
            return;
        }
    };
    // Start helpers up to the number wanted; those already spinning take this job at once.
    while h.running.load(SeqCst) < threads.saturating_sub(1) {
        h.running.fetch_add(1, SeqCst);
        rayon::spawn(help);
    }
    let job = Job { work };
    // SAFETY: the pointer is withdrawn before `job` goes out of scope, even if `work` panics
    // (`Withdraw`'s drop runs first: declared after `job`), and no helper reads it after that
    // (module comment); the 'static is never relied on.
    h.job
        .store(&job as *const Job<'_> as *mut Job<'static>, SeqCst);
    let _withdraw = Withdraw(h);
    h.generation.fetch_add(1, SeqCst);
    work(); // this thread's share
}

/// Withdraws the published job and waits until no helper is inside it.
struct Withdraw(&'static Helpers);

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.0.job.store(std::ptr::null_mut(), SeqCst);
        while self.0.inside.load(SeqCst) != 0 {
            std::hint::spin_loop(); // a helper finishes a run it took
        }
    }
}

/// A helper: takes part in every job published while it spins, then returns to rayon.
fn help() {
    let h = &HELPERS;
    let mut seen = usize::MAX; // a job published before this helper started is taken too
    let mut idle = 0;
    while idle < SPINS {
        let generation = h.generation.load(SeqCst);
        if generation == seen {
            idle += 1;
            std::hint::spin_loop();
            continue;
        }
        seen = generation;
        idle = 0;
        h.inside.fetch_add(1, SeqCst);
        let job = h.job.load(SeqCst);
        if !job.is_null() {
            // SAFETY: counted inside before reading a non-null job: the caller waits for us.
            (unsafe { &*job }.work)();
        }
        h.inside.fetch_sub(1, SeqCst);
    }
    h.running.fetch_sub(1, SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Shares `count` pieces among `threads` threads: true when each was done exactly once.
    fn each_piece_done_once(count: usize, threads: usize) -> bool {
        let pieces: Vec<AtomicU32> = (0..count).map(|_| AtomicU32::new(0)).collect();
        let next = AtomicUsize::new(0);
        let work = || loop {
            let k = next.fetch_add(1, SeqCst);
            let Some(p) = pieces.get(k) else { break };
            p.fetch_add(1, SeqCst);
        };
        share(threads, &work);
        pieces.iter().all(|p| p.load(SeqCst) == 1)
    }

    #[test]
    fn every_piece_is_done_once_however_many_callers_and_helpers() {
        let callers: Vec<_> = (0..4)
            .map(|c| {
                std::thread::spawn(move || {
                    for round in 0..200 {
                        assert!(
                            each_piece_done_once(37, 1 + (round + c) % 3),
                            "caller {c}, round {round}"
                        );
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
    }

    #[test]
    fn a_caller_whose_work_panics_leaves_the_helpers_sound() {
        let caller = std::thread::current().id();
        let outcome = std::panic::catch_unwind(|| {
            let next = AtomicUsize::new(0);
            let work = || loop {
                let k = next.fetch_add(1, SeqCst);
                if k >= 1000 {
                    break;
                }
                if k >= 500 && std::thread::current().id() == caller {
                    panic!("the caller's piece {k} fails");
                }
            };
            share(2, &work);
        });
        assert!(outcome.is_err());
        // The job was withdrawn on the way out: the next caller shares its own as before.
        assert!(each_piece_done_once(100, 2));
    }

    #[test]
    fn helpers_take_part() {
        // Pieces long enough that a helper that has started takes some of them. The first
        // rounds may find rayon's workers still asleep, so rounds go on until one did (a
        // busy machine only makes that take longer).
        let caller = std::thread::current().id();
        let helped = (0..10_000).any(|_| {
            let next = AtomicUsize::new(0);
            let by_helper = AtomicUsize::new(0);
            let work = || loop {
                let k = next.fetch_add(1, SeqCst);
                if k >= 64 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(20));
                if std::thread::current().id() != caller {
                    by_helper.fetch_add(1, SeqCst);
                }
            };
            share(2, &work);
            by_helper.load(SeqCst) > 0
        });
        assert!(helped);
    }
}
