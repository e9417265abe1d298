//! Campaign progress: which run (phase and session) of how many, and the
//! time left. On a terminal a live line on stderr; otherwise plain lines, so a
//! log under nohup shows how far the campaign got.

use crate::sweep::progress::format_eta;
use std::io::Write;
use std::time::{Duration, Instant};

/// Where the plain per-run lines go.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Plain {
    /// Human output: the run lines are part of the text on stdout.
    Stdout,
    /// JSON on stdout: the run lines go to stderr.
    Stderr,
    /// Nowhere (JSON with a terminal on stderr: the live line says it all).
    Off,
}

/// Time left: the unfinished part of the current run as planned, the later
/// runs as planned, plus the overhead per run seen so far (connecting,
/// collecting reports) for every run not yet finished.
pub fn time_left(planned: &[f64], done: usize, in_run_s: f64, overhead_per_run_s: f64) -> f64 {
    let Some(current) = planned.get(done) else {
        return 0.0;
    };
    let later: f64 = planned[done + 1..].iter().sum();
    (current - in_run_s).max(0.0) + later + overhead_per_run_s * (planned.len() - done) as f64
}

pub struct Progress {
    /// Planned seconds of each run: start delay, duration, and the pause after it.
    planned: Vec<f64>,
    /// Runs finished.
    done: usize,
    started: Instant,
    run_started: Option<Instant>,
    /// Seconds the finished runs took beyond their plan.
    overhead_s: f64,
    label: String,
    live: bool,
    plain: Plain,
    drawn: bool,
}

impl Progress {
    /// `json`: stdout carries one JSON document, so plain lines go to stderr.
    pub fn new(planned: Vec<f64>, json: bool) -> Progress {
        // SAFETY: isatty only inspects the descriptor.
        let live = unsafe { libc::isatty(2) } == 1;
        let plain = match (json, live) {
            (false, _) => Plain::Stdout,
            (true, false) => Plain::Stderr,
            (true, true) => Plain::Off,
        };
        Progress {
            planned,
            done: 0,
            started: Instant::now(),
            run_started: None,
            overhead_s: 0.0,
            label: String::new(),
            live,
            plain,
            drawn: false,
        }
    }

    pub fn total(&self) -> usize {
        self.planned.len()
    }

    fn overhead_per_run(&self) -> f64 {
        if self.done == 0 {
            0.0
        } else {
            (self.overhead_s / self.done as f64).max(0.0)
        }
    }

    fn left(&self) -> Duration {
        let in_run = self.run_started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        Duration::from_secs_f64(time_left(
            &self.planned,
            self.done,
            in_run,
            self.overhead_per_run(),
        ))
    }

    fn finish_run(&mut self) {
        if let Some(t) = self.run_started.take() {
            let planned = self.planned.get(self.done).copied().unwrap_or(0.0);
            self.overhead_s += t.elapsed().as_secs_f64() - planned;
            self.done += 1;
        }
    }

    /// A run starts: `what` names its phase, session and sweep point.
    pub fn start_run(&mut self, what: &str) {
        self.finish_run();
        self.run_started = Some(Instant::now());
        self.label = what.to_string();
        let line = format!(
            "run {}/{}: {what}; elapsed {}, ETA {}",
            self.done + 1,
            self.total(),
            format_eta(self.started.elapsed()),
            format_eta(self.left())
        );
        match self.plain {
            Plain::Stdout => self.print(&line),
            Plain::Stderr => {
                self.clear();
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            Plain::Off => {}
        }
        self.redraw();
    }

    /// Redraws the live line (terminal only): run k of n, time in the run, time left.
    pub fn redraw(&mut self) {
        if !self.live || self.run_started.is_none() {
            return;
        }
        let in_run = self.run_started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let line = format!(
            "[run {}/{}] {}: {:.0} s in, ETA {}",
            self.done + 1,
            self.total(),
            self.label,
            in_run,
            format_eta(self.left())
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Prints a line on stdout without tearing the live line.
    pub fn print(&mut self, line: &str) {
        self.clear();
        say!("{line}");
        self.redraw();
    }

    /// Clears the live line, so other output starts on a clean line.
    pub fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }

    /// The campaign ended: the live line goes away.
    pub fn finish(&mut self) {
        self.finish_run();
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_counts_the_rest_of_the_plan_and_the_overhead_seen() {
        let plan = [11.5, 11.5, 11.0];
        assert_eq!(time_left(&plan, 0, 0.0, 0.0), 34.0);
        // 4 s into the second run, runs have taken 0.5 s more than planned.
        assert_eq!(time_left(&plan, 1, 4.0, 0.5), 7.5 + 11.0 + 1.0);
        // A run overrunning its plan counts as nothing left of it.
        assert_eq!(time_left(&plan, 2, 20.0, 0.0), 0.0);
        assert_eq!(time_left(&plan, 3, 0.0, 1.0), 0.0);
    }
}
