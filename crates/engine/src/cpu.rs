//! CPU accounting: this process (getrusage) and the whole host (/proc/stat).

use linkperf_proto::results::CpuUsage;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    process_user: Duration,
    process_system: Duration,
    /// Host jiffies: (user + nice, system + irq + softirq, total).
    host: Option<(u64, u64, u64)>,
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

fn host_jiffies() -> Option<(u64, u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
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
    Some((user, system, total))
}

/// Number of CPUs this process may run on.
pub fn cpu_count() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

impl CpuSnapshot {
    pub fn now() -> Self {
        // SAFETY: rusage is plain data and getrusage fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        CpuSnapshot {
            at: Instant::now(),
            process_user: timeval(usage.ru_utime),
            process_system: timeval(usage.ru_stime),
            host: host_jiffies(),
        }
    }

    /// CPU used between `self` and `later`; `bytes` moved by this end gives
    /// the service demand. When several tests share a process (a server), the
    /// process figures include all of them: the report says so.
    pub fn usage_until(&self, later: &CpuSnapshot, bytes: u64) -> CpuUsage {
        let wall = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let user = later
            .process_user
            .saturating_sub(self.process_user)
            .as_secs_f64();
        let system = later
            .process_system
            .saturating_sub(self.process_system)
            .as_secs_f64();
        let (host_user, host_system) = match (self.host, later.host) {
            (Some(a), Some(b)) if b.2 > a.2 => {
                let total = (b.2 - a.2) as f64;
                (
                    100.0 * b.0.saturating_sub(a.0) as f64 / total,
                    100.0 * b.1.saturating_sub(a.1) as f64 / total,
                )
            }
            _ => (0.0, 0.0),
        };
        CpuUsage {
            user_percent: 100.0 * user / wall,
            system_percent: 100.0 * system / wall,
            total_percent: 100.0 * (user + system) / wall,
            host_user_percent: host_user,
            host_system_percent: host_system,
            host_total_percent: host_user + host_system,
            cpus: cpu_count(),
            service_demand_us_per_mb: (bytes > 0)
                .then(|| (user + system) * 1e6 / (bytes as f64 / 1e6)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_loop_shows_up_as_user_time() {
        let before = CpuSnapshot::now();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(200) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = before.usage_until(&CpuSnapshot::now(), 100_000_000);
        // One thread spinning for the whole window: close to 100% of one core.
        assert!(u.total_percent > 50.0 && u.total_percent < 150.0, "{u:?}");
        assert!(u.host_total_percent > 0.0, "{u:?}");
        let demand = u.service_demand_us_per_mb.unwrap();
        // ~0.2 s of CPU over 100 MB: ~2000 µs/MB.
        assert!(demand > 1000.0 && demand < 3000.0, "{demand}");
    }
}
