//! Line-rate back-pressure (issue 13 item 1): a host's interface on a `line_rate` link sends
//! no faster than the link, like a NIC. An HTB qdisc on the host's device shapes at the rate
//! of the direction leaving the host, charged with that direction's framing; its queue holds
//! `txqueuelen` packets. A sender fills its socket buffer while its packets wait there and
//! then blocks, as at a real NIC, instead of the emulator dropping the excess. What the
//! qdisc itself drops is read back as the host's own (sender-side) drops.
//!
//! A host with a send cost (`send_per_packet`, `send_per_byte`) gets a token bucket at the
//! root that charges every packet the host's time for it, above the line's HTB if it has
//! one. The host's devices carry `gso_max_segs 1` (set at `up`), so TCP hands the qdisc
//! one segment per packet and each is charged its fixed cost; linkperf's UDP senders do
//! not batch datagrams on such a device either.

use crate::error::TestbedError;
use crate::framing::Framing;
use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};

/// Default `txqueuelen` of a line-rate host interface (Linux's default for Ethernet).
pub const DEFAULT_TXQUEUELEN: u32 = 1000;

pub(crate) fn tc_program() -> &'static str {
    ["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("tc")
}

fn tc(netns: &str, args: &[String]) -> Result<String, TestbedError> {
    let out = Command::new(crate::netns::ip_program())
        .args(["netns", "exec", netns, tc_program()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TestbedError::runtime(format!("cannot run `tc` (iproute2): {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TestbedError::runtime(format!(
            "`tc {}` in {netns} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// How HTB charges a frame of L bytes (Ethernet header + IP packet) so that it matches the
/// emulator's framing model: `overhead`, `mpu` (after overhead) and `linklayer` arguments.
fn charge_args(framing: Framing) -> Vec<String> {
    let words: &[&str] = match framing {
        // max(IP, 46) + 38 = L + 24 (FCS 4, preamble 8, gap 12), at least 84.
        Framing::Ethernet => &["overhead", "24", "mpu", "84"],
        // ceil((IP + 16) / 48) cells of 53 bytes = ceil((L + 2) / 48) x 53.
        Framing::AtmAal5 => &["overhead", "2", "linklayer", "atm"],
        // IP bytes: HTB cannot take off the 14-byte header, so it charges them (slightly slow).
        Framing::None => &[],
    };
    words.iter().map(|w| w.to_string()).collect()
}

/// Bytes HTB may send at once after its timer woke late: BURST_NS at the rate, and at least
/// two 64 KiB super-packets. tc's default on a tickless kernel is one MTU, so every late
/// wake-up of a loaded machine would be line time lost (1 % at 100 Mbit/s, measured).
fn burst_bytes(rate_bps: u64) -> u64 {
    (rate_bps as f64 / 8.0 * BURST_NS as f64 / 1e9)
        .ceil()
        .max(2.0 * 65_536.0) as u64
}

/// Timer lateness HTB makes up for (a loaded 2-core machine wakes a millisecond or two late).
const BURST_NS: u64 = 2_000_000;

/// A host's cost of sending a packet of L bytes (Ethernet header and IP packet):
/// `per_packet_ns + per_byte_ns x L`. A sender blocks while its packets wait for it,
/// as a slow host's sender did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendCost {
    pub per_packet_ns: u64,
    pub per_byte_ns: u64,
}

impl SendCost {
    /// Seconds the host takes to send a packet of `frame_bytes` (Ethernet header included).
    pub fn seconds(&self, frame_bytes: u64) -> f64 {
        (self.per_packet_ns + self.per_byte_ns * frame_bytes) as f64 / 1e9
    }
}

/// What a host interface's qdisc holds back: the line it sends on (`line_rate`: rate and
/// framing) and the host's own send cost, whichever is slower for each packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shaper {
    pub line: Option<(u64, Framing)>,
    pub cost: Option<SendCost>,
    /// The queue in front of them, packets.
    pub txqueuelen: u32,
}

impl Shaper {
    /// The class the packet queue hangs from: HTB's class, or the token bucket's own, or
    /// (both) the HTB under the token bucket.
    fn leaf_parent(&self) -> &'static str {
        match (self.line, self.cost) {
            (Some(_), Some(_)) => "2:1",
            _ => "1:1",
        }
    }

    /// The `tc` commands that build the shaper on `device`.
    pub fn commands(&self, device: &str) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|w| w.to_string()).collect::<Vec<String>>();
        let mut cmds = Vec::new();
        // The host's cost at the root: a packet leaves when the host has spent its time on
        // it. The line (HTB) under it, so each packet waits for both.
        if let Some(cost) = self.cost {
            let mut tbf = s(&["qdisc", "replace", "dev", device, "root", "handle", "1:"]);
            tbf.extend(cost_args(cost));
            cmds.push(tbf);
        }
        if let Some((rate_bps, framing)) = self.line {
            let (place, handle): (&[&str], _) = match self.cost {
                Some(_) => (&["parent", "1:1"], "2:"),
                None => (&["root"], "1:"),
            };
            let mut htb = s(&["qdisc", "replace", "dev", device]);
            htb.extend(s(place));
            htb.extend(s(&["handle", handle, "htb", "default", "1"]));
            cmds.push(htb);
            let rate = format!("{rate_bps}bit");
            let burst = burst_bytes(rate_bps).to_string();
            let classid = format!("{handle}1");
            let mut class = s(&[
                "class", "add", "dev", device, "parent", handle, "classid", &classid, "htb",
                "rate", &rate, "ceil", &rate, "burst", &burst, "cburst", &burst,
            ]);
            class.extend(charge_args(framing));
            cmds.push(class);
        }
        // The leaf queue holds txqueuelen packets, as a NIC's qdisc does. The device's own
        // txqueuelen stays large: on a TAP it also sizes the ring the emulator reads, which
        // a NIC has apart from its qdisc (a ring of 2 dropped packets the emulator was
        // about to read).
        cmds.push(s(&[
            "qdisc",
            "add",
            "dev",
            device,
            "parent",
            self.leaf_parent(),
            "handle",
            "10:",
            "pfifo",
            "limit",
            &self.txqueuelen.to_string(),
        ]));
        cmds
    }
}

/// A token bucket that charges a packet of L bytes `per_packet + per_byte x L`: the rate is
/// one byte per `per_byte`, and the fixed part is `per_packet / per_byte` bytes of overhead.
/// Its burst covers BURST_NS of the host's time (late timer wake-ups made up) and at least
/// two of the largest packets with their overhead.
fn cost_args(cost: SendCost) -> Vec<String> {
    let rate_bps = 8_000_000_000 / cost.per_byte_ns.max(1);
    let overhead = (cost.per_packet_ns as f64 / cost.per_byte_ns.max(1) as f64).round() as u64;
    let burst = burst_bytes(rate_bps).max(2 * (overhead + 65_536));
    [
        "tbf".to_string(),
        "rate".into(),
        format!("{rate_bps}bit"),
        "burst".into(),
        burst.to_string(),
        // The packets wait in the pfifo below; the bucket's own byte limit is never reached.
        "limit".into(),
        (burst * 4).to_string(),
        "overhead".into(),
        overhead.to_string(),
    ]
    .into()
}

/// Builds `shaper` on `device` in `netns`.
pub fn install(netns: &str, device: &str, shaper: &Shaper) -> Result<(), TestbedError> {
    for args in shaper.commands(device) {
        tc(netns, &args)?;
    }
    Ok(())
}

/// Gives a shaped `device` in `netns` a queue of `packets` (its leaf pfifo's limit;
/// packets already queued stay, a shorter queue refuses arrivals until it has drained).
pub fn set_queue(
    netns: &str,
    device: &str,
    shaper: &Shaper,
    packets: u32,
) -> Result<(), TestbedError> {
    let n = packets.to_string();
    let args = [
        "qdisc",
        "change",
        "dev",
        device,
        "parent",
        shaper.leaf_parent(),
        "handle",
        "10:",
        "pfifo",
        "limit",
        &n,
    ];
    tc(netns, &args.map(String::from)).map(|_| ())
}

/// Packets the host's own interface dropped (its qdisc was full): sender-side drops.
pub fn dropped(netns: &str, device: &str) -> Result<u64, TestbedError> {
    let text = tc(
        netns,
        &["-s", "qdisc", "show", "dev", device]
            .iter()
            .map(|w| w.to_string())
            .collect::<Vec<_>>(),
    )?;
    Ok(root_dropped(&text))
}

/// The `dropped N` of the first (root) qdisc in `tc -s qdisc show` output; a root HTB
/// counts its classes' drops.
fn root_dropped(text: &str) -> u64 {
    text.split_whitespace()
        .skip_while(|w| w.trim_start_matches('(') != "dropped")
        .nth(1)
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_qdisc_drop_count_is_read() {
        let text = "qdisc htb 1: root refcnt 2 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000\n Sent 1514 bytes 1 pkt (dropped 7, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\nqdisc pfifo 10: parent 1:1 limit 1000p\n Sent 1514 bytes 1 pkt (dropped 7, overlimits 0 requeues 0)\n";
        assert_eq!(root_dropped(text), 7);
    }

    #[test]
    fn ethernet_charges_the_emulator_s_wire_bytes() {
        let shaper = Shaper {
            line: Some((150_000_000, Framing::Ethernet)),
            cost: None,
            txqueuelen: 100,
        };
        let cmds = shaper.commands("eth0");
        assert_eq!(
            cmds[0].join(" "),
            "qdisc replace dev eth0 root handle 1: htb default 1"
        );
        assert_eq!(
            cmds[1][9..].join(" "),
            "rate 150000000bit ceil 150000000bit burst 131072 cburst 131072 overhead 24 mpu 84"
        );
        assert_eq!(
            cmds[2].join(" "),
            "qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 100"
        );
    }

    #[test]
    fn a_send_cost_is_a_token_bucket_of_bytes_and_overhead_above_the_line() {
        // 258 us + 46 ns per byte: one byte per 46 ns (173.9 Mbit/s) and 5609 bytes' worth
        // (258 us / 46 ns) of overhead per packet.
        let cost = SendCost {
            per_packet_ns: 258_000,
            per_byte_ns: 46,
        };
        let alone = Shaper {
            line: None,
            cost: Some(cost),
            txqueuelen: 1000,
        };
        let cmds = alone.commands("eth0");
        assert_eq!(
            cmds[0].join(" "),
            "qdisc replace dev eth0 root handle 1: tbf rate 173913043bit burst 142290 limit 569160 overhead 5609"
        );
        assert_eq!(
            cmds[1].join(" "),
            "qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 1000"
        );
        let both = Shaper {
            line: Some((155_520_000, Framing::AtmAal5)),
            ..alone
        };
        let cmds = both.commands("eth0");
        assert_eq!(cmds.len(), 4);
        assert_eq!(
            cmds[1].join(" "),
            "qdisc replace dev eth0 parent 1:1 handle 2: htb default 1"
        );
        assert!(cmds[2]
            .join(" ")
            .starts_with("class add dev eth0 parent 2: classid 2:1 htb rate 155520000bit"));
        assert!(cmds[2].join(" ").ends_with("overhead 2 linklayer atm"));
        assert_eq!(
            cmds[3].join(" "),
            "qdisc add dev eth0 parent 2:1 handle 10: pfifo limit 1000"
        );
    }
}
