//! What runs when: each job's next run time (restored from the archive
//! after a restart), the random slip that spreads a mesh over its interval,
//! and the rule that a host takes part in one throughput test at a time.
//! Pure: the clock is passed in.

use super::schedule::Schedule;
use std::collections::{BTreeMap, BTreeSet};

pub struct Planner {
    /// Next run time of each job (Unix ms), by job index.
    pub next: Vec<i64>,
    busy: BTreeSet<String>,
    running: BTreeSet<usize>,
    seed: u64,
}

impl Planner {
    /// Stored next run times where there are some; a job never run starts
    /// within its first slip, so a new mesh does not fire at once. A time
    /// in the past runs once as soon as it can (missed runs are not caught
    /// up one by one).
    pub fn new(schedule: &Schedule, stored: &BTreeMap<String, i64>, now: i64, seed: u64) -> Self {
        let mut p = Planner {
            next: Vec::new(),
            busy: BTreeSet::new(),
            running: BTreeSet::new(),
            seed: seed | 1,
        };
        for job in &schedule.jobs {
            let slip = schedule.tests[job.test].slip_s;
            let at = match stored.get(&schedule.job_key(job)) {
                Some(&t) => t,
                None => now + p.slip_ms(slip),
            };
            p.next.push(at);
        }
        p
    }

    /// A uniform draw in [0, slip) in ms (xorshift: no statistics needed).
    fn slip_ms(&mut self, slip_s: f64) -> i64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let unit = (self.seed >> 11) as f64 / (1u64 << 53) as f64;
        (unit * slip_s * 1000.0) as i64
    }

    /// Jobs due at `now` that can start: oldest due first, and none whose
    /// source or destination is in another running test. They are marked
    /// running until [`Planner::finished`].
    pub fn start_due(&mut self, schedule: &Schedule, now: i64) -> Vec<usize> {
        let mut due: Vec<usize> = (0..self.next.len())
            .filter(|&j| self.next[j] <= now && !self.running.contains(&j))
            .collect();
        due.sort_by_key(|&j| self.next[j]);
        let mut started = Vec::new();
        for j in due {
            let job = &schedule.jobs[j];
            if self.busy.contains(&job.src) || self.busy.contains(&job.dst) {
                continue;
            }
            self.busy.insert(job.src.clone());
            self.busy.insert(job.dst.clone());
            self.running.insert(j);
            started.push(j);
        }
        started
    }

    /// The next run time of a job that was due at `due` (its interval plus
    /// a fresh slip after the planned time, so a late start does not drift
    /// the schedule; never in the past).
    pub fn next_after(&mut self, schedule: &Schedule, j: usize, due: i64, now: i64) -> i64 {
        let test = &schedule.tests[schedule.jobs[j].test];
        let interval = (test.interval_s * 1000.0) as i64;
        let mut at = due + interval;
        if at <= now {
            at = now + interval;
        }
        at + self.slip_ms(test.slip_s)
    }

    /// A job ended: its hosts are free, and it runs next at `next`.
    pub fn finished(&mut self, schedule: &Schedule, j: usize, next: i64) {
        let job = &schedule.jobs[j];
        self.busy.remove(&job.src);
        self.busy.remove(&job.dst);
        self.running.remove(&j);
        self.next[j] = next;
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::schedule::parse;

    const MESH: &str = r#"
[[host]]
name = "a"
address = "127.0.0.1:1"
[[host]]
name = "b"
address = "127.0.0.1:2"
[[host]]
name = "c"
address = "127.0.0.1:3"
[[host]]
name = "d"
address = "127.0.0.1:4"
[[group]]
name = "m"
mesh = ["a", "b", "c", "d"]
[[test]]
name = "t"
group = "m"
interval = "10s"
slip = "1s"
duration = "1s"
"#;

    #[test]
    fn no_host_is_in_two_tests_and_slip_spreads_the_start() {
        let s = parse("m.toml", MESH).unwrap();
        let mut p = Planner::new(&s, &BTreeMap::new(), 0, 42);
        assert!(p.next.iter().all(|&t| (0..1000).contains(&t)));
        let started = p.start_due(&s, 1000);
        // Four hosts: at most two disjoint pairs at once.
        assert_eq!(started.len(), 2);
        let hosts: BTreeSet<&str> = started
            .iter()
            .flat_map(|&j| [s.jobs[j].src.as_str(), s.jobs[j].dst.as_str()])
            .collect();
        assert_eq!(hosts.len(), 4);
        let next = p.next_after(&s, started[0], p.next[started[0]], 1500);
        assert!((10_000..12_000).contains(&next), "{next}");
        p.finished(&s, started[0], next);
        assert_eq!(p.running(), 1);
    }

    #[test]
    fn stored_times_are_kept_after_a_restart() {
        let s = parse("m.toml", MESH).unwrap();
        let stored: BTreeMap<String, i64> = s.jobs.iter().map(|j| (s.job_key(j), 77_000)).collect();
        let p = Planner::new(&s, &stored, 0, 1);
        assert!(p.next.iter().all(|&t| t == 77_000));
    }
}
