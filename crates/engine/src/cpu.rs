//! CPU accounting: each end's own threads (getrusage RUSAGE_THREAD, read by
//! each thread itself), the whole process (RUSAGE_SELF) and the whole host
//! (/proc/stat). The threads tell the two ends of a test apart when they
//! share a process (`linkperf demo`) and a server's tests from one another.
//! The host's steal time (the time the hypervisor gave a virtual machine's CPUs
//! to something else) is reported too, and warned of when it is a noticeable share.

use linkperf_proto::results::CpuUsage;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    process_user: Duration,
    process_system: Duration,
    /// Host jiffies: (user + nice, system + irq + softirq, total, steal).
    host: Option<(u64, u64, u64, Option<u64>)>,
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

fn rusage(who: libc::c_int) -> (Duration, Duration) {
    // SAFETY: rusage is plain data and getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut usage) };
    (timeval(usage.ru_utime), timeval(usage.ru_stime))
}

/// CPU time used by one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadCpu {
    pub user: Duration,
    pub system: Duration,
}

impl ThreadCpu {
    /// The calling thread's CPU time so far.
    pub fn now() -> Self {
        let (user, system) = rusage(libc::RUSAGE_THREAD);
        ThreadCpu { user, system }
    }

    /// The calling thread's CPU time since `earlier` (taken on this thread).
    pub fn since(earlier: &ThreadCpu) -> Self {
        ThreadCpu::now().minus(earlier)
    }

    /// The CPU time between an earlier reading of the same thread and this one.
    pub fn minus(&self, earlier: &ThreadCpu) -> Self {
        ThreadCpu {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    /// `part` of `whole` parts of this time (all of it when `whole` is 0).
    pub fn share(&self, part: u32, whole: u32) -> Self {
        if whole == 0 {
            return *self;
        }
        let of = |d: Duration| d.mul_f64(f64::from(part) / f64::from(whole));
        ThreadCpu {
            user: of(self.user),
            system: of(self.system),
        }
    }

    pub fn add(&mut self, other: &ThreadCpu) {
        self.user += other.user;
        self.system += other.system;
    }

    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

fn host_jiffies() -> Option<(u64, u64, u64, Option<u64>)> {
    host_jiffies_in(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The host line of a `/proc/stat` text as (user + nice, system + irq + softirq,
/// total, steal); steal is `None` on kernels without the column (before 2.6.11).
fn host_jiffies_in(stat: &str) -> Option<(u64, u64, u64, Option<u64>)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 7 {
        return None;
    }
    // user nice system idle iowait irq softirq [steal guest guest_nice]
    let user = v[0] + v[1];
    let system = v[2] + v[5] + v[6];
    let total: u64 = v.iter().take(8).sum();
    Some((user, system, total, v.get(7).copied()))
}

/// Steal time from this share of the host's CPU time (percent) is reported: 100 ms
/// taken from one of 2 CPUs in a 5 s test.
pub const STEAL_WARNING_PERCENT: f64 = 1.0;

/// A warning when the hypervisor kept the host's CPUs from it for a noticeable share
/// of the test (see [`STEAL_WARNING_PERCENT`]): what this end measured includes the
/// time its threads waited for a CPU that was not there.
pub fn steal_warning(usage: &CpuUsage) -> Option<String> {
    let steal = usage
        .host_steal_percent
        .filter(|s| *s >= STEAL_WARNING_PERCENT)?;
    let cpu_seconds = steal / 100.0 * usage.cpus as f64 * usage.seconds.unwrap_or(0.0);
    Some(format!(
        "steal time {steal:.1} %: the hypervisor ran something else on this host's {} CPUs for \
         {cpu_seconds:.2} CPU-seconds of the test's {:.1} s; the rates and timings measured here \
         include those waits",
        usage.cpus,
        usage.seconds.unwrap_or(0.0)
    ))
}

/// Number of CPUs this process may run on.
pub fn cpu_count() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

impl CpuSnapshot {
    pub fn now() -> Self {
        let (process_user, process_system) = rusage(libc::RUSAGE_SELF);
        CpuSnapshot {
            at: Instant::now(),
            process_user,
            process_system,
            host: host_jiffies(),
        }
    }

    /// CPU used between `self` and `later`: `own` is what this end's threads
    /// used in that time, and with `bytes` moved by this end gives the
    /// service demand. The process figures include whatever else the process
    /// ran meanwhile (the other end in a demo, a server's other tests).
    pub fn usage_until(&self, later: &CpuSnapshot, own: &ThreadCpu, bytes: u64) -> CpuUsage {
        let wall = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let process_user = later
            .process_user
            .saturating_sub(self.process_user)
            .as_secs_f64();
        let process_system = later
            .process_system
            .saturating_sub(self.process_system)
            .as_secs_f64();
        let user = own.user.as_secs_f64();
        let system = own.system.as_secs_f64();
        let (host_user, host_system, host_steal) = match (self.host, later.host) {
            (Some(a), Some(b)) if b.2 > a.2 => {
                let total = (b.2 - a.2) as f64;
                (
                    100.0 * b.0.saturating_sub(a.0) as f64 / total,
                    100.0 * b.1.saturating_sub(a.1) as f64 / total,
                    a.3.zip(b.3)
                        .map(|(a, b)| 100.0 * b.saturating_sub(a) as f64 / total),
                )
            }
            _ => (0.0, 0.0, None),
        };
        CpuUsage {
            user_percent: 100.0 * user / wall,
            system_percent: 100.0 * system / wall,
            total_percent: 100.0 * (user + system) / wall,
            process_user_percent: Some(100.0 * process_user / wall),
            process_system_percent: Some(100.0 * process_system / wall),
            process_total_percent: Some(100.0 * (process_user + process_system) / wall),
            host_user_percent: host_user,
            host_system_percent: host_system,
            host_total_percent: host_user + host_system,
            host_steal_percent: host_steal,
            cpus: cpu_count(),
            seconds: Some(wall),
            service_demand_us_per_mb: (bytes > 0)
                .then(|| (user + system) * 1e6 / (bytes as f64 / 1e6)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until this thread has used `cpu` of CPU time (however long a
    /// loaded machine makes that take, up to 10 s). The kernel splits a thread's
    /// time into user and system by where its ticks (250 a second here) land, so
    /// the clock is read (a system call) only every million steps, about a
    /// millisecond: with a read every 10,000 steps, a loaded fresh clone saw 50 ms
    /// split half and half.
    fn spin(cpu: Duration) {
        let (start, mine) = (Instant::now(), ThreadCpu::now());
        let mut x = 0u64;
        while ThreadCpu::since(&mine).total() < cpu && start.elapsed() < Duration::from_secs(10) {
            for _ in 0..1_000_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
    }

    #[test]
    fn busy_loop_shows_up_as_user_time() {
        let before = CpuSnapshot::now();
        let mine = ThreadCpu::now();
        spin(Duration::from_millis(50));
        let own = ThreadCpu::since(&mine);
        let u = before.usage_until(&CpuSnapshot::now(), &own, 100_000_000);
        // The percentages cover the thread's 50 ms of CPU over the window.
        let seconds = u.seconds.unwrap();
        let own_s = u.total_percent / 100.0 * seconds;
        assert!((own_s - own.total().as_secs_f64()).abs() < 1e-6, "{u:?}");
        assert!(own.total() >= Duration::from_millis(50), "{own:?}");
        assert!(u.user_percent > u.system_percent, "{u:?}");
        // The process includes this thread.
        assert!(
            u.process_total_percent.unwrap() >= u.total_percent - 0.01,
            "{u:?}"
        );
        assert!(u.host_total_percent > 0.0, "{u:?}");
        let demand = u.service_demand_us_per_mb.unwrap();
        // The thread's CPU over 100 MB.
        let expected = own.total().as_secs_f64() * 1e6 / 100.0;
        assert!((demand - expected).abs() < 1.0, "{demand} vs {expected}");
    }

    #[test]
    fn steal_time_is_its_share_of_all_the_host_time_between_two_readings() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let a = host_jiffies_in("cpu  100 0 50 800 0 0 0 50 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
        let b = host_jiffies_in("cpu  200 0 100 1500 0 0 0 200 0 0\n");
        let at = Instant::now();
        let snap = |host| CpuSnapshot {
            at,
            process_user: Duration::ZERO,
            process_system: Duration::ZERO,
            host,
        };
        let later = CpuSnapshot {
            at: at + Duration::from_secs(5),
            ..snap(b)
        };
        let u = snap(a).usage_until(&later, &ThreadCpu::default(), 0);
        // 1000 jiffies passed: 100 user, 50 system, 150 steal.
        assert_eq!(u.host_user_percent, 10.0);
        assert_eq!(u.host_system_percent, 5.0);
        assert_eq!(u.host_steal_percent, Some(15.0));
        let warning = steal_warning(&CpuUsage {
            cpus: 2,
            ..u.clone()
        })
        .unwrap();
        // 15 % of 2 CPUs over 5 s.
        assert!(warning.contains("steal time 15.0 %"), "{warning}");
        assert!(
            warning.contains("1.50 CPU-seconds of the test's 5.0 s"),
            "{warning}"
        );
        let calm = CpuUsage {
            host_steal_percent: Some(0.9),
            ..u
        };
        assert_eq!(steal_warning(&calm), None);
        // A kernel without the steal column says nothing about it.
        let old = host_jiffies_in("cpu  100 0 50 800 0 0 0\n").unwrap();
        assert_eq!(old.3, None);
        let u = snap(Some(old)).usage_until(&later, &ThreadCpu::default(), 0);
        assert_eq!(u.host_steal_percent, None);
    }

    #[test]
    fn each_thread_sees_only_its_own_time() {
        // A spinning and a sleeping thread in one process: the sleeper's
        // figure must not include the spinner's work.
        let before = CpuSnapshot::now();
        let run = |busy: bool| {
            std::thread::spawn(move || {
                let t0 = ThreadCpu::now();
                if busy {
                    spin(Duration::from_millis(50));
                } else {
                    std::thread::sleep(Duration::from_millis(100));
                }
                ThreadCpu::since(&t0)
            })
        };
        let (busy, idle) = (run(true), run(false));
        let (busy, idle) = (busy.join().unwrap(), idle.join().unwrap());
        let process = before.usage_until(&CpuSnapshot::now(), &ThreadCpu::default(), 0);
        let process_s = process.process_total_percent.unwrap() / 100.0 * process.seconds.unwrap();
        assert!(busy.total() >= Duration::from_millis(50), "{busy:?}");
        assert!(idle.total() < Duration::from_millis(5), "{idle:?}");
        // Threads are part of the process: their sum cannot exceed it
        // (getrusage rounds each to a microsecond).
        let sum = (busy.total() + idle.total()).as_secs_f64();
        assert!(sum <= process_s + 1e-5, "{sum} > {process_s}");
    }
}
