//! Virtio-net headers and TCP segmentation offload.
//!
//! With offloads on, a TAP device hands the emulator TCP super-packets of up to 64 KiB (one
//! read instead of ~45) with a virtio-net header saying how the kernel would have cut them
//! (`gso_size`). The emulator charges, queues, loses and delays every segment on its own, then
//! writes back whichever consecutive segments are due together: the whole super-packet when
//! all are, a shorter super-packet or a single segment otherwise. [`Segmentation`] knows the
//! geometry and rewrites the headers of such a run exactly as the kernel's own segmentation
//! would (sequence number, lengths, IP id, flags, pseudo-header checksum).

use std::ops::Range;

/// Length of `struct virtio_net_hdr` (the TAP default, TUNSETVNETHDRSZ not used).
pub const VNET_HDR_LEN: usize = 10;
/// The checksum from `csum_start` on is still to be computed (CHECKSUM_PARTIAL).
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
const GSO_ECN: u8 = 0x80;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETH_HEADER: usize = 14;
const PROTO_TCP: u8 = 6;
/// Offset of the checksum field in the TCP header.
const TCP_CHECK_OFFSET: usize = 16;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// `struct virtio_net_hdr`, fields in the host's byte order (legacy virtio, as TAP uses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHeader {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHeader {
    /// Reads the header from the first [`VNET_HDR_LEN`] bytes of `bytes`.
    pub fn parse(bytes: &[u8]) -> VnetHeader {
        let u16_at = |i: usize| u16::from_ne_bytes([bytes[i], bytes[i + 1]]);
        VnetHeader {
            flags: bytes[0],
            gso_type: bytes[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }

    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }
}

/// How a TCP super-packet (an Ethernet frame, virtio-net header removed) splits into segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segmentation {
    ipv6: bool,
    /// Offset of the TCP header in the frame.
    l4: usize,
    /// Bytes of headers (Ethernet + IP + TCP) every segment carries.
    headers: usize,
    payload: usize,
    mss: usize,
}

impl Segmentation {
    /// The geometry of `frame` announced as TCP GSO by `hdr`, or None when it is not plain
    /// TCP over IPv4 or IPv6 (no VLAN tag, no IPv6 extension header) or is inconsistent.
    pub fn parse(hdr: &VnetHeader, frame: &[u8]) -> Option<Segmentation> {
        let kind = hdr.gso_type & !GSO_ECN;
        if (kind != GSO_TCPV4 && kind != GSO_TCPV6) || hdr.gso_size == 0 {
            return None;
        }
        let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        let (ipv6, l4) = match ethertype {
            ETHERTYPE_IPV4 => {
                let ihl = (*frame.get(ETH_HEADER)? & 0x0f) as usize * 4;
                if ihl < 20 || *frame.get(ETH_HEADER + 9)? != PROTO_TCP {
                    return None;
                }
                (false, ETH_HEADER + ihl)
            }
            ETHERTYPE_IPV6 => {
                if *frame.get(ETH_HEADER + 6)? != PROTO_TCP {
                    return None;
                }
                (true, ETH_HEADER + 40)
            }
            _ => return None,
        };
        let doff = (*frame.get(l4 + 12)? >> 4) as usize * 4;
        let headers = l4 + doff;
        if doff < 20 || frame.len() <= headers {
            return None;
        }
        Some(Segmentation {
            ipv6,
            l4,
            headers,
            payload: frame.len() - headers,
            mss: hdr.gso_size as usize,
        })
    }

    pub fn segments(&self) -> usize {
        self.payload.div_ceil(self.mss)
    }

    /// Frame bytes (Ethernet header + IP packet) of segment `i`, as the kernel would cut it.
    pub fn segment_bytes(&self, i: usize) -> usize {
        self.headers + self.segment_payload(i)
    }

    fn segment_payload(&self, i: usize) -> usize {
        self.mss.min(self.payload - i * self.mss)
    }

    /// Builds in `out` the virtio-net header and the frame headers of the run of `count`
    /// segments starting at `first`, and returns the range of `frame` holding their payload.
    /// A run of one segment is an ordinary packet; a longer run stays a super-packet. The TCP
    /// checksum is left to the receiver's stack (NEEDS_CSUM with the pseudo-header sum), as
    /// for any packet sent with checksum offload.
    pub fn run_headers(
        &self,
        hdr: &VnetHeader,
        frame: &[u8],
        first: usize,
        count: usize,
        out: &mut Vec<u8>,
    ) -> Range<usize> {
        let last = first + count - 1;
        let start = self.headers + first * self.mss;
        let payload: usize = (first..=last).map(|i| self.segment_payload(i)).sum();
        let run_hdr = VnetHeader {
            flags: F_NEEDS_CSUM,
            gso_type: if count > 1 { hdr.gso_type } else { GSO_NONE },
            hdr_len: self.headers as u16,
            gso_size: if count > 1 { hdr.gso_size } else { 0 },
            csum_start: self.l4 as u16,
            csum_offset: TCP_CHECK_OFFSET as u16,
        };
        out.clear();
        out.extend_from_slice(&run_hdr.to_bytes());
        let base = out.len();
        out.extend_from_slice(&frame[..self.headers]);
        let h = &mut out[base..];
        let t = self.l4;
        // As the kernel's segmentation does: CWR on the first segment only, FIN and PSH on
        // the last only.
        if first > 0 {
            h[t + 13] &= !TCP_CWR;
        }
        if last + 1 < self.segments() {
            h[t + 13] &= !(TCP_FIN | TCP_PSH);
        }
        // Linux TSO numbers the segments' IP ids consecutively.
        let tcp_len = self.headers - self.l4 + payload;
        rewrite_headers(
            h,
            self.ipv6,
            t,
            tcp_len,
            first as u16,
            (first * self.mss) as u32,
        );
        start..start + payload
    }
}

/// A TCP packet that is not a super-packet: the receiving end may merge a train of them
/// into one super-packet, as GRO in a NIC would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket {
    ipv6: bool,
    l4: usize,
    headers: usize,
    payload: usize,
    seq: u32,
    flags: u8,
}

impl TcpPacket {
    /// The TCP packet in `frame` if it carries data and could be merged: TCP over IPv4
    /// without options or fragmentation, or over IPv6 without extension headers.
    pub fn parse(frame: &[u8]) -> Option<TcpPacket> {
        let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
        let (ipv6, l4, ip_end) = match ethertype {
            ETHERTYPE_IPV4 => {
                let ip = frame.get(ETH_HEADER..ETH_HEADER + 20)?;
                let fragmented = get_u16(ip, 6) & 0x3fff != 0;
                if ip[0] != 0x45 || ip[9] != PROTO_TCP || fragmented {
                    return None;
                }
                (false, ETH_HEADER + 20, ETH_HEADER + get_u16(ip, 2) as usize)
            }
            ETHERTYPE_IPV6 => {
                let ip = frame.get(ETH_HEADER..ETH_HEADER + 40)?;
                if ip[6] != PROTO_TCP {
                    return None;
                }
                (
                    true,
                    ETH_HEADER + 40,
                    ETH_HEADER + 40 + get_u16(ip, 4) as usize,
                )
            }
            _ => return None,
        };
        let doff = (*frame.get(l4 + 12)? >> 4) as usize * 4;
        let headers = l4 + doff;
        if doff < 20 || ip_end != frame.len() || frame.len() <= headers {
            return None;
        }
        Some(TcpPacket {
            ipv6,
            l4,
            headers,
            payload: frame.len() - headers,
            seq: u32::from_be_bytes(frame[l4 + 4..l4 + 8].try_into().ok()?),
            flags: frame[l4 + 13],
        })
    }

    /// Whether `next` continues a train that starts with `self` and ends with `last`,
    /// carrying `train_payload` bytes so far: the same flow and headers (timestamps
    /// included), the next sequence number, only ACK flags before the end (PSH may end it),
    /// every packet but the final one as long as the first.
    pub fn continues(
        &self,
        head_frame: &[u8],
        last: &TcpPacket,
        train_payload: usize,
        next: &TcpPacket,
        next_frame: &[u8],
    ) -> bool {
        const ACK: u8 = 0x10;
        let max_payload = 65535 - (self.headers - ETH_HEADER);
        if next.ipv6 != self.ipv6
            || next.headers != self.headers
            || last.flags != ACK
            || next.flags & !TCP_PSH != ACK
            || last.payload != self.payload
            || next.payload > self.payload
            || train_payload + next.payload > max_payload
            || next.seq != last.seq.wrapping_add(last.payload as u32)
        {
            return false;
        }
        // Everything but lengths, IP id, checksums, sequence number and flags must match.
        let (a, b, t) = (head_frame, next_frame, self.l4);
        let ip_same = if self.ipv6 {
            a[..18] == b[..18] && a[20..t] == b[20..t]
        } else {
            a[..16] == b[..16] && a[20..24] == b[20..24] && a[26..t] == b[26..t]
        };
        ip_same
            && a[t..t + 4] == b[t..t + 4]
            && a[t + 8..t + 13] == b[t + 8..t + 13]
            && a[t + 14..t + 16] == b[t + 14..t + 16]
            && a[t + 18..self.headers] == b[t + 18..self.headers]
    }

    /// Builds in `out` the virtio-net header and frame headers of a train of `count` packets
    /// headed by this one (`head_frame`), with `payload` bytes in all and final flags
    /// `last_flags`; the payloads follow in order.
    pub fn train_headers(
        &self,
        head_frame: &[u8],
        count: usize,
        payload: usize,
        last_flags: u8,
        out: &mut Vec<u8>,
    ) {
        let hdr = VnetHeader {
            flags: F_NEEDS_CSUM,
            gso_type: match (count > 1, self.ipv6) {
                (false, _) => GSO_NONE,
                (true, false) => GSO_TCPV4,
                (true, true) => GSO_TCPV6,
            },
            hdr_len: self.headers as u16,
            gso_size: if count > 1 { self.payload as u16 } else { 0 },
            csum_start: self.l4 as u16,
            csum_offset: TCP_CHECK_OFFSET as u16,
        };
        out.clear();
        out.extend_from_slice(&hdr.to_bytes());
        let base = out.len();
        out.extend_from_slice(&head_frame[..self.headers]);
        let h = &mut out[base..];
        h[self.l4 + 13] |= last_flags & TCP_PSH;
        let tcp_len = self.headers - self.l4 + payload;
        rewrite_headers(h, self.ipv6, self.l4, tcp_len, 0, 0);
    }

    pub fn payload(&self) -> usize {
        self.payload
    }

    pub fn flags(&self) -> u8 {
        self.flags
    }

    pub fn headers(&self) -> usize {
        self.headers
    }
}

/// Sets the lengths of frame headers `h` for `tcp_len` bytes of TCP, adds `id_delta` to the
/// IPv4 id and `seq_delta` to the sequence number, recomputes the IPv4 header checksum and
/// puts the pseudo-header sum in the TCP checksum (NEEDS_CSUM: the rest is the receiver's).
fn rewrite_headers(
    h: &mut [u8],
    ipv6: bool,
    l4: usize,
    tcp_len: usize,
    id_delta: u16,
    seq_delta: u32,
) {
    let l3 = ETH_HEADER;
    let pseudo = if ipv6 {
        put_u16(h, l3 + 4, tcp_len as u16);
        pseudo_header_sum(&h[l3 + 8..l3 + 24], &h[l3 + 24..l3 + 40], tcp_len)
    } else {
        put_u16(h, l3 + 2, (l4 - l3 + tcp_len) as u16);
        let id = get_u16(h, l3 + 4).wrapping_add(id_delta);
        put_u16(h, l3 + 4, id);
        put_u16(h, l3 + 10, 0);
        let check = !fold(sum16(&h[l3..l4], 0));
        put_u16(h, l3 + 10, check);
        pseudo_header_sum(&h[l3 + 12..l3 + 16], &h[l3 + 16..l3 + 20], tcp_len)
    };
    let seq =
        u32::from_be_bytes([h[l4 + 4], h[l4 + 5], h[l4 + 6], h[l4 + 7]]).wrapping_add(seq_delta);
    h[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
    put_u16(h, l4 + TCP_CHECK_OFFSET, pseudo);
}

fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// One's complement sum of big-endian 16-bit words (an odd last byte padded with zero).
fn sum16(bytes: &[u8], mut acc: u64) -> u64 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u64) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The pseudo-header sum a CHECKSUM_PARTIAL packet carries in its TCP checksum field.
fn pseudo_header_sum(src: &[u8], dst: &[u8], tcp_len: usize) -> u16 {
    let acc = sum16(src, 0) + sum16(dst, 0) + PROTO_TCP as u64 + tcp_len as u64;
    fold(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1448;

    /// An Ethernet frame with a TCP super-packet of `payload` bytes (timestamps option).
    fn super_packet(ipv6: bool, payload: usize, flags: u8) -> (VnetHeader, Vec<u8>) {
        let mut f = vec![0u8; 12];
        let ip_len = if ipv6 { 40 } else { 20 };
        if ipv6 {
            f.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
            let mut ip = vec![0x60, 0, 0, 0, 0, 0, PROTO_TCP, 64];
            ip[4..6].copy_from_slice(&((32 + payload) as u16).to_be_bytes());
            ip.extend((0..16).map(|i| 0xfd - i as u8));
            ip.extend((0..16).map(|i| 0x20 + i as u8));
            f.extend_from_slice(&ip);
        } else {
            f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            let total = (20 + 32 + payload) as u16;
            let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, PROTO_TCP, 0, 0];
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&[10, 60, 0, 1, 10, 60, 0, 2]);
            f.extend_from_slice(&ip);
        }
        let mut tcp = vec![0u8; 32];
        tcp[0..4].copy_from_slice(&[0x9c, 0x40, 0x14, 0x5b]);
        tcp[4..8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // wraps inside the packet
        tcp[12] = 8 << 4;
        tcp[13] = flags;
        tcp[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]);
        f.extend_from_slice(&tcp);
        f.extend((0..payload).map(|i| (i * 7 + 3) as u8));
        let hdr = VnetHeader {
            flags: F_NEEDS_CSUM,
            gso_type: if ipv6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: (14 + ip_len + 32) as u16,
            gso_size: MSS as u16,
            csum_start: (14 + ip_len) as u16,
            csum_offset: 16,
        };
        (hdr, f)
    }

    /// Completes the TCP checksum as the receiver's offload would and checks it validates.
    fn tcp_checksum_validates(frame: &[u8], l4: usize, ipv6: bool) -> bool {
        let mut f = frame.to_vec();
        let partial = fold(sum16(&f[l4..], 0));
        put_u16(&mut f, l4 + 16, !partial);
        let tcp_len = f.len() - l4;
        let pseudo = if ipv6 {
            pseudo_header_sum(&f[22..38], &f[38..54], tcp_len)
        } else {
            pseudo_header_sum(&f[26..30], &f[30..34], tcp_len)
        };
        fold(sum16(&f[l4..], pseudo as u64)) == 0xffff
    }

    fn run_frame(
        s: &Segmentation,
        hdr: &VnetHeader,
        frame: &[u8],
        first: usize,
        count: usize,
    ) -> (VnetHeader, Vec<u8>) {
        let mut out = Vec::new();
        let payload = s.run_headers(hdr, frame, first, count, &mut out);
        let h = VnetHeader::parse(&out);
        let mut f = out[VNET_HDR_LEN..].to_vec();
        f.extend_from_slice(&frame[payload]);
        (h, f)
    }

    #[test]
    fn vnet_header_round_trips() {
        let (hdr, _) = super_packet(false, 5000, 0x18);
        assert_eq!(VnetHeader::parse(&hdr.to_bytes()), hdr);
        assert!(hdr.is_gso());
        assert!(!VnetHeader::default().is_gso());
    }

    #[test]
    fn geometry_follows_gso_size() {
        let (hdr, frame) = super_packet(false, 3 * MSS + 100, 0x18);
        let s = Segmentation::parse(&hdr, &frame).unwrap();
        assert_eq!(s.segments(), 4);
        assert_eq!(s.segment_bytes(0), 14 + 20 + 32 + MSS);
        assert_eq!(s.segment_bytes(3), 14 + 20 + 32 + 100);
        let total: usize = (0..4).map(|i| s.segment_bytes(i) - 66).sum();
        assert_eq!(total, 3 * MSS + 100);
    }

    #[test]
    fn not_segmentable_frames_are_recognised() {
        let (mut hdr, frame) = super_packet(false, 3000, 0x10);
        hdr.gso_type = GSO_NONE;
        assert_eq!(Segmentation::parse(&hdr, &frame), None);
        let (hdr, mut frame) = super_packet(false, 3000, 0x10);
        frame[14 + 9] = 17; // UDP
        assert_eq!(Segmentation::parse(&hdr, &frame), None);
        let (hdr, frame) = super_packet(false, 3000, 0x10);
        assert_eq!(Segmentation::parse(&hdr, &frame[..40]), None);
    }

    #[test]
    fn runs_carry_the_headers_the_kernel_would_write() {
        for ipv6 in [false, true] {
            // FIN|PSH|ACK|CWR on the super-packet.
            let (hdr, frame) = super_packet(ipv6, 4 * MSS + 17, 0x80 | 0x19);
            let s = Segmentation::parse(&hdr, &frame).unwrap();
            let l4 = if ipv6 { 54 } else { 34 };
            let mut rebuilt = Vec::new();
            for (first, count) in [(0, 1), (1, 2), (3, 2)] {
                let (h, f) = run_frame(&s, &hdr, &frame, first, count);
                let payload_len: usize = (first..first + count).map(|i| s.segment_payload(i)).sum();
                assert_eq!(f.len(), l4 + 32 + payload_len);
                assert_eq!(h.gso_type != GSO_NONE, count > 1);
                assert_eq!(h.flags, F_NEEDS_CSUM);
                assert_eq!(h.csum_start as usize, l4);
                let seq = u32::from_be_bytes(f[l4 + 4..l4 + 8].try_into().unwrap());
                assert_eq!(seq, 0xffff_f000u32.wrapping_add((first * MSS) as u32));
                let flags = f[l4 + 13];
                assert_eq!(flags & TCP_CWR != 0, first == 0);
                let has_last = first + count == 5;
                assert_eq!(flags & (TCP_FIN | TCP_PSH) != 0, has_last);
                assert_eq!(flags & 0x10, 0x10, "ACK kept");
                if ipv6 {
                    assert_eq!(get_u16(&f, 18) as usize, 32 + payload_len);
                } else {
                    assert_eq!(get_u16(&f, 16) as usize, 20 + 32 + payload_len);
                    assert_eq!(get_u16(&f, 18), 0x1234 + first as u16);
                    assert_eq!(fold(sum16(&f[14..34], 0)), 0xffff, "IPv4 header checksum");
                }
                assert!(tcp_checksum_validates(&f, l4, ipv6));
                rebuilt.extend_from_slice(&f[l4 + 32..]);
            }
            assert_eq!(rebuilt, frame[l4 + 32..]);
        }
    }

    #[test]
    fn a_train_of_packets_merges_back_into_the_super_packet() {
        for ipv6 in [false, true] {
            let (hdr, frame) = super_packet(ipv6, 4 * MSS + 17, 0x18);
            let s = Segmentation::parse(&hdr, &frame).unwrap();
            let singles: Vec<Vec<u8>> = (0..5)
                .map(|i| run_frame(&s, &hdr, &frame, i, 1).1)
                .collect();
            let parsed: Vec<TcpPacket> = singles
                .iter()
                .map(|f| TcpPacket::parse(f).unwrap())
                .collect();
            let head = &parsed[0];
            let mut payload = head.payload();
            for i in 1..5 {
                assert!(head.continues(
                    &singles[0],
                    &parsed[i - 1],
                    payload,
                    &parsed[i],
                    &singles[i]
                ));
                payload += parsed[i].payload();
            }
            assert_eq!(payload, 4 * MSS + 17);
            let mut out = Vec::new();
            head.train_headers(&singles[0], 5, payload, parsed[4].flags(), &mut out);
            let h = VnetHeader::parse(&out);
            assert_eq!(h.gso_type, hdr.gso_type);
            assert_eq!(h.gso_size as usize, MSS);
            let mut merged = out[VNET_HDR_LEN..].to_vec();
            for (f, p) in singles.iter().zip(&parsed) {
                merged.extend_from_slice(&f[p.headers()..]);
            }
            let l4 = if ipv6 { 54 } else { 34 };
            assert!(tcp_checksum_validates(&merged, l4, ipv6));
            // Identical to the original but for the checksums the original left blank.
            let mut expected = frame.clone();
            expected[l4 + 16..l4 + 18].copy_from_slice(&merged[l4 + 16..l4 + 18]);
            if !ipv6 {
                expected[24..26].copy_from_slice(&merged[24..26]);
                assert_eq!(fold(sum16(&merged[14..34], 0)), 0xffff);
            }
            assert_eq!(merged, expected);
        }
    }

    #[test]
    fn trains_break_where_gro_would() {
        let (hdr, frame) = super_packet(false, 3 * MSS, 0x10);
        let s = Segmentation::parse(&hdr, &frame).unwrap();
        let one = |i| run_frame(&s, &hdr, &frame, i, 1).1;
        let (f0, f1, f2) = (one(0), one(1), one(2));
        let p = |f: &Vec<u8>| TcpPacket::parse(f).unwrap();
        assert!(p(&f0).continues(&f0, &p(&f0), MSS, &p(&f1), &f1));
        // A gap in the sequence.
        assert!(!p(&f0).continues(&f0, &p(&f0), MSS, &p(&f2), &f2));
        // Another timestamp.
        let mut g = f1.clone();
        g[34 + 31] ^= 1;
        assert!(!p(&f0).continues(&f0, &p(&f0), MSS, &p(&g), &g));
        // PSH may end a train, not continue one.
        let mut pushed = f0.clone();
        pushed[34 + 13] |= TCP_PSH;
        assert!(!p(&pushed).continues(&pushed, &p(&pushed), MSS, &p(&f1), &f1));
        // Another flow.
        let mut other = f1.clone();
        other[34] ^= 1;
        assert!(!p(&f0).continues(&f0, &p(&f0), MSS, &p(&other), &other));
        // No payload: a pure ACK is never part of a train.
        let mut ack = f0[..66].to_vec();
        put_u16(&mut ack, 16, 52);
        assert_eq!(TcpPacket::parse(&ack), None);
        assert!(TcpPacket::parse(&f0).is_some());
    }
}
