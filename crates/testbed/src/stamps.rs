//! Kernel timestamps of the frames a host hands to a link end: when each frame entered the
//! emulated link, read by the forwarding thread instead of estimated.
//!
//! A TAP device gives no timestamp with the frames it hands over, and a forwarding thread
//! asleep in ppoll(2) reads a frame some microseconds after it came (longer when the host
//! takes the virtual CPUs away: a wake-up's wait that no model learned from probes can
//! predict). So a small BPF program runs in the TAP's own transmit function, as the host's
//! stack hands each frame over: after the host's qdiscs (the shaping of a line-rate or
//! slow host, a user's own) and after the kernel segmented what the TAP does not take whole,
//! so each frame read has its own entry. It is the TAP's packet filter (TUNSETFILTEREBPF),
//! which keeps every frame whole, and it writes the monotonic clock, the frame's length and a
//! fingerprint of three of its words into a ring in a memory-mapped BPF array. The
//! forwarding thread reads the ring as it reads frames and matches each frame with the next
//! entry by length and fingerprint; on a miss it searches a little ahead (frames dropped
//! after the program ran) and just behind (two senders racing may swap neighbours). A frame
//! without a match keeps the learned estimate of [`crate::forwarder`].
//!
//! The program is assembled here (thirty-odd instructions; no compiler, no object file)
//! and loaded with the raw bpf(2) system call.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Ring entries: a power of two, beyond a testbed TAP's queue (txqueuelen 5000).
const RING: u64 = 8192;
/// Ring entry: stamp (u64), length (u32), fingerprint (u32), padding (u64), its index plus
/// one (u64; written last: an entry is complete when it holds its own index).
const ENTRY: usize = 32;
/// The array's one value: the count of frames stamped (u64, padded to 16), then the ring.
const VALUE_SIZE: usize = 16 + RING as usize * ENTRY;
/// Frame offsets whose 32-bit words make the fingerprint: an IPv4 header's identification,
/// the word 4 bytes into an IPv4 transport header (TCP sequence, ICMP echo id and sequence)
/// and the same for IPv6 (TCP sequence, ICMPv6 echo, UDP length and checksum).
const FINGERPRINT_OFFSETS: [i32; 3] = [18, 38, 58];
/// Entries searched ahead of the next expected one (frames dropped after stamping).
const SEARCH_AHEAD: u64 = 64;
/// Entries searched just behind it (two senders on two CPUs stamped in one order, queued in
/// the other).
const SEARCH_BEHIND: u64 = 4;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_F_MMAPABLE: u32 = 1 << 10;
const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
/// `_IOR('T', 225, int)`: a TAP's packet filter program.
const TUNSETFILTEREBPF: libc::c_ulong = 0x8004_54e1;
const FUNC_KTIME_GET_NS: i32 = 5;
const FUNC_SKB_LOAD_BYTES: i32 = 26;

/// The fingerprint the program computes: the XOR of the native-order 32-bit words at
/// [`FINGERPRINT_OFFSETS`] that lie inside the frame (Ethernet header first).
pub fn fingerprint(frame: &[u8]) -> u32 {
    FINGERPRINT_OFFSETS
        .iter()
        .map(|&o| o as usize)
        .filter_map(|o| frame.get(o..o + 4))
        .fold(0, |fp, w| fp ^ u32::from_ne_bytes(w.try_into().unwrap()))
}

/// One TAP's stamping program, its ring, and where its reader is in it.
pub struct IngressStamps {
    _map: OwnedFd,
    /// The TAP holds its own reference; closing the TAP detaches the program.
    _prog: OwnedFd,
    area: *mut libc::c_void,
    area_len: usize,
    /// Index of the next entry expected to belong to the next frame read.
    next: u64,
}

// SAFETY: the mapping is owned by this value alone, read only through it (the kernel writes
// it); moving it to another thread moves that ownership.
unsafe impl Send for IngressStamps {}

impl Drop for IngressStamps {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region this value mapped, once.
        unsafe { libc::munmap(self.area, self.area_len) };
    }
}

impl IngressStamps {
    /// Loads the stamping program as the packet filter of the TAP `tap`.
    pub fn attach(tap: &OwnedFd) -> std::io::Result<IngressStamps> {
        let map = create_ring()?;
        let prog = load_program(map.as_raw_fd())?;
        let prog_fd: libc::c_int = prog.as_raw_fd();
        // SAFETY: TUNSETFILTEREBPF reads an int (the program's descriptor) that we own.
        if unsafe { libc::ioctl(tap.as_raw_fd(), TUNSETFILTEREBPF, &prog_fd) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let area_len = VALUE_SIZE.next_multiple_of(4096);
        // SAFETY: mapping a BPF array created mmapable, shared and readable, its full size.
        let area = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                area_len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if area == libc::MAP_FAILED {
            let error = std::io::Error::last_os_error();
            let none: libc::c_int = -1;
            // SAFETY: as above; -1 detaches the program.
            unsafe { libc::ioctl(tap.as_raw_fd(), TUNSETFILTEREBPF, &none) };
            return Err(error);
        }
        Ok(IngressStamps {
            _map: map,
            _prog: prog,
            area,
            area_len,
            next: 0,
        })
    }

    /// Entry `index` of the ring, if it holds that index (written, not yet overwritten).
    fn entry(&self, index: u64) -> Option<Entry> {
        let at = 16 + (index % RING) as usize * ENTRY;
        // SAFETY: `at + ENTRY <= VALUE_SIZE <= area_len`; entries are 8-aligned; volatile
        // reads because the kernel writes them behind the compiler's back. The program
        // writes the index last and x86 keeps stores in order, so a matching index means a
        // complete entry (a torn one could only fail the length and fingerprint check).
        unsafe {
            let base = (self.area as *const u8).add(at);
            let seq = std::ptr::read_volatile(base.add(24) as *const u64);
            (seq == index + 1).then(|| Entry {
                stamp: std::ptr::read_volatile(base as *const u64),
                len: std::ptr::read_volatile(base.add(8) as *const u32),
                fingerprint: std::ptr::read_volatile(base.add(12) as *const u32),
            })
        }
    }

    /// When `frame` (Ethernet header first, as the TAP handed it over) entered the link, on
    /// CLOCK_MONOTONIC in ns; None when no entry matches (it is then estimated).
    pub fn arrival(&mut self, frame: &[u8]) -> Option<u64> {
        let (len, fp) = (frame.len() as u32, fingerprint(frame));
        let ahead = self.next..self.next + SEARCH_AHEAD;
        let behind = (self.next.saturating_sub(SEARCH_BEHIND)..self.next).rev();
        for index in ahead.chain(behind) {
            match self.entry(index) {
                Some(e) if (e.len, e.fingerprint) == (len, fp) => {
                    self.next = self.next.max(index + 1);
                    return Some(e.stamp);
                }
                _ => {}
            }
        }
        self.catch_up();
        None
    }

    /// After a miss: if the ring has lapped the reader (its next entry was overwritten by a
    /// later frame's), go on from that frame: the frames before it are estimated.
    fn catch_up(&mut self) {
        let at = 16 + (self.next % RING) as usize * ENTRY;
        // SAFETY: as in `entry`: an aligned u64 inside the mapping.
        let seq =
            unsafe { std::ptr::read_volatile((self.area as *const u8).add(at + 24) as *const u64) };
        if seq > self.next + 1 {
            self.next = seq - 1;
        }
    }
}

/// One frame as the program saw it.
struct Entry {
    stamp: u64,
    len: u32,
    fingerprint: u32,
}

fn bpf(cmd: libc::c_long, attr: &mut [u64]) -> std::io::Result<OwnedFd> {
    // SAFETY: bpf(2) with an attribute buffer we own and its size; the kernel requires the
    // bytes it does not know to be zero, which they are.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() * 8) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor the kernel just returned, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Two u32 fields as the one u64 they share in a bpf_attr (little-endian).
fn pair(low: u32, high: u32) -> u64 {
    low as u64 | (high as u64) << 32
}

fn create_ring() -> std::io::Result<OwnedFd> {
    let mut attr = [0u64; 16];
    attr[0] = pair(BPF_MAP_TYPE_ARRAY, 4); // map_type, key_size
    attr[1] = pair(VALUE_SIZE as u32, 1); // value_size, max_entries
    attr[2] = pair(BPF_F_MMAPABLE, 0); // map_flags
    bpf(BPF_MAP_CREATE, &mut attr)
}

/// Loads the stamping program writing into `map`; a refusal carries the verifier's last line.
fn load_program(map: i32) -> std::io::Result<OwnedFd> {
    let insns = program(map);
    let license = c"GPL";
    let mut log = vec![0u8; 16 * 1024];
    let mut attr = [0u64; 16];
    attr[0] = pair(BPF_PROG_TYPE_SOCKET_FILTER, insns.len() as u32);
    attr[1] = insns.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    attr[3] = pair(1, log.len() as u32); // log_level, log_size
    attr[4] = log.as_mut_ptr() as u64;
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(fd),
        Err(e) => {
            let text = String::from_utf8_lossy(&log);
            let last = text.trim_end_matches('\0').lines().last().unwrap_or("");
            Err(std::io::Error::new(
                e.kind(),
                format!("{e}: verifier: {last}"),
            ))
        }
    }
}

/// One eBPF instruction: opcode, registers, offset, immediate.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    code as u64
        | ((dst | src << 4) as u64) << 8
        | (off as u16 as u64) << 16
        | (imm as u32 as u64) << 32
}

/// The stamping program (r1: the frame's `__sk_buff`); it returns the frame's length, so
/// the TAP keeps all of it.
fn program(map: i32) -> Vec<u64> {
    const MOV_X: u8 = 0xbf;
    const MOV_K: u8 = 0xb7;
    const ADD_K: u8 = 0x07;
    const ADD_X: u8 = 0x0f;
    const AND_K: u8 = 0x57;
    const LSH_K: u8 = 0x67;
    const XOR_X: u8 = 0xaf;
    const LDX_W: u8 = 0x61;
    const STX_W: u8 = 0x63;
    const STX_DW: u8 = 0x7b;
    const ATOMIC_DW: u8 = 0xdb;
    const FETCH_ADD: i32 = 0x01;
    const JNE_K: u8 = 0x55;
    const CALL: u8 = 0x85;
    const EXIT: u8 = 0x95;
    const LD_IMM64: u8 = 0x18;
    const PSEUDO_MAP_VALUE: u8 = 2;
    let mut p = vec![
        insn(MOV_X, 6, 1, 0, 0), // r6 = skb
        insn(MOV_K, 7, 0, 0, 0), // r7 = fingerprint
    ];
    for offset in FINGERPRINT_OFFSETS {
        p.extend([
            insn(MOV_X, 1, 6, 0, 0),
            insn(MOV_K, 2, 0, 0, offset),
            insn(MOV_X, 3, 10, 0, 0),
            insn(ADD_K, 3, 0, 0, -8),
            insn(MOV_K, 4, 0, 0, 4),
            insn(CALL, 0, 0, 0, FUNC_SKB_LOAD_BYTES), // the 4 bytes at offset, to fp-8
            insn(JNE_K, 0, 0, 2, 0),                  // not in the frame: skip the word
            insn(LDX_W, 1, 10, -8, 0),
            insn(XOR_X, 7, 1, 0, 0),
        ]);
    }
    p.extend([
        insn(LDX_W, 8, 6, 0, 0), // r8 = skb->len
        insn(CALL, 0, 0, 0, FUNC_KTIME_GET_NS),
        insn(MOV_X, 9, 0, 0, 0),                     // r9 = now
        insn(LD_IMM64, 1, PSEUDO_MAP_VALUE, 0, map), // r1 = &value (offset 0)
        insn(0, 0, 0, 0, 0),
        insn(MOV_K, 2, 0, 0, 1),
        insn(ATOMIC_DW, 1, 2, 0, FETCH_ADD), // r2 = count++: this frame's index
        insn(MOV_X, 4, 2, 0, 0),
        insn(ADD_K, 4, 0, 0, 1), // r4 = index + 1
        insn(AND_K, 2, 0, 0, (RING - 1) as i32),
        insn(LSH_K, 2, 0, 0, ENTRY.trailing_zeros() as i32),
        insn(ADD_X, 1, 2, 0, 0), // r1 = the entry, 16 bytes on
        insn(STX_DW, 1, 9, 16, 0),
        insn(STX_W, 1, 8, 24, 0),
        insn(STX_W, 1, 7, 28, 0),
        insn(STX_DW, 1, 4, 40, 0), // last: the entry is complete
        insn(MOV_X, 0, 8, 0, 0),   // keep the whole frame
        insn(EXIT, 0, 0, 0, 0),
    ]);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gso::VNET_HDR_LEN;

    fn monotonic_ns() -> u64 {
        crate::probe::clock_ns(libc::CLOCK_MONOTONIC)
    }

    #[test]
    fn the_fingerprint_xors_the_words_inside_the_frame() {
        let mut frame = [0u8; 62];
        frame[18..22].copy_from_slice(&1u32.to_ne_bytes());
        frame[38..42].copy_from_slice(&6u32.to_ne_bytes());
        frame[58..62].copy_from_slice(&12u32.to_ne_bytes());
        assert_eq!(fingerprint(&frame), 1 ^ 6 ^ 12);
        assert_eq!(fingerprint(&frame[..61]), 1 ^ 6, "the third word is cut");
        assert_eq!(fingerprint(&frame[..21]), 0, "no word fits");
    }

    /// A frame of the local experimental EtherType with `tag` in its first fingerprint word.
    fn frame(tag: u32, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        f[18..22].copy_from_slice(&tag.to_ne_bytes());
        f
    }

    /// Frames sent into a TAP by a host-side packet socket, read back from the TAP: each
    /// one's stamp lies inside its own send call (the program runs within it), in order; a
    /// frame read without asking (as if the TAP had dropped it) does not derail the next.
    #[test]
    fn each_frame_is_stamped_within_its_own_send_call() {
        std::thread::spawn(|| {
            // SAFETY: moves only this thread into a new network namespace of its own.
            assert_eq!(
                unsafe { libc::unshare(libc::CLONE_NEWNET) },
                0,
                "needs root"
            );
            let device = "lpstamp0";
            let tap = crate::tap::open_tap(device, false).unwrap();
            run(crate::netns::ip_program(), &format!("link set {device} up"));
            let mut stamps = IngressStamps::attach(&tap).unwrap();
            let sender = crate::probe::open_probe_socket(device, false).unwrap();
            let mut windows = Vec::new();
            for tag in 1..=8u32 {
                let f = frame(tag, if tag == 5 { 40 } else { 60 });
                let before = monotonic_ns();
                // SAFETY: sends our own buffer on a bound packet socket.
                let n = unsafe { libc::send(sender.as_raw_fd(), f.as_ptr().cast(), f.len(), 0) };
                assert_eq!(n, f.len() as isize);
                windows.push((f, before, monotonic_ns()));
            }
            let mut buf = vec![0u8; 4096];
            let mut matched = 0;
            while matched < windows.len() {
                // SAFETY: reads into our own buffer from the TAP (non-blocking).
                let n = unsafe { libc::read(tap.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                assert!(n > 0, "the TAP ran dry after {matched} of our frames");
                let got = &buf[VNET_HDR_LEN..n as usize];
                let Some(i) = windows.iter().position(|(f, _, _)| f == got) else {
                    stamps.arrival(got); // the kernel's own frames (IPv6 autoconfiguration)
                    continue;
                };
                matched += 1;
                if i == 2 {
                    continue; // read, never asked about: as if dropped after stamping
                }
                let (_, before, after) = windows[i];
                let stamp = stamps.arrival(got).expect("our frame has a stamp");
                assert!(
                    (before..=after).contains(&stamp),
                    "frame {i}: stamp {stamp} outside its send call {before}..{after}"
                );
            }
            assert_eq!(stamps.arrival(&frame(99, 60)), None, "never sent: no stamp");
        })
        .join()
        .unwrap();
    }

    /// Reads frames from the TAP until `want` of them satisfy `ours`, asking the stamps about
    /// every frame read; returns ours with their stamps.
    fn read_ours(
        tap: &OwnedFd,
        stamps: &mut IngressStamps,
        want: usize,
        ours: impl Fn(&[u8]) -> bool,
    ) -> Vec<(Vec<u8>, Option<u64>)> {
        let mut buf = vec![0u8; 70_000];
        let mut found = Vec::new();
        while found.len() < want {
            let mut pfd = libc::pollfd {
                fd: tap.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd we own; a 2 s timeout.
            assert_eq!(
                unsafe { libc::poll(&mut pfd, 1, 2000) },
                1,
                "no frame in 2 s"
            );
            // SAFETY: reads into our own buffer from the TAP (non-blocking).
            let n = unsafe { libc::read(tap.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            assert!(n > 0, "the TAP ran dry after {} of our frames", found.len());
            let got = &buf[VNET_HDR_LEN..n as usize];
            let stamp = stamps.arrival(got);
            if ours(got) {
                found.push((got.to_vec(), stamp));
            }
        }
        found
    }

    fn run(program: &str, args: &str) {
        let ok = std::process::Command::new(program)
            .args(args.split_whitespace())
            .status()
            .unwrap()
            .success();
        assert!(ok, "{program} {args}");
    }

    /// A host-side namespace for `device`: the TAP, up, with 10.9.0.1/24 and a neighbour
    /// 10.9.0.2, and its stamps.
    fn host_side(device: &str) -> (OwnedFd, IngressStamps) {
        // SAFETY: moves only this thread (and the `ip` processes it starts) into a new
        // network namespace of its own.
        assert_eq!(
            unsafe { libc::unshare(libc::CLONE_NEWNET) },
            0,
            "needs root"
        );
        let tap = crate::tap::open_tap(device, false).unwrap();
        let ip = crate::netns::ip_program();
        run(ip, &format!("addr add 10.9.0.1/24 dev {device}"));
        run(ip, &format!("link set {device} up"));
        run(
            ip,
            &format!("neigh add 10.9.0.2 lladdr 02:00:00:00:00:02 dev {device}"),
        );
        let stamps = IngressStamps::attach(&tap).unwrap();
        (tap, stamps)
    }

    fn to_port_9(f: &[u8]) -> bool {
        f.len() > 37 && f[23] == 17 && f[36..38] == [0, 9]
    }

    /// Three 1,000-byte frames through a token bucket on the host's device (1 Mbit/s,
    /// burst 1,600 bytes): the first passes at once, the second 3.2 ms and the third 11.2 ms
    /// later (8 ms per 1,000 bytes). Each is stamped as the TAP takes it, after the qdisc
    /// held it, not when it was sent (a stamp before the qdisc made a shaped host's frames
    /// arrive early and filled a router's backlog that had room).
    #[test]
    fn a_frame_held_by_a_qdisc_is_stamped_as_it_leaves_it() {
        std::thread::spawn(|| {
            let device = "lpstamp2";
            let (tap, mut stamps) = host_side(device);
            let tc = crate::nic::tc_program();
            run(
                tc,
                &format!("qdisc add dev {device} root tbf rate 1mbit burst 1600 limit 10000"),
            );
            let socket = std::net::UdpSocket::bind("10.9.0.1:0").unwrap();
            socket.connect("10.9.0.2:9").unwrap();
            let sent = monotonic_ns();
            for _ in 0..3 {
                socket.send(&[5u8; 1000 - 42]).unwrap();
            }
            let frames = read_ours(&tap, &mut stamps, 3, to_port_9);
            let at: Vec<f64> = frames
                .iter()
                .map(|(_, s)| (s.expect("stamped") - sent) as f64 / 1e6)
                .collect();
            assert!(
                at[0] < 1.0,
                "the first passes at once: {at:?} ms after sending"
            );
            assert!((3.0..5.0).contains(&(at[1] - at[0])), "second: {at:?}");
            assert!((10.5..13.0).contains(&(at[2] - at[0])), "third: {at:?}");
        })
        .join()
        .unwrap();
    }

    /// A UDP super-packet (UDP_SEGMENT, 3 segments) through a TAP without offload: the
    /// kernel segments it before the TAP takes it, and each segment has its own stamp,
    /// taken inside the send call, in order; the next ordinary datagram has its own.
    #[test]
    fn each_segment_of_a_super_packet_has_its_own_stamp() {
        std::thread::spawn(|| {
            let (tap, mut stamps) = host_side("lpstamp1");
            let socket = std::net::UdpSocket::bind("10.9.0.1:0").unwrap();
            socket.connect("10.9.0.2:9").unwrap();
            let segment: libc::c_int = 100;
            // SAFETY: setsockopt with an int we own and its size.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_UDP,
                    libc::UDP_SEGMENT,
                    (&segment as *const libc::c_int).cast(),
                    4,
                )
            };
            assert_eq!(rc, 0);
            let before = monotonic_ns();
            assert_eq!(socket.send(&[7u8; 300]).unwrap(), 300);
            let after = monotonic_ns();
            let segments = read_ours(&tap, &mut stamps, 3, to_port_9);
            let mut previous = 0;
            for (frame, stamp) in &segments {
                assert_eq!(
                    frame.len(),
                    14 + 20 + 8 + 100,
                    "one segment, not the super-packet"
                );
                let stamp = stamp.expect("a segment has its own stamp");
                assert!(
                    (before..=after).contains(&stamp),
                    "{stamp} outside {before}..{after}"
                );
                assert!(stamp >= previous, "in order");
                previous = stamp;
            }
            let segment: libc::c_int = 0;
            // SAFETY: as above.
            unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_UDP,
                    libc::UDP_SEGMENT,
                    (&segment as *const libc::c_int).cast(),
                    4,
                )
            };
            let before = monotonic_ns();
            socket.send(&[8u8; 40]).unwrap();
            let after = monotonic_ns();
            let single = read_ours(&tap, &mut stamps, 1, to_port_9);
            let stamp = single[0].1.expect("an ordinary datagram has its own stamp");
            assert!(
                (before..=after).contains(&stamp),
                "{stamp} outside {before}..{after}"
            );
        })
        .join()
        .unwrap();
    }
}
