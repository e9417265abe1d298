//! The sampler thread of a side: it snapshots every stream's counters and
//! tcp_info at each interval boundary, turns them into interval reports, keeps
//! the baseline where `--omit` ends, and collects RTT samples for the summary.

use crate::arrivals::Arrivals;
use crate::cpu::ThreadCpu;
use crate::delays::DelayTrack;
use crate::rttsample::{RttCollector, RTT_SAMPLE_PERIOD};
use crate::stream::{self, SideControl, StreamShared};
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
    /// The sampler thread's own CPU time.
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
        udp: shared.udp.lock().unwrap_or_else(|e| e.into_inner()).clone(),
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
    pub ctl: Arc<SideControl>,
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
                        DelayTrack::fill(&mut d, stream::lock(&s.delays).take_interval());
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

    pub fn run(self) -> SamplerOutput {
        let cpu_before = ThreadCpu::now();
        let report = self.config.interval_s > 0.0;
        let tick = Duration::from_secs_f64(if report { self.config.interval_s } else { 1.0 });
        let omit = Duration::from_secs_f64(self.config.omit_s);
        let start_wait = self.start.saturating_duration_since(Instant::now());
        std::thread::sleep(start_wait);
        let mut prev: Vec<Snap> = self.streams.iter().map(|_| Snap::default()).collect();
        for (p, t) in prev.iter_mut().zip(&self.tcp) {
            p.tcp = t.as_ref().and_then(|s| tcpinfo::read(s).ok());
        }
        let n = self.streams.len();
        let mut out = SamplerOutput {
            baseline: prev.clone(),
            rtt: vec![RttTrack::default(); n],
            cpu: ThreadCpu::default(),
        };
        // This interval's RTT samples.
        let mut rtt = vec![RttTrack::default(); n];
        let mut collector = RttCollector::new(n, self.start);
        let mut next = self.start + tick;
        let mut next_rtt = self.start + RTT_SAMPLE_PERIOD;
        let mut senders_reported = false;
        loop {
            let done = self.all_done(None);
            if !senders_reported && self.all_done(Some(Role::Sender)) {
                senders_reported = true;
                self.report_senders_done();
            }
            let now = Instant::now();
            if now >= next_rtt && !done {
                self.sample_rtt(&mut collector, &mut rtt);
                // After a stall, resume the period rather than catch up.
                next_rtt = (next_rtt + RTT_SAMPLE_PERIOD).max(now);
            }
            if now >= next || done {
                let snaps = self.snap_all();
                for (i, snap) in snaps.iter().enumerate() {
                    // The boundary's reading is a sample of the closing interval.
                    let rtt_us = snap.tcp.and_then(|t| t.rtt_us);
                    if let (Role::Sender, Some(us)) = (self.streams[i].role, rtt_us) {
                        collector.boundary(i, snap.bytes, us, &mut rtt[i]);
                    }
                }
                let elapsed = snaps.first().map(|s| s.at).unwrap_or_default();
                let length = elapsed.saturating_sub(prev.first().map(|s| s.at).unwrap_or_default());
                // A final sliver shorter than a tenth of an interval is noise,
                // not a report; its RTT samples stay out of the summary too, so
                // the summary's extremes are those of the reported intervals.
                let worth_reporting = !done || length >= tick / 10;
                if worth_reporting {
                    // An interval that began inside the warm-up is omitted, however
                    // late the sampler woke to close it (a loaded machine).
                    let began = prev.first().map(|s| s.at).unwrap_or_default();
                    let omitted = !omit.is_zero() && began + Duration::from_millis(1) < omit;
                    if report {
                        let streams = self.interval(&prev, &snaps, &rtt, omitted);
                        (self.sink)(SideEvent::Interval(streams));
                    }
                    if omitted {
                        out.baseline = snaps.clone();
                        for s in &self.streams {
                            stream::lock(&s.delays).reset_total();
                        }
                    } else {
                        for (whole, interval) in out.rtt.iter_mut().zip(&rtt) {
                            whole.merge(interval);
                        }
                    }
                    prev = snaps;
                }
                rtt.iter_mut().for_each(|t| *t = RttTrack::default());
                next += tick;
                if done {
                    break;
                }
                // Woken past more than one boundary (a stopped or starved process):
                // the interval just closed covers them all. Resume on the grid
                // rather than close an empty sliver for each boundary missed.
                let late = Instant::now();
                if next <= late {
                    let behind = late.duration_since(self.start).as_secs_f64();
                    next = self.start + tick.mul_f64((behind / tick.as_secs_f64()).floor() + 1.0);
                }
            }
            let wait = next
                .min(next_rtt)
                .saturating_duration_since(Instant::now())
                .min(RTT_SAMPLE_PERIOD);
            self.ctl.wait_stream_ended(wait);
        }
        (self.sink)(SideEvent::AllDone);
        out.cpu = ThreadCpu::since(&cpu_before);
        out
    }
}
