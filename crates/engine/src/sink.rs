//! Where TCP receivers put the bytes they read: one region per CPU, shared by
//! every receiving stream of the process.
//!
//! A TCP receiver counts bytes and never looks at them, so it needs memory the
//! kernel can copy into, not memory of its own. A buffer per stream cost a
//! server 128 KiB to 1 MiB of resident memory for every stream it received
//! (most of what 100 tests at once cost it); the regions here cost at most
//! 1 MiB per CPU however many streams there are. A stream reads into the
//! region of the CPU it runs on, so a region stays warm in that CPU's cache as
//! a private buffer would, and streams on other CPUs do not write its lines.
//!
//! Rust never reads or writes a region and no reference to one exists: the
//! regions are raw pointers handed to `recv(2)`. Two streams may write the
//! same bytes (a thread moved to another CPU during its read); nobody reads
//! them, so what ends up there does not matter.

use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

/// The most a receiver asks for in one read (see [`read_length`]).
pub const REGION: usize = 1 << 20;

/// The bytes a TCP receiver asks for per read for writes of `length`: reads
/// return what the socket holds, so beyond [`REGION`] more would not help.
pub fn read_length(length: usize) -> usize {
    length.clamp(128 * 1024, REGION)
}

/// The regions' base address and how many there are. Reserved once, with no
/// pages touched: a CPU's region becomes resident as receivers on it write it.
struct Regions {
    base: usize,
    count: usize,
}

fn regions() -> Option<&'static Regions> {
    static REGIONS: OnceLock<Option<Regions>> = OnceLock::new();
    REGIONS
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
            let count = usize::try_from(cpus).unwrap_or(1).clamp(1, 4096);
            // SAFETY: an anonymous private mapping with no address hint; the
            // result is checked against MAP_FAILED before use.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    count * REGION,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            (base != libc::MAP_FAILED).then_some(Regions {
                base: base as usize,
                count,
            })
        })
        .as_ref()
}

/// Reads up to `len` bytes (at most [`REGION`]) off `sock` into the calling
/// CPU's region and returns how many there were; `flags` as for `recv(2)`
/// (`MSG_TRUNC` discards them in the kernel, for `--skip-rx-copy`).
pub fn receive(sock: &TcpStream, len: usize, flags: i32) -> std::io::Result<usize> {
    let Some(r) = regions() else {
        return Err(std::io::Error::other(
            "could not reserve the receivers' memory (mmap failed)",
        ));
    };
    // SAFETY: sched_getcpu has no preconditions; -1 (unknown) maps to region 0.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0) % r.count;
    let at = (r.base + cpu * REGION) as *mut libc::c_void;
    // SAFETY: `at` is the start of a mapped, writable region of REGION bytes
    // that lives as long as the process, and at most REGION bytes are asked
    // for. No Rust reference to the region exists (see the module comment).
    let n = unsafe { libc::recv(sock.as_raw_fd(), at, len.min(REGION), flags) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn reads_count_every_byte_sent_and_see_the_end() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            let block = vec![7u8; 300_000];
            for _ in 0..10 {
                s.write_all(&block).unwrap();
            }
        });
        let (sock, _) = listener.accept().unwrap();
        let mut total = 0;
        loop {
            match receive(&sock, read_length(0), 0).unwrap() {
                0 => break,
                n => {
                    assert!(n <= 128 * 1024);
                    total += n;
                }
            }
        }
        sender.join().unwrap();
        assert_eq!(total, 3_000_000);
    }

    #[test]
    fn read_length_stays_within_a_region() {
        assert_eq!(read_length(1), 128 * 1024);
        assert_eq!(read_length(300_000), 300_000);
        assert_eq!(read_length(64 << 20), REGION);
    }
}
