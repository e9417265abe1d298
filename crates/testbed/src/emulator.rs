//! The emulator process: owns every TAP device of a testbed and runs one forwarding thread per
//! link direction. Each thread reads frames from its ingress TAP, runs them segment by segment
//! through its [`Scheduler`] (a TCP super-packet is one read but many segments, see
//! [`crate::gso`]), and sleeps in ppoll(2) until the next segment is due or another frame
//! arrives, then releases every due segment at once, merging what can go in one write.
//! A reporter thread snapshots the counters to the state dir.

use crate::counters::{DirectionCounters, LinkCounters};
use crate::error::TestbedError;
use crate::gso::{Segmentation, TcpPacket, VnetHeader, VNET_HDR_LEN};
use crate::netns::in_netns;
use crate::scheduler::Scheduler;
use crate::state::{
    unix_ms, write_atomic, CountersFile, Plan, COUNTERS_FILE, PID_FILE, READY_FILE, SCHEMA,
};
use crate::tap::open_tap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the counters file is rewritten.
pub const COUNTER_PERIOD: Duration = Duration::from_millis(100);
/// Frames read per wake-up before due frames are released again.
const READ_BATCH: usize = 64;
/// Free buffers kept for reuse per direction, of each size.
const POOL_LIMIT: usize = 4096;
/// Most packets merged into one write (GRO's own limit is 64 segments).
const TRAIN_LIMIT: usize = 64;
/// Room for the largest frame a TAP hands over: a 64 KiB TCP super-packet with its
/// Ethernet and virtio-net headers.
const BIG_BUFFER: usize = VNET_HDR_LEN + 14 + 65535 + 64;

fn log(msg: impl std::fmt::Display) {
    eprintln!("[{:.3}] {msg}", unix_ms() as f64 / 1000.0);
}

/// Entry point of `linkperf testbed emulate --state DIR`. Unless `foreground`, forks so the
/// spawner can reap its child at once and the emulator is adopted by init (no zombie is left
/// in a long-lived caller after the emulator dies).
pub fn run(state_dir: &Path, foreground: bool) -> Result<i32, TestbedError> {
    if !foreground {
        // SAFETY: called before this process starts any thread, so fork is sound here.
        match unsafe { libc::fork() } {
            -1 => {
                return Err(TestbedError::runtime(format!(
                    "fork failed: {}",
                    std::io::Error::last_os_error()
                )))
            }
            0 => {
                // SAFETY: setsid in the child detaches it from the caller's session and terminal.
                unsafe { libc::setsid() };
            }
            _ => return Ok(0),
        }
    }
    let _ = std::env::set_current_dir("/");
    let result = serve(state_dir);
    if let Err(e) = &result {
        log(format!("emulator failed: {e}"));
        let _ = std::fs::write(state_dir.join("failed"), e.to_string());
    }
    result
}

struct Direction {
    identity: LinkCounters,
    counters: Arc<DirectionCounters>,
}

fn serve(state_dir: &Path) -> Result<i32, TestbedError> {
    write_atomic(
        &state_dir.join(PID_FILE),
        std::process::id().to_string().as_bytes(),
    )?;
    let plan = Plan::load(state_dir)?;
    block_termination_signals();
    log(format!(
        "emulator for testbed '{}' starting, seed {}",
        plan.topology.name, plan.seed
    ));

    let mut taps: Vec<[Arc<OwnedFd>; 2]> = Vec::new();
    for (link, topo_link) in plan.links.iter().zip(&plan.topology.links) {
        let open = |i: usize| {
            let device = link.ends[i].device.clone();
            let offload = topo_link.offload;
            in_netns(&link.ends[i].netns, move || open_tap(&device, offload)).map(Arc::new)
        };
        taps.push([open(0)?, open(1)?]);
    }

    let epoch = Instant::now();
    let mut directions = Vec::new();
    for (index, (link, fds)) in plan.topology.links.iter().zip(&taps).enumerate() {
        for (dir_index, name, params, from, to) in [
            (0usize, "a_to_b", &link.a_to_b, 0usize, 1usize),
            (1, "b_to_a", &link.b_to_a, 1, 0),
        ] {
            let counters = Arc::new(DirectionCounters::default());
            let seed = mix_seed(plan.seed, (index * 2 + dir_index) as u64);
            let thread_name = format!("link{index}-{name}");
            let (ingress, egress) = (fds[from].clone(), fds[to].clone());
            let (params, mtu, thread_counters) = (params.clone(), link.mtu, counters.clone());
            std::thread::Builder::new()
                .name(thread_name.clone())
                .spawn(move || {
                    // Built on its own thread: the frames it will hold are not Send.
                    let scheduler = Scheduler::new(params, mtu, seed, thread_counters);
                    Forwarder::new(scheduler, ingress, egress, epoch, mtu, thread_name).run()
                })
                .map_err(|e| {
                    TestbedError::runtime(format!("cannot start forwarding thread: {e}"))
                })?;
            directions.push(Direction {
                identity: LinkCounters {
                    link: index,
                    direction: name.to_string(),
                    from: link.ends[from].clone(),
                    to: link.ends[to].clone(),
                    values: Default::default(),
                },
                counters,
            });
        }
    }
    let directions = Arc::new(directions);
    write_counters(state_dir, &plan, &directions);
    write_atomic(&state_dir.join(READY_FILE), b"ready\n")?;
    log(format!("forwarding {} link(s)", taps.len()));

    {
        let (dir, plan, directions) = (state_dir.to_path_buf(), plan.clone(), directions.clone());
        std::thread::Builder::new()
            .name("counters".into())
            .spawn(move || report_counters(dir, plan, directions))
            .map_err(|e| TestbedError::runtime(format!("cannot start counter thread: {e}")))?;
    }
    let signal = wait_for_termination_signal();
    write_counters(state_dir, &plan, &directions);
    log(format!("signal {signal}: stopping"));
    // Exiting closes the TAP descriptors, which removes the devices.
    std::process::exit(0);
}

fn mix_seed(seed: u64, stream: u64) -> u64 {
    seed ^ stream.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn block_termination_signals() {
    // SAFETY: plain signal-mask manipulation on a zeroed, initialised sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn wait_for_termination_signal() -> i32 {
    // SAFETY: sigwait on the set blocked by block_termination_signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let mut sig = 0;
        libc::sigwait(&set, &mut sig);
        sig
    }
}

fn report_counters(dir: PathBuf, plan: Plan, directions: Arc<Vec<Direction>>) {
    loop {
        std::thread::sleep(COUNTER_PERIOD);
        write_counters(&dir, &plan, &directions);
    }
}

fn write_counters(dir: &Path, plan: &Plan, directions: &[Direction]) {
    let file = CountersFile {
        schema: SCHEMA.to_string(),
        testbed: plan.topology.name.clone(),
        emulator_pid: std::process::id(),
        updated_unix_ms: unix_ms(),
        directions: directions
            .iter()
            .map(|d| LinkCounters {
                values: d.counters.snapshot(),
                ..d.identity.clone()
            })
            .collect(),
    };
    if let Ok(text) = serde_json::to_vec_pretty(&file) {
        if let Err(e) = write_atomic(&dir.join(COUNTERS_FILE), &text) {
            log(e);
        }
    }
}

fn now_ns(epoch: Instant) -> u64 {
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
struct Segment {
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
}

impl Run {
    fn new(segment: Segment, mut train: Vec<Rc<Packet>>) -> Run {
        train.clear();
        Run {
            train_payload: segment.packet.tcp.map_or(0, |t| t.payload()),
            packet: segment.packet,
            first: segment.index,
            count: 1,
            train,
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

/// The forwarding loop of one direction. Runs until its ingress device disappears.
struct Forwarder {
    scheduler: Scheduler<Segment>,
    counters: Arc<DirectionCounters>,
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
    name: String,
}

impl Forwarder {
    fn new(
        scheduler: Scheduler<Segment>,
        ingress: Arc<OwnedFd>,
        egress: Arc<OwnedFd>,
        epoch: Instant,
        mtu: u32,
        name: String,
    ) -> Forwarder {
        Forwarder {
            counters: scheduler.counters().clone(),
            scheduler,
            ingress,
            egress,
            epoch,
            // An MTU-sized frame with a VLAN tag and slack.
            small_capacity: VNET_HDR_LEN + (mtu as usize + 64).max(2048),
            small_pool: Vec::new(),
            big_pool: Vec::new(),
            scratch: vec![0; BIG_BUFFER],
            run_headers: Vec::with_capacity(256),
            iovecs: Vec::with_capacity(TRAIN_LIMIT + 1),
            spare_train: Vec::with_capacity(TRAIN_LIMIT),
            name,
        }
    }

    fn run(mut self) {
        // Default timer slack (50 us) would blur release times; 1 ns asks for hrtimer precision.
        // SAFETY: prctl with integer arguments affecting only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        loop {
            self.release_due();
            let timeout = self.scheduler.next_release_ns().map(|due| {
                let wait = due.saturating_sub(now_ns(self.epoch));
                libc::timespec {
                    tv_sec: (wait / 1_000_000_000) as libc::time_t,
                    tv_nsec: (wait % 1_000_000_000) as _,
                }
            });
            let mut pfd = libc::pollfd {
                fd: self.ingress.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let timeout_ptr = timeout
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: one valid pollfd, a timespec that outlives the call, no signal mask change.
            let ready = unsafe { libc::ppoll(&mut pfd, 1, timeout_ptr, std::ptr::null()) };
            if ready <= 0 {
                continue;
            }
            if pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                log(format!("{}: ingress device gone, thread stops", self.name));
                return;
            }
            for _ in 0..READ_BATCH {
                match self.read_one() {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(err) => {
                        log(format!("{}: read failed ({err}), thread stops", self.name));
                        return;
                    }
                }
            }
        }
    }

    /// Reads one frame and offers it, segment by segment, to the scheduler. False when the
    /// device has nothing to read.
    fn read_one(&mut self) -> std::io::Result<bool> {
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
        let packet = Rc::new(Packet {
            buf,
            len,
            vnet,
            gso,
            tcp,
        });
        let now = now_ns(self.epoch);
        match gso {
            Some(g) => {
                for index in 0..g.segments() {
                    let segment = Segment {
                        packet: packet.clone(),
                        index,
                    };
                    self.scheduler.offer(now, g.segment_bytes(index), segment);
                }
            }
            None => {
                let segment = Segment { packet, index: 0 };
                self.scheduler.offer(now, len - VNET_HDR_LEN, segment);
            }
        }
        Ok(true)
    }

    /// Writes every due segment, those that can go together with one system call.
    fn release_due(&mut self) {
        let now = now_ns(self.epoch);
        let mut run: Option<Run> = None;
        while let Some((segment, _)) = self.scheduler.pop_due(now) {
            let segment = match &mut run {
                Some(r) => match r.absorb(segment) {
                    Ok(()) => continue,
                    Err(segment) => segment,
                },
                None => segment,
            };
            let next = Run::new(segment, std::mem::take(&mut self.spare_train));
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
        // SAFETY: the iovecs point into buffers owned by `run` and `self.run_headers`, alive
        // and unchanged until the call returns; the kernel only reads them.
        let written = unsafe { libc::writev(fd, self.iovecs.as_ptr(), self.iovecs.len() as _) };
        self.iovecs.clear();
        let c = &self.counters;
        if written == expected as isize {
            DirectionCounters::add(&c.packets_forwarded, packets as u64);
            DirectionCounters::add(&c.bytes_forwarded, frame_bytes);
        } else {
            DirectionCounters::add(&c.write_errors, packets as u64);
        }
        for p in run.train.drain(..) {
            self.recycle(p);
        }
        self.spare_train = std::mem::take(&mut run.train);
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
