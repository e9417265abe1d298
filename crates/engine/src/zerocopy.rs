//! `--zerocopy`: the payload lives in a memfd and goes to the socket with
//! sendfile(2), so the kernel never copies it from user memory (iperf3's -Z).

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Source {
    file: OwnedFd,
    len: usize,
}

impl Source {
    pub fn new(payload: &[u8]) -> io::Result<Self> {
        // SAFETY: the name is a valid C string; the returned fd is owned below.
        let fd = unsafe { libc::memfd_create(c"linkperf-payload".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut f = std::fs::File::from(file.try_clone()?);
        io::Write::write_all(&mut f, payload)?;
        Ok(Source {
            file,
            len: payload.len(),
        })
    }

    pub fn send(&self, sock: &TcpStream, chunk: usize) -> io::Result<usize> {
        let mut offset: libc::off_t = 0;
        // SAFETY: both descriptors are valid; offset is a valid out-pointer.
        let rc = unsafe {
            libc::sendfile(
                sock.as_raw_fd(),
                self.file.as_raw_fd(),
                &mut offset,
                chunk.min(self.len),
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }
}
