//! The formulas the model rests on, each a pure function of its inputs with
//! its source named (docs/model.md gives them in full): link-layer framing,
//! bit errors to packet loss, Linux's window from a socket buffer, and the
//! loss-throughput responses of Reno (Mathis et al., Padhye et al.) and CUBIC
//! (RFC 9438).

use serde::Serialize;

/// The link layer that frames each IP packet on the bottleneck medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    /// The rate is an IP-layer rate: nothing is added.
    None,
    /// IEEE 802.3: header 14, FCS 4, preamble and SFD 8, inter-frame gap 12,
    /// the payload padded to 46 bytes.
    #[default]
    Ethernet,
    /// RFC 2684 LLC/SNAP (8 bytes) over AAL5 (8-byte trailer), padded to whole
    /// 48-byte cell payloads, each cell 53 bytes on the wire.
    AtmAal5,
    /// PPP in HDLC-like framing (RFC 1662): flag 1 (shared between frames),
    /// address 1, control 1, protocol 2, FCS-16 2; no byte stuffing counted.
    Ppp,
}

/// The names `--framing` and topology files accept.
pub const FRAMING_NAMES: &str = "ethernet, atm-aal5 (or atm), ppp, none";

impl Framing {
    pub fn from_name(name: &str) -> Option<Framing> {
        match name {
            "none" => Some(Framing::None),
            "ethernet" => Some(Framing::Ethernet),
            "atm-aal5" | "atm" => Some(Framing::AtmAal5),
            "ppp" => Some(Framing::Ppp),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Framing::None => "none",
            Framing::Ethernet => "ethernet",
            Framing::AtmAal5 => "atm-aal5",
            Framing::Ppp => "ppp",
        }
    }

    /// Bytes the medium carries for one IP packet of `ip` bytes.
    /// The emulator's framing (`linkperf_testbed::framing`) where it has the
    /// medium, so the model and the testbed charge the same bytes.
    pub fn wire_bytes(self, ip: u64) -> u64 {
        use linkperf_testbed::framing::Framing as Emulated;
        match self {
            Framing::None => Emulated::None.wire_bytes(ip),
            Framing::Ethernet => Emulated::Ethernet.wire_bytes(ip),
            Framing::AtmAal5 => Emulated::AtmAal5.wire_bytes(ip),
            Framing::Ppp => ip + 7,
        }
    }
}

/// Bytes of link header a bit error can hit besides the IP packet: the
/// 14-byte MAC header the testbed's emulator counts (docs/testbed.md, `ber`).
pub const BER_HEADER_BYTES: u64 = 14;

/// Probability that a frame of `bytes` bytes has at least one bit error when
/// bits fail independently with probability `ber`: 1 - (1 - BER)^(8 L).
pub fn frame_loss_from_ber(ber: f64, bytes: u64) -> f64 {
    // ln_1p/exp_m1 keep precision for BER near 1e-9.
    -((8.0 * bytes as f64) * (-ber).ln_1p()).exp_m1()
}

/// The fragments of an IP datagram of `ip_payload` bytes (transport header
/// included) sent with `mtu`, as IP packet sizes (RFC 791: fragment data in
/// multiples of 8 bytes, 20-byte header each).
pub fn ipv4_fragments(ip_payload: u64, mtu: u64) -> Vec<u64> {
    let per = (mtu - 20) / 8 * 8;
    let mut left = ip_payload;
    let mut out = Vec::new();
    while left > per {
        out.push(per + 20);
        left -= per;
    }
    out.push(left + 20);
    out
}

/// The receive window Linux offers from a socket buffer of `buffer` bytes
/// (already doubled by the kernel): `tcp_win_from_space`. Kernels before 6.6
/// keep `buffer - buffer >> scale` for `tcp_adv_win_scale` > 0 and
/// `buffer >> -scale` otherwise; this is that share.
pub fn adv_win_scale_share(scale: i32) -> f64 {
    if scale > 0 {
        1.0 - 0.5f64.powi(scale)
    } else {
        0.5f64.powi(-scale)
    }
}

/// Mathis, Semke, Mahdavi, Ott 1997 ("The macroscopic behavior of the TCP
/// congestion avoidance algorithm", CCR 27(3)): BW = MSS / RTT * C / sqrt(p),
/// C = sqrt(3 / (2 b)), in bytes per second; `b` packets acknowledged per ACK.
pub fn mathis(mss: f64, rtt: f64, p: f64, b: f64) -> f64 {
    mss / rtt * (3.0 / (2.0 * b)).sqrt() / p.sqrt()
}

/// Padhye, Firoiu, Towsley, Kurose 1998 ("Modeling TCP throughput: a simple
/// model and its empirical validation", SIGCOMM), eq. 32, the full model with
/// timeouts and the receiver's window: packets per second, times `mss` for
/// bytes per second. `t0` is the retransmission timeout, `wmax` the window in
/// packets (infinite when none limits).
pub fn padhye(mss: f64, rtt: f64, p: f64, b: f64, t0: f64, wmax: f64) -> f64 {
    let congestion = rtt * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    mss * (wmax / rtt).min(1.0 / congestion)
}

/// Linux Reno with SACK under random loss p per packet, in bytes per second:
/// the sawtooth of Mathis et al. and Padhye et al. (the window grows one
/// segment per round trip, b = 1, and halves at each loss) plus the round trip
/// Linux spends in recovery at the halved window without growing (PRR sends
/// about W/2 while the retransmission is acknowledged), and no timeouts: SACK
/// with RACK-TLP (RFC 8985) repairs single losses without an RTO (measured:
/// TcpExtTCPTimeouts stayed 0 over about 800 recoveries, docs/model.md).
/// One cycle carries 1/p packets, 3W²/8 while the window grows from W/2 to W
/// and W/2 in recovery, in W/2 + 1 round trips; `wmax` caps the window.
pub fn reno_sack(mss: f64, rtt: f64, p: f64, wmax: f64) -> f64 {
    // 3/8 W² + W/2 - 1/p = 0, the positive root.
    let w = (-0.5 + (0.25 + 1.5 / p).sqrt()) / 0.75;
    let per_rtt = (1.0 / p) / (w / 2.0 + 1.0);
    mss * per_rtt.min(wmax) / rtt
}

/// CUBIC's constants (RFC 9438 section 4.6 and 4.5).
pub const CUBIC_C: f64 = 0.4;
pub const CUBIC_BETA: f64 = 0.7;

/// RFC 9438 section 5.1 (RFC 8312 section 5.1): CUBIC's average window under
/// a periodic loss rate p is ((C (3 + beta)) / (4 (1 - beta)))^(1/4) *
/// RTT^(3/4) / p^(3/4) packets (RTT in seconds); bytes per second here.
pub fn cubic_window_response(mss: f64, rtt: f64, p: f64) -> f64 {
    let k = (CUBIC_C * (3.0 + CUBIC_BETA) / (4.0 * (1.0 - CUBIC_BETA))).powf(0.25);
    let window = k * rtt.powf(0.75) / p.powf(0.75);
    window * mss / rtt
}

#[cfg(test)]
mod tests {
    //! Hand-computed values from the formulas as their sources print them.
    use super::*;

    fn close(got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= rel * want.abs(),
            "{got} is not {want} within {rel}"
        );
    }

    #[test]
    fn framing_charges_the_published_overheads() {
        // 1500-byte IP packet in Ethernet: 1500 + 38 = 1538.
        assert_eq!(Framing::Ethernet.wire_bytes(1500), 1538);
        // A 28-byte packet is padded to 46: 46 + 38 = 84 (the 64-byte minimum frame + 20).
        assert_eq!(Framing::Ethernet.wire_bytes(28), 84);
        // ATM: 1500 + 16 = 1516 -> 32 cells (1536 bytes of payload) -> 1696 bytes.
        assert_eq!(Framing::AtmAal5.wire_bytes(1500), 32 * 53);
        // 9180 + 16 = 9196 -> 192 cells -> 10176 bytes (docs/testbed.md's OC-3c example).
        assert_eq!(Framing::AtmAal5.wire_bytes(9180), 10176);
        // 32 + 16 = 48: exactly one cell.
        assert_eq!(Framing::AtmAal5.wire_bytes(32), 53);
        assert_eq!(Framing::AtmAal5.wire_bytes(33), 106);
        assert_eq!(Framing::Ppp.wire_bytes(1500), 1507);
        assert_eq!(Framing::None.wire_bytes(1500), 1500);
        assert_eq!(Framing::from_name("atm"), Some(Framing::AtmAal5));
        assert_eq!(Framing::from_name("token-ring"), None);
    }

    #[test]
    fn bit_errors_lose_frames_by_their_length() {
        // 1e-6 over 1514 bytes: 1 - (1 - 1e-6)^12112 = 0.0120390.
        close(frame_loss_from_ber(1e-6, 1514), 0.0120390, 1e-5);
        assert_eq!(frame_loss_from_ber(0.0, 1514), 0.0);
        // Small BER: about 8 L BER.
        close(frame_loss_from_ber(1e-10, 1000), 8e-7, 1e-5);
    }

    #[test]
    fn fragments_carry_multiples_of_eight_bytes() {
        // 4000 bytes of UDP payload + 8 header over 1500: 1480 + 1480 + 1048.
        assert_eq!(ipv4_fragments(4008, 1500), vec![1500, 1500, 1068]);
        assert_eq!(ipv4_fragments(1480, 1500), vec![1500]);
        // MTU 1006: fragments of 984 data bytes (986 rounded down to 8).
        assert_eq!(ipv4_fragments(1000, 1006), vec![1004, 36]);
    }

    #[test]
    fn adv_win_scale_shares() {
        assert_eq!(adv_win_scale_share(1), 0.5);
        assert_eq!(adv_win_scale_share(2), 0.75);
        assert_eq!(adv_win_scale_share(-2), 0.25);
        assert_eq!(adv_win_scale_share(0), 1.0);
    }

    #[test]
    fn reno_with_sack_by_hand() {
        // p = 2 %: 0.375 W² + 0.5 W = 50 -> W = (-0.5 + sqrt(75.25)) / 0.75
        // = 10.899568; 50 packets in 6.449784 round trips = 7.752198 per RTT.
        close(
            reno_sack(1448.0, 0.04, 0.02, f64::INFINITY),
            1448.0 * 7.752198 / 0.04,
            1e-6,
        );
        // A window of 5 segments caps it.
        close(
            reno_sack(1448.0, 0.04, 0.02, 5.0),
            1448.0 * 5.0 / 0.04,
            1e-12,
        );
    }

    #[test]
    fn mathis_padhye_and_cubic_by_hand() {
        // Mathis: 1448 B / 20 ms * sqrt(1.5) / sqrt(0.01) = 72400 * 1.224745 * 10
        // = 886,715 B/s.
        close(mathis(1448.0, 0.02, 0.01, 1.0), 886_715.0, 1e-5);
        // Padhye, b = 1, p = 0.01, RTT 20 ms, T0 = 220 ms, no window limit:
        // RTT sqrt(2p/3) = 0.02 * 0.0816497 = 0.00163299;
        // 3 sqrt(3p/8) = 3 * 0.0612372 = 0.183712; T0 * that * p * (1 + 0.0032)
        // = 0.22 * 0.183712 * 0.01 * 1.0032 = 0.000405459; sum 0.00203845 s
        // -> 490.568 packets/s -> 710,343 B/s.
        close(
            padhye(1448.0, 0.02, 0.01, 1.0, 0.22, f64::INFINITY),
            710_343.0,
            1e-5,
        );
        // The window term binds when Wmax/RTT is smaller: 10 packets / 20 ms = 500/s.
        close(padhye(1448.0, 0.02, 1e-6, 1.0, 0.22, 10.0), 724_000.0, 1e-9);
        // CUBIC, p = 1e-4, RTT 0.1 s: (0.4 * 3.7 / 1.2)^0.25 = 1.053837;
        // 0.1^0.75 = 0.177828; 1e-4^0.75 = 1e-3 -> 187.400 packets
        // -> 187.400 * 1448 / 0.1 = 2,713,555 B/s.
        close(cubic_window_response(1448.0, 0.1, 1e-4), 2_713_555.0, 1e-5);
    }
}
