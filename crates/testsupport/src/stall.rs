//! Telling a timing test that failed from a machine that was taken away while it measured.
//!
//! The test machines are virtual and shared: now and then the hypervisor runs a
//! neighbour instead of this machine for milliseconds (measured on the 2-vCPU CI VM,
//! idle: a 1 ms sleep woke 3.2 ms late at p99 and 10 ms late at worst in one minute,
//! 0.18 ms at p99 in the next). No tolerance taken from physics survives that, and
//! none should be widened for it. So a [`Probe`] runs beside the test: one thread
//! pinned to each CPU, at the highest priority the process may take, sleeps 1 ms at
//! a time and records how late it woke. Our own tests' load barely delays such a
//! thread (it preempts ordinary threads when it wakes); a stall of the whole CPU
//! does. Beside it the probe reads each CPU's steal time from `/proc/stat` (the time
//! the hypervisor ran something else while this CPU had work): on the CI VM under a
//! build the stalls of about 100 ms come with as much steal time, so the line that
//! reports a stall also says whether the hypervisor accounted for it.
//!
//! The probes also watch the wall clock against the monotonic one: they tick together
//! unless someone sets the wall clock (a VM's host may step it to keep the date right),
//! and a test that lines kernel packet stamps (wall clock) up with moments on the other
//! clock then sees milliseconds that no packet spent. A setting of at least [`STALL`]
//! during a failed attempt counts as a disturbance like a stall, and is described.
//! [`wall_lead_ns`] gives the lead itself, for tests that move kernel packet stamps to the
//! monotonic clock.
//!
//! While probes run, each stall is also kept with its wall-clock time
//! ([`stalls_between`]), so a test can leave out what it measured across one
//! (an RTT sample taken while the CPUs were gone is the stall's, not the path's).
//!
//! [`retry_when_stalled`] runs a test body; when it fails and a probe saw a stall of
//! at least [`STALL`] during that attempt, the attempt is reported (with the stall)
//! and the body runs again, at most [`ATTEMPTS`] times in all. A failure without a
//! stall fails at once; so does the last attempt. Every discarded attempt is also
//! appended to the retry log with its failure's first line, which `scripts/test`
//! prints at the end of the run.

use std::io::Write;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A probe wake-up this late means the CPU was not ours: well past the timer's own
/// lateness (12-20 µs on the CI VM) and any wake-up a top-priority thread waits for
/// behind our tests' own threads.
pub const STALL: Duration = Duration::from_millis(2);
/// Attempts of a test body in all, when the failed ones were stalled. Under a build
/// beside the suite the CI VM loses a CPU for about 100 ms (as much steal time) about
/// five times a minute across its two CPUs (2026-11-29: 272 stalls over 50 ms in 53
/// minutes of loaded suite runs), so a test of several seconds whose tolerance a 100 ms
/// hole breaks finds one in perhaps a third of its attempts: with three attempts, loaded
/// runs of 2026-11-28 failed tests whose every attempt had such a stall.
pub const ATTEMPTS: u32 = 5;
/// How long each probe sleeps between looks at the clock.
const TICK: Duration = Duration::from_millis(1);

/// Every stall any probe of this process saw: (start, end) in CLOCK_REALTIME ns.
static STALLS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The stalls probes saw that overlap `from..=to` (CLOCK_REALTIME ns), as (start, end):
/// the time a probe overslept, which the machine did not give this process. Only
/// stalls during a probe's run are known (inside [`retry_when_stalled`]).
pub fn stalls_between(from: u64, to: u64) -> Vec<(u64, u64)> {
    STALLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(start, end)| *end >= from && *start <= to)
        .copied()
        .collect()
}

/// What one CPU's probe saw.
#[derive(Debug, Clone, Copy)]
pub struct CpuStall {
    pub cpu: usize,
    /// The latest wake-up past its time.
    pub worst: Duration,
    /// Wake-ups at least [`STALL`] late.
    pub stalls: u32,
    /// Seconds from the probe's start to the worst wake-up.
    pub worst_at_s: f64,
    /// The CPU's steal time while the probe ran (10 ms ticks), when readable.
    pub steal_ms: Option<u64>,
    /// Times the wall clock was set while the probe ran (moved at least
    /// [`WALL_STEP_NS`] against the monotonic clock between two looks), and the
    /// largest such move, ns (signed).
    pub wall_sets: u32,
    pub wall_largest_ns: i64,
}

/// A move of the wall clock against the monotonic one between two probe looks (1 ms
/// apart) this large is a setting: a look is good to 10 µs (half its bracket, see
/// [`wall_look`]), and NTP's slewing moves both clocks alike.
pub const WALL_STEP_NS: i64 = 100_000;

/// A probe look whose monotonic reads are further apart than this was preempted between
/// them, and would take the preemption for a setting: it is skipped.
const WALL_LOOK_SPREAD_NS: i64 = 20_000;

/// One look at the wall clock's lead over the monotonic one: the wall clock read between
/// two monotonic reads, as (ns between those reads, lead in ns).
fn wall_look() -> (i64, i64) {
    let mono = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime fills the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    let before = mono();
    let wall = realtime_ns() as i64;
    let after = mono();
    (after - before, wall - (before + (after - before) / 2))
}

/// How far the wall clock (CLOCK_REALTIME) is ahead of CLOCK_MONOTONIC, ns, from the
/// tightest of a few looks: for moving a kernel packet stamp (wall clock) to the
/// monotonic clock, where a setting of the wall clock does not move it.
pub fn wall_lead_ns() -> i64 {
    let mut best = wall_look();
    for _ in 0..8 {
        if best.0 < 5_000 {
            break;
        }
        let look = wall_look();
        if look.0 < best.0 {
            best = look;
        }
    }
    best.1
}

/// The move between two looks' leads when it is a setting.
fn wall_set(before: i64, after: i64) -> Option<i64> {
    let moved = after - before;
    (moved.abs() >= WALL_STEP_NS).then_some(moved)
}

/// The hypervisor's steal time so far, summed over the CPUs, in ms (0 where
/// `/proc/stat` has none): read before and after a measurement, the difference bounds
/// how long the machine could not run it, whichever CPU it was on.
pub fn stolen_ms() -> u64 {
    steal_ms(cpu_count()).into_iter().flatten().sum()
}

/// Probe threads, one per CPU, running until [`Probe::finish`].
pub struct Probe {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<CpuStall>>,
    steal_before: Vec<Option<u64>>,
}

/// Each CPU's steal time so far in ms (`/proc/stat`'s `cpuN` lines, eighth value, in
/// USER_HZ = 100 ticks), indexed by CPU number; `None` where unreadable.
fn steal_ms(cpus: usize) -> Vec<Option<u64>> {
    let mut steal = vec![None; cpus];
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    for line in stat.lines() {
        let mut fields = line.split_whitespace();
        let Some(cpu) = fields
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if let (Some(slot), Some(ticks)) = (
            steal.get_mut(cpu),
            fields.nth(7).and_then(|v| v.parse::<u64>().ok()),
        ) {
            *slot = Some(ticks * 10);
        }
    }
    steal
}

fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pins the calling thread to `cpu`, raises it to nice -20 and asks for an exact
/// timer; each is best effort (an unprivileged run keeps what it may).
fn prepare_probe_thread(cpu: usize) {
    // SAFETY: plain system calls on this thread with a zeroed, then filled, cpu set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -20);
        libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
    }
}

fn probe(cpu: usize, stop: Arc<AtomicBool>) -> CpuStall {
    prepare_probe_thread(cpu);
    let start = Instant::now();
    let mut seen = CpuStall {
        cpu,
        worst: Duration::ZERO,
        stalls: 0,
        worst_at_s: 0.0,
        steal_ms: None,
        wall_sets: 0,
        wall_largest_ns: 0,
    };
    let mut lead = None;
    while !stop.load(Ordering::Relaxed) {
        let asked = Instant::now() + TICK;
        std::thread::sleep(TICK);
        let late = Instant::now().saturating_duration_since(asked);
        if late >= STALL {
            seen.stalls += 1;
            let end = realtime_ns();
            STALLS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((end.saturating_sub(late.as_nanos() as u64), end));
        }
        if late > seen.worst {
            seen.worst = late;
            seen.worst_at_s = (asked - start).as_secs_f64();
        }
        let (spread, now_lead) = wall_look();
        if spread > WALL_LOOK_SPREAD_NS {
            continue;
        }
        if let Some(moved) = lead.and_then(|before| wall_set(before, now_lead)) {
            seen.wall_sets += 1;
            if moved.abs() > seen.wall_largest_ns.abs() {
                seen.wall_largest_ns = moved;
            }
        }
        lead = Some(now_lead);
    }
    seen
}

impl Probe {
    pub fn start() -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let steal_before = steal_ms(cpu_count());
        let threads = (0..cpu_count())
            .map(|cpu| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("stall-probe-{cpu}"))
                    .spawn(move || probe(cpu, stop))
                    .expect("spawn a stall probe")
            })
            .collect();
        Probe {
            stop,
            threads,
            steal_before,
        }
    }

    /// Stops the probes and returns what each CPU's saw.
    pub fn finish(self) -> Vec<CpuStall> {
        self.stop.store(true, Ordering::Relaxed);
        let mut seen: Vec<CpuStall> = self
            .threads
            .into_iter()
            .filter_map(|t| t.join().ok())
            .collect();
        let after = steal_ms(self.steal_before.len());
        for c in &mut seen {
            c.steal_ms = match (self.steal_before.get(c.cpu), after.get(c.cpu)) {
                (Some(Some(before)), Some(Some(now))) => Some(now.saturating_sub(*before)),
                _ => None,
            };
        }
        seen
    }
}

/// True when some CPU was stalled for at least [`STALL`], or the wall clock was set by
/// as much.
pub fn stalled(seen: &[CpuStall]) -> bool {
    seen.iter()
        .any(|c| c.worst >= STALL || c.wall_largest_ns.unsigned_abs() >= STALL.as_nanos() as u64)
}

/// One line: each CPU's worst wake-up and how many were stalls.
pub fn describe(seen: &[CpuStall]) -> String {
    seen.iter()
        .map(|c| {
            let steal = c
                .steal_ms
                .map_or("steal time unreadable".to_string(), |ms| {
                    format!("{ms} ms stolen by the hypervisor")
                });
            format!(
                "cpu{} worst {:.1} ms late at {:.1} s, {} wake-ups >= {} ms late, {steal}",
                c.cpu,
                c.worst.as_secs_f64() * 1e3,
                c.worst_at_s,
                c.stalls,
                STALL.as_millis()
            )
        })
        .chain(describe_wall(seen))
        .collect::<Vec<_>>()
        .join("; ")
}

/// "the wall clock was set 2 times, by up to +3.9 ms", from the probe that saw most.
fn describe_wall(seen: &[CpuStall]) -> Option<String> {
    let c = seen.iter().max_by_key(|c| c.wall_sets)?;
    (c.wall_sets > 0).then(|| {
        format!(
            "the wall clock was set {} times, by up to {:+.1} ms",
            c.wall_sets,
            c.wall_largest_ns as f64 / 1e6
        )
    })
}

/// The retry log: `$LINKPERF_RETRY_LOG`, else beside the skip log.
pub fn retry_log() -> PathBuf {
    std::env::var_os("LINKPERF_RETRY_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::skip_log().with_file_name("test-retries.log"))
}

/// The first line of a panic's message (at most 300 characters), or what it was.
fn panic_line(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    let first = text.lines().next().unwrap_or_default();
    match first.char_indices().nth(300) {
        Some((cut, _)) => format!("{}...", &first[..cut]),
        None => first.to_string(),
    }
}

fn log_retry(log: &std::path::Path, test: &str, attempt: u32, seen: &[CpuStall], why: &str) {
    let line = format!(
        "RETRIED {test}: attempt {attempt} of {ATTEMPTS} failed while the machine stalled ({}): {why}",
        describe(seen)
    );
    eprintln!("{line}");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!("(could not record the retry: {e})");
    }
}

/// Runs `body` (a test's measurement and its assertions) with a probe beside it; see
/// the module comment. The test is named by its thread (libtest names it after the
/// test) unless `name` is given.
pub fn retry_when_stalled<T>(body: impl Fn() -> T) -> T {
    let thread = std::thread::current();
    retry_named(thread.name().unwrap_or("a test"), body)
}

/// [`retry_when_stalled`] for a test named `test`.
pub fn retry_named<T>(test: &str, body: impl Fn() -> T) -> T {
    retry_logged(&retry_log(), test, body)
}

fn retry_logged<T>(log: &std::path::Path, test: &str, body: impl Fn() -> T) -> T {
    let mut attempt = 1;
    loop {
        let probe = Probe::start();
        let outcome = catch_unwind(AssertUnwindSafe(&body));
        let seen = probe.finish();
        match outcome {
            Ok(value) => return value,
            Err(panic) if attempt < ATTEMPTS && stalled(&seen) => {
                log_retry(log, test, attempt, &seen, &panic_line(panic.as_ref()));
                drop(panic);
                attempt += 1;
            }
            Err(panic) => {
                eprintln!(
                    "{test}: attempt {attempt} failed; stall probes: {}",
                    describe(&seen)
                );
                resume_unwind(panic)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `cpu` away from every ordinary thread for `spin`: a SCHED_FIFO thread
    /// pinned there busy-waits (root only; else returns false).
    fn occupy(cpu: usize, spin: Duration) -> bool {
        std::thread::spawn(move || {
            // SAFETY: affinity and scheduler calls on this thread only.
            let ok = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                let param = libc::sched_param { sched_priority: 1 };
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
            };
            let until = Instant::now() + spin;
            while ok && Instant::now() < until {
                std::hint::spin_loop();
            }
            ok
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_cpu_taken_away_for_10_ms_is_a_stall_and_the_body_runs_again() {
        if !crate::is_root() {
            crate::skip("taking a CPU away needs SCHED_FIFO (root)");
            return;
        }
        let runs = std::sync::atomic::AtomicU32::new(0);
        let log = crate::scratch("lp-stall", "log").join("retries.log");
        let value = retry_logged(&log, "stall-self-test", || {
            if runs.fetch_add(1, Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(20));
                assert!(occupy(0, Duration::from_millis(10)));
                std::thread::sleep(Duration::from_millis(20));
                panic!("the first attempt fails during a stall");
            }
            7
        });
        assert_eq!(value, 7);
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        let logged = std::fs::read_to_string(&log).unwrap();
        println!("{logged}");
        assert!(
            logged.starts_with(&format!("RETRIED stall-self-test: attempt 1 of {ATTEMPTS}")),
            "{logged}"
        );
        assert!(
            logged
                .trim_end()
                .ends_with("): the first attempt fails during a stall"),
            "the failure's message is logged: {logged}"
        );
        let probe = Probe::start();
        std::thread::sleep(Duration::from_millis(20));
        occupy(0, Duration::from_millis(10));
        let seen = probe.finish();
        // The probe on CPU 0 could not run for the 10 ms: it woke at least 10 ms less one
        // tick late (9.2 ms measured), less a millisecond for where in its tick it was.
        assert!(
            seen[0].worst >= Duration::from_millis(8),
            "{}",
            describe(&seen)
        );
        assert!(stalled(&seen));
        // The stall is listed with its time: about 10 ms of the last 100 ms.
        let now = realtime_ns();
        let listed = stalls_between(now - 100_000_000, now);
        assert!(listed.iter().any(|(a, b)| b - a >= 8_000_000), "{listed:?}");
        // Linux's /proc/stat has a steal column for every CPU (zero on bare metal).
        assert!(
            seen.iter().all(|c| c.steal_ms.is_some()),
            "{}",
            describe(&seen)
        );
    }

    /// Sets the wall clock `lead_ns` ahead of the monotonic clock (root only; else false).
    fn set_wall_lead(lead_ns: i64) -> bool {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: reading and setting clocks with a timespec we own.
        unsafe {
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
            let ns = ts.tv_sec * 1_000_000_000 + ts.tv_nsec + lead_ns;
            ts.tv_sec = (ns / 1_000_000_000) as libc::time_t;
            ts.tv_nsec = (ns % 1_000_000_000) as _;
            libc::clock_settime(libc::CLOCK_REALTIME, &ts) == 0
        }
    }

    #[test]
    fn a_wall_clock_set_by_3_ms_is_seen_and_described() {
        if !crate::is_root() {
            crate::skip("setting the wall clock needs CAP_SYS_TIME (root)");
            return;
        }
        let lead = wall_lead_ns();
        let probe = Probe::start();
        std::thread::sleep(Duration::from_millis(20));
        assert!(set_wall_lead(lead + 3_000_000));
        std::thread::sleep(Duration::from_millis(20));
        // Set back to where it would have been, from the monotonic clock: to the
        // microsecond between the read and the setting.
        assert!(set_wall_lead(lead));
        std::thread::sleep(Duration::from_millis(20));
        let seen = probe.finish();
        let line = describe(&seen);
        println!("{line}");
        // Each probe saw both settings (and any the host made meanwhile), the largest
        // 3 ms at least, less the microseconds between its two clock reads.
        for c in &seen {
            assert!(c.wall_sets >= 2, "{line}");
            assert!(c.wall_largest_ns.abs() > 2_950_000, "{line}");
        }
        assert!(stalled(&seen), "{line}");
        assert!(
            line.contains("the wall clock was set ") && line.contains(" times, by up to "),
            "{line}"
        );
    }

    #[test]
    fn only_a_wake_up_2_ms_late_or_later_is_a_stall() {
        let calm = CpuStall {
            cpu: 0,
            worst: Duration::from_micros(300),
            stalls: 0,
            worst_at_s: 0.1,
            steal_ms: Some(0),
            wall_sets: 0,
            wall_largest_ns: 0,
        };
        assert!(!stalled(&[calm, calm]));
        let set_a_little = CpuStall {
            wall_sets: 1,
            wall_largest_ns: -(WALL_STEP_NS * 2),
            ..calm
        };
        assert!(!stalled(&[calm, set_a_little]));
        let set = CpuStall {
            wall_largest_ns: -(STALL.as_nanos() as i64),
            ..set_a_little
        };
        assert!(stalled(&[set, calm]));
        let stall = CpuStall {
            worst: STALL,
            ..calm
        };
        assert!(stalled(&[calm, stall]));
    }
}
