//! Human output of `linkperf rr`, in the style of the throughput client's:
//! a header, a compact interval table and a summary read at a glance.

use super::report::{RrInterval, RrReport, RrSummary, SignedStats};
use super::stats::Percentiles;
use super::{Mode, Plan};
use linkperf_proto::Protocol;
use linkperf_units::{format_bytes, format_rate};
use std::fmt::Write;

pub fn header(plan: &Plan) -> String {
    let proto = if plan.protocol == Protocol::Udp {
        "UDP"
    } else {
        "TCP"
    };
    let sizes = match &plan.mode {
        Mode::Sizes { sizes, echo } => {
            let list: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
            if *echo {
                format!("sizes {} B each way", list.join(","))
            } else {
                format!(
                    "request sizes {} B, response {}",
                    list.join(","),
                    format_bytes(plan.response as f64)
                )
            }
        }
        _ => format!(
            "request {}, response {}",
            format_bytes(plan.request as f64),
            format_bytes(plan.response as f64)
        ),
    };
    let pace = match plan.rate {
        Some(r) => format!("{} transactions/s", trim(r)),
        None => "back to back".into(),
    };
    let length = match (&plan.mode, plan.count) {
        (Mode::Cold { idle }, n) => format!(
            "{} rounds after {} s idle",
            n.unwrap_or(super::DEFAULT_COLD_ROUNDS),
            trim(idle.as_secs_f64())
        ),
        (Mode::Sizes { .. }, Some(n)) => format!("{n} transactions per size"),
        (_, Some(n)) => format!("{n} transactions"),
        (Mode::Load(l), None) => format!(
            "{} s idle, then under load `{}`",
            trim(plan.duration.as_secs_f64()),
            l.args
        ),
        (_, None) => format!("{} s", trim(plan.duration.as_secs_f64())),
    };
    let what = match plan.mode {
        Mode::Connect => ", connect + request/response + close each",
        _ => "",
    };
    let host = if plan.host.contains(':') {
        format!("[{}]", plan.host)
    } else {
        plan.host.clone()
    };
    format!(
        "linkperf {} rr -> {host}:{}: {proto}, {sizes}, {} in flight, {pace}, {length}{what}",
        env!("CARGO_PKG_VERSION"),
        plan.port,
        plan.burst
    )
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Four significant digits, however small.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// A latency in ms with precision that suits its size.
fn ms(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

pub fn interval_header(udp: bool) -> String {
    let mut s = format!(
        "{:>15}  {:>11}  {:>10}  {:>10}  {:>10}  {:>10}",
        "interval", "trans/s", "p50 ms", "p99 ms", "max ms", "mean ms"
    );
    if udp {
        let _ = write!(s, "  {:>6}", "lost");
    }
    s
}

pub fn interval(i: &RrInterval, udp: bool) -> String {
    let span = format!("{:.2}-{:.2} s", i.start, i.end);
    let r = |f: fn(&Percentiles) -> f64| i.rtt_ms.as_ref().map(f).map(ms).unwrap_or("-".into());
    let mut s = format!(
        "{span:>15}  {:>11.0}  {:>10}  {:>10}  {:>10}  {:>10}",
        i.transactions_per_second,
        r(|p| p.p50),
        r(|p| p.p99),
        r(|p| p.max),
        r(|p| p.mean),
    );
    if udp {
        let _ = write!(s, "  {:>6}", i.lost.unwrap_or(0));
    }
    if let Some(phase) = i.phase {
        let _ = write!(s, "  ({phase})");
    }
    s
}

fn line(label: &str, p: &Percentiles) -> String {
    format!(
        "  {label:<9} min {} mean {} p50 {} p90 {} p99 {} p99.9 {} max {} stddev {} ms",
        ms(p.min),
        ms(p.mean),
        ms(p.p50),
        ms(p.p90),
        ms(p.p99),
        ms(p.p999),
        ms(p.max),
        ms(p.stddev)
    )
}

fn signed_line(label: &str, s: &SignedStats) -> String {
    format!(
        "  {label:<9} min {} mean {} p50 {} p99 {} max {} ms",
        ms(s.min),
        ms(s.mean),
        ms(s.p50),
        ms(s.p99),
        ms(s.max)
    )
}

/// The summary printed after the run, section by section.
pub fn summary(r: &RrReport) -> String {
    let mut out = String::new();
    if r.interrupted {
        out.push_str("interrupted: partial result\n");
    }
    totals(&mut out, r);
    mode_lines(&mut out, &r.summary);
    load_lines(&mut out, &r.summary);
    clock_lines(&mut out, r);
    sizes_lines(&mut out, r);
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for e in &r.errors {
        let _ = writeln!(out, "error: {e}");
    }
    out
}

/// Transactions, RTT, UDP loss and the rate reached.
fn totals(out: &mut String, r: &RrReport) {
    let s = &r.summary;
    let server = s
        .server
        .map(|c| {
            let mut t = format!(", server answered {}", c.transactions);
            if r.test.mode == "connect" {
                let _ = write!(t, " on {} connections", c.connections);
            }
            t
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "summary: {} transactions in {:.2} s = {:.0} transactions/s{server}",
        s.transactions, s.seconds, s.transactions_per_second
    );
    let _ = writeln!(out, "{}", line("rtt", &s.rtt_ms));
    if let Some(lost) = s.lost {
        let _ = writeln!(
            out,
            "  lost      {lost} of {} ({:.3}%), {} late answers, loss timeout {:.1} ms",
            s.attempted,
            s.loss_percent.unwrap_or(0.0),
            s.late.unwrap_or(0),
            s.timeout_ms.unwrap_or(0.0)
        );
    }
    if let Some(rate) = &s.rate {
        let _ = writeln!(
            out,
            "  rate      target {} /s, achieved {:.0} /s{}",
            trim(rate.target_per_second),
            rate.achieved_per_second,
            if rate.reached { "" } else { " (NOT reached)" }
        );
    }
}

/// What `--connect` and `--cold` measure besides the RTT.
fn mode_lines(out: &mut String, s: &RrSummary) {
    if let Some(c) = &s.connect_ms {
        let _ = writeln!(out, "{}", line("connect", c));
    }
    if let Some(t) = &s.transaction_ms {
        let _ = writeln!(out, "{}", line("total", t));
    }
    if let Some(f) = &s.first_rtt_ms {
        let _ = writeln!(out, "{}", line("first", f));
    }
    if let Some(f) = &s.second_rtt_ms {
        let _ = writeln!(out, "{}", line("second", f));
    }
    if let Some(d) = &s.first_minus_second_ms {
        let _ = writeln!(
            out,
            "  set-up    first - second: mean {} p50 {} min {} max {} ms over {} rounds",
            ms(d.mean),
            ms(d.p50),
            ms(d.min),
            ms(d.max),
            d.count
        );
    }
}

/// `--load`: RTT idle and loaded, the bloat, and the load itself.
fn load_lines(out: &mut String, s: &RrSummary) {
    if let Some(i) = &s.idle_rtt_ms {
        let _ = writeln!(out, "{}", line("idle", i));
    }
    if let Some(l) = &s.loaded_rtt_ms {
        let _ = writeln!(out, "{}", line("loaded", l));
    }
    if let (Some(i), Some(l)) = (&s.idle_rtt_ms, &s.loaded_rtt_ms) {
        let _ = writeln!(
            out,
            "  bloat     p50 {} -> {} ms under load ({}{} ms, x{:.2})",
            ms(i.p50),
            ms(l.p50),
            if l.p50 >= i.p50 { "+" } else { "" },
            ms(l.p50 - i.p50),
            l.p50 / i.p50.max(1e-9)
        );
    }
    if let Some(load) = &s.load {
        let _ = writeln!(
            out,
            "  load      `{}`: {} {} stream{}, {} over {:.2} s{}",
            load.args,
            load.protocol.to_uppercase(),
            load.streams,
            if load.streams == 1 { "" } else { "s" },
            format_rate(load.bits_per_second),
            load.seconds,
            load.retransmits
                .map(|r| format!(", {r} retransmits"))
                .unwrap_or_default()
        );
    }
}

/// One-way delays, and the clock assumption they rest on.
fn clock_lines(out: &mut String, r: &RrReport) {
    let s = &r.summary;
    if let Some(owd) = &s.one_way_ms {
        let _ = writeln!(out, "{}", signed_line("forward", &owd.forward_ms));
        let _ = writeln!(out, "{}", signed_line("reverse", &owd.reverse_ms));
    }
    let _ = writeln!(
        out,
        "  clock     {}: {}",
        r.start.clock, r.start.clock_reason
    );
}

/// `--sizes`: the table per size and the fitted line.
fn sizes_lines(out: &mut String, r: &RrReport) {
    if let Some(points) = &r.sizes {
        let _ = writeln!(
            out,
            "  {:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
            "size", "transactions", "p50 ms", "mean ms", "p99 ms"
        );
        for p in points {
            let _ = writeln!(
                out,
                "  {:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
                p.size,
                p.transactions,
                ms(p.rtt_ms.p50),
                ms(p.rtt_ms.mean),
                ms(p.rtt_ms.p99)
            );
        }
    }
    if let Some(f) = &r.fit {
        let _ = writeln!(
            out,
            "  fit       rtt = {} ms + {} µs/byte x size (r² {:.3}, through the p50s){}",
            ms(f.intercept_ms),
            significant(f.slope_us_per_byte),
            f.r2,
            f.implied_bits_per_second
                .map(|b| format!("; implied rate {}", format_rate(b)))
                .unwrap_or_else(|| "; no positive slope".into())
        );
    }
}
