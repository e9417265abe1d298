//! The resolved impairment parameters of one link direction, after presets, link-wide keys
//! and per-direction overrides have been merged. This is what the emulator runs.

use crate::atm::{default_epd_threshold, CellConfig, Discard, CELL_BITS};
use crate::framing::Framing;
use crate::impairment::{GilbertElliott, JitterDistribution};
use crate::trace::Trace;
use serde::{Deserialize, Serialize};

/// Queue length used when neither `queue` nor `queue_packets` is given (netem's default).
pub const DEFAULT_QUEUE_PACKETS: u64 = 1000;
pub const DEFAULT_MTU: u32 = 1500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionParams {
    /// Bits per second charged by the framing model; 0 means unlimited.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub jitter_distribution: JitterDistribution,
    /// When false, jitter never reorders: a packet leaves no earlier than its predecessor.
    pub reorder: bool,
    /// Bernoulli loss probability (0..1).
    pub loss: f64,
    pub gilbert: Option<GilbertElliott>,
    /// Bit error rate; a frame of L bytes is lost with 1 - (1 - ber)^(8 L).
    pub ber: f64,
    /// Drop-tail limit on bytes waiting for (or in) serialisation.
    pub queue_bytes: Option<u64>,
    /// Drop-tail limit on packets waiting for (or in) serialisation.
    pub queue_packets: Option<u64>,
    pub framing: Framing,
    /// Delivery opportunities that replace `rate` (a trace-driven link); see [`crate::trace`].
    #[serde(default)]
    pub trace: Option<Trace>,
    /// Switched circuit: set-up delay of the first packet after the circuit was released
    /// (0 = a permanent link); see [`crate::circuit`].
    #[serde(default)]
    pub circuit_setup_ns: u64,
    /// Switched circuit: when above `circuit_setup_ns`, each set-up delay is drawn
    /// uniformly between the two (seed 000's calls took 16-33 ms); 0 = fixed.
    #[serde(default)]
    pub circuit_setup_max_ns: u64,
    /// Switched circuit: released after carrying nothing for this long.
    #[serde(default = "default_circuit_idle_ns")]
    pub circuit_idle_ns: u64,
    /// Processing time the receiving end spends on each packet (0 = none); packets wait for
    /// it one at a time in a backlog; see [`crate::processing`].
    #[serde(default)]
    pub per_packet_ns: u64,
    /// Processing time per frame byte on top of `per_packet` (a copy or bus cost).
    #[serde(default)]
    pub per_byte_ns: u64,
    /// Packets the receiving end's backlog holds (waiting or being processed).
    #[serde(default = "default_backlog_packets")]
    pub backlog_packets: u64,
    /// Cell-level ATM switching (AAL5 framing only; see [`crate::atm`]): cells each VC's
    /// queue holds (0: the direction queues whole frames; with `pcr` alone, no cell limit).
    #[serde(default)]
    pub cells: u64,
    /// What a VC queue does with the rest of a frame once a cell is lost.
    #[serde(default)]
    pub discard: Discard,
    /// EPD threshold in cells (0: the queue less one largest frame).
    #[serde(default)]
    pub epd_threshold: u64,
    /// Peak cell rate of each VC, cells per second (0: the line's cell rate).
    #[serde(default)]
    pub pcr: u64,
}

/// Backlog of a processing end when none is given (Linux's `netdev_max_backlog`).
pub const DEFAULT_BACKLOG_PACKETS: u64 = 1000;

fn default_backlog_packets() -> u64 {
    DEFAULT_BACKLOG_PACKETS
}

/// Idle timeout of a switched circuit when only its set-up delay is given.
pub const DEFAULT_CIRCUIT_IDLE_NS: u64 = 10_000_000_000;

fn default_circuit_idle_ns() -> u64 {
    DEFAULT_CIRCUIT_IDLE_NS
}

impl Default for DirectionParams {
    fn default() -> Self {
        DirectionParams {
            rate_bps: 0,
            delay_ns: 0,
            jitter_ns: 0,
            jitter_distribution: JitterDistribution::Uniform,
            reorder: false,
            loss: 0.0,
            gilbert: None,
            ber: 0.0,
            queue_bytes: None,
            queue_packets: Some(DEFAULT_QUEUE_PACKETS),
            framing: Framing::Ethernet,
            trace: None,
            circuit_setup_ns: 0,
            circuit_setup_max_ns: 0,
            circuit_idle_ns: DEFAULT_CIRCUIT_IDLE_NS,
            per_packet_ns: 0,
            per_byte_ns: 0,
            backlog_packets: DEFAULT_BACKLOG_PACKETS,
            cells: 0,
            discard: Discard::None,
            epd_threshold: 0,
            pcr: 0,
        }
    }
}

impl DirectionParams {
    /// A copy whose trace (if any) keeps its summary but not its list of opportunities.
    pub fn without_trace_list(&self) -> DirectionParams {
        DirectionParams {
            trace: self.trace.as_ref().map(|t| t.summary()),
            ..self.clone()
        }
    }

    /// The receiving end's processing time for a frame of `bytes` (0: no processing).
    pub fn processing_ns(&self, bytes: u64) -> u64 {
        self.per_packet_ns + self.per_byte_ns.saturating_mul(bytes)
    }

    /// Cell-level switching of this direction, when it has it: AAL5 framing, a rate (not a
    /// trace) and `cells` or `pcr` set. `input_cell_ns` is the time between arriving cells.
    pub fn cell_config(&self, max_frame_bytes: usize, input_cell_ns: f64) -> Option<CellConfig> {
        let cell_mode = self.framing == Framing::AtmAal5
            && self.rate_bps > 0
            && self.trace.is_none()
            && (self.cells > 0 || self.pcr > 0);
        if !cell_mode {
            return None;
        }
        let limit = if self.cells > 0 { self.cells } else { u64::MAX };
        Some(CellConfig {
            cell_ns: self.line_cell_ns(),
            limit,
            discard: self.discard,
            epd_threshold: match self.epd_threshold {
                0 => default_epd_threshold(limit, max_frame_bytes),
                t => t,
            },
            pcr_gap_ns: self.pcr_gap_ns(),
            input_cell_ns,
        })
    }

    /// Least time (ns) between two cells of one VC leaving this direction: the line's cell
    /// time, or the peak cell rate's gap where that is longer (0: no rate limit).
    pub fn vc_cell_gap_ns(&self) -> f64 {
        if self.rate_bps == 0 {
            return 0.0;
        }
        self.line_cell_ns().max(self.pcr_gap_ns())
    }

    /// One cell's time on the line (ns); needs a rate.
    fn line_cell_ns(&self) -> f64 {
        CELL_BITS as f64 * 1e9 / self.rate_bps as f64
    }

    /// The peak cell rate's least gap between a VC's cells (ns; 0: no peak cell rate).
    fn pcr_gap_ns(&self) -> f64 {
        if self.pcr > 0 {
            1e9 / self.pcr as f64
        } else {
            0.0
        }
    }

    /// The line's cell rate, cells per second (0: unlimited).
    pub fn cell_rate(&self) -> f64 {
        self.rate_bps as f64 / CELL_BITS as f64
    }

    /// The processing cost in words, e.g. "100 us per packet + 8 ns per byte".
    pub fn processing_cost(&self) -> String {
        let mut s = format!(
            "{} us per packet",
            trim_float(self.per_packet_ns as f64 / 1e3)
        );
        if self.per_byte_ns > 0 {
            s.push_str(&format!(" + {} ns per byte", self.per_byte_ns));
        }
        s
    }

    /// Human summary for `status`, e.g. "40.0 Mbit/s 7.00 ms queue 200 KiB loss 1%".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.trace {
            parts.push(format!(
                "trace {} ({} average)",
                t.file,
                format_rate_exact(t.mean_rate_bps.round() as u64)
            ));
        } else if self.rate_bps > 0 {
            parts.push(format_rate_exact(self.rate_bps));
        } else {
            parts.push("unlimited".to_string());
        }
        parts.push(format!("delay {}", format_ns(self.delay_ns)));
        if self.jitter_ns > 0 {
            parts.push(format!(
                "jitter {} {:?}{}",
                format_ns(self.jitter_ns),
                self.jitter_distribution,
                if self.reorder { " reorder" } else { "" }
            ));
        }
        if self.loss > 0.0 {
            parts.push(format!("loss {}%", trim_float(self.loss * 100.0)));
        }
        if let Some(ge) = self.gilbert {
            parts.push(format!(
                "gilbert p={} r={}",
                trim_float(ge.p),
                trim_float(ge.r)
            ));
        }
        if self.ber > 0.0 {
            parts.push(format!("ber {:e}", self.ber));
        }
        match (self.queue_bytes, self.queue_packets) {
            (Some(b), Some(p)) => parts.push(format!(
                "queue {} / {p} pkts",
                linkperf_units::format_bytes(b as f64)
            )),
            (Some(b), None) => {
                parts.push(format!("queue {}", linkperf_units::format_bytes(b as f64)))
            }
            (None, Some(p)) => parts.push(format!("queue {p} pkts")),
            (None, None) => parts.push("queue unlimited".to_string()),
        }
        parts.push(self.framing.name().to_string());
        if self.circuit_setup_ns > 0 {
            let setup = if self.circuit_setup_max_ns > self.circuit_setup_ns {
                format!(
                    "{}-{}",
                    format_ns(self.circuit_setup_ns),
                    format_ns(self.circuit_setup_max_ns)
                )
            } else {
                format_ns(self.circuit_setup_ns)
            };
            parts.push(format!(
                "circuit set-up {setup} after {} idle",
                format_ns(self.circuit_idle_ns)
            ));
        }
        if self.per_packet_ns > 0 || self.per_byte_ns > 0 {
            parts.push(format!(
                "processing {}, backlog {} pkts",
                self.processing_cost(),
                self.backlog_packets
            ));
        }
        if self.cells > 0 || self.pcr > 0 {
            parts.push(self.cell_summary());
        }
        parts.join(", ")
    }

    /// e.g. "256 cells per VC, discard epd (threshold 64 cells), pcr 235849 cells/s".
    fn cell_summary(&self) -> String {
        let mut s = match self.cells {
            0 => "cells unlimited per VC".to_string(),
            c => format!("{c} cells per VC"),
        };
        if self.discard != Discard::None {
            s.push_str(&format!(", discard {}", self.discard.name()));
        }
        if self.discard == Discard::Epd && self.epd_threshold > 0 {
            s.push_str(&format!(" (threshold {} cells)", self.epd_threshold));
        }
        if self.pcr > 0 {
            s.push_str(&format!(", pcr {} cells/s", self.pcr));
        }
        s
    }
}

/// One layer of settings (a preset, the link table, a direction table, a `testbed set` or a
/// schedule step); `None` = not set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionOverrides {
    pub rate_bps: Option<u64>,
    pub delay_ns: Option<u64>,
    pub jitter_ns: Option<u64>,
    pub jitter_distribution: Option<JitterDistribution>,
    pub reorder: Option<bool>,
    pub loss: Option<f64>,
    pub gilbert: Option<GilbertElliott>,
    pub ber: Option<f64>,
    /// Byte limit; `Some(0)` means no byte limit.
    pub queue_bytes: Option<u64>,
    /// Packet limit; `Some(0)` means no packet limit.
    pub queue_packets: Option<u64>,
    pub framing: Option<Framing>,
    pub trace: Option<Trace>,
    pub circuit_setup_ns: Option<u64>,
    pub circuit_setup_max_ns: Option<u64>,
    pub circuit_idle_ns: Option<u64>,
    pub per_packet_ns: Option<u64>,
    pub per_byte_ns: Option<u64>,
    pub backlog_packets: Option<u64>,
    pub cells: Option<u64>,
    pub discard: Option<Discard>,
    pub epd_threshold: Option<u64>,
    pub pcr: Option<u64>,
}

impl DirectionOverrides {
    /// Applies this layer on top of `params`. A layer that sets either queue limit replaces
    /// the whole queue specification, so `queue = "200K"` alone means "200 KiB, no packet cap".
    /// A layer that sets `trace` makes the link trace-driven; one that sets `rate` (and no
    /// trace) makes it rate-driven again.
    pub fn apply_to(&self, params: &mut DirectionParams) {
        if let Some(v) = self.rate_bps {
            params.rate_bps = v;
            params.trace = None;
        }
        if let Some(t) = &self.trace {
            params.trace = Some(t.clone());
        }
        if let Some(v) = self.delay_ns {
            params.delay_ns = v;
        }
        if let Some(v) = self.jitter_ns {
            params.jitter_ns = v;
        }
        if let Some(v) = self.jitter_distribution {
            params.jitter_distribution = v;
        }
        if let Some(v) = self.reorder {
            params.reorder = v;
        }
        if let Some(v) = self.loss {
            params.loss = v;
        }
        if let Some(v) = self.gilbert {
            params.gilbert = Some(v);
        }
        if let Some(v) = self.ber {
            params.ber = v;
        }
        if self.queue_bytes.is_some() || self.queue_packets.is_some() {
            params.queue_bytes = self.queue_bytes.filter(|&b| b > 0);
            params.queue_packets = self.queue_packets.filter(|&p| p > 0);
        }
        if let Some(v) = self.framing {
            params.framing = v;
        }
        if let Some(v) = self.circuit_setup_ns {
            params.circuit_setup_ns = v;
        }
        if let Some(v) = self.circuit_setup_max_ns {
            params.circuit_setup_max_ns = v;
        }
        if let Some(v) = self.circuit_idle_ns {
            params.circuit_idle_ns = v;
        }
        if let Some(v) = self.per_packet_ns {
            params.per_packet_ns = v;
        }
        if let Some(v) = self.per_byte_ns {
            params.per_byte_ns = v;
        }
        if let Some(v) = self.backlog_packets {
            params.backlog_packets = v;
        }
        if let Some(v) = self.cells {
            params.cells = v;
        }
        if let Some(v) = self.discard {
            params.discard = v;
        }
        if let Some(v) = self.epd_threshold {
            params.epd_threshold = v;
        }
        if let Some(v) = self.pcr {
            params.pcr = v;
        }
    }
}

/// Rates keep their significant digits (149.76 Mbit/s, not 150): presets are exact numbers.
fn format_rate_exact(bps: u64) -> String {
    let (value, unit) = match bps {
        b if b >= 1_000_000_000 => (b as f64 / 1e9, "Gbit/s"),
        b if b >= 1_000_000 => (b as f64 / 1e6, "Mbit/s"),
        b if b >= 1_000 => (b as f64 / 1e3, "kbit/s"),
        b => (b as f64, "bit/s"),
    };
    format!("{} {unit}", trim_float(value))
}

fn format_ns(ns: u64) -> String {
    format!("{} ms", trim_float(ns as f64 / 1e6))
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_setting_the_queue_replaces_the_whole_queue_spec() {
        let mut p = DirectionParams::default();
        DirectionOverrides {
            queue_bytes: Some(1000),
            ..Default::default()
        }
        .apply_to(&mut p);
        assert_eq!((p.queue_bytes, p.queue_packets), (Some(1000), None));
        DirectionOverrides {
            rate_bps: Some(5),
            ..Default::default()
        }
        .apply_to(&mut p);
        assert_eq!(
            (p.queue_bytes, p.queue_packets, p.rate_bps),
            (Some(1000), None, 5)
        );
        DirectionOverrides {
            queue_packets: Some(0),
            ..Default::default()
        }
        .apply_to(&mut p);
        assert_eq!((p.queue_bytes, p.queue_packets), (None, None));
    }

    #[test]
    fn summary_names_the_interesting_parameters() {
        let p = DirectionParams {
            rate_bps: 40_000_000,
            delay_ns: 7_000_000,
            loss: 0.01,
            queue_bytes: Some(204_800),
            queue_packets: None,
            ..Default::default()
        };
        assert_eq!(
            p.summary(),
            "40 Mbit/s, delay 7 ms, loss 1%, queue 200 KiB, ethernet"
        );
    }
}
