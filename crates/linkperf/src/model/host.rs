//! This host's kernel as the model needs it: how much of a receive buffer
//! becomes window, and the caps on socket buffers. Read from /proc/sys when
//! predicting locally; a value that cannot be read keeps Linux's default.

use super::{formulas, Kernel};
use std::path::Path;

fn read_number(path: &Path) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// (major, minor) of a kernel release string such as "6.18.44-fc".
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The receive-buffer share for a kernel: before 6.6 `tcp_adv_win_scale`
/// decides it; from 6.6 on the kernel ignores that sysctl and uses
/// `scaling_ratio`, payload over truesize of the segments it receives, which
/// starts at 50 % (TCP_DEFAULT_SCALING_RATIO) and follows the driver's buffers.
pub fn rcv_share(version: Option<(u32, u32)>, adv_win_scale: Option<i64>) -> (f64, String) {
    let scaling_ratio = version.is_some_and(|v| v >= (6, 6));
    match (scaling_ratio, adv_win_scale) {
        (true, _) => (
            0.0,
            "kernel >= 6.6: scaling_ratio = payload/truesize of a received segment".into(),
        ),
        (false, Some(s)) => {
            let s = s.clamp(-31, 31) as i32;
            (
                formulas::adv_win_scale_share(s),
                format!("tcp_adv_win_scale = {s}"),
            )
        }
        (false, None) => (
            formulas::adv_win_scale_share(1),
            "tcp_adv_win_scale unreadable: 1 assumed".into(),
        ),
    }
}

/// This host's kernel, from `root` (normally "/proc/sys").
pub fn read(root: &Path) -> Kernel {
    let release = std::fs::read_to_string(root.join("kernel/osrelease")).ok();
    let version = release.as_deref().and_then(kernel_version);
    let scale = read_number(&root.join("net/ipv4/tcp_adv_win_scale"));
    let (rcv_share, rcv_share_source) = rcv_share(version, scale);
    let positive = |n: Option<i64>| n.and_then(|v| u64::try_from(v).ok()).filter(|&v| v > 0);
    Kernel {
        rcv_share,
        rcv_share_source,
        rmem_max: positive(read_number(&root.join("net/core/rmem_max"))),
        wmem_max: positive(read_number(&root.join("net/core/wmem_max"))),
        ..Kernel::default()
    }
}

/// This host's kernel from /proc/sys.
pub fn local() -> Kernel {
    read(Path::new("/proc/sys"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_shares() {
        assert_eq!(kernel_version("6.18.44-fc-v669"), Some((6, 18)));
        assert_eq!(kernel_version("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(kernel_version("garbage"), None);
        assert_eq!(rcv_share(Some((5, 15)), Some(1)).0, 0.5);
        assert_eq!(rcv_share(Some((5, 15)), Some(2)).0, 0.75);
        // 0: the share follows the segment (see super::scaling_ratio).
        assert_eq!(rcv_share(Some((6, 6)), Some(2)).0, 0.0);
    }

    #[test]
    fn reads_a_proc_tree() {
        let dir = std::env::temp_dir().join(format!("lp-model-host-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("kernel")).unwrap();
        std::fs::create_dir_all(dir.join("net/ipv4")).unwrap();
        std::fs::create_dir_all(dir.join("net/core")).unwrap();
        std::fs::write(dir.join("kernel/osrelease"), "5.10.0\n").unwrap();
        std::fs::write(dir.join("net/ipv4/tcp_adv_win_scale"), "-2\n").unwrap();
        std::fs::write(dir.join("net/core/rmem_max"), "212992\n").unwrap();
        let k = read(&dir);
        assert_eq!(k.rcv_share, 0.25);
        assert_eq!(k.rmem_max, Some(212_992));
        assert_eq!(k.wmem_max, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
