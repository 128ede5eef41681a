//! Patching sentence A into sentence B on the page (`analysis::patching::PatchSweep`), a few
//! patches at a time: a small model's sweep is done while its chart is drawn; a large one's
//! (SmolLM2: 270 heads and 30 layers of the stream) goes on in slices the page asks for
//! (`Viz::patch_step`, in `views`) between frames, with a progress bar and Stop. This file
//! keeps the sweep's state; `Viz` holds one.

use std::rc::Rc;

use super::js::now_ms;
use crate::analysis::patching::{PatchGrid, PatchSweep};
use crate::error::VizError;
use crate::trace::Trace;
use crate::Transformer;
use serde::Serialize;

/// How long the drawing of a chart may spend on patches before it shows the progress instead.
pub(super) const PATCH_MS_WHILE_DRAWING: f64 = 40.0;

/// Sentence A's and B's texts and the two answers of a patching sweep.
type PatchKey = (String, String, Option<String>, Option<String>);

/// The last sweep: the texts and answers it is for, and how far it has come.
pub(super) struct PatchState {
    key: PatchKey,
    /// Counts the sweeps started, so the page tells a new one from the last.
    id: u32,
    /// The time its patches (and the two runs before them) took so far, in ms.
    milliseconds: f64,
    now: PatchNow,
    /// The sweep while it runs.
    sweep: Option<Box<PatchSweep>>,
    /// Tokens the two texts share at the start (computed once), and the patches in all.
    shared: usize,
    total: usize,
}

/// What a patching chart can draw now.
#[derive(Clone)]
pub(super) enum PatchNow {
    Done(Rc<Result<PatchGrid, VizError>>),
    Running { done: usize, total: usize },
}

/// How far the sweep has come, for the page's progress bar.
#[derive(Serialize)]
pub(super) struct Progress {
    id: u32,
    done: usize,
    total: usize,
    finished: bool,
    shared: usize,
    /// Time spent on patches so far (ms), without the pauses between slices.
    milliseconds: f64,
}

impl PatchState {
    /// The state for sentence A (`a`) put into sentence B (`b`) with these answers: `current`
    /// if it is for them, else a new sweep (its two runs made, no patch yet).
    pub(super) fn for_texts(
        current: Option<PatchState>,
        model: &Transformer,
        a: &Trace,
        b: &Trace,
        answer: Option<&str>,
        wrong: Option<&str>,
    ) -> (PatchState, bool) {
        let key = (
            a.text.clone(),
            b.text.clone(),
            answer.map(str::to_string),
            wrong.map(str::to_string),
        );
        let id = match current {
            Some(s) if s.key == key => return (s, false),
            Some(s) => s.id + 1,
            None => 0,
        };
        let started = now_ms();
        let (sweep, now, shared, total) =
            match PatchSweep::new(model, &a.text, &b.text, answer, wrong) {
                Ok(sweep) => {
                    let now = PatchNow::Running {
                        done: 0,
                        total: sweep.total(),
                    };
                    let (shared, total) = (sweep.shared(), sweep.total());
                    (Some(Box::new(sweep)), now, shared, total)
                }
                Err(e) => (None, PatchNow::Done(Rc::new(Err(e))), 0, 0),
            };
        let state = PatchState {
            key,
            id,
            milliseconds: now_ms() - started,
            now,
            sweep,
            shared,
            total,
        };
        (state, true)
    }

    /// What a patching chart can draw now.
    pub(super) fn now(&self) -> PatchNow {
        self.now.clone()
    }

    /// Makes patches for about `budget` ms (at least one).
    pub(super) fn advance(&mut self, model: &Transformer, budget: f64) {
        let Some(sweep) = self.sweep.as_mut() else {
            return;
        };
        let start = now_ms();
        let finished = loop {
            match sweep.run(model, 1) {
                Ok(true) => break Ok(()),
                Ok(false) if now_ms() - start >= budget => break Err(None),
                Ok(false) => {}
                Err(e) => break Err(Some(e)),
            }
        };
        self.milliseconds += now_ms() - start;
        self.now = match finished {
            Ok(()) => PatchNow::Done(Rc::new(Ok(sweep.grid(model).expect("every patch is made")))),
            Err(Some(e)) => PatchNow::Done(Rc::new(Err(e))),
            Err(None) => PatchNow::Running {
                done: sweep.done(),
                total: sweep.total(),
            },
        };
        if matches!(self.now, PatchNow::Done(_)) {
            self.sweep = None;
        }
    }

    /// How far it has come, for the page.
    pub(super) fn progress(&self) -> Progress {
        let (done, total) = match &self.now {
            PatchNow::Running { done, total } => (*done, *total),
            PatchNow::Done(_) => (self.total, self.total),
        };
        Progress {
            id: self.id,
            done,
            total,
            finished: matches!(self.now, PatchNow::Done(_)),
            shared: self.shared,
            milliseconds: self.milliseconds,
        }
    }
}
