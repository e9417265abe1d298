//! The pieces every verdict is made of: the verdict itself, and how busy an
//! end's CPU was for one direction.

use crate::report::Verdict;
use linkperf_proto::results::CpuUsage;

pub(super) fn verdict(limited_by: &str, explanation: String, advice: Option<String>) -> Verdict {
    Verdict {
        limited_by: limited_by.into(),
        explanation,
        advice,
        evidence: Default::default(),
    }
}

/// A thread that ran at least this share of the wall time had no slack left:
/// the rest goes to scheduling delays, interrupts and the accounting's
/// granularity, so more work could not have fitted on its core. Below it the
/// thread spent real time waiting (for the network, the peer, a timer) and
/// its CPU did not set the rate.
pub const CPU_SATURATED: f64 = 90.0;

/// How busy one end's CPU was for one direction, as a percentage to compare
/// with [`CPU_SATURATED`], and what it is a percentage of.
pub(super) struct Busy {
    pub(super) percent: f64,
    of: &'static str,
}

impl Busy {
    pub(super) fn saturated(&self) -> bool {
        self.percent >= CPU_SATURATED
    }

    pub(super) fn describe(&self, end: &str) -> String {
        format!("the {end} used {:.0}% {}", self.percent, self.of)
    }
}

/// One end's busiest stream thread of this direction, or all its threads
/// against all the host's cores if that is higher. Peers that report only a
/// process figure (iperf3, older linkperf) are judged by their CPU per stream.
pub(super) fn busy(
    end: &CpuUsage,
    threads: impl Iterator<Item = Option<f64>>,
    streams: u32,
) -> Busy {
    let busiest = threads.flatten().reduce(f64::max);
    let all_cores = end.total_percent / f64::from(end.cpus.max(1));
    match busiest {
        Some(b) if all_cores > b => Busy {
            percent: all_cores,
            of: "of every core of its host",
        },
        Some(b) => Busy {
            percent: b,
            of: "of a core in its busiest stream thread",
        },
        None => Busy {
            percent: end.total_percent / f64::from(streams.max(1)),
            of: "of a core per stream",
        },
    }
}
