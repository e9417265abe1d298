//! Line-rate back-pressure (issue 13 item 1): a host's interface on a `line_rate` link sends
//! no faster than the link, like a NIC. An HTB qdisc on the host's device shapes at the rate
//! of the direction leaving the host, charged with that direction's framing; its queue holds
//! `txqueuelen` packets. A sender fills its socket buffer while its packets wait there and
//! then blocks, as at a real NIC, instead of the emulator dropping the excess. What the
//! qdisc itself drops is read back as the host's own (sender-side) drops.

use crate::error::TestbedError;
use crate::framing::Framing;
use std::process::{Command, Stdio};

/// Default `txqueuelen` of a line-rate host interface (Linux's default for Ethernet).
pub const DEFAULT_TXQUEUELEN: u32 = 1000;

fn tc_program() -> &'static str {
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

/// The `tc` commands that make `device` send at `rate_bps` with this framing, from a queue
/// of `txqueuelen` packets.
pub fn shaper_commands(
    device: &str,
    rate_bps: u64,
    framing: Framing,
    txqueuelen: u32,
) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|w| w.to_string()).collect::<Vec<String>>();
    let rate = format!("{rate_bps}bit");
    let limit = txqueuelen.to_string();
    let burst = burst_bytes(rate_bps).to_string();
    let mut class = s(&[
        "class", "add", "dev", device, "parent", "1:", "classid", "1:1", "htb", "rate", &rate,
        "ceil", &rate, "burst", &burst, "cburst", &burst,
    ]);
    class.extend(charge_args(framing));
    vec![
        s(&[
            "qdisc", "replace", "dev", device, "root", "handle", "1:", "htb", "default", "1",
        ]),
        class,
        // The leaf queue holds txqueuelen packets, as a NIC's qdisc does. The device's own
        // txqueuelen stays large: on a TAP it also sizes the ring the emulator reads, which
        // a NIC has apart from its qdisc (a ring of 2 dropped packets the emulator was
        // about to read).
        s(&[
            "qdisc", "add", "dev", device, "parent", "1:1", "handle", "10:", "pfifo", "limit",
            &limit,
        ]),
    ]
}

/// Shapes `device` in `netns`, with a queue of `txqueuelen` packets.
pub fn install(
    netns: &str,
    device: &str,
    rate_bps: u64,
    framing: Framing,
    txqueuelen: u32,
) -> Result<(), TestbedError> {
    for args in shaper_commands(device, rate_bps, framing, txqueuelen) {
        tc(netns, &args)?;
    }
    Ok(())
}

/// Gives a shaped `device` in `netns` a queue of `packets` (its HTB leaf's pfifo limit;
/// packets already queued stay, a shorter queue refuses arrivals until it has drained).
pub fn set_queue(netns: &str, device: &str, packets: u32) -> Result<(), TestbedError> {
    let n = packets.to_string();
    let args = [
        "qdisc", "change", "dev", device, "parent", "1:1", "handle", "10:", "pfifo", "limit", &n,
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
        let cmds = shaper_commands("eth0", 150_000_000, Framing::Ethernet, 100);
        assert_eq!(
            cmds[1][9..].join(" "),
            "rate 150000000bit ceil 150000000bit burst 131072 cburst 131072 overhead 24 mpu 84"
        );
        assert_eq!(cmds[2][8..].join(" "), "pfifo limit 100");
    }
}
