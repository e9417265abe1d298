//! TAP devices: the emulator's two ends of each link. A TAP is created in the namespace of
//! the thread that opens it and, being non-persistent, vanishes when the emulator exits, even
//! after kill -9, so teardown can never leave one behind.

use crate::error::TestbedError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_ulong = 0x01;
const TUN_F_TSO4: libc::c_ulong = 0x02;
const TUN_F_TSO6: libc::c_ulong = 0x04;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens a new TAP device called `name` in the calling thread's namespace, non-blocking.
/// Every frame read or written starts with a virtio-net header ([`crate::gso::VnetHeader`]).
///
/// With `offload`, the device accepts checksum offload and TCP segmentation offload (IPv4
/// and IPv6): the emulator receives TCP super-packets of up to 64 KiB with partial checksums
/// and accounts them per segment. Without it the kernel segments and checksums every packet
/// before handing it over, so each frame read is one real, complete packet.
pub fn open_tap(name: &str, offload: bool) -> Result<OwnedFd, TestbedError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(TestbedError::runtime(format!(
            "device name '{name}' is not 1..15 bytes"
        )));
    }
    // SAFETY: open(2) of a constant NUL-terminated path.
    let raw = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if raw < 0 {
        return Err(TestbedError::runtime(format!(
            "cannot open /dev/net/tun: {} (is the tun module loaded?)",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: raw is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TAP | IFF_NO_PI | IFF_VNET_HDR,
        _pad: [0; 22],
    };
    for (dst, src) in req.name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: TUNSETIFF reads and writes an ifreq-sized struct that we own.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) } < 0 {
        return Err(TestbedError::runtime(format!(
            "cannot create TAP device {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    let offloads = if offload {
        TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6
    } else {
        0
    };
    // SAFETY: TUNSETOFFLOAD takes an integer argument.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, offloads) } < 0 {
        return Err(TestbedError::runtime(format!(
            "cannot set offloads on {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(fd)
}
