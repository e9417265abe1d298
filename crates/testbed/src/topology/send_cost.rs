//! A host's send cost (`send_per_packet`, `send_per_byte`): what its own send path (CPU,
//! bus, adapter) spends on each packet it sends, read and checked here; `crate::nic` charges
//! it with a token bucket on the host's interfaces.

use super::model::SendCost;
use super::parse::Parser;
use super::raw::RawHost;
use crate::error::TestbedError;

/// The kernel's token bucket adds a packet's fixed cost as bytes at the per-byte rate, in a
/// 16-bit field: the fixed part can be at most this many bytes' worth.
pub const MAX_OVERHEAD_BYTES: u64 = 65_535;
/// Longest fixed cost per packet.
const MAX_PER_PACKET_NS: u64 = 1_000_000_000;
/// Longest cost per byte (8 kbit/s).
const MAX_PER_BYTE_NS: u64 = 1_000_000;

impl Parser<'_> {
    /// A host's send cost; None when it has neither key.
    pub(super) fn send_cost(&self, h: &RawHost) -> Result<Option<SendCost>, TestbedError> {
        let (packet, byte) = (&h.send_per_packet, &h.send_per_byte);
        if packet.is_none() && byte.is_none() {
            return Ok(None);
        }
        let per_packet_ns = match packet {
            Some(v) => {
                let ns = self.duration_ns(v, "host.send_per_packet")?;
                if ns > MAX_PER_PACKET_NS {
                    return Err(self.error(
                        Some(v.span()),
                        "host.send_per_packet",
                        "is above 1s (the host's fixed cost of sending one packet, e.g. \"250us\")",
                    ));
                }
                ns
            }
            None => 0,
        };
        let per_byte_ns = match byte {
            Some(v) => {
                let ns = self.duration_ns(v, "host.send_per_byte")?;
                if !(1..=MAX_PER_BYTE_NS).contains(&ns) {
                    return Err(self.error(
                        Some(v.span()),
                        "host.send_per_byte",
                        "must be from 1ns to 1ms (the host's cost of sending one byte, e.g. \"46ns\")",
                    ));
                }
                ns
            }
            None => 0,
        };
        let fixed_bytes = per_packet_ns.div_ceil(per_byte_ns.max(1));
        if per_packet_ns > 0 && (per_byte_ns == 0 || fixed_bytes > MAX_OVERHEAD_BYTES) {
            let least = per_packet_ns.div_ceil(MAX_OVERHEAD_BYTES);
            return Err(self.error(
                packet.as_ref().map(|v| v.span()),
                "host.send_per_packet",
                format!(
                    "{per_packet_ns} ns per packet needs send_per_byte of at least {least}ns (the kernel's \
                     token bucket charges the fixed cost as at most {MAX_OVERHEAD_BYTES} bytes' worth)"
                ),
            ));
        }
        Ok(Some(SendCost {
            per_packet_ns,
            per_byte_ns,
        }))
    }
}
