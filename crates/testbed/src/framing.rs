//! How many bytes a packet occupies on the emulated wire, so the rate clock charges the
//! link-layer tax the real medium would (Ethernet preamble and gap, ATM cell padding).

use serde::{Deserialize, Serialize};

/// Length of the Ethernet header on frames read from a TAP device (no FCS, no VLAN tag).
pub const TAP_HEADER_BYTES: usize = 14;

/// Ethernet per-frame cost beyond the IP packet: header 14 + FCS 4 + preamble/SFD 8 + IFG 12.
pub const ETHERNET_OVERHEAD_BYTES: u64 = 14 + 4 + 8 + 12;
/// Minimum Ethernet payload; shorter packets are padded on the wire.
pub const ETHERNET_MIN_PAYLOAD: u64 = 46;
/// RFC 1483/2684 LLC/SNAP encapsulation header carried before the IP packet.
pub const LLC_SNAP_BYTES: u64 = 8;
/// AAL5 CPCS trailer (UU, CPI, length, CRC-32).
pub const AAL5_TRAILER_BYTES: u64 = 8;
pub const ATM_CELL_PAYLOAD: u64 = 48;
pub const ATM_CELL_BYTES: u64 = 53;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    /// Only the IP packet counts against the rate.
    None,
    /// IEEE 802.3: the IP packet plus 38 bytes, padded to the 46-byte minimum payload.
    #[default]
    Ethernet,
    /// Classical IP over ATM: LLC/SNAP + AAL5 trailer padded to whole 48-byte cell payloads,
    /// each cell 53 bytes on the wire.
    AtmAal5,
}

impl Framing {
    pub fn from_name(name: &str) -> Option<Framing> {
        match name {
            "none" => Some(Framing::None),
            "ethernet" => Some(Framing::Ethernet),
            "atm-aal5" | "atm" => Some(Framing::AtmAal5),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Framing::None => "none",
            Framing::Ethernet => "ethernet",
            Framing::AtmAal5 => "atm-aal5",
        }
    }

    /// Bytes on the wire for an IP packet of `ip_bytes`.
    pub fn wire_bytes(self, ip_bytes: u64) -> u64 {
        match self {
            Framing::None => ip_bytes,
            Framing::Ethernet => ip_bytes.max(ETHERNET_MIN_PAYLOAD) + ETHERNET_OVERHEAD_BYTES,
            Framing::AtmAal5 => {
                let pdu = ip_bytes + LLC_SNAP_BYTES + AAL5_TRAILER_BYTES;
                pdu.div_ceil(ATM_CELL_PAYLOAD) * ATM_CELL_BYTES
            }
        }
    }

    /// Wire bytes for a frame as read from a TAP device (Ethernet header included).
    pub fn wire_bytes_for_tap_frame(self, frame_bytes: usize) -> u64 {
        self.wire_bytes(frame_bytes.saturating_sub(TAP_HEADER_BYTES) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_charges_38_bytes_and_pads_runts() {
        assert_eq!(Framing::Ethernet.wire_bytes(1500), 1538);
        assert_eq!(Framing::Ethernet.wire_bytes(28), 84);
        assert_eq!(Framing::None.wire_bytes(1500), 1500);
        // TCP over GigE: 1448 payload bytes per 1538 on the wire -> the familiar 941 Mbit/s.
        let goodput = 1e9 * 1448.0 / Framing::Ethernet.wire_bytes(1500) as f64;
        assert!((goodput - 941.5e6).abs() < 0.5e6, "{goodput}");
    }

    #[test]
    fn atm_aal5_pads_to_whole_cells() {
        // 40-byte TCP ACK + 16 = 56 -> 2 cells.
        assert_eq!(Framing::AtmAal5.wire_bytes(40), 106);
        // 32 + 16 = 48 fills exactly one cell.
        assert_eq!(Framing::AtmAal5.wire_bytes(32), 53);
        assert_eq!(Framing::AtmAal5.wire_bytes(33), 106);
        // 9180-byte MTU: 9196 bytes -> 192 cells.
        assert_eq!(Framing::AtmAal5.wire_bytes(9180), 192 * 53);
    }

    #[test]
    fn oc3c_gives_the_classic_135_mbit_tcp_ceiling() {
        // SONET payload of OC-3c, MSS of a 9180 MTU with timestamps (9180 - 40 - 12).
        let cell_rate = 149.76e6;
        let goodput = cell_rate * 9128.0 / Framing::AtmAal5.wire_bytes(9180) as f64;
        assert!((goodput - 134.3e6).abs() < 0.5e6, "{goodput}");
    }
}
