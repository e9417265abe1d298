//! Why the numbers are what they are: the limiting factor of one direction,
//! and what to change. Pure function of the measurements.

use crate::report::DirectionSummary;
use linkperf_proto::results::CpuUsage;
use linkperf_proto::{Protocol, TestConfig};
use linkperf_units::format_rate;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Verdict {
    /// "receiver window", "send buffer", "network", "application", "sender CPU",
    /// "receiver CPU", "loss", "rate limit", or "none observed".
    pub limited_by: String,
    pub explanation: String,
    pub advice: Option<String>,
}

fn verdict(limited_by: &str, explanation: String, advice: Option<String>) -> Verdict {
    Verdict {
        limited_by: limited_by.into(),
        explanation,
        advice,
    }
}

/// A process using this much of one core is the bottleneck for a single thread.
const CPU_SATURATED: f64 = 90.0;

pub fn diagnose(
    config: &TestConfig,
    s: &DirectionSummary,
    sender_cpu: &CpuUsage,
    receiver_cpu: &CpuUsage,
) -> Verdict {
    let per_stream_cpu = |c: &CpuUsage| c.total_percent / f64::from(config.parallel.max(1));
    if config.protocol == Protocol::Udp {
        let loss = s.received.loss_percent.unwrap_or(0.0);
        if let Some(target) = config.stream_rate() {
            let target = target as f64 * f64::from(config.parallel);
            if s.sent.bits_per_second < 0.95 * target {
                return verdict(
                    "sender",
                    format!(
                        "the sender reached {} of the {} asked",
                        format_rate(s.sent.bits_per_second),
                        format_rate(target)
                    ),
                    Some(if per_stream_cpu(sender_cpu) > CPU_SATURATED {
                        "the sender's CPU is saturated: use -P to spread streams over cores".into()
                    } else {
                        "check the sender's NIC and txqueuelen; try larger datagrams (-l)".into()
                    }),
                );
            }
        }
        if loss > 1.0 {
            let receiver_busy = per_stream_cpu(receiver_cpu) > CPU_SATURATED;
            return verdict(
                if receiver_busy {
                    "receiver CPU"
                } else {
                    "loss"
                },
                format!(
                    "{loss:.2}% of datagrams were lost: sent {} but received {}",
                    format_rate(s.sent.bits_per_second),
                    format_rate(s.received.bits_per_second)
                ),
                Some(if receiver_busy {
                    "the receiver cannot keep up: raise --rcvbuf / net.core.rmem_max, or send less (-b)".into()
                } else {
                    "the path or a device on it drops at this rate: lower -b to find the loss-free rate".into()
                }),
            );
        }
        return verdict(
            "rate limit",
            format!(
                "delivered what was offered ({}) with {loss:.2}% loss",
                format_rate(s.received.bits_per_second)
            ),
            None,
        );
    }
    let Some(limited) = s.tcp.as_ref().and_then(|t| t.limited) else {
        return verdict(
            "unknown",
            "this kernel does not report tcp_info limits (busy_time)".into(),
            None,
        );
    };
    if limited.rwnd > 0.3 {
        let rtt = s.tcp.as_ref().and_then(|t| t.rtt_ms.mean).unwrap_or(0.0);
        let bdp = s.received.bits_per_second / 8.0 * rtt / 1000.0;
        return verdict(
            "receiver window",
            format!("the sender waited for the receiver's window {:.0}% of the time", limited.rwnd * 100.0),
            Some(format!(
                "raise the receiver's buffer (-w or --rcvbuf, net.core.rmem_max, net.ipv4.tcp_rmem); at {rtt:.2} ms RTT this rate needs only {bdp:.0} bytes in flight, so the path can carry more with a larger window"
            )),
        );
    }
    if limited.sndbuf > 0.3 {
        return verdict(
            "send buffer",
            format!(
                "the sender's socket buffer was full {:.0}% of the time",
                limited.sndbuf * 100.0
            ),
            Some(
                "raise the sender's buffer (-w or --sndbuf, net.core.wmem_max, net.ipv4.tcp_wmem)"
                    .into(),
            ),
        );
    }
    if limited.app > 0.3 {
        if per_stream_cpu(sender_cpu) > CPU_SATURATED {
            return verdict(
                "sender CPU",
                format!(
                    "the sender had no data ready {:.0}% of the time and its CPU is saturated",
                    limited.app * 100.0
                ),
                Some("use larger writes (-l), --zerocopy, or -P to use more cores".into()),
            );
        }
        return verdict(
            "application",
            format!(
                "the sender had no data ready {:.0}% of the time (rate limit or slow writer)",
                limited.app * 100.0
            ),
            config
                .stream_rate()
                .is_none()
                .then(|| "check the sender's CPU and -l".into()),
        );
    }
    if per_stream_cpu(receiver_cpu) > CPU_SATURATED {
        return verdict(
            "receiver CPU",
            format!(
                "the receiver used {:.0}% of a core per stream",
                per_stream_cpu(receiver_cpu)
            ),
            Some("use -P to spread the load, or larger reads (-l)".into()),
        );
    }
    if per_stream_cpu(sender_cpu) > CPU_SATURATED {
        return verdict(
            "sender CPU",
            format!(
                "the sender used {:.0}% of a core per stream",
                per_stream_cpu(sender_cpu)
            ),
            Some("use --zerocopy, larger writes (-l), or -P".into()),
        );
    }
    let retrans = s.sent.retransmits.unwrap_or(0);
    verdict(
        "network",
        format!(
            "the congestion window was the limit {:.0}% of the time ({retrans} retransmits)",
            limited.network * 100.0
        ),
        (retrans > 0).then(|| {
            "the path is full or lossy: compare congestion controls with -C bbr / cubic".into()
        }),
    )
}
