//! A testbed link schedule (the topology's `[schedule]`, or a file as
//! `testbed set --schedule` takes) on the simulated path: each step's new
//! values of a crossed link, as the scenario's changes of one direction's
//! rate, queue and loss and the hop's delay at that time. Steps on links off
//! the path do not touch it; keys the scenario cannot change while running
//! are refused by name (docs/simulate.md).

use super::path::{self, Direction, Route};
use super::spec::SimError;
use linkperf_testbed::params::DirectionParams;
use linkperf_testbed::schedule::Schedule;
use linkperf_testbed::Topology;

/// Steps (all passes of a repeating schedule together) a simulation takes.
const MAX_STEPS: usize = 100_000;

/// One direction of one hop after a step.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkStep {
    /// When the step applies, seconds from the start of the test.
    pub at_s: f64,
    /// When the new loss reaches the packets the emulator would judge with it:
    /// the emulator decides a packet's loss as its serialisation starts, ns-3
    /// when it arrives one frame time and one delay later.
    pub loss_at_s: f64,
    pub hop: usize,
    /// The acknowledgements' direction (false: the data's).
    pub backward: bool,
    pub direction: Direction,
    /// The hop's one delay (the mean of its two directions) after the step.
    pub delay_s: f64,
    /// The topology link's label, for the result.
    pub link: String,
}

/// The scenario's `--steps` value.
pub fn steps_arg(steps: &[LinkStep]) -> String {
    let all: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{}:{}:{}:{}:{}:{}:{}:{}",
                s.at_s,
                s.loss_at_s,
                s.hop,
                u8::from(s.backward),
                s.direction.ns3_rate_bps,
                s.direction.queue_packets,
                s.direction.loss,
                s.delay_s
            )
        })
        .collect();
    all.join(",")
}

/// The step times (ns from the start) over `duration_s`, with the index of
/// each step: every pass of a repeating schedule.
fn times(schedule: &Schedule, duration_s: f64) -> Result<Vec<(u64, usize)>, SimError> {
    let end = (duration_s * 1e9) as u64;
    let mut out = Vec::new();
    let mut base = 0u64;
    loop {
        for (i, step) in schedule.steps.iter().enumerate() {
            let at = base.saturating_add(step.at_ns);
            if at >= end {
                return Ok(out);
            }
            out.push((at, i));
            if out.len() > MAX_STEPS {
                return Err(SimError::usage(format!(
                    "schedule {}: more than {MAX_STEPS} steps within {duration_s} s; a simulation takes at most that many",
                    schedule.source
                )));
            }
        }
        match schedule.repeat_ns {
            Some(period) if period > 0 => base = base.saturating_add(period),
            _ => return Ok(out),
        }
    }
}

/// Seconds a full-size frame takes on a direction (0 without a rate).
fn frame_time_s(d: &DirectionParams, mtu: u32) -> f64 {
    if d.rate_bps == 0 {
        return 0.0;
    }
    d.framing.wire_bytes(u64::from(mtu)) as f64 * 8.0 / d.rate_bps as f64
}

/// The changes `schedule` makes to the path `route` within `duration_s`.
pub fn link_steps(
    topology: &Topology,
    route: &Route,
    schedule: &Schedule,
    duration_s: f64,
) -> Result<Vec<LinkStep>, SimError> {
    // The parameters in force on each crossed link, [a_to_b, b_to_a].
    let mut now: Vec<[DirectionParams; 2]> = route
        .hops
        .iter()
        .map(|h| {
            let l = &topology.links[h.index];
            [l.a_to_b.clone(), l.b_to_a.clone()]
        })
        .collect();
    let mut out = Vec::new();
    for (at_ns, index) in times(schedule, duration_s)? {
        let change = &schedule.steps[index].change;
        let Some(hop) = route.hops.iter().position(|h| h.index == change.link) else {
            continue;
        };
        let link = &topology.links[change.link];
        let at_s = at_ns as f64 / 1e9;
        let refuse = |key: &str| {
            SimError::usage(format!(
                "testbed {}: schedule {} step {} (at {at_s} s) sets {key} on link {}, which the ns-3 scenario does not change while running (it changes rate, delay, queue, queue_packets, loss, ber, framing)",
                topology.name,
                schedule.source,
                index + 1,
                link.label()
            ))
        };
        if change.mtu.is_some() {
            return Err(refuse("mtu"));
        }
        let before = now[hop].clone();
        for dir in 0..2 {
            if let Some(p) = change.apply(dir, &before[dir]) {
                if let Some(key) = path::unmodelled(&p) {
                    return Err(refuse(key));
                }
                now[hop][dir] = p;
            }
        }
        let old_delay_s = route.hops[hop].delay_s.max(0.0);
        let old_delay_s = out
            .iter()
            .rev()
            .find(|s: &&LinkStep| s.hop == hop)
            .map_or(old_delay_s, |s| s.delay_s);
        let delay_s = (now[hop][0].delay_ns + now[hop][1].delay_ns) as f64 / 2e9;
        let data_dir = if route.hops[hop].data_a_to_b { 0 } else { 1 };
        for dir in (0..2).filter(|&d| change.directions[d]) {
            out.push(LinkStep {
                at_s,
                loss_at_s: at_s + old_delay_s + frame_time_s(&before[dir], link.mtu),
                hop,
                backward: dir != data_dir,
                direction: path::direction(&now[hop][dir], link.mtu),
                delay_s,
                link: link.label(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn topology(extra: &str) -> Topology {
        let text = format!(
            "name = \"s\"\n[[host]]\nname = \"a\"\naddress = \"10.9.0.1/24\"\n[[host]]\nname = \"b\"\naddress = \"10.9.0.2/24\"\n\
             [[link]]\nname = \"l\"\nends = [\"a\", \"b\"]\nrate = \"20M\"\ndelay = \"5ms\"\nqueue_packets = 30\n{extra}"
        );
        let dir = std::env::temp_dir().join(format!("lp-simsched-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("t{}.toml", text.len()));
        std::fs::write(&file, text).unwrap();
        Topology::from_file(Path::new(&file)).unwrap()
    }

    fn steps(extra: &str, reverse: bool, duration: f64) -> Result<Vec<LinkStep>, SimError> {
        let t = topology(extra);
        let (from, to) = if reverse { ("b", "a") } else { ("a", "b") };
        let route = path::route(&t, from, to).unwrap();
        link_steps(&t, &route, t.schedule.as_ref().unwrap(), duration)
    }

    #[test]
    fn a_loss_burst_reaches_the_data_direction_one_delay_and_frame_later() {
        let s = steps(
            "[schedule]\n[[schedule.step]]\nat = \"2s\"\nlink = \"l.a_to_b\"\nloss = \"100%\"\n\
             [[schedule.step]]\nat = \"2.004s\"\nlink = \"l.a_to_b\"\nloss = \"0%\"",
            false,
            10.0,
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].hop, s[0].backward, s[0].direction.loss),
            (0, false, 1.0)
        );
        assert_eq!(s[1].direction.loss, 0.0);
        // 5 ms one way, and 1538 bytes at 20 Mbit/s = 615.2 us.
        assert!((s[0].loss_at_s - (2.0 + 0.005 + 1538.0 * 8.0 / 20e6)).abs() < 1e-9);
        // The rest of the direction is as the link had it.
        assert_eq!((s[0].direction.queue_packets, s[0].delay_s), (30, 0.005));
    }

    #[test]
    fn reversed_data_sees_the_step_on_its_ack_direction() {
        let s = steps(
            "[schedule]\n[[schedule.step]]\nat = \"1s\"\nlink = \"l.a_to_b\"\nrate = \"10M\"\ndelay = \"15ms\"",
            true,
            10.0,
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        assert!(s[0].backward);
        assert_eq!(s[0].direction.rate_bps, 10_000_000);
        // The hop's one delay is the mean of 15 ms and the other direction's 5 ms.
        assert!((s[0].delay_s - 0.010).abs() < 1e-12);
    }

    #[test]
    fn a_repeating_schedule_is_expanded_over_the_test() {
        let s = steps(
            "[schedule]\nrepeat = \"3s\"\n[[schedule.step]]\nat = \"0s\"\nlink = \"l\"\nrate = \"20M\"\n\
             [[schedule.step]]\nat = \"1s\"\nlink = \"l\"\nrate = \"5M\"",
            false,
            7.0,
        )
        .unwrap();
        // Passes at 0, 3 and 6 s; both directions each; the step at 7 s is past the end.
        let at: Vec<f64> = s.iter().map(|x| x.at_s).collect();
        assert_eq!(at, [0.0, 0.0, 1.0, 1.0, 3.0, 3.0, 4.0, 4.0, 6.0, 6.0]);
    }

    #[test]
    fn unmodelled_keys_are_refused_by_name() {
        let e = steps(
            "[schedule]\n[[schedule.step]]\nat = \"1s\"\nlink = \"l\"\njitter = \"2ms\"",
            false,
            5.0,
        )
        .unwrap_err();
        assert!(e.usage && e.message.contains("sets jitter"), "{e}");
        let e = steps(
            "[schedule]\n[[schedule.step]]\nat = \"1s\"\nlink = \"l\"\nmtu = 9000",
            false,
            5.0,
        )
        .unwrap_err();
        assert!(e.message.contains("sets mtu"), "{e}");
        // Past the end of the test, nothing is applied and nothing refused.
        assert!(steps(
            "[schedule]\n[[schedule.step]]\nat = \"6s\"\nlink = \"l\"\njitter = \"2ms\"",
            false,
            5.0,
        )
        .unwrap()
        .is_empty());
    }
}
