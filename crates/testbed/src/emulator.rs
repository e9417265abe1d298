//! The emulator process: owns every TAP device of a testbed and runs one forwarding thread per
//! link direction ([`crate::forwarder`]), a probe thread that measures the forwarders' ingress
//! latency ([`crate::probe`]), and a reporter thread that snapshots counters and timing to
//! the state directory.

use crate::counters::{DirectionCounters, LinkCounters};
use crate::error::TestbedError;
use crate::forwarder::{now_ns, Forwarder, ForwarderIo};
use crate::netns::in_netns;
use crate::probe::{open_probe_socket, run_prober, ProbeClock, ProbeTarget};
use crate::scheduler::Scheduler;
use crate::state::{
    unix_ms, write_atomic, CountersFile, DirectionState, Plan, COUNTERS_FILE, PID_FILE, READY_FILE,
    SCHEMA,
};
use crate::tap::open_tap;
use crate::timing::DirectionTiming;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    let mut probe_sockets: Vec<[OwnedFd; 2]> = Vec::new();
    for (link, topo_link) in plan.links.iter().zip(&plan.topology.links) {
        let open = |i: usize| {
            let device = link.ends[i].device.clone();
            let offload = topo_link.offload;
            in_netns(&link.ends[i].netns, move || {
                let tap = open_tap(&device, offload)?;
                Ok((Arc::new(tap), open_probe_socket(&device)?))
            })
        };
        let ((tap_a, probe_a), (tap_b, probe_b)) = (open(0)?, open(1)?);
        taps.push([tap_a, tap_b]);
        probe_sockets.push([probe_a, probe_b]);
    }

    let epoch = Instant::now();
    let mut directions = Vec::new();
    let mut probe_targets = Vec::new();
    for (index, ((link, fds), sockets)) in plan
        .topology
        .links
        .iter()
        .zip(&taps)
        .zip(probe_sockets)
        .enumerate()
    {
        let [socket_a, socket_b] = sockets;
        for (dir_index, name, params, from, to, socket) in [
            (0usize, "a_to_b", &link.a_to_b, 0usize, 1usize, socket_a),
            (1, "b_to_a", &link.b_to_a, 1, 0, socket_b),
        ] {
            let counters = Arc::new(DirectionCounters::default());
            let timing = Arc::new(DirectionTiming::default());
            let probe_clock = Arc::new(ProbeClock::default());
            probe_targets.push(ProbeTarget {
                socket,
                clock: probe_clock.clone(),
            });
            let seed = mix_seed(plan.seed, (index * 2 + dir_index) as u64);
            let io = ForwarderIo {
                ingress: fds[from].clone(),
                egress: fds[to].clone(),
                probe_clock,
                epoch,
                mtu: link.mtu,
                name: format!("link{index}-{name}"),
            };
            let (params, mtu) = (params.clone(), link.mtu);
            let (thread_counters, thread_timing) = (counters.clone(), timing.clone());
            std::thread::Builder::new()
                .name(io.name.clone())
                .spawn(move || {
                    // Built on its own thread: the frames it will hold are not Send.
                    let now = now_ns(epoch);
                    let scheduler =
                        Scheduler::new(params, mtu, seed, thread_counters, thread_timing, now);
                    Forwarder::new(scheduler, io).run()
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
                timing,
            });
        }
    }
    {
        let seed = mix_seed(plan.seed, u64::MAX);
        std::thread::Builder::new()
            .name("probe".into())
            .spawn(move || run_prober(probe_targets, epoch, seed))
            .map_err(|e| TestbedError::runtime(format!("cannot start probe thread: {e}")))?;
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
        timing: directions
            .iter()
            .map(|d| DirectionState {
                link: d.identity.link,
                direction: d.identity.direction.clone(),
                timing: d.timing.snapshot(),
            })
            .collect(),
    };
    if let Ok(text) = serde_json::to_vec_pretty(&file) {
        if let Err(e) = write_atomic(&dir.join(COUNTERS_FILE), &text) {
            log(e);
        }
    }
}
