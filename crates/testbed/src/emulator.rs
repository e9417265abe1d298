//! The emulator process: owns every TAP device of a testbed and runs one forwarding thread per
//! link direction ([`crate::forwarder`]), a probe thread that measures the forwarders' ingress
//! latency ([`crate::probe`]), the control socket and schedules ([`crate::control`]), and a
//! reporter that writes counters, timing and the parameters in force to the state directory
//! every 100 ms and whenever the control socket asks for a snapshot; and, while it runs with
//! `cpu_idle = "poll"`, the PM QoS request that keeps idle CPUs polling.

use crate::circuit::Circuit;
use crate::control::{self, Control};
use crate::counters::{DirectionCounters, LinkCounters};
use crate::error::TestbedError;
use crate::forwarder::{now_ns, Forwarder, ForwarderIo};
use crate::mailbox::Mailbox;
use crate::netns::in_netns;
use crate::probe::{open_probe_socket, run_prober, ProbeClock, ProbeTarget};
use crate::processing::Processing;
use crate::scheduler::Scheduler;
use crate::stamps::IngressStamps;
use crate::state::{
    unix_ms, write_atomic, CountersFile, DirectionState, Plan, COUNTERS_FILE, PID_FILE, READY_FILE,
    SCHEMA,
};
use crate::tap::open_tap;
use crate::timing::{DirectionTiming, RecentTiming, TimingSnapshot};
use crate::topology::CpuIdle;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the counters file is rewritten.
pub const COUNTER_PERIOD: Duration = Duration::from_millis(100);

fn log(msg: impl std::fmt::Display) {
    eprintln!("[{:.3}] {msg}", unix_ms() as f64 / 1000.0);
}

/// Entry point of `linkperf testbed emulate --state DIR`. Unless `foreground`, forks so the
/// spawner can reap its child at once and the emulator is adopted by init (no zombie is left
/// in a long-lived caller after the emulator dies).
pub fn run(state_dir: &Path, foreground: bool) -> Result<i32, TestbedError> {
    // A long-lived daemon must not hold what its caller had open (a `flock` lock, a pipe a
    // test waits on): keep only stdin, stdout and stderr.
    // SAFETY: closes descriptors this process inherited and has not used.
    unsafe { libc::close_range(3, libc::c_uint::MAX, 0) };
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
    timing: Arc<DirectionTiming>,
}

/// The emulator's two devices per link (TAPs), on each a probe socket that sends and one
/// that receives, and the kernel's stamps of the frames sent into it (None where the kernel
/// refused the stamping program: those frames' arrivals are estimated).
struct Devices {
    taps: Vec<[Arc<OwnedFd>; 2]>,
    probe_sockets: Vec<[(OwnedFd, OwnedFd); 2]>,
    stamps: Vec<[Option<IngressStamps>; 2]>,
}

fn open_devices(plan: &Plan) -> Result<Devices, TestbedError> {
    let mut devices = Devices {
        taps: Vec::new(),
        probe_sockets: Vec::new(),
        stamps: Vec::new(),
    };
    for (link, topo_link) in plan.links.iter().zip(&plan.topology.links) {
        let open = |i: usize| {
            let device = link.ends[i].device.clone();
            let offload = topo_link.offload;
            in_netns(&link.ends[i].netns, move || {
                let tap = open_tap(&device, offload)?;
                let probes = (
                    open_probe_socket(&device, false)?,
                    open_probe_socket(&device, true)?,
                );
                let stamps = IngressStamps::attach(&tap)
                    .map_err(|e| log(format!("{device}: no kernel stamps ({e}); estimating")))
                    .ok();
                Ok((Arc::new(tap), probes, stamps))
            })
        };
        let ((tap_a, probe_a, stamps_a), (tap_b, probe_b, stamps_b)) = (open(0)?, open(1)?);
        devices.taps.push([tap_a, tap_b]);
        devices.probe_sockets.push([probe_a, probe_b]);
        devices.stamps.push([stamps_a, stamps_b]);
    }
    Ok(devices)
}

/// What the forwarding threads share with the rest of the emulator.
struct Started {
    directions: Vec<Direction>,
    probe_targets: Vec<ProbeTarget>,
    mailboxes: Vec<Arc<Mailbox>>,
}

/// One forwarding thread per link direction, in the order link 0 a_to_b, link 0 b_to_a, ...
fn start_forwarders(
    plan: &Plan,
    devices: Devices,
    epoch: Instant,
) -> Result<Started, TestbedError> {
    let Devices {
        taps,
        probe_sockets,
        stamps,
    } = devices;
    let mut started = Started {
        directions: Vec::new(),
        probe_targets: Vec::new(),
        mailboxes: Vec::new(),
    };
    // One processor per router, whichever of its interfaces a packet came in by.
    let routers: std::collections::BTreeMap<&str, Arc<std::sync::Mutex<Processing>>> = plan
        .topology
        .routers
        .iter()
        .map(|r| (r.name.as_str(), Arc::default()))
        .collect();
    let links = plan.topology.links.iter().zip(&taps).zip(probe_sockets);
    for (index, (((link, fds), probes), [stamps_a, stamps_b])) in links.zip(stamps).enumerate() {
        let [(send_a, receive_a), (send_b, receive_b)] = probes;
        let circuit = Arc::new(Circuit::default());
        for (dir_index, name, params, from, to, socket, probe_rx, stamps) in [
            (
                0usize,
                "a_to_b",
                &link.a_to_b,
                0usize,
                1usize,
                send_a,
                receive_b,
                stamps_a,
            ),
            (1, "b_to_a", &link.b_to_a, 1, 0, send_b, receive_a, stamps_b),
        ] {
            let counters = Arc::new(DirectionCounters::default());
            let timing = Arc::new(DirectionTiming::default());
            let probe_clock = Arc::new(ProbeClock::default());
            let mailbox =
                Arc::new(Mailbox::new().map_err(|e| {
                    TestbedError::runtime(format!("cannot create an eventfd: {e}"))
                })?);
            started.probe_targets.push(ProbeTarget {
                socket,
                clock: probe_clock.clone(),
            });
            started.mailboxes.push(mailbox.clone());
            let seed = mix_seed(plan.seed, (index * 2 + dir_index) as u64);
            let io = ForwarderIo {
                ingress: fds[from].clone(),
                egress: fds[to].clone(),
                probe_clock,
                probe_rx,
                stamps,
                mailbox,
                epoch,
                mtu: link.mtu,
                name: format!("link{index}-{name}"),
            };
            let (params, mtu) = (params.clone(), link.mtu);
            let cell_input_ns = plan.topology.configured_input_cell_ns(index, from);
            let (thread_counters, thread_timing) = (counters.clone(), timing.clone());
            let circuit = circuit.clone();
            let router = routers.get(link.ends[to].as_str()).cloned();
            std::thread::Builder::new()
                .name(io.name.clone())
                .spawn(move || {
                    // Built on its own thread: the frames it will hold are not Send.
                    let now = now_ns(epoch);
                    let mut scheduler =
                        Scheduler::new(params, mtu, seed, thread_counters, thread_timing, now)
                            .with_circuit(circuit)
                            .with_cell_input(cell_input_ns);
                    if let Some(router) = router {
                        scheduler = scheduler.with_shared_processing(router);
                    }
                    Forwarder::new(scheduler, io).run()
                })
                .map_err(|e| {
                    TestbedError::runtime(format!("cannot start forwarding thread: {e}"))
                })?;
            started.directions.push(Direction {
                identity: LinkCounters {
                    link: index,
                    direction: name.to_string(),
                    from: link.ends[from].clone(),
                    to: link.ends[to].clone(),
                    values: Default::default(),
                },
                counters,
                timing,
            });
        }
    }
    Ok(started)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), TestbedError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| TestbedError::runtime(format!("cannot start the {name} thread: {e}")))
}

/// Asks the kernel for zero CPU wake-up latency for as long as the returned file is open
/// (PM QoS, /dev/cpu_dma_latency): idle CPUs then poll instead of halting, so a forwarder
/// woken by a frame or its timer runs within microseconds. Measured on a 2-core virtual
/// machine whose idle state halts the vCPU (docs/testbed.md, "Exact delay"). Without the
/// device (or the right to open it) the emulator runs on and says so in its log.
fn keep_cpus_polling() -> Option<std::fs::File> {
    use std::io::Write;
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|()| f));
    match opened {
        Ok(file) => {
            log("idle CPUs poll while the emulator runs (PM QoS wake-up latency 0)");
            Some(file)
        }
        Err(e) => {
            log(format!(
                "cannot keep idle CPUs polling ({e}): wake-ups as slow as the machine's idle states"
            ));
            None
        }
    }
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
    let _awake = match plan.topology.cpu_idle {
        CpuIdle::Poll => keep_cpus_polling(),
        CpuIdle::Os => None,
    };
    let devices = open_devices(&plan)?;
    let links = devices.taps.len();
    let epoch = Instant::now();
    let started = start_forwarders(&plan, devices, epoch)?;
    let prober_seed = mix_seed(plan.seed, u64::MAX);
    let targets = started.probe_targets;
    spawn("probe", move || run_prober(targets, epoch, prober_seed))?;
    let control = Arc::new(Control::new(plan.clone(), started.mailboxes));
    let reporter = Arc::new(Mutex::new(Reporter {
        dir: state_dir.to_path_buf(),
        plan: plan.clone(),
        directions: started.directions,
        control: control.clone(),
        history: VecDeque::new(),
    }));
    lock(&reporter).write();
    let on_request = reporter.clone();
    control::serve(control.clone(), state_dir, move || {
        lock(&on_request).write()
    })
    .map_err(|e| TestbedError::runtime(format!("cannot open the control socket: {e}")))?;
    if let Some(schedule) = plan.topology.schedule.clone() {
        control.start_schedule(schedule, Instant::now());
    }
    write_atomic(&state_dir.join(READY_FILE), b"ready\n")?;
    log(format!("forwarding {links} link(s)"));
    let periodic = reporter.clone();
    spawn("counters", move || {
        // The control thread waits on this lock for a snapshot: the writer must not sit on
        // it behind a build's compilers (at the forwarders' real-time priority it would
        // delay packets instead).
        crate::priority::raise_weight();
        loop {
            std::thread::sleep(COUNTER_PERIOD);
            lock(&periodic).write();
        }
    })?;
    let signal = wait_for_termination_signal();
    lock(&reporter).write();
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Window of the "recent" timing figures in the report.
const RECENT: Duration = Duration::from_secs(10);

/// Writes the emulator's report (counters, timing, parameters in force, schedule) to the
/// state directory.
struct Reporter {
    dir: PathBuf,
    plan: Plan,
    directions: Vec<Direction>,
    control: Arc<Control>,
    /// Timing snapshots of the last [`RECENT`], oldest first.
    history: VecDeque<(Instant, Vec<TimingSnapshot>)>,
}

impl Reporter {
    fn write(&mut self) {
        let now = Instant::now();
        let timing: Vec<TimingSnapshot> = self
            .directions
            .iter()
            .map(|d| d.timing.snapshot())
            .collect();
        while self.history.len() > 1 && now - self.history[1].0 >= RECENT {
            self.history.pop_front();
        }
        let (then, oldest) = match self.history.front() {
            Some((t, snapshots)) => (*t, Some(snapshots)),
            None => (now, None),
        };
        let window_ms = (now - then).as_millis() as u64;
        let states = self
            .directions
            .iter()
            .zip(&timing)
            .enumerate()
            .map(|(i, (d, t))| {
                let recent = oldest.map_or_else(|| t.clone(), |o| t.since(&o[i]));
                DirectionState {
                    link: d.identity.link,
                    direction: d.identity.direction.clone(),
                    params: Some(self.control.params(i).without_trace_list()),
                    recent: Some(RecentTiming::of(&recent, window_ms)),
                    timing: t.clone(),
                }
            })
            .collect();
        self.history.push_back((now, timing));
        let file = CountersFile {
            schema: SCHEMA.to_string(),
            testbed: self.plan.topology.name.clone(),
            emulator_pid: std::process::id(),
            updated_unix_ms: unix_ms(),
            directions: self
                .directions
                .iter()
                .map(|d| LinkCounters {
                    values: d.counters.snapshot(),
                    ..d.identity.clone()
                })
                .collect(),
            timing: states,
            mtus: self.control.mtus(),
            schedule: self.control.schedule_state(),
        };
        if let Ok(text) = serde_json::to_vec(&file) {
            if let Err(e) = write_atomic(&self.dir.join(COUNTERS_FILE), &text) {
                log(e);
            }
        }
    }
}
