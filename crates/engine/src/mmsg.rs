//! Batched datagram I/O: sendmmsg/recvmmsg move up to 64 datagrams per system
//! call, which is what lets small-datagram tests measure the network rather
//! than the system-call rate. Each datagram keeps its own sequence number.

use linkperf_proto::udp;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

pub struct SendBatch {
    buffers: Vec<Vec<u8>>,
}

impl SendBatch {
    /// `count` datagrams of `len` bytes, filled with `fill`.
    pub fn new(len: usize, count: usize, fill: &[u8]) -> Self {
        let len = len.max(udp::HEADER_LEN);
        let buffers = (0..count.max(1))
            .map(|_| {
                let mut b = vec![0u8; len];
                let n = fill.len().min(len);
                b[..n].copy_from_slice(&fill[..n]);
                b
            })
            .collect();
        SendBatch { buffers }
    }

    pub fn capacity(&self) -> usize {
        self.buffers.len()
    }

    /// Sends up to `count` datagrams numbered from `first_seq`; returns how many went.
    pub fn send(
        &mut self,
        sock: &UdpSocket,
        first_seq: u64,
        count: usize,
        now_ns: u64,
    ) -> std::io::Result<usize> {
        let count = count.min(self.buffers.len());
        for (i, b) in self.buffers.iter_mut().take(count).enumerate() {
            udp::write_data(b, first_seq + i as u64, now_ns);
        }
        if count == 1 {
            return sock.send(&self.buffers[0]).map(|_| 1);
        }
        let mut iovecs: Vec<libc::iovec> = self.buffers[..count]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut headers: Vec<libc::mmsghdr> = iovecs
            .iter_mut()
            .map(|iov| {
                // SAFETY: an all-zero msghdr is valid (no name, no control data).
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        // SAFETY: headers and the buffers they point to outlive the call.
        let rc = unsafe { libc::sendmmsg(sock.as_raw_fd(), headers.as_mut_ptr(), count as u32, 0) };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }
}

pub struct RecvBatch {
    buffers: Vec<Vec<u8>>,
    lengths: Vec<usize>,
}

impl RecvBatch {
    pub fn new(slot: usize, count: usize) -> Self {
        RecvBatch {
            buffers: vec![vec![0u8; slot]; count.max(1)],
            lengths: vec![0; count.max(1)],
        }
    }

    /// Blocks for the first datagram (up to the socket's read timeout), then
    /// takes whatever else is queued; returns how many arrived.
    pub fn receive(&mut self, sock: &UdpSocket) -> std::io::Result<usize> {
        let mut iovecs: Vec<libc::iovec> = self
            .buffers
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut headers: Vec<libc::mmsghdr> = iovecs
            .iter_mut()
            .map(|iov| {
                // SAFETY: as in SendBatch::send.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        // SAFETY: headers and buffers outlive the call; no timeout pointer.
        let rc = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                headers.as_mut_ptr(),
                headers.len() as u32,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = rc as usize;
        for (i, h) in headers.iter().take(n).enumerate() {
            self.lengths[i] = (h.msg_len as usize).min(self.buffers[i].len());
        }
        Ok(n)
    }

    pub fn datagram(&self, i: usize) -> &[u8] {
        &self.buffers[i][..self.lengths[i]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_arrives_numbered_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut s = SendBatch::new(100, 16, b"xyz");
        assert_eq!(s.send(&tx, 40, 16, 7).unwrap(), 16);
        let mut r = RecvBatch::new(2048, 64);
        let mut got = Vec::new();
        while got.len() < 16 {
            let n = r.receive(&rx).unwrap();
            for i in 0..n {
                let d = r.datagram(i);
                assert_eq!(d.len(), 100);
                // The fill sits under the header; the rest of the datagram is zeros.
                assert_eq!(&d[16..19], &[0u8; 3]);
                match udp::parse(d).unwrap() {
                    udp::Datagram::Data { seq, sent_ns } => {
                        assert_eq!(sent_ns, 7);
                        got.push(seq);
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(got, (40..56).collect::<Vec<_>>());
    }
}
