//! The forwarding loop of one link direction. It reads frames from the ingress TAP, runs them
//! segment by segment through its [`Scheduler`] (a TCP super-packet is one read but many
//! segments, see [`crate::gso`]), and releases every due segment at once, merging what can go
//! in one write.
//!
//! It keeps its own delay out of the link's: it sleeps in ppoll(2) until shortly before the
//! next release and spins for the rest, the margin learned from how late its own timer
//! wake-ups are; and a frame counts as having arrived when the kernel stamped it on its way
//! into the ingress device ([`crate::stamps`]). A frame without a stamp that woke the thread
//! from sleep counts as having arrived as long before it was read as that wake-up took
//! (estimated). The kernel says how long the thread
//! waited for a CPU after being woken (the run delay in /proc/thread-self/schedstat, read
//! before and after each sleep); the rest of the wait (waking, returning from ppoll, the
//! read) is learned from probe frames (see [`crate::probe`]). The latencies are kept per
//! duration class by [`LatencyModel`]s.

use crate::atm::vc_key;
use crate::counters::DirectionCounters;
use crate::gso::{Segmentation, TcpPacket, VnetHeader, VNET_HDR_LEN};
use crate::mailbox::{Applied, Mailbox};
use crate::probe::{clock_ns, parse_probe, received_probe, ProbeClock};
use crate::scheduler::Scheduler;
use crate::stamps::IngressStamps;
use crate::state::unix_ms;
use crate::timing::{DirectionTiming, LatencyModel};
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// Frames read per wake-up before due frames are released again.
const READ_BATCH: usize = 64;
/// Free buffers kept for reuse per direction, of each size.
const POOL_LIMIT: usize = 4096;
/// Most packets merged into one write (GRO's own limit is 64 segments).
const TRAIN_LIMIT: usize = 64;
/// Room for the largest frame a TAP hands over: a 64 KiB TCP super-packet with its
/// Ethernet and virtio-net headers.
const BIG_BUFFER: usize = VNET_HDR_LEN + 14 + 65535 + 64;
/// Longest spin before a release; beyond it a late timer is reported, not paid for in CPU.
const MAX_SPIN_NS: u64 = 500_000;
/// A sleep this many times longer than the 90th percentile of timer lateness spins for that
/// percentile (release exact); shorter sleeps spin for the median only (release exact on
/// the median, little CPU when releases follow each other closely).
const LONG_SLEEP_FACTOR: u64 = 8;
/// Most a release is started early to make up for the write path (a sanity bound).
const MAX_LEAD_NS: u64 = 50_000;
/// A probe read but not matched with its send time within this long is forgotten.
const PROBE_MATCH_NS: u64 = 200_000_000;

fn log(msg: impl std::fmt::Display) {
    eprintln!("[{:.3}] {msg}", unix_ms() as f64 / 1000.0);
}

pub fn now_ns(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

/// A frame read from the ingress device, shared by its segments while they cross the link.
struct Packet {
    buf: Vec<u8>,
    /// Bytes of `buf` in use: virtio-net header and frame.
    len: usize,
    vnet: VnetHeader,
    /// The geometry of a TCP super-packet; None for a frame that is one packet.
    gso: Option<Segmentation>,
    /// A plain TCP data packet, which may join a train of them when written.
    tcp: Option<TcpPacket>,
}

impl Packet {
    fn frame(&self) -> &[u8] {
        &self.buf[VNET_HDR_LEN..self.len]
    }
}

/// One packet on the emulated wire: a whole frame, or segment `index` of a super-packet.
pub struct Segment {
    packet: Rc<Packet>,
    index: usize,
}

/// Packets released together and written with one system call: consecutive segments of one
/// super-packet, or a train of consecutive TCP packets of one flow merged into a super-packet
/// (what GRO in the receiving host's NIC would make of them).
struct Run {
    packet: Rc<Packet>,
    first: usize,
    count: usize,
    /// Packets following `packet` (a plain TCP packet) in a train.
    train: Vec<Rc<Packet>>,
    /// Payload bytes of `packet` and the train.
    train_payload: usize,
    /// (scheduled release, end of serialisation) of every packet in the run.
    times: Vec<(u64, u64)>,
}

impl Run {
    fn new(segment: Segment, mut train: Vec<Rc<Packet>>, mut times: Vec<(u64, u64)>) -> Run {
        train.clear();
        times.clear();
        Run {
            train_payload: segment.packet.tcp.map_or(0, |t| t.payload()),
            packet: segment.packet,
            first: segment.index,
            count: 1,
            train,
            times,
        }
    }

    /// Takes `segment` into the run if it can be written with it; gives it back otherwise.
    fn absorb(&mut self, segment: Segment) -> Result<(), Segment> {
        if self.train.is_empty()
            && Rc::ptr_eq(&self.packet, &segment.packet)
            && self.first + self.count == segment.index
        {
            self.count += 1;
            return Ok(());
        }
        let (Some(head), Some(next)) = (self.packet.tcp, segment.packet.tcp) else {
            return Err(segment);
        };
        let last = self.train.last().unwrap_or(&self.packet);
        let joins = self.train.len() + 1 < TRAIN_LIMIT
            && last.tcp.is_some_and(|last| {
                head.continues(
                    self.packet.frame(),
                    &last,
                    self.train_payload,
                    &next,
                    segment.packet.frame(),
                )
            });
        if !joins {
            return Err(segment);
        }
        self.train_payload += next.payload();
        self.train.push(segment.packet);
        Ok(())
    }
}

/// How the frames about to be read reached the emulator.
#[derive(Clone, Copy)]
enum Ingress {
    /// Read without sleeping first: they waited no longer than the loop took to come round.
    Hot,
    /// Read after ppoll woke the thread from a sleep that began at `slept_at` and lasted
    /// `blocked` ns; the first frame waited about `compensation` ns for the wake-up, of which
    /// `run_delay` waiting for a CPU (when the kernel said).
    Woke {
        slept_at: u64,
        blocked: u64,
        compensation: u64,
        run_delay: Option<u64>,
    },
}

enum Wake {
    Timer,
    Mail,
    Input(Ingress),
    Interrupted,
    DeviceGone,
}

/// The forwarding loop of one direction. Runs until its ingress device disappears.
pub struct Forwarder {
    scheduler: Scheduler<Segment>,
    counters: Arc<DirectionCounters>,
    timing: Arc<DirectionTiming>,
    ingress: Arc<OwnedFd>,
    egress: Arc<OwnedFd>,
    epoch: Instant,
    /// Frames up to this size (virtio-net header included) are copied into a small buffer;
    /// larger ones (super-packets) keep the big buffer they were read into.
    small_capacity: usize,
    small_pool: Vec<Vec<u8>>,
    big_pool: Vec<Vec<u8>>,
    /// Where the next frame is read: big enough for any frame, so none is ever truncated.
    scratch: Vec<u8>,
    /// Headers of a partial run of segments or of a train, built before it is written.
    run_headers: Vec<u8>,
    iovecs: Vec<libc::iovec>,
    spare_train: Vec<Rc<Packet>>,
    spare_times: Vec<(u64, u64)>,
    /// How late timer wake-ups are, by sleep length.
    timer_model: LatencyModel,
    /// How long a frame waits for the sleeping thread to wake, by how long it slept.
    ingress_model: LatencyModel,
    /// The same less the wake-up's run delay: what the kernel's figure leaves out.
    residual_model: LatencyModel,
    /// This thread's /proc/thread-self/schedstat (None where the kernel has none).
    schedstat: Option<std::fs::File>,
    probe_clock: Arc<ProbeClock>,
    probe_rx: OwnedFd,
    /// How long a write takes to bring a frame into the far host's stack.
    delivery_model: LatencyModel,
    /// Releases start this much before their time: the median of `delivery_model`.
    lead: u64,
    mailbox: Arc<Mailbox>,
    /// A probe read but not yet matched with its send time.
    pending_probe: Option<PendingProbe>,
    /// Arrival time given to the last frame, so arrivals never go backwards.
    last_arrival: u64,
    /// The kernel's stamps of the frames the host sent in, where it has them.
    stamps: Option<IngressStamps>,
    /// CLOCK_MONOTONIC at `epoch` (ns): the stamps' clock.
    epoch_mono_ns: u64,
    name: String,
}

/// A probe frame read, waiting for its send time.
#[derive(Clone, Copy)]
struct PendingProbe {
    seq: u64,
    read_at: u64,
    /// How long the thread had slept before the wake-up that read it (0: it was awake).
    blocked: u64,
    run_delay: Option<u64>,
}

/// What a forwarding thread needs besides its scheduler.
pub struct ForwarderIo {
    pub ingress: Arc<OwnedFd>,
    pub egress: Arc<OwnedFd>,
    pub probe_clock: Arc<ProbeClock>,
    /// Receives (with kernel timestamps) the probes this thread writes to its egress device.
    pub probe_rx: OwnedFd,
    /// When each frame entered the ingress device, as the kernel stamped it.
    pub stamps: Option<IngressStamps>,
    pub mailbox: Arc<Mailbox>,
    pub epoch: Instant,
    pub mtu: u32,
    pub name: String,
}

impl Forwarder {
    pub fn new(scheduler: Scheduler<Segment>, io: ForwarderIo) -> Forwarder {
        Forwarder {
            counters: scheduler.counters().clone(),
            timing: scheduler.timing().clone(),
            scheduler,
            ingress: io.ingress,
            egress: io.egress,
            epoch: io.epoch,
            // An MTU-sized frame with a VLAN tag and slack.
            small_capacity: VNET_HDR_LEN + (io.mtu as usize + 64).max(2048),
            small_pool: Vec::new(),
            big_pool: Vec::new(),
            scratch: vec![0; BIG_BUFFER],
            run_headers: Vec::with_capacity(256),
            iovecs: Vec::with_capacity(TRAIN_LIMIT + 1),
            spare_train: Vec::with_capacity(TRAIN_LIMIT),
            spare_times: Vec::with_capacity(TRAIN_LIMIT),
            timer_model: LatencyModel::default(),
            ingress_model: LatencyModel::default(),
            residual_model: LatencyModel::default(),
            schedstat: None,
            probe_clock: io.probe_clock,
            probe_rx: io.probe_rx,
            delivery_model: LatencyModel::default(),
            lead: 0,
            mailbox: io.mailbox,
            pending_probe: None,
            last_arrival: 0,
            stamps: io.stamps,
            epoch_mono_ns: clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(now_ns(io.epoch)),
            name: io.name,
        }
    }

    fn now(&self) -> u64 {
        now_ns(self.epoch)
    }

    pub fn run(mut self) {
        // Default timer slack (50 us) would blur release times; 1 ns asks for hrtimer precision.
        // SAFETY: prctl with integer arguments affecting only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        crate::priority::raise_priority();
        // Opened by this thread, so it reads this thread's figures.
        self.schedstat = std::fs::File::open("/proc/thread-self/schedstat").ok();
        loop {
            if self.mailbox.has_pending() {
                self.apply_updates();
            }
            self.settle_probe();
            self.release_due();
            // Times below are when frames reach the far host: a write started now gets there
            // `lead` later.
            let now = self.now() + self.lead;
            let sleep = match self.scheduler.next_release_ns() {
                Some(due) if due <= now => continue,
                Some(due) => {
                    let wait = due - now;
                    let margin = self.spin_margin(wait);
                    if wait <= margin {
                        if self.spin_step(now).is_err() {
                            return;
                        }
                        continue;
                    }
                    Some((wait, wait - margin))
                }
                None => None,
            };
            let result = match self.sleep(sleep) {
                Wake::Timer | Wake::Interrupted | Wake::Mail => Ok(0),
                Wake::Input(ingress) => self.read_frames(ingress),
                Wake::DeviceGone => {
                    log(format!("{}: ingress device gone, thread stops", self.name));
                    return;
                }
            };
            if let Err(err) = result {
                log(format!("{}: read failed ({err}), thread stops", self.name));
                return;
            }
        }
    }

    /// How long before a release to stop sleeping and spin, for a release `wait` ns away.
    fn spin_margin(&self, wait: u64) -> u64 {
        let Some((p50, p90)) = self.timer_model.quantiles(wait) else {
            return 0;
        };
        let margin = if wait >= LONG_SLEEP_FACTOR * p90 {
            p90
        } else {
            p50
        };
        margin.min(MAX_SPIN_NS)
    }

    /// One turn of the spin before a release: read whatever arrived. The CPU is kept (no
    /// sched_yield): on a busy machine a yield hands it to another process for a whole time
    /// slice, which is exactly the lateness the spin is there to avoid. The spin is bounded
    /// by the margin.
    fn spin_step(&mut self, started: u64) -> std::io::Result<()> {
        if self.read_frames(Ingress::Hot)? == 0 {
            std::hint::spin_loop();
            self.timing.add_spin(self.now().saturating_sub(started));
        }
        Ok(())
    }

    /// Sleeps until input arrives or, with `Some((wait, timeout))`, `timeout` ns pass (the
    /// release being `wait` ns away). Learns from a timer wake-up how late it was.
    fn sleep(&mut self, sleep: Option<(u64, u64)>) -> Wake {
        let timeout = sleep.map(|(_, t)| libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as _,
        });
        let poll = |fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut pfds = [poll(self.ingress.as_raw_fd()), poll(self.mailbox.fd())];
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let delay_before = self.run_delay();
        let slept_at = self.now();
        // SAFETY: two valid pollfds, a timespec that outlives the call, no signal mask change.
        let ready = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
        let woke = self.now();
        let pfd = pfds[0];
        if ready < 0 {
            return Wake::Interrupted;
        }
        if ready == 0 {
            if let Some((wait, t)) = sleep {
                self.timer_model
                    .record(wait, woke.saturating_sub(slept_at + t));
            }
            return Wake::Timer;
        }
        if pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return Wake::DeviceGone;
        }
        if pfd.revents & libc::POLLIN == 0 {
            return Wake::Mail;
        }
        let blocked = woke - slept_at;
        let run_delay = match (delay_before, self.run_delay()) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        let compensation = match run_delay {
            Some(delay) => {
                delay
                    + self
                        .residual_model
                        .quantiles(blocked)
                        .map_or(0, |(p50, _)| p50)
            }
            None => self
                .ingress_model
                .quantiles(blocked)
                .map_or(0, |(p50, _)| p50),
        }
        .min(blocked);
        // Woken at or after the timer's deadline: the frame may have woken the thread before
        // the deadline (then it waited the run delay and the rest, as computed), or the timer
        // did and the frame came while the thread waited for a CPU, at an unknown instant up
        // to `woke`. Only a known run delay tells them apart: the thread became runnable at
        // `woke - run_delay`, and if that is before the deadline the frame woke it. Otherwise
        // nothing is compensated: a later release, never an early one.
        let compensation = match (sleep, run_delay) {
            (Some((_, t)), Some(delay)) if woke >= slept_at + t => {
                if woke.saturating_sub(delay) < slept_at + t {
                    compensation
                } else {
                    0
                }
            }
            (Some((_, t)), None) if woke >= slept_at + t => 0,
            _ => compensation,
        };
        self.timing
            .ingress_compensation_ns
            .store(compensation, Relaxed);
        Wake::Input(Ingress::Woke {
            slept_at,
            blocked,
            compensation,
            run_delay,
        })
    }

    /// Nanoseconds this thread has spent runnable but waiting for a CPU, so far.
    fn run_delay(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let file = self.schedstat.as_ref()?;
        let mut buf = [0u8; 96];
        let n = file.read_at(&mut buf, 0).ok()?;
        // "<time on CPU> <run delay> <time slices>\n", all decimal.
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        text.split_ascii_whitespace().nth(1)?.parse().ok()
    }

    /// Reads up to a batch of frames; returns how many were read.
    fn read_frames(&mut self, ingress: Ingress) -> std::io::Result<usize> {
        let mut read = 0;
        for i in 0..READ_BATCH {
            let ingress = match ingress {
                // Only the frame that woke the thread waited for the wake-up.
                Ingress::Woke { .. } if i > 0 => Ingress::Woke {
                    slept_at: 0,
                    blocked: 0,
                    compensation: 0,
                    run_delay: None,
                },
                other => other,
            };
            match self.read_one(ingress)? {
                true => read += 1,
                false => break,
            }
        }
        Ok(read)
    }

    /// Takes new parameters (from `testbed set` or a schedule) and says when they took effect.
    fn apply_updates(&mut self) {
        for update in self.mailbox.take() {
            let at_ns = self.now();
            self.scheduler.set_cell_input(update.cell_input_ns);
            let dropped_resize = self.scheduler.set_params(at_ns, update.params, update.mtu);
            let _ = update.done.send(Applied {
                at_ns,
                dropped_resize,
            });
        }
    }

    /// Matches a probe read earlier with its send time and learns the ingress latency.
    fn settle_probe(&mut self) {
        let Some(p) = self.pending_probe else {
            return;
        };
        if let Some(sent) = self.probe_clock.sent_ns(p.seq) {
            let waited = p.read_at.saturating_sub(sent);
            self.ingress_model.record(p.blocked, waited);
            if let Some(delay) = p.run_delay {
                self.residual_model
                    .record(p.blocked, waited.saturating_sub(delay));
            }
            self.timing.probes.fetch_add(1, Relaxed);
            self.pending_probe = None;
        } else if self.now().saturating_sub(p.read_at) > PROBE_MATCH_NS {
            self.pending_probe = None;
        }
    }

    /// Reads one frame and offers it, segment by segment, to the scheduler. False when the
    /// device has nothing to read.
    fn read_one(&mut self, ingress: Ingress) -> std::io::Result<bool> {
        // SAFETY: reading at most scratch.len() bytes into our own buffer.
        let n = unsafe {
            libc::read(
                self.ingress.as_raw_fd(),
                self.scratch.as_mut_ptr().cast(),
                self.scratch.len(),
            )
        };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
                _ => Err(err),
            };
        }
        let len = n as usize;
        if len <= VNET_HDR_LEN {
            return Ok(true);
        }
        let read_at = self.now();
        let stamped = self.stamps.as_mut().and_then(|s| {
            let stamp = s.arrival(&self.scratch[VNET_HDR_LEN..len])?;
            Some(stamp.saturating_sub(self.epoch_mono_ns).min(read_at))
        });
        if let Some(seq) = parse_probe(&self.scratch[VNET_HDR_LEN..len]) {
            let probe = |blocked, run_delay| PendingProbe {
                seq,
                read_at,
                blocked,
                run_delay,
            };
            self.time_delivery(len, seq);
            self.pending_probe = match ingress {
                Ingress::Hot => Some(probe(0, None)),
                Ingress::Woke {
                    blocked, run_delay, ..
                } if blocked > 0 => Some(probe(blocked, run_delay)),
                // Read behind another frame: its wait says nothing about a wake-up.
                Ingress::Woke { .. } => self.pending_probe,
            };
            return Ok(true);
        }
        let counter = match stamped {
            Some(_) => &self.timing.stamped,
            None => &self.timing.estimated,
        };
        counter.fetch_add(1, Relaxed);
        let arrival = match (stamped, ingress) {
            (Some(stamp), _) => stamp,
            (None, Ingress::Hot) => read_at,
            (
                None,
                Ingress::Woke {
                    slept_at,
                    compensation,
                    ..
                },
            ) => read_at.saturating_sub(compensation).max(slept_at),
        }
        .max(self.last_arrival);
        self.last_arrival = arrival;
        self.offer(arrival, len);
        Ok(true)
    }

    /// Writes the probe frame in `scratch` to the far end at once and learns, from the far
    /// side's receive timestamp, how long a write takes to bring a frame into its stack.
    fn time_delivery(&mut self, len: usize, seq: u64) {
        let written_at = self.now();
        // SAFETY: writes our own buffer to the egress TAP.
        let n = unsafe { libc::write(self.egress.as_raw_fd(), self.scratch.as_ptr().cast(), len) };
        if n != len as isize {
            return;
        }
        // The frame went through the far stack inside write(): its timestamp is waiting.
        let Some(received) = received_probe(self.probe_rx.as_raw_fd(), seq) else {
            return;
        };
        let (now, wall) = (self.now(), clock_ns(libc::CLOCK_REALTIME));
        let arrived = now.saturating_sub(wall.saturating_sub(received));
        self.delivery_model
            .record(0, arrived.saturating_sub(written_at));
        self.lead = self
            .delivery_model
            .quantiles(0)
            .map_or(0, |(p50, _)| p50.min(MAX_LEAD_NS));
        self.timing.delivery_lead_ns.store(self.lead, Relaxed);
    }

    /// Hands the frame in `scratch` (`len` bytes with its virtio-net header) to the scheduler.
    fn offer(&mut self, arrival: u64, len: usize) {
        let vnet = VnetHeader::parse(&self.scratch);
        let buf = if len <= self.small_capacity {
            let mut small = self
                .small_pool
                .pop()
                .unwrap_or_else(|| vec![0; self.small_capacity]);
            small[..len].copy_from_slice(&self.scratch[..len]);
            small
        } else {
            let fresh = self.big_pool.pop().unwrap_or_else(|| vec![0; BIG_BUFFER]);
            std::mem::replace(&mut self.scratch, fresh)
        };
        let frame = &buf[VNET_HDR_LEN..len];
        let (gso, tcp) = if vnet.is_gso() {
            (Segmentation::parse(&vnet, frame), None)
        } else {
            (None, TcpPacket::parse(frame))
        };
        let vc = vc_key(frame);
        let packet = Rc::new(Packet {
            buf,
            len,
            vnet,
            gso,
            tcp,
        });
        match gso {
            Some(g) => {
                for index in 0..g.segments() {
                    let segment = Segment {
                        packet: packet.clone(),
                        index,
                    };
                    self.scheduler
                        .offer_on(arrival, g.segment_bytes(index), vc, segment);
                }
            }
            None => {
                let segment = Segment { packet, index: 0 };
                self.scheduler
                    .offer_on(arrival, len - VNET_HDR_LEN, vc, segment);
            }
        }
    }

    /// Writes every due segment, those that can go together with one system call.
    fn release_due(&mut self) {
        let now = self.now() + self.lead;
        let mut run: Option<Run> = None;
        while let Some(entry) = self.scheduler.pop_due(now) {
            let times = (entry.release_ns, entry.finish_ns);
            let segment = match &mut run {
                Some(r) => match r.absorb(entry.item) {
                    Ok(()) => {
                        r.times.push(times);
                        continue;
                    }
                    Err(segment) => segment,
                },
                None => entry.item,
            };
            let mut next = Run::new(
                segment,
                std::mem::take(&mut self.spare_train),
                std::mem::take(&mut self.spare_times),
            );
            next.times.push(times);
            if let Some(done) = run.replace(next) {
                self.write_run(done);
            }
        }
        if let Some(done) = run {
            self.write_run(done);
        }
    }
    fn write_run(&mut self, mut run: Run) {
        let packet = &run.packet;
        let fd = self.egress.as_raw_fd();
        self.iovecs.clear();
        let iovec = |bytes: &[u8]| libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let (packets, frame_bytes) = match (&packet.gso, &packet.tcp) {
            (Some(g), _) if run.count < g.segments() => {
                let payload = g.run_headers(
                    &packet.vnet,
                    packet.frame(),
                    run.first,
                    run.count,
                    &mut self.run_headers,
                );
                self.iovecs.push(iovec(&self.run_headers));
                self.iovecs.push(iovec(&packet.frame()[payload]));
                let frame_bytes = (run.first..run.first + run.count)
                    .map(|i| g.segment_bytes(i) as u64)
                    .sum();
                (run.count, frame_bytes)
            }
            (None, Some(head)) if !run.train.is_empty() => {
                let last_flags = run
                    .train
                    .last()
                    .and_then(|p| p.tcp)
                    .map_or(0, |t| t.flags());
                head.train_headers(
                    packet.frame(),
                    run.train.len() + 1,
                    run.train_payload,
                    last_flags,
                    &mut self.run_headers,
                );
                self.iovecs.push(iovec(&self.run_headers));
                let mut frame_bytes = 0;
                for p in std::iter::once(packet).chain(&run.train) {
                    self.iovecs.push(iovec(&p.frame()[head.headers()..]));
                    frame_bytes += p.frame().len() as u64;
                }
                (run.train.len() + 1, frame_bytes)
            }
            _ => {
                self.iovecs.push(iovec(&packet.buf[..packet.len]));
                let frame_bytes = match &packet.gso {
                    Some(g) => (0..g.segments()).map(|i| g.segment_bytes(i) as u64).sum(),
                    None => (packet.len - VNET_HDR_LEN) as u64,
                };
                (run.count, frame_bytes)
            }
        };
        let expected: usize = self.iovecs.iter().map(|v| v.iov_len).sum();
        let write_at = self.now() + self.lead;
        for &(release, finish) in &run.times {
            self.timing.record_release(
                write_at.saturating_sub(release),
                write_at.saturating_sub(finish),
            );
        }
        // SAFETY: the iovecs point into buffers owned by `run` and `self.run_headers`, alive
        // and unchanged until the call returns; the kernel only reads them.
        let written = unsafe { libc::writev(fd, self.iovecs.as_ptr(), self.iovecs.len() as _) };
        self.iovecs.clear();
        let c = &self.counters;
        if written == expected as isize {
            DirectionCounters::add(&c.packets_forwarded, packets as u64);
            DirectionCounters::add(&c.bytes_forwarded, frame_bytes);
        } else {
            let err = std::io::Error::last_os_error();
            if c.write_errors.load(Relaxed) < 10 {
                log(format!(
                    "{}: write of {packets} packet(s), {expected} bytes, returned {written} ({err})",
                    self.name
                ));
            }
            DirectionCounters::add(&c.write_errors, packets as u64);
        }
        for p in run.train.drain(..) {
            self.recycle(p);
        }
        self.spare_train = std::mem::take(&mut run.train);
        self.spare_times = std::mem::take(&mut run.times);
        self.recycle(run.packet);
    }

    /// Returns the packet's buffer to its pool once no segment refers to it any more.
    fn recycle(&mut self, packet: Rc<Packet>) {
        if let Ok(p) = Rc::try_unwrap(packet) {
            let pool = if p.buf.len() == BIG_BUFFER {
                &mut self.big_pool
            } else {
                &mut self.small_pool
            };
            if pool.len() < POOL_LIMIT {
                pool.push(p.buf);
            }
        }
    }
}
