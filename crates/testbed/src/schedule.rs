//! Changes to running links: one change ([`LinkChange`], what `testbed set` sends), and
//! schedules of them ([`Schedule`]: steps at times from its start, run once or repeated),
//! with where a running schedule is ([`ScheduleState`]).

use crate::params::{DirectionOverrides, DirectionParams};
use serde::{Deserialize, Serialize};

/// New values for some keys of one link, in one or both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkChange {
    /// Index of the link in the topology.
    pub link: usize,
    /// Directions it applies to: [a_to_b, b_to_a].
    pub directions: [bool; 2],
    pub overrides: DirectionOverrides,
    /// New MTU of the link (both ends, both directions).
    pub mtu: Option<u32>,
    /// New interface queue (packets) of a `line_rate` link's shaped host ends.
    #[serde(default)]
    pub txqueuelen: Option<u32>,
}

impl LinkChange {
    /// The parameters of direction `dir` (0 = a_to_b) after this change, or None if the
    /// change leaves that direction alone.
    pub fn apply(&self, dir: usize, params: &DirectionParams) -> Option<DirectionParams> {
        if !self.directions[dir] {
            return None;
        }
        let mut p = params.clone();
        self.overrides.apply_to(&mut p);
        Some(p)
    }
}

/// One step of a schedule: changes applied `at_ns` after the start of each pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub at_ns: u64,
    pub change: LinkChange,
}

/// Steps in time order; with `repeat_ns`, every pass starts that long after the previous one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Where it was written: a schedule file, or the topology file.
    pub source: String,
    pub steps: Vec<Step>,
    pub repeat_ns: Option<u64>,
}

impl Schedule {
    /// Groups of steps that share a time (applied together), as index ranges into `steps`.
    pub fn groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if self.steps[g.start].at_ns == step.at_ns => g.end = i + 1,
                _ => groups.push(i..i + 1),
            }
        }
        groups
    }
}

/// Where a running (or finished) schedule is, for `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleState {
    pub source: String,
    pub steps: usize,
    pub repeat_ns: Option<u64>,
    /// The last step applied (0-based; several steps at one time: the last of them).
    pub step: Option<usize>,
    /// Passes completed before the current one.
    pub pass: u64,
    /// When the schedule started, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// When the next step is due, ms since the Unix epoch; None once a one-off schedule ends.
    pub next_unix_ms: Option<u64>,
    /// The most any step so far landed after it was due, microseconds (from its due time
    /// to its change in force): what a user needs to trust that an impairment lasted as
    /// long as the file says. None before the first step.
    #[serde(default)]
    pub worst_late_us: Option<u64>,
}

impl ScheduleState {
    /// e.g. "step 2 of 3 (pass 5), next in 4.2 s" or "finished (3 steps)".
    pub fn describe(&self, now_unix_ms: u64) -> String {
        let step = match self.step {
            Some(s) => format!("step {} of {}", s + 1, self.steps),
            None => format!("not started (0 of {} steps)", self.steps),
        };
        let pass = if self.repeat_ns.is_some() {
            format!(" (pass {})", self.pass + 1)
        } else {
            String::new()
        };
        let late = self.worst_late_us.map_or(String::new(), |us| {
            format!(", steps landed at most {:.3} ms late", us as f64 / 1e3)
        });
        match self.next_unix_ms {
            Some(next) => format!(
                "{step}{pass}, next in {:.1} s{late}",
                next.saturating_sub(now_unix_ms) as f64 / 1e3
            ),
            None => format!("finished, {step}{late}"),
        }
    }

    /// Records that a step landed `late` after it was due.
    pub fn landed(&mut self, late: std::time::Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        self.worst_late_us = Some(self.worst_late_us.map_or(us, |w| w.max(us)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(at_ns: u64) -> Step {
        Step {
            at_ns,
            change: LinkChange {
                link: 0,
                directions: [true, true],
                overrides: Default::default(),
                mtu: None,
                txqueuelen: None,
            },
        }
    }

    #[test]
    fn steps_at_one_time_form_one_group() {
        let s = Schedule {
            source: "x".into(),
            steps: vec![step(0), step(5), step(5), step(9)],
            repeat_ns: None,
        };
        assert_eq!(s.groups(), [0..1, 1..3, 3..4]);
    }

    #[test]
    fn a_change_touches_only_its_directions_and_keys() {
        let change = LinkChange {
            link: 0,
            directions: [false, true],
            overrides: DirectionOverrides {
                delay_ns: Some(5),
                ..Default::default()
            },
            mtu: None,
            txqueuelen: None,
        };
        let p = DirectionParams {
            rate_bps: 7,
            ..Default::default()
        };
        assert_eq!(change.apply(0, &p), None);
        let after = change.apply(1, &p).unwrap();
        assert_eq!((after.delay_ns, after.rate_bps), (5, 7));
    }

    #[test]
    fn state_describes_itself() {
        let mut st = ScheduleState {
            source: "s.toml".into(),
            steps: 3,
            repeat_ns: Some(1),
            step: Some(1),
            pass: 4,
            started_unix_ms: 0,
            next_unix_ms: Some(5_200),
            worst_late_us: None,
        };
        assert_eq!(st.describe(1_000), "step 2 of 3 (pass 5), next in 4.2 s");
        st.next_unix_ms = None;
        st.repeat_ns = None;
        assert_eq!(st.describe(1_000), "finished, step 2 of 3");
        st.landed(std::time::Duration::from_micros(2_500));
        st.landed(std::time::Duration::from_micros(40));
        assert_eq!(
            st.describe(1_000),
            "finished, step 2 of 3, steps landed at most 2.500 ms late"
        );
    }
}
