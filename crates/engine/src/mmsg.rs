//! Batched datagram I/O. sendmmsg/recvmmsg move many datagrams per system
//! call; with UDP GSO a single message carries up to 64 datagrams that the
//! kernel splits, and with UDP GRO the receiver gets them back coalesced. This
//! is what lets small-datagram tests measure the network rather than the
//! system-call rate. Every datagram still carries its own sequence number.

use linkperf_proto::udp;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Most segments the kernel accepts in one GSO message (UDP_MAX_SEGMENTS).
const GSO_MAX_SEGMENTS: usize = 64;
/// Largest GSO message payload (an IP packet's length field).
const GSO_MAX_BYTES: usize = 65_000;
/// Messages per sendmmsg call in GSO mode.
const GSO_MESSAGES: usize = 8;
/// Room for one cmsg carrying an int (UDP_SEGMENT / UDP_GRO), 8-aligned.
const CMSG_SPACE: usize = 32;

fn cmsg_space_u16() -> usize {
    // SAFETY: pure arithmetic macro.
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize }
}

/// The header of one message of a sendmmsg call: the iovec, and with
/// `segment` a UDP_SEGMENT cmsg in `control` (GSO: the kernel splits the
/// message into datagrams of that size, the last may be shorter).
fn message(
    iov: &mut libc::iovec,
    control: &mut [u64; CMSG_SPACE / 8],
    segment: Option<usize>,
) -> libc::mmsghdr {
    // SAFETY: an all-zero msghdr is valid (no name, no control data).
    let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
    h.msg_hdr.msg_iov = iov;
    h.msg_hdr.msg_iovlen = 1;
    if let Some(segment) = segment {
        h.msg_hdr.msg_control = control.as_mut_ptr().cast();
        h.msg_hdr.msg_controllen = cmsg_space_u16() as _;
        // SAFETY: the control buffer holds one cmsg of a u16.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&h.msg_hdr);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = libc::UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment as u16);
        }
    }
    h
}

pub struct SendBatch {
    /// One buffer per message; in GSO mode each holds `segments` datagrams back to back.
    buffers: Vec<Vec<u8>>,
    len: usize,
    segments: usize,
    control: Vec<[u64; CMSG_SPACE / 8]>,
    format: crate::udpformat::UdpFormat,
}

impl SendBatch {
    /// `count` datagrams of `len` bytes per call, filled with `fill`, sent with
    /// plain sendmmsg.
    pub fn new(len: usize, count: usize, fill: &[u8]) -> Self {
        Self::build(len.max(udp::HEADER_LEN), count.max(1), 1, fill)
    }

    /// Like `new`, but each message carries several datagrams with UDP GSO.
    /// Returns `None` when GSO cannot help (large datagrams).
    pub fn with_gso(len: usize, fill: &[u8]) -> Option<Self> {
        let len = len.max(udp::HEADER_LEN);
        let segments = (GSO_MAX_BYTES / len).min(GSO_MAX_SEGMENTS);
        (segments >= 2).then(|| Self::build(len, GSO_MESSAGES, segments, fill))
    }

    fn build(len: usize, messages: usize, segments: usize, fill: &[u8]) -> Self {
        let buffers = (0..messages)
            .map(|_| {
                let mut b = vec![0u8; len * segments];
                for d in b.chunks_mut(len) {
                    let n = fill.len().min(len);
                    d[..n].copy_from_slice(&fill[..n]);
                }
                b
            })
            .collect();
        SendBatch {
            buffers,
            len,
            segments,
            control: vec![[0u64; CMSG_SPACE / 8]; messages],
            format: crate::udpformat::UdpFormat::Linkperf,
        }
    }

    /// The header written into each datagram (linkperf's unless told otherwise).
    pub fn set_format(&mut self, format: crate::udpformat::UdpFormat) {
        self.format = format;
    }

    /// Datagrams one call may send.
    pub fn capacity(&self) -> usize {
        self.buffers.len() * self.segments
    }

    /// Bytes per datagram.
    pub fn datagram_len(&self) -> usize {
        self.len
    }

    pub fn uses_gso(&self) -> bool {
        self.segments > 1
    }

    /// Sends up to `count` datagrams numbered from `first_seq`; returns how many went.
    pub fn send(
        &mut self,
        sock: &UdpSocket,
        first_seq: u64,
        count: usize,
        now_ns: u64,
    ) -> std::io::Result<usize> {
        let count = count.min(self.capacity());
        let len = self.len;
        let mut per_message = Vec::new();
        let mut left = count;
        let mut seq = first_seq;
        for b in self.buffers.iter_mut() {
            if left == 0 {
                break;
            }
            let n = left.min(self.segments);
            for d in b.chunks_mut(len).take(n) {
                self.format.write_data(d, seq, now_ns);
                seq += 1;
            }
            per_message.push(n);
            left -= n;
        }
        if per_message.len() == 1 && per_message[0] == 1 {
            return sock.send(&self.buffers[0][..len]).map(|_| 1);
        }
        let mut iovecs: Vec<libc::iovec> = self
            .buffers
            .iter_mut()
            .zip(&per_message)
            .map(|(b, &n)| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: n * len,
            })
            .collect();
        let gso = self.segments > 1;
        let mut headers: Vec<libc::mmsghdr> = iovecs
            .iter_mut()
            .zip(self.control.iter_mut())
            .zip(&per_message)
            .map(|((iov, control), &n)| message(iov, control, (gso && n > 1).then_some(len)))
            .collect();
        // SAFETY: headers, control buffers and payload buffers outlive the call.
        let rc = unsafe {
            libc::sendmmsg(
                sock.as_raw_fd(),
                headers.as_mut_ptr(),
                headers.len() as u32,
                0,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(per_message.iter().take(rc as usize).sum())
    }
}

/// Datagrams of any lengths up to `max_len`, written one by one (each with
/// its own sequence number and send stamp) and sent together in one
/// sendmmsg: what a model sender sends when several messages are due at
/// once. With UDP GSO, consecutive datagrams of one length (the last of a
/// run may be shorter) go as one message the kernel splits. Every buffer is
/// allocated once: sending a train allocates nothing.
pub struct Train {
    /// The datagrams back to back, as GSO wants its segments.
    data: Vec<u8>,
    lens: Vec<usize>,
    /// Bytes of `data` written.
    filled: usize,
    /// Most datagrams the train holds.
    capacity: usize,
    /// Datagrams already handed to the kernel.
    done: usize,
    max_len: usize,
    fill: Vec<u8>,
    format: crate::udpformat::UdpFormat,
    gso: bool,
    iovecs: Vec<libc::iovec>,
    headers: Vec<libc::mmsghdr>,
    control: Vec<[u64; CMSG_SPACE / 8]>,
    /// Datagrams in each message of the call being built.
    per_message: Vec<usize>,
}

// SAFETY: the raw pointers in iovecs and headers point into the Train's own
// buffers and are rebuilt before every call; nothing shares them.
unsafe impl Send for Train {}

impl Train {
    /// A train of at most `capacity` datagrams of at most `max_len` bytes,
    /// filled with `fill` under the header; GSO is tried when `max_len`
    /// leaves room for two segments.
    pub fn new(
        max_len: usize,
        capacity: usize,
        fill: &[u8],
        format: crate::udpformat::UdpFormat,
    ) -> Train {
        let max_len = max_len.max(udp::HEADER_LEN);
        let capacity = capacity.max(1);
        let mut fill = fill[..fill.len().min(max_len)].to_vec();
        fill.resize(max_len, 0);
        Train {
            data: vec![0; max_len * capacity],
            lens: Vec::with_capacity(capacity),
            filled: 0,
            capacity,
            done: 0,
            max_len,
            fill,
            format,
            gso: 2 * max_len <= GSO_MAX_BYTES,
            iovecs: Vec::with_capacity(capacity),
            headers: Vec::with_capacity(capacity),
            control: vec![[0u64; CMSG_SPACE / 8]; capacity],
            per_message: Vec::with_capacity(capacity),
        }
    }

    /// Datagrams waiting to be sent (written, not yet handed over).
    pub fn pending(&self) -> usize {
        self.lens.len() - self.done
    }

    pub fn is_full(&self) -> bool {
        self.lens.len() >= self.capacity
    }

    pub fn uses_gso(&self) -> bool {
        self.gso
    }

    /// Sends plain datagrams from now on (the kernel refused GSO, or the device wants one
    /// packet at a time).
    pub fn disable_gso(&mut self) {
        self.gso = false;
    }

    /// Empties a train whose datagrams were all sent.
    pub fn clear(&mut self) {
        self.lens.clear();
        self.filled = 0;
        self.done = 0;
    }

    /// Appends a datagram of `len` bytes (at least the header, at most
    /// `max_len`) numbered `seq` and stamped `now_ns`. The train must not be full.
    pub fn push(&mut self, len: usize, seq: u64, now_ns: u64) {
        let len = len.clamp(udp::HEADER_LEN, self.max_len);
        let d = &mut self.data[self.filled..self.filled + len];
        d.copy_from_slice(&self.fill[..len]);
        self.format.write_data(d, seq, now_ns);
        self.filled += len;
        self.lens.push(len);
    }

    /// Hands the pending datagrams to the kernel in one call; returns how
    /// many it took (all of them unless the socket buffer filled).
    pub fn send(&mut self, sock: &UdpSocket) -> std::io::Result<usize> {
        self.per_message.clear();
        self.iovecs.clear();
        self.headers.clear();
        let mut offset: usize = self.lens[..self.done].iter().sum();
        let mut i = self.done;
        while i < self.lens.len() {
            // A message: one datagram, or with GSO a run of one length
            // (the run's last may be shorter), within the kernel's limits.
            let seg = self.lens[i];
            let (mut n, mut bytes) = (1, seg);
            while self.gso && i + n < self.lens.len() && n < GSO_MAX_SEGMENTS {
                let next = self.lens[i + n];
                if next > seg || bytes + next > GSO_MAX_BYTES || self.lens[i + n - 1] < seg {
                    break;
                }
                n += 1;
                bytes += next;
            }
            self.iovecs.push(libc::iovec {
                iov_base: self.data[offset..].as_mut_ptr().cast(),
                iov_len: bytes,
            });
            self.per_message.push(n);
            offset += bytes;
            i += n;
        }
        let mut first = self.done;
        for (m, (iov, &n)) in self.iovecs.iter_mut().zip(&self.per_message).enumerate() {
            let segment = (n > 1).then_some(self.lens[first]);
            self.headers
                .push(message(iov, &mut self.control[m], segment));
            first += n;
        }
        // SAFETY: headers, iovecs, control and data buffers outlive the call.
        let rc = unsafe {
            libc::sendmmsg(
                sock.as_raw_fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as u32,
                0,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let sent: usize = self.per_message.iter().take(rc as usize).sum();
        self.done += sent;
        Ok(sent)
    }
}

pub struct RecvBatch {
    buffers: Vec<Vec<u8>>,
    lengths: Vec<usize>,
    /// Segment size of each message when the kernel coalesced it (GRO).
    segment: Vec<Option<usize>>,
    control: Vec<[u64; CMSG_SPACE / 8]>,
    gro: bool,
}

impl RecvBatch {
    /// `count` messages per call; with `gro` each may hold many datagrams.
    pub fn new(slot: usize, count: usize, sock: &UdpSocket) -> Self {
        let gro = enable_gro(sock);
        let slot = if gro { 65_536 } else { slot };
        let count = if gro {
            count.clamp(1, 16)
        } else {
            count.max(1)
        };
        RecvBatch {
            buffers: vec![vec![0u8; slot]; count],
            lengths: vec![0; count],
            segment: vec![None; count],
            control: vec![[0u64; CMSG_SPACE / 8]; count],
            gro,
        }
    }

    pub fn uses_gro(&self) -> bool {
        self.gro
    }

    /// Blocks for the first message (up to the socket's read timeout), then
    /// takes whatever else is queued; returns how many messages arrived.
    pub fn receive(&mut self, sock: &UdpSocket) -> std::io::Result<usize> {
        let mut iovecs: Vec<libc::iovec> = self
            .buffers
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let gro = self.gro;
        let mut headers: Vec<libc::mmsghdr> = iovecs
            .iter_mut()
            .zip(self.control.iter_mut())
            .map(|(iov, control)| {
                // SAFETY: as in SendBatch::send.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
                if gro {
                    h.msg_hdr.msg_control = control.as_mut_ptr().cast();
                    h.msg_hdr.msg_controllen = CMSG_SPACE as _;
                }
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
            self.segment[i] = if gro { gro_segment(&h.msg_hdr) } else { None };
        }
        Ok(n)
    }

    /// The datagrams of message `i`: one, or several when GRO coalesced them.
    pub fn datagrams(&self, i: usize) -> impl Iterator<Item = &[u8]> {
        let data = &self.buffers[i][..self.lengths[i]];
        let size = self.segment[i]
            .filter(|&s| s > 0)
            .unwrap_or(data.len().max(1));
        data.chunks(size)
    }
}

fn enable_gro(sock: &UdpSocket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: valid pointer to an int for the call's duration.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

fn gro_segment(h: &libc::msghdr) -> Option<usize> {
    // SAFETY: the kernel filled msg_control up to msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                return usize::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(mut s: SendBatch, count: usize) -> Vec<u64> {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut r = RecvBatch::new(2048, 64, &rx);
        let mut sent = 0;
        while sent < count {
            sent += s.send(&tx, 40 + sent as u64, count - sent, 7).unwrap();
        }
        let mut got = Vec::new();
        while got.len() < count {
            let n = r.receive(&rx).unwrap();
            for i in 0..n {
                for d in r.datagrams(i) {
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
        }
        got
    }

    #[test]
    fn a_batch_arrives_numbered_in_order() {
        let got = exchange(SendBatch::new(100, 16, b"xyz"), 16);
        assert_eq!(got, (40..56).collect::<Vec<_>>());
    }

    #[test]
    fn gso_batches_keep_every_datagram_and_its_number() {
        let s = SendBatch::with_gso(100, b"xyz").expect("100-byte datagrams fit GSO");
        assert!(s.capacity() > 64);
        let got = exchange(s, 300);
        assert_eq!(got, (40..340).collect::<Vec<_>>());
    }

    #[test]
    fn a_train_of_mixed_lengths_arrives_whole_numbered_and_stamped() {
        // Runs of equal lengths and shorter ends (GSO messages where the
        // kernel has it), received by a plain socket (the kernel splits them)
        // and by one with GRO (linkperf's receiver: coalesced, split by us).
        let lens = [100, 100, 100, 40, 100, 1472, 1472, 16, 300, 300, 300, 300];
        let fill: Vec<u8> = (0..2000).map(|i| (i % 251) as u8).collect();
        for gro in [false, true] {
            let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            tx.connect(rx.local_addr().unwrap()).unwrap();
            rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let mut t = Train::new(1472, 16, &fill, crate::udpformat::UdpFormat::Linkperf);
            for (i, &len) in lens.iter().enumerate() {
                t.push(len, 7 + i as u64, 1000 + i as u64);
            }
            assert_eq!(t.pending(), lens.len());
            while t.pending() > 0 {
                t.send(&tx).unwrap();
            }
            let mut got: Vec<Vec<u8>> = Vec::new();
            if gro {
                let mut r = RecvBatch::new(2048, 16, &rx);
                assert!(r.uses_gro());
                while got.len() < lens.len() {
                    let n = r.receive(&rx).unwrap();
                    for i in 0..n {
                        got.extend(r.datagrams(i).map(<[u8]>::to_vec));
                    }
                }
            } else {
                let mut buf = [0u8; 65_536];
                while got.len() < lens.len() {
                    let n = rx.recv(&mut buf).unwrap();
                    got.push(buf[..n].to_vec());
                }
            }
            assert_eq!(got.len(), lens.len(), "gro {gro}");
            for (i, d) in got.iter().enumerate() {
                assert_eq!(d.len(), lens[i], "datagram {i} (gro {gro})");
                let want = udp::Datagram::Data {
                    seq: 7 + i as u64,
                    sent_ns: 1000 + i as u64,
                };
                assert_eq!(udp::parse(d), Some(want), "datagram {i} (gro {gro})");
                // Under the header, the fill, from its own offset.
                assert_eq!(d[16..], fill[16..d.len()], "datagram {i} (gro {gro})");
            }
            t.clear();
            assert_eq!(t.pending(), 0);
        }
    }
}
