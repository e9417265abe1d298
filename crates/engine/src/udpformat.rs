//! How UDP datagrams are framed on the wire: linkperf's own header, or
//! iperf3's (for interoperability with stock iperf3 peers).

use linkperf_proto::{iperf3, udp};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpFormat {
    /// Sequence number and send time in ns, FIN markers at the end.
    #[default]
    Linkperf,
    /// iperf3's header (seconds, microseconds, packet count from 1, with
    /// 32- or 64-bit counters); no end markers, iperf3 has none.
    Iperf3 { counters_64bit: bool },
}

impl UdpFormat {
    /// Writes a data header; `seq` counts from 0.
    pub fn write_data(self, buf: &mut [u8], seq: u64, sent_ns: u64) {
        match self {
            UdpFormat::Linkperf => udp::write_data(buf, seq, sent_ns),
            UdpFormat::Iperf3 { counters_64bit } => {
                iperf3::write_udp_header(buf, sent_ns, seq + 1, counters_64bit)
            }
        }
    }

    /// Parses a received datagram into linkperf's terms (`seq` from 0).
    pub fn parse(self, buf: &[u8]) -> Option<udp::Datagram> {
        match self {
            UdpFormat::Linkperf => udp::parse(buf),
            UdpFormat::Iperf3 { counters_64bit } => {
                let (sent_ns, count) = iperf3::parse_udp_header(buf, counters_64bit)?;
                (count > 0).then(|| udp::Datagram::Data {
                    seq: count - 1,
                    sent_ns,
                })
            }
        }
    }

    /// Whether senders end a stream with FIN markers.
    pub fn sends_fin(self) -> bool {
        self == UdpFormat::Linkperf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_counts_from_one_and_round_trips() {
        let f = UdpFormat::Iperf3 {
            counters_64bit: false,
        };
        let mut b = [0u8; 32];
        f.write_data(&mut b, 0, 3_000_001_000);
        assert_eq!(&b[..12], &[0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(
            f.parse(&b),
            Some(udp::Datagram::Data {
                seq: 0,
                sent_ns: 3_000_001_000
            })
        );
        assert_eq!(f.parse(b"9876"), None);
        assert!(!f.sends_fin() && UdpFormat::Linkperf.sends_fin());
    }
}
