//! The one thread that samples every side of the process: a server running
//! a hundred tests has one sampling thread, not a hundred (each cost the
//! server a stack and its share of the heap). The thread exists while some
//! side is sampled and ends with the last. This module owns when each
//! side's sampler steps and hands its output back; what a step does is in
//! `sampler.rs`.

use crate::cpu::ThreadCpu;
use crate::sampler::{Run, SamplerOutput, SideEvent};
use crate::stream::lock;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Runs handed to the thread and not yet taken by it, and its wake-ups.
struct Shared {
    added: Vec<Entry>,
    /// Something happened that a sampler reacts to at once (a run was
    /// added, a stream ended): step every run now.
    woken: bool,
    /// The sampling thread is alive (it clears this as it leaves).
    running: bool,
}

static STATE: Mutex<Shared> = Mutex::new(Shared {
    added: Vec::new(),
    woken: false,
    running: false,
});
static WAKE: Condvar = Condvar::new();

struct Entry {
    run: Run,
    /// When the run wants its next step.
    due: Instant,
    done: Arc<Done>,
}

/// Where a run's output waits for its side.
#[derive(Default)]
struct Done {
    output: Mutex<Option<SamplerOutput>>,
    ready: Condvar,
}

/// A side's claim on its sampler's output.
pub(crate) struct Handle(Arc<Done>);

impl Handle {
    /// Waits until the run is done (every stream of its side ended) and
    /// returns what it kept.
    pub fn join(self) -> SamplerOutput {
        let output = lock(&self.0.output);
        let mut output = self
            .0
            .ready
            .wait_while(output, |o| o.is_none())
            .unwrap_or_else(|p| p.into_inner());
        output.take().unwrap_or_default()
    }
}

/// Hands `run` to the sampling thread, starting the thread if none runs.
pub(crate) fn add(run: Run) -> std::io::Result<Handle> {
    let done = Arc::new(Done::default());
    let mut shared = lock(&STATE);
    if !shared.running {
        std::thread::Builder::new()
            .name("lp-sampler".into())
            .spawn(serve)?;
        shared.running = true;
    }
    shared.added.push(Entry {
        run,
        due: Instant::now(),
        done: done.clone(),
    });
    shared.woken = true;
    WAKE.notify_one();
    Ok(Handle(done))
}

/// A stream ended somewhere: its side's sampler reports the end at once
/// instead of at its next 10 ms step (most of a short sweep run's cost).
pub(crate) fn wake() {
    lock(&STATE).woken = true;
    WAKE.notify_one();
}

/// The sampling thread: steps each run when it is due (or all of them when
/// woken) until none is left.
fn serve() {
    let mut runs: Vec<Entry> = Vec::new();
    loop {
        let mut shared = lock(&STATE);
        runs.append(&mut shared.added);
        if runs.is_empty() {
            shared.running = false;
            return;
        }
        let due = runs
            .iter()
            .map(|e| e.due)
            .min()
            .unwrap_or_else(Instant::now);
        let wait = due.saturating_duration_since(Instant::now());
        let (mut shared, _) = WAKE
            .wait_timeout_while(shared, wait, |s| !s.woken)
            .unwrap_or_else(|p| p.into_inner());
        let woken = std::mem::take(&mut shared.woken);
        runs.append(&mut shared.added);
        drop(shared);
        let now = Instant::now();
        let mut i = 0;
        while i < runs.len() {
            if (woken || runs[i].due <= now) && !step(&mut runs[i]) {
                finish(runs.swap_remove(i));
            } else {
                i += 1;
            }
        }
    }
}

/// One step of a run, its CPU time counted to its side; false once the
/// run is done (a run that panicked is done: its side gets what it kept).
fn step(entry: &mut Entry) -> bool {
    let before = ThreadCpu::now();
    let next = catch_unwind(AssertUnwindSafe(|| entry.run.step()));
    entry.run.add_cpu(&ThreadCpu::since(&before));
    match next {
        Ok(Some(due)) => {
            entry.due = due;
            true
        }
        Ok(None) => false,
        Err(_) => {
            entry.due = Instant::now();
            false
        }
    }
}

/// Hands a done run's output to its side, then tells the side's owner.
fn finish(entry: Entry) {
    let (output, sink) = entry.run.finish();
    *lock(&entry.done.output) = Some(output);
    entry.done.ready.notify_all();
    let _ = catch_unwind(AssertUnwindSafe(|| sink(SideEvent::AllDone)));
}
