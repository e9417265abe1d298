//! The topology file as serde reads it: every value kept with its span, so errors can name
//! the line; unknown keys rejected.

use serde::Deserialize;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) name: Option<Spanned<String>>,
    pub(super) seed: Option<Spanned<i64>>,
    pub(super) cpu_idle: Option<Spanned<String>>,
    pub(super) subnet: Option<Spanned<String>>,
    pub(super) subnet6: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) host: Vec<RawHost>,
    #[serde(default)]
    pub(super) switch: Vec<RawSwitch>,
    #[serde(default)]
    pub(super) router: Vec<RawRouter>,
    #[serde(default)]
    pub(super) link: Vec<RawLink>,
    pub(super) schedule: Option<RawSchedule>,
}

/// A schedule: the `[schedule]` table of a topology file, or a whole schedule file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub(super) repeat: Option<Spanned<Value>>,
    #[serde(default)]
    pub(super) step: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub(super) name: Spanned<String>,
    pub(super) address: Option<Spanned<String>>,
    pub(super) address6: Option<Spanned<String>>,
    pub(super) cpu: Option<Spanned<Value>>,
    pub(super) per_packet: Option<Spanned<Value>>,
    pub(super) per_byte: Option<Spanned<Value>>,
    pub(super) packet_rate: Option<Spanned<Value>>,
    pub(super) backlog: Option<Spanned<i64>>,
    pub(super) mptcp: Option<Spanned<bool>>,
    pub(super) cwnd_clamp: Option<Spanned<Value>>,
    pub(super) send_per_packet: Option<Spanned<Value>>,
    pub(super) send_per_byte: Option<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRouter {
    pub(super) name: Spanned<String>,
    pub(super) per_packet: Option<Spanned<Value>>,
    pub(super) per_byte: Option<Spanned<Value>>,
    pub(super) packet_rate: Option<Spanned<Value>>,
    pub(super) backlog: Option<Spanned<i64>>,
}

/// The processing keys of a host, a router or a link direction.
pub(super) struct ProcessingKeys<'a> {
    pub(super) per_packet: Option<&'a Spanned<Value>>,
    pub(super) per_byte: Option<&'a Spanned<Value>>,
    pub(super) packet_rate: Option<&'a Spanned<Value>>,
    pub(super) backlog: Option<&'a Spanned<i64>>,
}

/// `ProcessingKeys` of any table that has the four fields.
macro_rules! processing_keys {
    ($t:expr) => {
        ProcessingKeys {
            per_packet: $t.per_packet.as_ref(),
            per_byte: $t.per_byte.as_ref(),
            packet_rate: $t.packet_rate.as_ref(),
            backlog: $t.backlog.as_ref(),
        }
    };
}
pub(super) use processing_keys;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwitch {
    pub(super) name: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGilbert {
    pub(super) p: Spanned<Value>,
    pub(super) r: Spanned<Value>,
    pub(super) bad_loss: Option<Spanned<Value>>,
    pub(super) good_loss: Option<Spanned<Value>>,
}

/// Declares a struct holding the per-direction keys plus `$extra` fields, so the link table
/// and its `a_to_b`/`b_to_a` tables accept exactly the same impairment keys.
macro_rules! with_direction_keys {
    ($name:ident { $($extra:tt)* }) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct $name {
            $($extra)*
            pub(super) rate: Option<Spanned<Value>>,
            pub(super) delay: Option<Spanned<Value>>,
            pub(super) jitter: Option<Spanned<Value>>,
            pub(super) jitter_distribution: Option<Spanned<String>>,
            pub(super) reorder: Option<Spanned<bool>>,
            pub(super) loss: Option<Spanned<Value>>,
            pub(super) gilbert: Option<Spanned<RawGilbert>>,
            pub(super) ber: Option<Spanned<Value>>,
            pub(super) queue: Option<Spanned<Value>>,
            pub(super) queue_packets: Option<Spanned<i64>>,
            pub(super) framing: Option<Spanned<String>>,
            pub(super) trace: Option<Spanned<String>>,
            pub(super) circuit_setup: Option<Spanned<Value>>,
            pub(super) circuit_setup_max: Option<Spanned<Value>>,
            pub(super) circuit_idle: Option<Spanned<Value>>,
            pub(super) per_packet: Option<Spanned<Value>>,
            pub(super) per_byte: Option<Spanned<Value>>,
            pub(super) packet_rate: Option<Spanned<Value>>,
            pub(super) backlog: Option<Spanned<i64>>,
            pub(super) cells: Option<Spanned<i64>>,
            pub(super) discard: Option<Spanned<String>>,
            pub(super) epd_threshold: Option<Spanned<i64>>,
            pub(super) pcr: Option<Spanned<Value>>,
        }

        impl $name {
            pub(super) fn keys(&self) -> DirectionKeys<'_> {
                DirectionKeys {
                    rate: self.rate.as_ref(),
                    delay: self.delay.as_ref(),
                    jitter: self.jitter.as_ref(),
                    jitter_distribution: self.jitter_distribution.as_ref(),
                    reorder: self.reorder.as_ref(),
                    loss: self.loss.as_ref(),
                    gilbert: self.gilbert.as_ref(),
                    ber: self.ber.as_ref(),
                    queue: self.queue.as_ref(),
                    queue_packets: self.queue_packets.as_ref(),
                    framing: self.framing.as_ref(),
                    trace: self.trace.as_ref(),
                    circuit_setup: self.circuit_setup.as_ref(),
                    circuit_setup_max: self.circuit_setup_max.as_ref(),
                    circuit_idle: self.circuit_idle.as_ref(),
                    processing: processing_keys!(self),
                    cells: CellKeys {
                        cells: self.cells.as_ref(),
                        discard: self.discard.as_ref(),
                        epd_threshold: self.epd_threshold.as_ref(),
                        pcr: self.pcr.as_ref(),
                    },
                }
            }
        }
    };
}

with_direction_keys!(RawDirection {});
with_direction_keys!(RawLink {
    pub(super) name: Option<Spanned<String>>,
    pub(super) ends: Spanned<Vec<String>>,
    pub(super) preset: Option<Spanned<String>>,
    pub(super) mtu: Option<Spanned<i64>>,
    pub(super) offload: Option<bool>,
    pub(super) line_rate: Option<bool>,
    pub(super) txqueuelen: Option<Spanned<i64>>,
    pub(super) a_to_b: Option<Spanned<RawDirection>>,
    pub(super) b_to_a: Option<Spanned<RawDirection>>,
});
with_direction_keys!(RawStep {
    pub(super) at: Spanned<Value>,
    pub(super) link: Spanned<String>,
    pub(super) mtu: Option<Spanned<i64>>,
    pub(super) txqueuelen: Option<Spanned<i64>>,
});
// The `key=value` arguments of `testbed set`, as a TOML document of one key per line.
with_direction_keys!(RawSet {
    pub(super) mtu: Option<Spanned<i64>>,
    pub(super) txqueuelen: Option<Spanned<i64>>,
});

/// The keys of a change that apply to a whole link, not to a direction.
pub(super) struct WholeLinkKeys<'a> {
    pub(super) mtu: Option<&'a Spanned<i64>>,
    pub(super) txqueuelen: Option<&'a Spanned<i64>>,
}

pub(super) struct DirectionKeys<'a> {
    pub(super) rate: Option<&'a Spanned<Value>>,
    pub(super) delay: Option<&'a Spanned<Value>>,
    pub(super) jitter: Option<&'a Spanned<Value>>,
    pub(super) jitter_distribution: Option<&'a Spanned<String>>,
    pub(super) reorder: Option<&'a Spanned<bool>>,
    pub(super) loss: Option<&'a Spanned<Value>>,
    pub(super) gilbert: Option<&'a Spanned<RawGilbert>>,
    pub(super) ber: Option<&'a Spanned<Value>>,
    pub(super) queue: Option<&'a Spanned<Value>>,
    pub(super) queue_packets: Option<&'a Spanned<i64>>,
    pub(super) framing: Option<&'a Spanned<String>>,
    pub(super) trace: Option<&'a Spanned<String>>,
    pub(super) circuit_setup: Option<&'a Spanned<Value>>,
    pub(super) circuit_setup_max: Option<&'a Spanned<Value>>,
    pub(super) circuit_idle: Option<&'a Spanned<Value>>,
    pub(super) processing: ProcessingKeys<'a>,
    pub(super) cells: CellKeys<'a>,
}

/// The cell-level ATM keys of a table (see `crate::atm`).
pub(super) struct CellKeys<'a> {
    pub(super) cells: Option<&'a Spanned<i64>>,
    pub(super) discard: Option<&'a Spanned<String>>,
    pub(super) epd_threshold: Option<&'a Spanned<i64>>,
    pub(super) pcr: Option<&'a Spanned<Value>>,
}

impl CellKeys<'_> {
    /// Where the first cell key given is, and its name.
    pub(super) fn first(&self) -> Option<(std::ops::Range<usize>, &'static str)> {
        self.cells
            .map(|v| (v.span(), "cells"))
            .or_else(|| self.pcr.map(|v| (v.span(), "pcr")))
            .or_else(|| self.discard.map(|v| (v.span(), "discard")))
            .or_else(|| self.epd_threshold.map(|v| (v.span(), "epd_threshold")))
    }
}
