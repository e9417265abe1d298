//! One end of a test: its streams, the sampler that turns their counters into
//! interval reports, and the summary once they are done.

use crate::cpu::{CpuSnapshot, ThreadCpu};
use crate::delays::DelayTrack;
use crate::rttsample::{RttCollector, RTT_SAMPLE_PERIOD};
use crate::sockopt;
use crate::stream::{self, DataSocket, SideControl, StreamParams, StreamShared};
use crate::tcpinfo::{self, delta, limited, RttTrack, TcpInfo};
use crate::udptrack::UdpTracker;
use linkperf_proto::results::{
    Role, SideResult, SocketFacts, StreamInterval, StreamResult, TcpStats, UdpStats,
};
use linkperf_proto::TestConfig;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a side tells its owner while it runs.
#[derive(Debug, Clone)]
pub enum SideEvent {
    Interval(Vec<StreamInterval>),
    /// All local senders are done; datagrams sent per UDP stream.
    SendersDone(Vec<(u32, u64)>),
    /// Every local stream is done: call [`LocalSide::finish`].
    AllDone,
}

pub type EventSink = Arc<dyn Fn(SideEvent) + Send + Sync>;

/// A connected data socket and what this end does with it.
pub struct StreamPlan {
    pub id: u32,
    pub role: Role,
    pub socket: DataSocket,
}

/// How long a UDP receiver waits for stragglers after the peer's senders are done.
const UDP_DRAIN: Duration = Duration::from_secs(2);

pub struct LocalSide {
    config: TestConfig,
    ctl: Arc<SideControl>,
    streams: Vec<Arc<StreamShared>>,
    plans: Vec<StreamPlan>,
    tcp_handles: Vec<Option<TcpStream>>,
    facts: Vec<SocketFacts>,
    threads: Vec<JoinHandle<()>>,
    sampler: Option<JoinHandle<SamplerOutput>>,
    series: Option<crate::series::Series>,
    cpu_start: Option<CpuSnapshot>,
    /// A UDP side's drop counters at its start.
    drop_watch: Option<crate::kernel_drops::DropWatch>,
    /// The thread that called `start` and its CPU then: counted as this
    /// end's control thread if it also calls `finish`.
    control_cpu: Option<(std::thread::ThreadId, ThreadCpu)>,
    same_clock: bool,
    warnings: Vec<String>,
    udp_format: crate::udpformat::UdpFormat,
}

/// A stream's counters right now (for owners that must wait for a byte count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamProgress {
    pub id: u32,
    pub role: Role,
    pub bytes: u64,
    pub packets: u64,
    pub finished: bool,
}

#[derive(Debug, Clone, Default)]
struct Snap {
    at: Duration,
    bytes: u64,
    packets: u64,
    udp: Option<UdpStats>,
    tcp: Option<TcpInfo>,
    /// A model's sender: bytes its schedule had due.
    offered: u64,
}

#[derive(Default)]
struct SamplerOutput {
    baseline: Vec<Snap>,
    /// Smoothed-RTT samples of each stream over the reported, non-omitted intervals.
    rtt: Vec<RttTrack>,
    /// The sampler thread's own CPU time.
    cpu: ThreadCpu,
}

impl LocalSide {
    /// `same_clock`: both ends read the same wall clock (loopback, namespaces,
    /// or the user says clocks are synchronised), so one-way delay is meaningful.
    pub fn new(
        config: TestConfig,
        plans: Vec<StreamPlan>,
        same_clock: bool,
        warnings: Vec<String>,
    ) -> Self {
        let mut tcp_handles = Vec::new();
        let mut facts = Vec::new();
        for plan in &plans {
            match &plan.socket {
                DataSocket::Tcp(s) => {
                    tcp_handles.push(s.try_clone().ok());
                    facts.push(sockopt::facts(&socket2::SockRef::from(s), true));
                }
                DataSocket::Udp(s) => {
                    tcp_handles.push(None);
                    facts.push(sockopt::facts(&socket2::SockRef::from(s), false));
                }
            }
        }
        let streams = plans
            .iter()
            .map(|p| Arc::new(StreamShared::new(p.id, p.role)))
            .collect();
        LocalSide {
            config,
            ctl: Arc::new(SideControl::default()),
            streams,
            plans,
            tcp_handles,
            facts,
            threads: Vec::new(),
            sampler: None,
            series: None,
            cpu_start: None,
            drop_watch: None,
            control_cpu: None,
            same_clock,
            warnings,
            udp_format: crate::udpformat::UdpFormat::default(),
        }
    }

    /// Frames UDP datagrams as `format` (call before [`LocalSide::start`]).
    pub fn set_udp_format(&mut self, format: crate::udpformat::UdpFormat) {
        self.udp_format = format;
    }

    /// Every stream's counters now.
    pub fn progress(&self) -> Vec<StreamProgress> {
        self.streams
            .iter()
            .map(|s| StreamProgress {
                id: s.id,
                role: s.role,
                bytes: s.bytes.load(Ordering::Relaxed),
                packets: s.packets.load(Ordering::Relaxed),
                finished: s.finished.load(Ordering::Acquire),
            })
            .collect()
    }

    pub fn socket_facts(&self) -> &[SocketFacts] {
        &self.facts
    }

    /// Starts every stream at `at` (threads are created now so they start together).
    pub fn start(&mut self, at: Instant, sink: EventSink) {
        self.cpu_start = Some(CpuSnapshot::now());
        self.drop_watch = self.watch_drops();
        self.control_cpu = Some((std::thread::current().id(), ThreadCpu::now()));
        let end = self
            .config
            .bytes
            .is_none()
            .then(|| at + Duration::from_secs_f64(self.config.duration_s));
        let rate = self.config.stream_rate();
        let payload = if self.plans.iter().any(|p| p.role == Role::Sender) {
            crate::stream::Payload::new(self.config.length as usize)
        } else {
            crate::stream::Payload::default()
        };
        for (index, plan) in std::mem::take(&mut self.plans).into_iter().enumerate() {
            let shared = self.streams[index].clone();
            let ctl = self.ctl.clone();
            let params = StreamParams {
                length: self.config.length as usize,
                payload: payload.clone(),
                rate_bps: rate,
                // The split is per direction: with --bidir the second set is numbered from P.
                byte_limit: self
                    .config
                    .bytes_for_stream(plan.id % self.config.parallel.max(1)),
                start: at,
                end,
                zerocopy: self.config.zerocopy,
                udp_format: self.udp_format,
                model: (plan.role == Role::Sender)
                    .then(|| self.config.stream_model(plan.id))
                    .flatten()
                    .map(|(m, seed)| (m.clone(), seed)),
                stream_id: plan.id,
                window_clamp: self.config.window_clamp,
                skip_rx_copy: self.config.skip_rx_copy,
            };
            let same_clock = self.same_clock;
            let name = format!(
                "lp-{}-{}",
                if plan.role == Role::Sender {
                    "tx"
                } else {
                    "rx"
                },
                plan.id
            );
            let handle = std::thread::Builder::new().name(name).spawn(move || {
                let cpu_before = ThreadCpu::now();
                let cpu_of = shared.clone();
                run_stream(plan, shared, ctl.clone(), params, same_clock);
                // Before `at` the thread only slept: its running time starts there.
                let ran = Instant::now().saturating_duration_since(at);
                *cpu_of.cpu.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((ThreadCpu::since(&cpu_before), ran));
                ctl.notify_stream_ended();
            });
            match handle {
                Ok(h) => self.threads.push(h),
                Err(e) => {
                    *self.streams[index]
                        .error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) =
                        Some(format!("could not start stream thread: {e}"));
                    self.streams[index].finished.store(true, Ordering::Release);
                }
            }
        }
        let clone_tcp = || {
            self.tcp_handles
                .iter()
                .map(|h| h.as_ref().and_then(|s| s.try_clone().ok()))
                .collect()
        };
        self.series =
            crate::series::Series::start(&self.config, self.streams.clone(), clone_tcp(), at);
        let sampler = Sampler {
            config: self.config.clone(),
            streams: self.streams.clone(),
            tcp: clone_tcp(),
            start: at,
            sink,
            ctl: self.ctl.clone(),
        };
        self.sampler = std::thread::Builder::new()
            .name("lp-sampler".into())
            .spawn(move || sampler.run())
            .ok();
    }

    /// Ends the senders now (end of test by Ctrl-C or the peer's cancel).
    pub fn stop_senders(&self) {
        self.ctl.stop_senders.store(true, Ordering::Relaxed);
    }

    /// The peer's senders are done: UDP receivers learn the totals (in case
    /// the FIN markers were lost) and get a drain deadline.
    pub fn peer_senders_done(&self, packets: &[(u32, u64)]) {
        let mut any_udp = false;
        for s in &self.streams {
            if let Some((_, n)) = packets.iter().find(|(id, _)| *id == s.id) {
                s.peer_sent.store(*n, Ordering::Relaxed);
                any_udp = true;
            }
        }
        if any_udp {
            let ctl = self.ctl.clone();
            let streams = self.streams.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + UDP_DRAIN;
                while Instant::now() < deadline {
                    if streams.iter().all(|s| s.finished.load(Ordering::Acquire)) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                ctl.stop_receivers.store(true, Ordering::Relaxed);
            });
        }
    }

    /// Stops everything now: the peer is gone.
    pub fn abort(&self) {
        self.ctl.stop_senders.store(true, Ordering::Relaxed);
        self.ctl.stop_receivers.store(true, Ordering::Relaxed);
        for s in self.tcp_handles.iter().flatten() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Waits for the streams and the sampler, then summarises.
    pub fn finish(mut self) -> SideResult {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let output = self
            .sampler
            .take()
            .and_then(|s| s.join().ok())
            .unwrap_or_default();
        let mut series = self.series.take().map(|s| s.finish()).unwrap_or_default();
        let mut own_cpu = output.cpu;
        if let Some((id, before)) = self.control_cpu {
            if id == std::thread::current().id() {
                own_cpu.add(&ThreadCpu::since(&before));
            }
        }
        let cpu_end = CpuSnapshot::now();
        let mut streams = Vec::new();
        let mut moved = 0u64;
        let mut seconds: f64 = 0.0;
        for (i, shared) in self.streams.iter().enumerate() {
            let final_snap = snapshot(shared, self.tcp_handles[i].as_ref(), Duration::ZERO);
            let base = output.baseline.get(i).cloned().unwrap_or_default();
            let finished_after =
                Duration::from_nanos(shared.finished_after_ns.load(Ordering::Relaxed));
            let secs = finished_after.saturating_sub(base.at).as_secs_f64();
            seconds = seconds.max(finished_after.as_secs_f64());
            let bytes = final_snap.bytes - base.bytes;
            moved += final_snap.bytes;
            let rtt = output.rtt.get(i).copied().unwrap_or_default();
            let measured = finished_after.saturating_sub(base.at);
            let tcp = stream_tcp(shared.role, &base, &final_snap, measured, &rtt);
            let thread_cpu = *shared.cpu.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((cpu, _)) = &thread_cpu {
                own_cpu.add(cpu);
            }
            let udp = final_snap.udp.as_ref().map(|now| {
                let mut u = match &base.udp {
                    Some(b) if base.at > Duration::ZERO => UdpTracker::delta(b, now),
                    _ => now.clone(),
                };
                DelayTrack::fill(&mut u, stream::lock(&shared.delays).total());
                u
            });
            let packets = (self.config.protocol == linkperf_proto::Protocol::Udp)
                .then(|| final_snap.packets - base.packets);
            streams.push(StreamResult {
                id: shared.id,
                role: shared.role,
                bytes,
                seconds: secs,
                bits_per_second: if secs > 0.0 {
                    bytes as f64 * 8.0 / secs
                } else {
                    0.0
                },
                packets,
                udp,
                tcp,
                socket: self.facts[i].clone(),
                send_gaps: shared
                    .gaps
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
                schedule: stream::lock(&shared.schedule).clone(),
                started_unix_ns: Some(shared.started_unix_ns.load(Ordering::Relaxed))
                    .filter(|&t| t > 0),
                thread_cpu_percent: thread_cpu
                    .filter(|(_, ran)| !ran.is_zero())
                    .map(|(cpu, ran)| 100.0 * cpu.total().as_secs_f64() / ran.as_secs_f64()),
                error: shared
                    .error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
                samples: series.get_mut(i).map(std::mem::take).unwrap_or_default(),
                subflows: subflow_rates(stream::lock(&shared.subflows).clone(), finished_after),
            });
        }
        let cpu = self
            .cpu_start
            .map(|start| start.usage_until(&cpu_end, &own_cpu, moved))
            .unwrap_or_default();
        let drops = self
            .drop_watch
            .as_ref()
            .map(|w| w.finish())
            .unwrap_or_default();
        let warnings = self.take_warnings(&cpu, &streams, seconds);
        SideResult {
            streams,
            warnings,
            cpu,
            seconds,
            udp_send_drops: drops.send_errors,
            udp_egress: drops.egress.map(Box::new),
            udp_ingress: drops.ingress.map(Box::new),
        }
    }

    /// The warnings gathered while the side ran, and those about the host when it
    /// noticeably took time from the test: steal time, paced senders not run.
    fn take_warnings(
        &mut self,
        cpu: &linkperf_proto::results::CpuUsage,
        streams: &[StreamResult],
        seconds: f64,
    ) -> Vec<String> {
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.extend(crate::cpu::steal_warning(cpu));
        let gaps = streams.iter().filter_map(|s| s.send_gaps.as_ref());
        warnings.extend(crate::pacer::skip_warning(gaps, seconds));
        warnings
    }

    /// A UDP side's drop counters now, on the way to and from its peer.
    fn watch_drops(&self) -> Option<crate::kernel_drops::DropWatch> {
        let udp = |p: &&StreamPlan| match &p.socket {
            DataSocket::Udp(s) => Some(s.peer_addr().ok().map(|a| a.ip())),
            DataSocket::Tcp(_) => None,
        };
        let peer = self.plans.iter().find_map(|p| udp(&p))?;
        let has = |role| self.plans.iter().any(|p| p.role == role);
        Some(crate::kernel_drops::DropWatch::start(
            peer,
            has(Role::Sender),
            has(Role::Receiver),
        ))
    }
}

/// One stream's thread: its sender or receiver loop, by socket and role (a
/// traffic model's sender follows its schedule).
fn run_stream(
    plan: StreamPlan,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    params: StreamParams,
    same_clock: bool,
) {
    if plan.role == Role::Sender {
        sockopt::tighten_timer_slack();
    }
    match (plan.socket, plan.role) {
        (DataSocket::Tcp(s), Role::Sender) if params.model.is_some() => {
            crate::modelsend::tcp(s, shared, ctl, params)
        }
        (DataSocket::Udp(s), Role::Sender) if params.model.is_some() => {
            crate::modelsend::udp(s, shared, ctl, params)
        }
        (DataSocket::Tcp(s), Role::Sender) => stream::tcp_send(s, shared, ctl, params),
        (DataSocket::Tcp(s), Role::Receiver) => stream::tcp_receive(s, shared, ctl, params),
        (DataSocket::Udp(s), Role::Sender) => stream::udp_send(s, shared, ctl, params),
        (DataSocket::Udp(s), Role::Receiver) => {
            stream::udp_receive(s, shared, ctl, params, same_clock)
        }
    }
}

/// A sender's TCP figures over the measured part of the test; a receiver's
/// tcp_info says only which window it advertised.
fn stream_tcp(
    role: Role,
    base: &Snap,
    last: &Snap,
    measured: Duration,
    rtt: &RttTrack,
) -> Option<TcpStats> {
    if role == Role::Sender && last.tcp.is_some() {
        return Some(tcp_summary(base, last, measured, rtt));
    }
    let now = last.tcp.as_ref()?;
    Some(TcpStats {
        rcv_wnd_bytes: now.rcv_wnd.map(u64::from),
        window_clamp_bytes: now.window_clamp.map(u64::from),
        ..TcpStats::default()
    })
}

fn snapshot(shared: &StreamShared, tcp: Option<&TcpStream>, at: Duration) -> Snap {
    Snap {
        at,
        bytes: shared.bytes.load(Ordering::Relaxed),
        packets: shared.packets.load(Ordering::Relaxed),
        udp: shared.udp.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        tcp: tcp.and_then(|s| tcpinfo::read(s).ok()),
        offered: shared.offered_bytes.load(Ordering::Relaxed),
    }
}

/// Each subflow's rate over the stream's whole data time (`ran`).
fn subflow_rates(
    mut subflows: Vec<linkperf_proto::results::Subflow>,
    ran: Duration,
) -> Vec<linkperf_proto::results::Subflow> {
    let secs = ran.as_secs_f64();
    for s in &mut subflows {
        s.bits_per_second = if secs > 0.0 {
            s.bytes as f64 * 8.0 / secs
        } else {
            0.0
        };
    }
    subflows
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

fn tcp_summary(base: &Snap, end: &Snap, wall: Duration, rtt: &RttTrack) -> TcpStats {
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

struct Sampler {
    config: TestConfig,
    streams: Vec<Arc<StreamShared>>,
    tcp: Vec<Option<TcpStream>>,
    start: Instant,
    sink: EventSink,
    ctl: Arc<SideControl>,
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
            .map(|(s, t)| snapshot(s, t.as_ref(), at))
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
                let bytes = n.bytes - p.bytes;
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

    fn run(self) -> SamplerOutput {
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

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_proto::results::Limited;

    fn info(busy: u64, rwnd: u64, sndbuf: u64) -> TcpInfo {
        TcpInfo {
            busy_time_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(sndbuf),
            ..Default::default()
        }
    }

    fn sum(l: &Limited) -> f64 {
        l.rwnd + l.sndbuf + l.network + l.app
    }

    #[test]
    fn limited_fractions_are_shares_of_the_wall_time() {
        // 1 s: 0.5 s window-limited, 0.2 s buffer-limited, 0.1 s cwnd, 0.2 s idle.
        let l = limited(
            None,
            &info(800_000, 500_000, 200_000),
            Duration::from_secs(1),
        )
        .unwrap();
        let want = [0.5, 0.2, 0.1, 0.2];
        for (got, want) in [l.rwnd, l.sndbuf, l.network, l.app].into_iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{l:?}");
        }
    }

    #[test]
    fn limited_fractions_never_add_up_to_more_than_the_whole() {
        let wall = Duration::from_secs(1);
        // tcp_info read after the wall clock: 1.3 s busy in a 1 s interval,
        // nearly all of it window- and buffer-limited (these summed to 130 %).
        let before = info(1_000, 1_000, 0);
        let l = limited(Some(&before), &info(1_301_000, 901_000, 380_000), wall).unwrap();
        assert!((sum(&l) - 1.0).abs() < 1e-9, "{l:?} adds up to {}", sum(&l));
        assert!((l.rwnd - 0.9 / 1.3).abs() < 1e-9, "{l:?}");
        assert_eq!(l.app, 0.0);
        // Limited times larger than the busy time that should include them (180 %).
        let l = limited(None, &info(500_000, 700_000, 600_000), wall).unwrap();
        assert!((sum(&l) - 1.0).abs() < 1e-9, "{l:?} adds up to {}", sum(&l));
        assert!([l.rwnd, l.sndbuf, l.network, l.app]
            .iter()
            .all(|x| (0.0..=1.0).contains(x)));
    }
}
