//! One end of a test: its streams (a thread each, or a receiving loop's for a
//! paced TCP receiver), their sampler (in `sampler.rs`), and the summary once they
//! are done.

use crate::arrivals::Arrivals;
use crate::cpu::{CpuSnapshot, ThreadCpu};
use crate::delays::DelayTrack;
use crate::sampler::{snapshot, tcp_summary, Sampler, SamplerOutput, Snap};
pub use crate::sampler::{EventSink, SideEvent};
use crate::sockopt;
use crate::stream::{self, DataSocket, SideControl, StreamCpu, StreamParams, StreamShared};
use crate::tcpinfo::RttTrack;
use crate::udptrack::UdpTracker;
use linkperf_proto::results::{Role, SideResult, SocketFacts, StreamResult, TcpStats};
use linkperf_proto::TestConfig;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    /// Each TCP receiver's arrival counter (none over MPTCP: its tcp_info is a subflow's).
    arrivals: Vec<Option<Arrivals>>,
    facts: Vec<SocketFacts>,
    running: Vec<Running>,
    sampler: Option<crate::samplers::Handle>,
    series: Option<crate::series::Series>,
    cpu_start: Option<CpuSnapshot>,
    /// A UDP side's drop counters at its start.
    drop_watch: Option<crate::kernel_drops::DropWatch>,
    /// The thread that called `start` and its CPU then: counted as this
    /// end's control thread if it also calls `finish`.
    control_cpu: Option<(std::thread::ThreadId, ThreadCpu)>,
    /// Control work for this side done on threads that serve others too
    /// (each piece measured where it ran, [`LocalSide::add_control_cpu`]).
    control_shared: ThreadCpu,
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
        let mut arrivals = Vec::new();
        let mut facts = Vec::new();
        for plan in &plans {
            let receiver = plan.role == Role::Receiver && !config.mptcp;
            match &plan.socket {
                DataSocket::Tcp(s) => {
                    tcp_handles.push(s.try_clone().ok());
                    arrivals.push(receiver.then(|| Arrivals::new(s)).flatten());
                    facts.push(sockopt::facts(&socket2::SockRef::from(s), true));
                }
                DataSocket::Udp(s) => {
                    tcp_handles.push(None);
                    arrivals.push(None);
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
            arrivals,
            facts,
            running: Vec::new(),
            sampler: None,
            series: None,
            cpu_start: None,
            drop_watch: None,
            control_cpu: None,
            control_shared: ThreadCpu::default(),
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
                pacing_timer: self.config.pacing_timer(),
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
            let started = match plan.socket {
                DataSocket::Tcp(sock) if crate::receivers::takes(plan.role, rate) => {
                    crate::receivers::add(sock, shared, ctl, params, at).map(Running::Read)
                }
                socket => spawn_stream(
                    StreamPlan { socket, ..plan },
                    shared,
                    ctl,
                    params,
                    same_clock,
                    at,
                )
                .map(Running::Thread),
            };
            match started {
                Ok(running) => self.running.push(running),
                Err(e) => {
                    *self.streams[index]
                        .error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) =
                        Some(format!("could not start stream: {e}"));
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
        self.series = crate::series::Series::start(
            &self.config,
            self.streams.clone(),
            clone_tcp(),
            self.arrivals.clone(),
            at,
        );
        let sampler = Sampler {
            config: self.config.clone(),
            streams: self.streams.clone(),
            tcp: clone_tcp(),
            arrivals: self.arrivals.clone(),
            start: at,
            sink,
        };
        self.sampler = crate::samplers::add(sampler.into_run()).ok();
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

    /// The thread that called `start` stops serving this side: its CPU
    /// since then is counted now, whichever thread calls `finish`.
    pub fn release_control_thread(&mut self) {
        if let Some((id, before)) = self.control_cpu.take() {
            if id == std::thread::current().id() {
                self.control_shared.add(&ThreadCpu::since(&before));
            }
        }
    }

    /// CPU a thread that serves many sides spent on this one's control work.
    pub fn add_control_cpu(&mut self, cpu: &ThreadCpu) {
        self.control_shared.add(cpu);
    }

    /// Waits for the streams and the sampler, then summarises.
    pub fn finish(mut self) -> SideResult {
        for r in self.running.drain(..) {
            match r {
                Running::Thread(t) => drop(t.join()),
                Running::Read(h) => h.join(),
            }
        }
        let output = self.sampler.take().map(|s| s.join()).unwrap_or_default();
        let mut series = self.series.take().map(|s| s.finish()).unwrap_or_default();
        let mut own_cpu = output.cpu;
        own_cpu.add(&self.control_shared);
        if let Some((id, before)) = self.control_cpu {
            if id == std::thread::current().id() {
                own_cpu.add(&ThreadCpu::since(&before));
            }
        }
        let cpu_end = CpuSnapshot::now();
        let mut streams = Vec::new();
        let mut moved = 0u64;
        let mut seconds: f64 = 0.0;
        for i in 0..self.streams.len() {
            let samples = series.get_mut(i).map(std::mem::take).unwrap_or_default();
            let (result, total, finished_after) =
                self.stream_result(i, &output, samples, &mut own_cpu);
            moved += total;
            seconds = seconds.max(finished_after.as_secs_f64());
            streams.push(result);
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

    /// Stream `i`'s result over the measured part of the test (its thread's CPU
    /// goes to `own_cpu`), the bytes it moved in all and when it finished.
    fn stream_result(
        &self,
        i: usize,
        output: &SamplerOutput,
        samples: Vec<linkperf_proto::results::Sample>,
        own_cpu: &mut ThreadCpu,
    ) -> (StreamResult, u64, Duration) {
        let shared = &self.streams[i];
        let final_snap = snapshot(
            shared,
            self.tcp_handles[i].as_ref(),
            self.arrivals[i].as_ref(),
            Duration::ZERO,
        );
        let base = output.baseline.get(i).cloned().unwrap_or_default();
        let finished_after = Duration::from_nanos(shared.finished_after_ns.load(Ordering::Relaxed));
        let secs = finished_after.saturating_sub(base.at).as_secs_f64();
        let bytes = final_snap.bytes.saturating_sub(base.bytes);
        let rtt = output.rtt.get(i).copied().unwrap_or_default();
        let measured = finished_after.saturating_sub(base.at);
        let tcp = stream_tcp(shared.role, &base, &final_snap, measured, &rtt);
        let thread_cpu = *shared.cpu.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cpu) = &thread_cpu {
            own_cpu.add(&cpu.own);
        }
        let udp = final_snap.udp.as_ref().map(|now| {
            let mut u = match &base.udp {
                Some(b) if base.at > Duration::ZERO => UdpTracker::delta(b, now),
                _ => now.clone(),
            };
            let delays = stream::lock(&shared.delays).as_ref().map(|t| t.total());
            DelayTrack::fill(&mut u, delays.unwrap_or_default());
            u
        });
        let packets = (self.config.protocol == linkperf_proto::Protocol::Udp)
            .then(|| final_snap.packets - base.packets);
        let result = StreamResult {
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
            send_gaps: stream::lock(&shared.gaps).as_deref().cloned(),
            schedule: stream::lock(&shared.schedule).as_deref().cloned(),
            started_unix_ns: Some(shared.started_unix_ns.load(Ordering::Relaxed))
                .filter(|&t| t > 0),
            thread_cpu_percent: thread_cpu
                .filter(|c| !c.ran.is_zero())
                .map(|c| 100.0 * c.thread.total().as_secs_f64() / c.ran.as_secs_f64()),
            error: shared
                .error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            samples,
            subflows: subflow_rates(stream::lock(&shared.subflows).clone(), finished_after),
        };
        (result, final_snap.bytes, finished_after)
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

/// A started stream: on a thread of its own, or read by a receiving loop
/// (`receivers.rs`).
enum Running {
    Thread(JoinHandle<()>),
    Read(crate::receivers::Handle),
}

/// Starts a stream's own thread (named `lp-tx-ID` or `lp-rx-ID`), which runs it
/// and records its CPU since `at` (before that the thread only slept).
fn spawn_stream(
    plan: StreamPlan,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    params: StreamParams,
    same_clock: bool,
    at: Instant,
) -> std::io::Result<JoinHandle<()>> {
    let kind = if plan.role == Role::Sender {
        "tx"
    } else {
        "rx"
    };
    let name = format!("lp-{kind}-{}", plan.id);
    std::thread::Builder::new().name(name).spawn(move || {
        let cpu_before = ThreadCpu::now();
        let cpu_of = shared.clone();
        run_stream(plan, shared, ctl, params, same_clock);
        let own = ThreadCpu::since(&cpu_before);
        *cpu_of.cpu.lock().unwrap_or_else(|p| p.into_inner()) = Some(StreamCpu {
            own,
            thread: own,
            ran: Instant::now().saturating_duration_since(at),
        });
        // The sampler reports the end at once instead of at its next
        // 10 ms step (a short test's end would otherwise wait up to a
        // step on each side: most of a sweep run's cost).
        crate::samplers::wake();
    })
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
