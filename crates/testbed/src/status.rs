//! What a running testbed says about each link direction: the parameters in force, the
//! counters, and how well the emulator kept its timing (release lateness, packets released
//! more than 100 µs late, queueing delay, the delay actually given against the one
//! configured). [`Testbed::link_status`] returns it; a test runner takes it before and after
//! a run, and [`timing_warnings`] says whether the emulator's lateness could have changed
//! what the run measured.

use crate::counters::CounterValues;
use crate::error::TestbedError;
use crate::params::DirectionParams;
use crate::testbed::Testbed;
use crate::timing::{RecentTiming, Summary, TimingSnapshot, LATE_THRESHOLD_NS};
use serde::{Deserialize, Serialize};

/// More than this fraction of packets released over 100 µs late makes a run suspect.
pub const LATE_WARNING_FRACTION: f64 = 0.001;

/// One link direction as the emulator reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionStatus {
    /// Index of the link in the topology.
    pub link: usize,
    /// The link's name, or its ends as `a-b`.
    pub link_name: String,
    /// `a_to_b` or `b_to_a`.
    pub direction: String,
    pub from: String,
    pub to: String,
    /// Parameters in force (after `testbed set` and schedule steps).
    pub params: DirectionParams,
    pub mtu: u32,
    pub counters: CounterValues,
    /// Since the emulator started (or, from [`DirectionStatus::since`], over a window).
    pub timing: TimingSnapshot,
    /// The emulator's own last few seconds.
    pub recent: Option<RecentTiming>,
}

/// The timing figures of a window, as a test result carries them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingReport {
    pub link: String,
    pub direction: String,
    pub packets: u64,
    /// Release lateness: actual minus scheduled departure.
    pub lateness: Summary,
    pub late_over_100us: u64,
    pub late_fraction: f64,
    /// Time packets waited in the link's queue.
    pub queueing: Summary,
    pub configured_delay_ns: u64,
    /// Median delay the emulator gave (release minus end of serialisation), its own clock.
    pub measured_delay_p50_ns: u64,
    /// What the direction carried and dropped over the window, by cause (absent from
    /// results stored before it was added).
    #[serde(default)]
    pub counters: CounterValues,
}

impl DirectionStatus {
    /// Counters and timing of what happened after `earlier` (the same direction, earlier).
    pub fn since(&self, earlier: &DirectionStatus) -> DirectionStatus {
        DirectionStatus {
            counters: self.counters.since(&earlier.counters),
            timing: self.timing.since(&earlier.timing),
            ..self.clone()
        }
    }

    pub fn timing_report(&self) -> TimingReport {
        let t = &self.timing;
        let lateness = t.lateness.summary();
        TimingReport {
            link: self.link_name.clone(),
            direction: self.direction.clone(),
            packets: lateness.count,
            late_over_100us: t.late_over_100us,
            late_fraction: t.late_over_100us as f64 / lateness.count.max(1) as f64,
            lateness,
            queueing: t.queueing.summary(),
            configured_delay_ns: self.params.delay_ns,
            measured_delay_p50_ns: t.delay.quantile(0.5).unwrap_or(0),
            counters: self.counters,
        }
    }

    /// A one-line note when the receiving end's per-packet processing (`per_packet`) was the
    /// bottleneck: packets typically waited for it behind others (their delay's median is
    /// over the configured delay by more than two full-size packets' processing), or its full backlog
    /// dropped some. Then the end, not the link, limited what got through.
    pub fn processing_note(&self) -> Option<String> {
        let (p, c) = (&self.params, &self.counters);
        let per_packet = p.processing_ns(0);
        if p.processing_ns(1) == 0 || c.packets_forwarded == 0 {
            return None;
        }
        let waited = self
            .timing
            .delay
            .quantile(0.5)
            .unwrap_or(0)
            .saturating_sub(p.delay_ns + per_packet);
        // More than one full-size packet's processing beyond its own: it queued.
        let full_size = p.processing_ns(u64::from(self.mtu) + 14);
        if waited <= full_size && c.dropped_backlog == 0 {
            return None;
        }
        Some(format!(
            "link {} {} -> {}: {} takes {}; packets waited a median {:.2} ms for it and {} of {} were dropped from its full backlog of {}: the receiving end, not the link, limited this run",
            self.link_name,
            self.from,
            self.to,
            self.to,
            p.processing_cost(),
            waited as f64 / 1e6,
            c.dropped_backlog,
            c.packets_in,
            p.backlog_packets
        ))
    }

    /// A one-line warning if more than 0.1 % of the packets left over 100 µs late.
    pub fn warning(&self) -> Option<String> {
        let r = self.timing_report();
        (r.late_fraction > LATE_WARNING_FRACTION).then(|| {
            format!(
                "link {} {} -> {}: {} of {} packets ({:.2} %) left the emulator more than {} us late (p99 lateness {:.0} us); the emulator was short of CPU and the result may show it",
                self.link_name,
                self.from,
                self.to,
                r.late_over_100us,
                r.packets,
                r.late_fraction * 100.0,
                LATE_THRESHOLD_NS / 1000,
                r.lateness.p99_ns as f64 / 1e3
            )
        })
    }
}

/// Warnings for the window between two [`Testbed::link_status`] calls.
pub fn timing_warnings(before: &[DirectionStatus], after: &[DirectionStatus]) -> Vec<String> {
    after
        .iter()
        .filter_map(|a| {
            let b = before
                .iter()
                .find(|b| b.link == a.link && b.direction == a.direction)?;
            a.since(b).warning()
        })
        .collect()
}

impl Testbed {
    /// Every link direction as the emulator reports it, from a report written after the call
    /// began (so everything sent before the call is in it).
    pub fn link_status(&self) -> Result<Vec<DirectionStatus>, TestbedError> {
        let report = self.fresh_snapshot()?;
        Ok(statuses(self, &report))
    }
}

/// Joins the plan and an emulator report into per-direction statuses.
pub(crate) fn statuses(tb: &Testbed, report: &crate::state::CountersFile) -> Vec<DirectionStatus> {
    let links = &tb.plan().topology.links;
    report
        .directions
        .iter()
        .filter_map(|c| {
            let link = links.get(c.link)?;
            let dir = usize::from(c.direction == "b_to_a");
            let state = report
                .timing
                .iter()
                .find(|t| t.link == c.link && t.direction == c.direction);
            let configured = if dir == 0 { &link.a_to_b } else { &link.b_to_a };
            Some(DirectionStatus {
                link: c.link,
                link_name: link.label(),
                direction: c.direction.clone(),
                from: c.from.clone(),
                to: c.to.clone(),
                params: state
                    .and_then(|s| s.params.clone())
                    .unwrap_or_else(|| configured.without_trace_list()),
                mtu: report.mtus.get(c.link).copied().unwrap_or(link.mtu),
                counters: c.values,
                timing: state.map(|s| s.timing.clone()).unwrap_or_default(),
                recent: state.and_then(|s| s.recent.clone()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_with(late: &[u64]) -> DirectionStatus {
        let t = crate::timing::DirectionTiming::default();
        for &l in late {
            t.record_release(l, 5_000_000);
        }
        DirectionStatus {
            link: 0,
            link_name: "wan".into(),
            direction: "a_to_b".into(),
            from: "a".into(),
            to: "b".into(),
            params: DirectionParams {
                delay_ns: 5_000_000,
                ..Default::default()
            },
            mtu: 1500,
            counters: Default::default(),
            timing: t.snapshot(),
            recent: None,
        }
    }

    #[test]
    fn a_window_warns_only_when_over_a_thousandth_left_late() {
        let quiet = status_with(&vec![1_000; 10_000]);
        assert_eq!(quiet.warning(), None);
        let r = quiet.timing_report();
        assert_eq!((r.packets, r.late_over_100us), (10_000, 0));
        assert!(r.measured_delay_p50_ns.abs_diff(5_000_000) < 25_000);
        let mut late = vec![1_000; 10_000];
        late.extend(vec![300_000; 20]);
        let busy = status_with(&late);
        let w = timing_warnings(std::slice::from_ref(&quiet), &[busy]).join("\n");
        assert!(w.contains("20 of 20 packets (100.00 %)"), "{w}");
    }
}
