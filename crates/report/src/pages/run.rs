//! The run page: for each run its summary, intervals and sockets tables per
//! direction, with the plots `run_plots` builds. One test's numbers, never a
//! sweep's statistics.

use super::directions::{direction_label, directions, Direction, JitterStats};
use super::run_plots::{tcp_series, throughput_series, udp_series};
use super::sections::{config_section, hosts_section, runs_section, test_line};
use super::shared::{f, or_dash, s};
use crate::export::{Export, RunData};
use crate::format;
use crate::html::{self, Cell, Section, Table};
use crate::plots::Quantity;
use serde_json::Value;

/// Runs shown in full (plots, intervals) on a run page; the rest are in the table.
const DETAILED_RUNS: usize = 10;

pub(super) fn run_page(ex: &Export) -> (String, String, Vec<Section>) {
    let first = &ex.runs[0];
    let rep = first.report;
    let server = s(rep, "/test/server").unwrap_or_else(|| "?".into());
    let client = s(rep, "/start/local/hostname").unwrap_or_else(|| "client".into());
    let title = if ex.runs.len() == 1 {
        format!(
            "Run {}: {} {client} → {server}",
            first.id,
            s(rep, "/test/protocol").unwrap_or_default().to_uppercase()
        )
    } else {
        format!("Runs of export {}", ex.id)
    };
    let mut sub = Vec::new();
    let started = first.started_unix_ms.or_else(|| {
        rep.pointer("/start/timestamp_unix_ms")
            .and_then(Value::as_i64)
    });
    if let Some(ms) = started {
        sub.push(format!("started {}", format::utc(ms)));
    }
    sub.push(test_line(rep));
    if let Some(sw) = s(rep, "/software") {
        sub.push(sw);
    }
    // A `linkperf simulate` result: never to be mistaken for a measurement.
    if let Some(source) = s(rep, "/source") {
        sub.push(format!("simulated by {source}, not measured"));
    }
    let mut sections = Vec::new();
    for r in ex.runs.iter().take(DETAILED_RUNS) {
        sections.push(run_section(r, ex.runs.len() > 1));
    }
    sections.extend(super::twin::run_section(ex));
    let detailed: Vec<&RunData> = ex.runs.iter().take(DETAILED_RUNS).collect();
    if let Some(s) = super::samples::samples_section(&detailed) {
        sections.push(s);
    }
    if ex.runs.len() > DETAILED_RUNS {
        let mut more = Section::new("more", "More runs");
        more.note(&format!(
            "{} more runs are in the table of all runs, without plots.",
            ex.runs.len() - DETAILED_RUNS
        ));
        sections.push(more);
    }
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, sub.join(" · "), sections)
}

pub(super) fn run_section(r: &RunData, many: bool) -> Section {
    let rep = r.report;
    let mut sec = Section::new(&format!("run-{}", r.id), format!("Run {}", r.id));
    if let Some(e) = rep.get("error").and_then(Value::as_str) {
        sec.push(&format!(
            "<p class=\"warn\">This run failed: {}</p>",
            html::escape(e)
        ));
        return sec;
    }
    if many {
        sec.para(&test_line(rep));
    }
    if let Some(source) = s(rep, "/source") {
        sec.para(&format!(
            "Simulated by {source} (linkperf simulate), not measured."
        ));
    }
    let udp = s(rep, "/test/protocol").as_deref() == Some("udp");
    let dirs = directions(rep);
    let intervals: Vec<&Value> = rep
        .get("intervals")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let t = summary_table(&dirs, &intervals, udp);
    sec.push(&t.render());
    verdicts_and_messages(rep, &dirs, &mut sec);

    if intervals.is_empty() {
        sec.note("No interval samples in this run (it ran with -i 0): no time series.");
    } else {
        for d in &dirs {
            let suffix = if dirs.len() > 1 {
                format!(", {}", direction_label(&d.name))
            } else {
                String::new()
            };
            direction_figures(&mut sec, &intervals, d, udp, &suffix);
        }
        sec.details(
            &format!("{} intervals", intervals.len()),
            &intervals_table(&intervals, &dirs, udp).render(),
            false,
        );
    }
    let sockets = sockets_table(rep);
    if !sockets.rows.is_empty() {
        sec.details("Sockets of each stream", &sockets.render(), false);
    }
    sec
}

/// Each direction's verdict (what limited it), then the run's warnings and
/// errors as the client reported them.
fn verdicts_and_messages(rep: &Value, dirs: &[Direction], sec: &mut Section) {
    for d in dirs {
        if let Some(ex) = s(d.summary, "/verdict/explanation") {
            let limited = s(d.summary, "/verdict/limited_by").unwrap_or_default();
            let advice = s(d.summary, "/verdict/advice")
                .map(|a| format!(" Advice: {a}."))
                .unwrap_or_default();
            sec.para(&format!(
                "{}: limited by {limited}: {ex}.{advice}",
                direction_label(&d.name)
            ));
        }
    }
    for w in rep
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        sec.push(&format!(
            "<p class=\"warn\">warning: {}</p>",
            html::escape(w)
        ));
    }
    for e in rep
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        sec.push(&format!("<p class=\"warn\">error: {}</p>", html::escape(e)));
    }
}

/// The plots of one direction: throughput, then UDP loss and jitter or TCP
/// RTT and congestion window.
fn direction_figures(
    sec: &mut Section,
    intervals: &[&Value],
    d: &Direction,
    udp: bool,
    suffix: &str,
) {
    let p = throughput_series(intervals, d, udp, suffix);
    if p.has_data() {
        sec.figure(
            &p.render(),
            &format!(
                "Throughput per interval{suffix}: each stream (as received), their sum, and the mean over the whole test{}. Each interval's rate is drawn across the interval, from its start to its end.",
                if udp { "; the wide pale band: what was sent" } else { "" }
            ),
        );
    }
    if udp {
        let p = udp_series(intervals, d, suffix);
        if p.has_data() {
            sec.figure(
                &p.render(),
                "Datagrams lost in each interval (percent of those sent, left axis, drawn across the interval) and the RFC 3550 jitter estimate at each interval's end (right axis), with its mean over the intervals (the summary's \"mean of intervals\").",
            );
        }
    } else {
        for (what, field, q) in [
            ("RTT", "rtt_ms", Quantity::Millis),
            ("Congestion window", "cwnd_bytes", Quantity::Bytes),
        ] {
            let p = tcp_series(intervals, d, what, field, q, suffix);
            if p.has_data() {
                sec.figure(
                    &p.render(),
                    &format!(
                        "{what} of each stream's sender as the kernel reports it (tcp_info), sampled at the end of each interval."
                    ),
                );
            }
        }
    }
}

/// The summary of a run, one row per direction. UDP jitter is given as the
/// mean and percentiles of the per-interval values the plot shows; the final
/// running estimate (what iperf3 prints) is beside them, named as such.
pub(super) fn summary_table(dirs: &[Direction], intervals: &[&Value], udp: bool) -> Table {
    let heads: &[&str] = if udp {
        &[
            "direction",
            "sent",
            "received",
            "loss",
            "jitter, mean of intervals",
            "jitter p50 / p95 / max",
            "jitter, final RFC 3550 estimate",
            "CPU local",
            "CPU remote",
        ]
    } else {
        &[
            "direction",
            "sent",
            "received",
            "retransmits",
            "RTT mean / min",
            "CPU local",
            "CPU remote",
        ]
    };
    let headers = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect();
    let caption = if udp {
        "Summary; jitter: RFC 3550 interarrival jitter, its mean and percentiles over the intervals (as plotted), and the running estimate at the end of the test"
    } else {
        "Summary"
    };
    let mut t = Table::new(headers).caption(caption);
    t.row_headers = true;
    for d in dirs {
        let sm = d.summary;
        let opt =
            |ptr: &str, fmt: &dyn Fn(f64) -> String| f(sm, ptr).map(fmt).unwrap_or("–".into());
        let mut row = vec![
            Cell::text(direction_label(&d.name)),
            Cell::num(opt("/sent/bits_per_second", &format::rate)),
            Cell::num(opt("/received/bits_per_second", &format::rate)),
        ];
        if udp {
            let j = JitterStats::of(intervals, d.sum_key);
            row.push(Cell::num(opt("/received/loss_percent", &format::percent)));
            row.push(Cell::num(
                j.as_ref()
                    .map(|j| format::millis(j.mean))
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(
                j.as_ref()
                    .map(|j| {
                        format!(
                            "{} / {} / {}",
                            format::millis(j.p50),
                            format::millis(j.p95),
                            format::millis(j.max)
                        )
                    })
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(opt("/received/jitter_ms", &format::millis)));
        } else {
            row.push(Cell::num(opt("/sent/retransmits", &|x| {
                format!("{}", x as u64)
            })));
            row.push(Cell::num(
                match (f(sm, "/tcp/rtt_ms/mean"), f(sm, "/tcp/rtt_ms/min")) {
                    (Some(a), Some(b)) => format!("{} / {}", format::millis(a), format::millis(b)),
                    (Some(a), None) => format::millis(a),
                    _ => "–".into(),
                },
            ));
        }
        row.push(Cell::num(opt("/cpu/local/total_percent", &format::percent)));
        row.push(Cell::num(opt(
            "/cpu/remote/total_percent",
            &format::percent,
        )));
        t.row(row);
    }
    t
}

pub(super) fn intervals_table(intervals: &[&Value], dirs: &[Direction], udp: bool) -> Table {
    let mut headers = vec![Cell::num("start (s)"), Cell::num("end (s)")];
    for d in dirs {
        let tag = if dirs.len() > 1 {
            format!(" {}", direction_label(&d.name))
        } else {
            String::new()
        };
        headers.push(Cell::num(format!("sent{tag}")));
        headers.push(Cell::num(format!("received{tag}")));
        if udp {
            headers.push(Cell::num(format!("loss{tag}")));
            headers.push(Cell::num(format!("jitter{tag}")));
        } else {
            headers.push(Cell::num(format!("retransmits{tag}")));
        }
    }
    let mut t = Table::new(headers);
    for iv in intervals {
        let omitted = iv.get("omitted").and_then(Value::as_bool) == Some(true);
        let mut row = vec![
            Cell::num(
                f(iv, "/start")
                    .map(|x| format::trim(x, 3))
                    .unwrap_or("–".into()),
            ),
            Cell::num(
                f(iv, "/end")
                    .map(|x| format::trim(x, 3))
                    .unwrap_or("–".into()),
            ),
        ];
        for d in dirs {
            let sm = iv.get(d.sum_key);
            let g = |p: &str| sm.and_then(|x| f(x, p));
            row.push(Cell::num(
                g("/sent_bits_per_second")
                    .map(format::rate)
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(
                g("/bits_per_second")
                    .map(format::rate)
                    .unwrap_or("–".into()),
            ));
            if udp {
                row.push(Cell::num(
                    g("/loss_percent")
                        .map(format::percent)
                        .unwrap_or("–".into()),
                ));
                row.push(Cell::num(
                    g("/jitter_ms").map(format::millis).unwrap_or("–".into()),
                ));
            } else {
                row.push(Cell::num(
                    g("/retransmits")
                        .map(|x| (x as u64).to_string())
                        .unwrap_or("–".into()),
                ));
            }
        }
        if omitted {
            row[0].title = Some("omitted from the summary (-O)".into());
        }
        t.row(row);
    }
    t
}

pub(super) fn sockets_table(rep: &Value) -> Table {
    let mut t = Table::new(
        [
            "stream",
            "direction",
            "side",
            "local",
            "remote",
            "SO_SNDBUF",
            "SO_RCVBUF",
            "congestion",
            "MSS",
            "MTU",
        ]
        .iter()
        .map(|h| Cell::text(*h))
        .collect(),
    );
    for st in rep
        .pointer("/start/streams")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for side in ["local", "remote"] {
            let Some(so) = st.get(side).filter(|x| x.is_object()) else {
                continue;
            };
            let sz = |k: &str| {
                f(so, &format!("/{k}"))
                    .map(format::size_label)
                    .unwrap_or("–".into())
            };
            t.row(vec![
                Cell::num(or_dash(s(st, "/id"))),
                Cell::text(direction_label(&s(st, "/direction").unwrap_or_default()).to_string()),
                Cell::text(side),
                Cell::text(or_dash(s(so, "/local"))),
                Cell::text(or_dash(s(so, "/remote"))),
                Cell::num(sz("sndbuf")),
                Cell::num(sz("rcvbuf")),
                Cell::text(or_dash(s(so, "/congestion"))),
                Cell::num(or_dash(s(so, "/mss"))),
                Cell::num(or_dash(s(so, "/mtu"))),
            ]);
        }
    }
    t
}
