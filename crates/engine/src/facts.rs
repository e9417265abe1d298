//! Host facts that explain measured numbers.

use linkperf_proto::results::HostFacts;

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(path: &str) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

fn read_triple(path: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = read_trimmed(path)?
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// net.core.rmem_max and wmem_max: the caps on socket buffers.
pub fn buffer_limits() -> (Option<u64>, Option<u64>) {
    (
        read_u64("/proc/sys/net/core/rmem_max"),
        read_u64("/proc/sys/net/core/wmem_max"),
    )
}

/// Congestion control algorithms this kernel can use now.
pub fn available_congestion_controls() -> Vec<String> {
    read_trimmed("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

pub fn collect(software: &str) -> HostFacts {
    // SAFETY: utsname is plain data that uname fills.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    let (hostname, kernel) = if unsafe { libc::uname(&mut uts) } == 0 {
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        (
            field(&uts.nodename),
            format!("{} {}", field(&uts.sysname), field(&uts.release)),
        )
    } else {
        (String::new(), String::new())
    };
    HostFacts {
        hostname,
        kernel,
        software: software.to_string(),
        cpus: crate::cpu::cpu_count(),
        congestion_default: read_trimmed("/proc/sys/net/ipv4/tcp_congestion_control"),
        congestion_available: available_congestion_controls(),
        rmem_max: buffer_limits().0,
        wmem_max: buffer_limits().1,
        tcp_rmem: read_triple("/proc/sys/net/ipv4/tcp_rmem"),
        tcp_wmem: read_triple("/proc/sys/net/ipv4/tcp_wmem"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn facts_match_procfs() {
        let f = super::collect("t");
        assert!(f.kernel.starts_with("Linux "), "{}", f.kernel);
        let rmem: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(f.rmem_max, Some(rmem));
        assert!(f
            .congestion_available
            .iter()
            .any(|c| c == "cubic" || c == "reno"));
    }
}
