//! The sampler of a side: it snapshots every stream's counters and tcp_info
//! at each interval boundary, turns them into interval reports, keeps the
//! baseline where `--omit` ends, and collects RTT samples for the summary.
//! It runs in steps on the process's sampling thread (`samplers.rs`).

use crate::arrivals::Arrivals;
use crate::cpu::ThreadCpu;
use crate::delays::DelayTrack;
use crate::rttsample::{RttCollector, RTT_SAMPLE_PERIOD};
use crate::stream::{self, StreamShared};
use crate::tcpinfo::{self, delta, limited, RttTrack, TcpInfo};
use crate::udptrack::UdpTracker;
use linkperf_proto::results::{Role, StreamInterval, TcpStats, UdpStats};
use linkperf_proto::TestConfig;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a side tells its owner while it runs.
#[derive(Debug, Clone)]
pub enum SideEvent {
    Interval(Vec<StreamInterval>),
    /// All local senders are done; datagrams sent per UDP stream.
    SendersDone(Vec<(u32, u64)>),
    /// Every local stream is done: call [`crate::side::LocalSide::finish`].
    AllDone,
}

pub type EventSink = Arc<dyn Fn(SideEvent) + Send + Sync>;

/// One stream's counters at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snap {
    pub at: Duration,
    /// Sent, or for a receiver received (see [`Arrivals`]).
    pub bytes: u64,
    pub packets: u64,
    pub udp: Option<UdpStats>,
    pub tcp: Option<TcpInfo>,
    /// A model's sender: bytes its schedule had due.
    pub offered: u64,
}

#[derive(Default)]
pub(crate) struct SamplerOutput {
    /// Every stream's counters where the omitted warm-up ended (zero without one).
    pub baseline: Vec<Snap>,
    /// Smoothed-RTT samples of each stream over the reported, non-omitted intervals.
    pub rtt: Vec<RttTrack>,
    /// The CPU time the sampling thread spent on this side.
    pub cpu: ThreadCpu,
}

/// A stream's counters now; a TCP receiver's bytes are those that arrived.
pub(crate) fn snapshot(
    shared: &StreamShared,
    tcp: Option<&TcpStream>,
    arrivals: Option<&Arrivals>,
    at: Duration,
) -> Snap {
    let info = tcp.and_then(|s| tcpinfo::read(s).ok());
    // A finished reader has read all that arrived (or stopped, and what it read stands).
    let finished = shared.finished.load(Ordering::Acquire);
    let counted = shared.bytes.load(Ordering::Relaxed);
    let arrivals = arrivals.filter(|_| !finished);
    Snap {
        at,
        bytes: arrivals.map_or(counted, |a| a.bytes(info.as_ref(), counted)),
        packets: shared.packets.load(Ordering::Relaxed),
        udp: stream::lock(&shared.udp).as_deref().cloned(),
        tcp: info,
        offered: shared.offered_bytes.load(Ordering::Relaxed),
    }
}

fn ms(us: Option<u32>) -> Option<f64> {
    us.map(|v| v as f64 / 1000.0)
}

fn tcp_interval(
    before: Option<&TcpInfo>,
    now: &TcpInfo,
    wall: Duration,
    rtt: &RttTrack,
) -> TcpStats {
    TcpStats {
        retransmits: before
            .map(|b| {
                delta(
                    b.total_retrans.map(u64::from),
                    now.total_retrans.map(u64::from),
                )
            })
            .unwrap_or(now.total_retrans.map(u64::from)),
        cwnd_bytes: now
            .snd_cwnd_segments
            .zip(now.snd_mss)
            .map(|(c, m)| u64::from(c) * u64::from(m)),
        rtt_ms: ms(now.rtt_us),
        rtt_min_ms: rtt.min_ms(),
        rtt_max_ms: rtt.max_ms(),
        rtt_samples: now.rtt_us.map(|_| rtt.samples()),
        rttvar_ms: ms(now.rttvar_us),
        min_rtt_ms: ms(now.min_rtt_us),
        snd_wnd_bytes: now.snd_wnd.map(u64::from),
        rcv_wnd_bytes: now.rcv_wnd.map(u64::from),
        window_clamp_bytes: now.window_clamp.map(u64::from),
        delivery_rate_bps: now.delivery_rate.map(|r| r as f64 * 8.0),
        pacing_rate_bps: now
            .pacing_rate
            .filter(|&r| r != u64::MAX)
            .map(|r| r as f64 * 8.0),
        limited: limited(before, now, wall),
        mss: now.snd_mss,
        pmtu: now.pmtu,
    }
}

pub(crate) fn tcp_summary(base: &Snap, end: &Snap, wall: Duration, rtt: &RttTrack) -> TcpStats {
    let now = end.tcp.unwrap_or_default();
    let mut rtt = *rtt;
    if rtt.samples() == 0 {
        // Over before the first sample (a few kilobytes): the final reading is all there is.
        if let Some(us) = now.rtt_us {
            rtt.add(us);
        }
    }
    let mut stats = tcp_interval(base.tcp.as_ref(), &now, wall, &rtt);
    stats.rtt_ms = rtt.mean_ms().or(stats.rtt_ms);
    stats
}

pub(crate) struct Sampler {
    pub config: TestConfig,
    pub streams: Vec<Arc<StreamShared>>,
    pub tcp: Vec<Option<TcpStream>>,
    /// Each TCP receiver's arrival counter.
    pub arrivals: Vec<Option<Arrivals>>,
    pub start: Instant,
    pub sink: EventSink,
}

impl Sampler {
    fn all_done(&self, role: Option<Role>) -> bool {
        self.streams
            .iter()
            .filter(|s| role.is_none_or(|r| s.role == r))
            .all(|s| s.finished.load(Ordering::Acquire))
    }

    fn snap_all(&self) -> Vec<Snap> {
        let at = self.start.elapsed();
        self.streams
            .iter()
            .zip(&self.tcp)
            .zip(&self.arrivals)
            .map(|((s, t), a)| snapshot(s, t.as_ref(), a.as_ref(), at))
            .collect()
    }

    /// This period's RTT readings (see [`crate::rttsample`]).
    fn sample_rtt(&self, collector: &mut RttCollector, tracks: &mut [RttTrack]) {
        let streams = self.streams.iter().zip(&self.tcp).map(|(s, t)| {
            let sender = t.as_ref().filter(|_| s.role == Role::Sender);
            (sender, &s.rtt, s.bytes.load(Ordering::Relaxed))
        });
        collector.sample(streams, tracks);
    }

    fn interval(
        &self,
        prev: &[Snap],
        now: &[Snap],
        rtt: &[RttTrack],
        omitted: bool,
    ) -> Vec<StreamInterval> {
        self.streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (p, n) = (&prev[i], &now[i]);
                let wall = n.at.saturating_sub(p.at);
                let bytes = n.bytes.saturating_sub(p.bytes);
                let secs = wall.as_secs_f64();
                StreamInterval {
                    id: s.id,
                    role: s.role,
                    start: p.at.as_secs_f64(),
                    end: n.at.as_secs_f64(),
                    bytes,
                    bits_per_second: if secs > 0.0 {
                        bytes as f64 * 8.0 / secs
                    } else {
                        0.0
                    },
                    packets: (self.config.protocol == linkperf_proto::Protocol::Udp)
                        .then(|| n.packets - p.packets),
                    udp: n.udp.as_ref().map(|u| {
                        let mut d = match &p.udp {
                            Some(b) => UdpTracker::delta(b, u),
                            None => u.clone(),
                        };
                        let delays = stream::lock(&s.delays).as_mut().map(|t| t.take_interval());
                        DelayTrack::fill(&mut d, delays.unwrap_or_default());
                        d
                    }),
                    offered_bits_per_second: (s.role == Role::Sender
                        && self.config.stream_model(s.id).is_some()
                        && secs > 0.0)
                        .then(|| (n.offered - p.offered) as f64 * 8.0 / secs),
                    tcp: (s.role == Role::Sender)
                        .then_some(())
                        .and(n.tcp.as_ref())
                        .map(|t| tcp_interval(p.tcp.as_ref(), t, wall, &rtt[i])),
                    omitted,
                }
            })
            .collect()
    }

    /// Tells the owner once that every local sender is done.
    fn report_senders_done(&self) {
        let packets = self
            .streams
            .iter()
            .filter(|s| {
                s.role == Role::Sender && self.config.protocol == linkperf_proto::Protocol::Udp
            })
            .map(|s| (s.id, s.packets.load(Ordering::Relaxed)))
            .collect();
        (self.sink)(SideEvent::SendersDone(packets));
    }

    /// The sampler's state before its first step.
    pub fn into_run(self) -> Run {
        let report = self.config.interval_s > 0.0;
        let tick = Duration::from_secs_f64(if report { self.config.interval_s } else { 1.0 });
        let n = self.streams.len();
        Run {
            report,
            tick,
            omit: Duration::from_secs_f64(self.config.omit_s),
            begun: false,
            prev: Vec::new(),
            out: SamplerOutput::default(),
            rtt: vec![RttTrack::default(); n],
            collector: RttCollector::new(n, self.start),
            next: self.start + tick,
            next_rtt: self.start + RTT_SAMPLE_PERIOD,
            senders_reported: false,
            s: self,
        }
    }
}

/// A sampler between two of its steps (see [`crate::samplers`], which
/// steps it): the interval being measured and what has been kept so far.
pub(crate) struct Run {
    s: Sampler,
    /// Intervals are reported (`-i` above zero).
    report: bool,
    tick: Duration,
    omit: Duration,
    /// The test has started and the baseline has been read.
    begun: bool,
    prev: Vec<Snap>,
    out: SamplerOutput,
    /// This interval's RTT samples.
    rtt: Vec<RttTrack>,
    collector: RttCollector,
    next: Instant,
    next_rtt: Instant,
    senders_reported: bool,
}

impl Run {
    /// Does what is due now: an RTT reading every 10 ms, an interval at each
    /// boundary, the last one when every stream is done. Returns when it
    /// wants its next step, or `None` once it is done (then call
    /// [`Run::finish`]). A step with nothing due only reads atomics.
    pub fn step(&mut self) -> Option<Instant> {
        let now = Instant::now();
        if !self.begun {
            if now < self.s.start {
                return Some(self.s.start);
            }
            self.begin();
        }
        let done = self.s.all_done(None);
        if !self.senders_reported && self.s.all_done(Some(Role::Sender)) {
            self.senders_reported = true;
            self.s.report_senders_done();
        }
        if now >= self.next_rtt && !done {
            self.s.sample_rtt(&mut self.collector, &mut self.rtt);
            // After a stall, resume the period rather than catch up.
            self.next_rtt = (self.next_rtt + RTT_SAMPLE_PERIOD).max(now);
        }
        if now >= self.next || done {
            self.close_interval(done);
            if done {
                return None;
            }
        }
        Some(
            self.next
                .min(self.next_rtt)
                .min(Instant::now() + RTT_SAMPLE_PERIOD),
        )
    }

    /// The test's start: every stream's counters and tcp_info are the baseline.
    fn begin(&mut self) {
        self.begun = true;
        let mut prev: Vec<Snap> = self.s.streams.iter().map(|_| Snap::default()).collect();
        for (p, t) in prev.iter_mut().zip(&self.s.tcp) {
            p.tcp = t.as_ref().and_then(|s| tcpinfo::read(s).ok());
        }
        self.out.baseline = prev.clone();
        self.out.rtt = vec![RttTrack::default(); prev.len()];
        self.prev = prev;
    }

    /// Closes the interval that ends now (the last one when `done`).
    fn close_interval(&mut self, done: bool) {
        let snaps = self.s.snap_all();
        for (i, snap) in snaps.iter().enumerate() {
            // The boundary's reading is a sample of the closing interval.
            let rtt_us = snap.tcp.and_then(|t| t.rtt_us);
            if let (Role::Sender, Some(us)) = (self.s.streams[i].role, rtt_us) {
                self.collector.boundary(i, snap.bytes, us, &mut self.rtt[i]);
            }
        }
        let began = self.prev.first().map(|s| s.at).unwrap_or_default();
        let elapsed = snaps.first().map(|s| s.at).unwrap_or_default();
        // A final sliver shorter than a tenth of an interval is noise,
        // not a report; its RTT samples stay out of the summary too, so
        // the summary's extremes are those of the reported intervals.
        if !done || elapsed.saturating_sub(began) >= self.tick / 10 {
            // An interval that began inside the warm-up is omitted, however
            // late the sampler woke to close it (a loaded machine).
            let omitted = !self.omit.is_zero() && began + Duration::from_millis(1) < self.omit;
            if self.report {
                let streams = self.s.interval(&self.prev, &snaps, &self.rtt, omitted);
                (self.s.sink)(SideEvent::Interval(streams));
            }
            if omitted {
                self.out.baseline = snaps.clone();
                for s in &self.s.streams {
                    if let Some(t) = stream::lock(&s.delays).as_mut() {
                        t.reset_total();
                    }
                }
            } else {
                for (whole, interval) in self.out.rtt.iter_mut().zip(&self.rtt) {
                    whole.merge(interval);
                }
            }
            self.prev = snaps;
        }
        self.rtt.iter_mut().for_each(|t| *t = RttTrack::default());
        self.next += self.tick;
        // Woken past more than one boundary (a stopped or starved process):
        // the interval just closed covers them all. Resume on the grid
        // rather than close an empty sliver for each boundary missed.
        let late = Instant::now();
        if self.next <= late {
            let behind = late.duration_since(self.s.start).as_secs_f64();
            let ticks = (behind / self.tick.as_secs_f64()).floor() + 1.0;
            self.next = self.s.start + self.tick.mul_f64(ticks);
        }
    }

    /// The CPU time a step took on the sampling thread.
    pub fn add_cpu(&mut self, spent: &ThreadCpu) {
        self.out.cpu.add(spent);
    }

    /// What the run kept, and where to say that the side is done.
    pub fn finish(self) -> (SamplerOutput, EventSink) {
        (self.out, self.s.sink)
    }
}
