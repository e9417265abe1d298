//! What the modes share: the session they run in (server, cookie, clocks,
//! sequence numbers) and what they hand back for the report. The modes
//! themselves live in `modes` and `load`; this module runs nothing.

use super::control::fail;
use super::flow::Flow;
use super::recorder::Recorder;
use super::transact::{Budget, Pace, TCP_STALL};
use crate::client::ClientError;
use crate::rr::report::{Difference, LoadSummary, SizePoint};
use crate::rr::stats::{self, Percentiles};
use crate::rr::Plan;
use linkperf_proto::Protocol;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Context shared by the modes.
pub(super) struct Run<'a> {
    pub(super) plan: &'a Plan,
    pub(super) server: SocketAddr,
    pub(super) cookie: u64,
    pub(super) udp_port: Option<u16>,
    pub(super) t0: Instant,
    pub(super) wall0_ns: u64,
    pub(super) owd: bool,
    pub(super) cancel: &'a AtomicBool,
    pub(super) next_seq: u64,
    /// Transactions run but not measured (warm-up, ramp-up); the server
    /// counts them too.
    pub(super) warmup: u64,
    pub(super) warnings: Vec<String>,
}

impl Run<'_> {
    pub(super) fn recorder(&self, intervals: bool) -> Recorder {
        Recorder::new(
            self.t0,
            self.wall0_ns,
            self.owd,
            if intervals { self.plan.interval } else { None },
        )
    }

    pub(super) fn open_flow(&self, request: u32, response: u32) -> Result<Flow, ClientError> {
        match self.plan.protocol {
            Protocol::Tcp => Flow::open_tcp(
                self.server,
                self.plan.bind,
                self.cookie,
                request,
                response,
                self.plan.timeout.unwrap_or(TCP_STALL),
            ),
            Protocol::Udp => {
                let port = self
                    .udp_port
                    .ok_or_else(|| fail("the server gave no UDP port for the session"))?;
                Flow::open_udp(
                    SocketAddr::new(self.server.ip(), port),
                    self.plan.bind,
                    self.cookie,
                    request,
                    response,
                )
            }
        }
    }

    pub(super) fn pace(&self) -> Pace {
        Pace {
            burst: self.plan.burst as usize,
            gap: self.plan.rate.map(|r| Duration::from_secs_f64(1.0 / r)),
            timeout: self.plan.timeout,
        }
    }

    pub(super) fn budget(&self, start: Instant) -> Budget<'_> {
        Budget {
            deadline: match self.plan.count {
                Some(_) => None,
                None => Some(start + self.plan.duration),
            },
            count: self.plan.count,
            cancel: self.cancel,
            until: None,
        }
    }
}

/// What the modes return for the report.
#[derive(Default)]
pub(super) struct Outcome {
    /// Time spent measuring (transactions/s is over this).
    pub(super) seconds: f64,
    /// The UDP loss timeout when the mode fixed its own.
    pub(super) timeout: Option<Duration>,
    pub(super) extra: Extra,
    pub(super) sizes: Option<Vec<SizePoint>>,
    pub(super) fit: Option<stats::Fit>,
}

/// The distributions only some modes measure.
#[derive(Default)]
pub(super) struct Extra {
    pub(super) connect: Option<Percentiles>,
    pub(super) transaction: Option<Percentiles>,
    pub(super) first: Option<Percentiles>,
    pub(super) second: Option<Percentiles>,
    pub(super) difference: Option<Difference>,
    pub(super) idle: Option<Percentiles>,
    pub(super) loaded: Option<Percentiles>,
    pub(super) load: Option<LoadSummary>,
}
