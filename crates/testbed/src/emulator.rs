//! The emulator process: owns every TAP device of a testbed and runs one forwarding thread per
//! link direction. Each thread reads frames from its ingress TAP, runs them through its
//! [`Scheduler`], and sleeps in ppoll(2) until the next frame is due or another arrives, then
//! releases every due frame at once. A reporter thread snapshots the counters to the state dir.

use crate::counters::{DirectionCounters, LinkCounters};
use crate::error::TestbedError;
use crate::netns::in_netns;
use crate::params::DirectionParams;
use crate::scheduler::Scheduler;
use crate::state::{
    unix_ms, write_atomic, CountersFile, Plan, COUNTERS_FILE, PID_FILE, READY_FILE, SCHEMA,
};
use crate::tap::open_tap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the counters file is rewritten.
pub const COUNTER_PERIOD: Duration = Duration::from_millis(100);
/// Frames read per wake-up before due frames are released again.
const READ_BATCH: usize = 64;
/// Free buffers kept for reuse per direction.
const POOL_LIMIT: usize = 4096;

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
    for link in &plan.links {
        let open = |i: usize| {
            let device = link.ends[i].device.clone();
            in_netns(&link.ends[i].netns, move || open_tap(&device)).map(Arc::new)
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
            let scheduler = Scheduler::new(params.clone(), link.mtu, seed, counters.clone());
            let thread_name = format!("link{index}-{name}");
            let (ingress, egress) = (fds[from].clone(), fds[to].clone());
            let buffer_bytes = buffer_size(link.mtu, params);
            std::thread::Builder::new()
                .name(thread_name.clone())
                .spawn(move || {
                    forward(scheduler, ingress, egress, epoch, buffer_bytes, thread_name)
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

fn buffer_size(mtu: u32, _params: &DirectionParams) -> usize {
    // Room for the Ethernet header, a VLAN tag and slack, so an oversize frame is seen as
    // such (and dropped) rather than silently truncated to a plausible length.
    (mtu as usize + 64).max(2048)
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

/// The forwarding loop of one direction. Runs until its ingress device disappears.
fn forward(
    mut scheduler: Scheduler<Vec<u8>>,
    ingress: Arc<OwnedFd>,
    egress: Arc<OwnedFd>,
    epoch: Instant,
    buffer_bytes: usize,
    name: String,
) {
    // Default timer slack (50 us) would blur release times; 1 ns asks for hrtimer precision.
    // SAFETY: prctl with integer arguments affecting only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let counters = scheduler.counters().clone();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    loop {
        let now = now_ns(epoch);
        while let Some((frame, len)) = scheduler.pop_due(now) {
            // SAFETY: writing `len` initialised bytes of `frame` to a descriptor we hold.
            let rc =
                unsafe { libc::write(egress.as_raw_fd(), frame.as_ptr().cast(), len as usize) };
            if rc == len as isize {
                DirectionCounters::add(&counters.packets_forwarded, 1);
                DirectionCounters::add(&counters.bytes_forwarded, len);
            } else {
                DirectionCounters::add(&counters.write_errors, 1);
            }
            if pool.len() < POOL_LIMIT {
                pool.push(frame);
            }
        }

        let timeout = scheduler.next_release_ns().map(|due| {
            let wait = due.saturating_sub(now_ns(epoch));
            libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as _,
            }
        });
        let mut pfd = libc::pollfd {
            fd: ingress.as_raw_fd(),
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
            log(format!("{name}: ingress device gone, thread stops"));
            return;
        }
        for _ in 0..READ_BATCH {
            let mut frame = pool.pop().unwrap_or_else(|| vec![0u8; buffer_bytes]);
            // SAFETY: reading at most frame.len() bytes into our own buffer.
            let n =
                unsafe { libc::read(ingress.as_raw_fd(), frame.as_mut_ptr().cast(), frame.len()) };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                pool.push(frame);
                match err.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => break,
                    _ => {
                        log(format!("{name}: read failed ({err}), thread stops"));
                        return;
                    }
                }
            }
            scheduler.offer(now_ns(epoch), n as usize, frame);
        }
    }
}
