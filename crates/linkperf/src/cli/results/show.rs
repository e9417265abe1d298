//! `linkperf results show ID`: one stored entry in words. A test run shows
//! its configuration (with the congestion control its sender really used),
//! rates and intervals; a campaign its aggregate per phase and per host; an
//! rr run its latency distribution, sizes and fit; a sweep its table.

use super::lookup::{load_sweep, not_found, rate, utc, Fail};
use linkperf::sweep;
use linkperf_store::{EntryKind, RunRow, Store};
use serde_json::Value;

pub(super) fn show(store: &mut Store, id: i64, json_out: bool) -> Result<(), Fail> {
    match store.entry_kind(id)? {
        None => Err(not_found(store, id)),
        Some(EntryKind::Sweep) => {
            let (sweep, runs) = load_sweep(store, id)?;
            let mut points = sweep::summarise(&sweep, &runs);
            sweep::twin::attach(&mut points, &store.sweep_twins(id, false)?);
            if json_out {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&sweep::sweep_json(&sweep, &points))
                        .expect("sweep serialises")
                );
            } else {
                say!("{}", crate::sweep::sweep_heading(&sweep, runs.len(), store));
                say_raw!("{}", sweep::sweep_table(&sweep, &points));
                for w in sweep::confidence_warnings(&sweep, &points) {
                    say!("{w}");
                }
            }
            Ok(())
        }
        Some(EntryKind::Run(_)) => {
            let run = store
                .run(id, true)?
                .ok_or_else(|| Fail::Run(format!("run {id} is missing from the archive")))?;
            let report = run.report.clone().unwrap_or(Value::Null);
            if json_out {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&report).expect("report serialises")
                );
                return Ok(());
            }
            say!(
                "run {} ({}) against {} at {} UTC{}",
                run.id,
                run.kind,
                run.host,
                utc(run.started_unix_ms),
                if run.metrics.interrupted {
                    ", interrupted"
                } else {
                    ""
                }
            );
            match run.kind.as_str() {
                "campaign" => show_campaign(&run, &report),
                "rr" => show_rr(store, &run, &report),
                _ => show_test(store, &run, &report),
            }
        }
    }
}

/// The congestion control of a test: what the sender's sockets reported,
/// else what was asked for.
fn congestion(run: &RunRow, report: &Value) -> String {
    run.metrics
        .congestion
        .clone()
        .or_else(|| linkperf_store::senders_congestion(report))
        .or_else(|| {
            report
                .pointer("/test/congestion")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| "-".into())
}

fn show_test(store: &mut Store, run: &RunRow, report: &Value) -> Result<(), Fail> {
    let m = &run.metrics;
    if let Some(s) = run.slot {
        say!(
            "  sweep {}, point {}, repetition {}",
            s.sweep_id,
            s.point,
            s.repetition + 1
        );
    }
    if let Some(t) = report.get("test") {
        let opt = |k: &str| match t.get(k) {
            Some(Value::Null) | None => "-".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        let cc = if opt("protocol") == "udp" {
            String::new()
        } else {
            format!(", congestion {}", congestion(run, report))
        };
        say!(
            "  {} {}, {} s, -P {}, -l {}, sndbuf {}, rcvbuf {}{cc}",
            opt("protocol"),
            opt("direction"),
            opt("duration_s"),
            opt("parallel"),
            opt("length"),
            opt("sndbuf"),
            opt("rcvbuf"),
        );
    }
    say!(
        "  sent {}, received {}{}{}",
        rate(m.sent_bps),
        rate(m.received_bps),
        m.loss_percent
            .map(|l| format!(", loss {l:.3}%"))
            .unwrap_or_default(),
        m.rtt_mean_ms
            .map(|r| format!(", mean RTT {r:.3} ms"))
            .unwrap_or_default()
    );
    let pct = |v: Option<f64>| v.map(|c| format!("{c:.1}%")).unwrap_or_else(|| "-".into());
    say!(
        "  CPU local {}, remote {}",
        pct(m.cpu_local_percent),
        pct(m.cpu_remote_percent)
    );
    if let Some(note) = report.get("extra_data").and_then(Value::as_str) {
        say!("  extra data: {note}");
    }
    for (side, key) in [("local", "/start/local"), ("remote", "/start/remote")] {
        if let Some(f) = report.pointer(key) {
            say!(
                "  {side} host: {} ({} CPUs, kernel {})",
                f.get("hostname").and_then(Value::as_str).unwrap_or("?"),
                f.get("cpus").and_then(Value::as_u64).unwrap_or(0),
                f.get("kernel").and_then(Value::as_str).unwrap_or("?")
            );
        }
    }
    let samples = store.samples(run.id)?;
    let sums: Vec<_> = samples
        .iter()
        .filter(|s| s.stream_id == -1 && s.interval_idx >= 0)
        .collect();
    if !sums.is_empty() {
        say!("  interval          direction          sent            received");
        for s in sums {
            say!(
                "  {:>6.2}-{:<6.2} s  {:<17}  {:<14}  {}",
                s.start_s.unwrap_or(0.0),
                s.end_s.unwrap_or(0.0),
                s.direction,
                rate(s.sent_bps),
                rate(s.received_bps)
            );
        }
    }
    Ok(())
}

fn f(v: &Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(Value::as_f64)
}

fn params_label(p: &Value) -> String {
    p.as_object()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            format!(" at {}", items.join(" "))
        })
        .unwrap_or_default()
}

/// The figures of the campaign row, then per phase (and sweep point) the
/// aggregate over its sessions and each host's mean sent and received.
fn show_campaign(run: &RunRow, doc: &Value) -> Result<(), Fail> {
    let m = &run.metrics;
    let phases = doc.get("phases").and_then(Value::as_array);
    let phases: &[Value] = phases.map(Vec::as_slice).unwrap_or_default();
    say!(
        "  campaign {}: {} phase run(s), {} session(s), {} flows, {} hosts",
        doc.get("name").and_then(Value::as_str).unwrap_or("?"),
        phases.len(),
        doc.get("sessions").and_then(Value::as_u64).unwrap_or(0),
        m.flows.map_or("-".into(), |n| n.to_string()),
        m.hosts.map_or("-".into(), |n| n.to_string()),
    );
    say!(
        "  mean aggregate: sent {}, received {}{}",
        rate(m.sent_bps),
        rate(m.received_bps),
        m.loss_percent
            .map(|l| format!(", UDP loss {l:.3}%"))
            .unwrap_or_default()
    );
    // Phase runs grouped by (name, params), in the order they ran.
    let mut groups: Vec<(String, Value, Vec<&Value>)> = Vec::new();
    for p in phases {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("?");
        let params = p.get("params").cloned().unwrap_or(Value::Null);
        match groups.iter_mut().find(|g| g.0 == name && g.1 == params) {
            Some(g) => g.2.push(p),
            None => groups.push((name.to_string(), params, vec![p])),
        }
    }
    for (name, params, runs) in &groups {
        let mean = |ptr: &str| {
            let v: Vec<f64> = runs.iter().filter_map(|p| f(p, ptr)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let flows = runs[0]
            .get("flows")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        say!(
            "  phase {name}{}: {} session(s), {flows} flows, aggregate sent {}, received {}",
            params_label(params),
            runs.len(),
            rate(mean("/aggregate/sent_bits_per_second")),
            rate(mean("/aggregate/received_bits_per_second"))
        );
        let mut hosts: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
        for p in runs {
            for h in p
                .get("hosts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let host = h.get("name").and_then(Value::as_str).unwrap_or("?");
                let at = match hosts.iter().position(|x| x.0 == host) {
                    Some(k) => k,
                    None => {
                        hosts.push((host.to_string(), vec![], vec![]));
                        hosts.len() - 1
                    }
                };
                hosts[at].1.extend(f(h, "/sent_bits_per_second"));
                hosts[at].2.extend(f(h, "/received_bits_per_second"));
            }
        }
        for (host, sent, received) in &hosts {
            let avg = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            say!(
                "    {host:<24} sent {:>14}  received {:>14}",
                rate(avg(sent)),
                rate(avg(received))
            );
        }
    }
    for flag in doc
        .get("flags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(msg) = flag.get("message").and_then(Value::as_str) {
            say!("  ! {msg}");
        }
    }
    Ok(())
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

fn percentiles(label: &str, p: &Value) -> Option<String> {
    let g = |k: &str| p.get(k).and_then(Value::as_f64).map(ms);
    Some(format!(
        "  {label:<9} min {} mean {} p50 {} p90 {} p99 {} p99.9 {} max {} ms ({} samples)",
        g("min")?,
        g("mean")?,
        g("p50")?,
        g("p90")?,
        g("p99")?,
        g("p999")?,
        g("max")?,
        p.get("count").and_then(Value::as_u64).unwrap_or(0)
    ))
}

/// An rr run: what was measured, its distributions, `--sizes` and its fit.
fn show_rr(store: &mut Store, run: &RunRow, doc: &Value) -> Result<(), Fail> {
    say!("{}", rr_test_line(doc));
    let s = doc.get("summary").cloned().unwrap_or(Value::Null);
    if let Some(q) = &run.rr {
        say!(
            "  {} transactions of {} in {:.2} s = {:.0} transactions/s{}",
            q.transactions.unwrap_or(0),
            q.attempted.unwrap_or(0),
            run.metrics.duration_s.unwrap_or(0.0),
            q.transactions_per_second.unwrap_or(0.0),
            run.metrics
                .loss_percent
                .map(|l| format!(", lost {l:.3}%"))
                .unwrap_or_default()
        );
    }
    for (label, key) in [
        ("rtt", "rtt_ms"),
        ("connect", "connect_ms"),
        ("total", "transaction_ms"),
        ("first", "first_rtt_ms"),
        ("second", "second_rtt_ms"),
        ("idle", "idle_rtt_ms"),
        ("loaded", "loaded_rtt_ms"),
    ] {
        if let Some(line) = s.get(key).and_then(|p| percentiles(label, p)) {
            say!("{line}");
        }
    }
    if let (Some(i), Some(l)) = (f(&s, "/idle_rtt_ms/p50"), f(&s, "/loaded_rtt_ms/p50")) {
        say!(
            "  bloat     p50 {} -> {} ms under load (x{:.2})",
            ms(i),
            ms(l),
            l / i.max(1e-9)
        );
    }
    show_rr_sizes(store, run, doc)
}

/// The test as run: protocol, mode, sizes, burst, pace and load.
fn rr_test_line(doc: &Value) -> String {
    let t = doc.get("test").cloned().unwrap_or(Value::Null);
    let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    let num = |k: &str| t.get(k).and_then(Value::as_u64);
    let pace = match t.get("rate_per_second").and_then(Value::as_f64) {
        Some(r) => format!("{r} transactions/s"),
        None => "back to back".into(),
    };
    let sizes: Vec<String> = t
        .get("sizes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.to_string())
        .collect();
    let what = if sizes.is_empty() {
        format!(
            "request {} B, response {} B",
            num("request").unwrap_or(0),
            num("response").unwrap_or(0)
        )
    } else {
        format!("sizes {} B", sizes.join(","))
    };
    format!(
        "  {} {}, {what}, {} in flight, {pace}{}",
        text("protocol").to_uppercase(),
        text("mode"),
        num("burst").unwrap_or(1),
        t.get("load")
            .and_then(Value::as_str)
            .map(|l| format!(", load `{l}`"))
            .unwrap_or_default()
    )
}

/// `--sizes`: the stored table per size and the fitted line.
fn show_rr_sizes(store: &mut Store, run: &RunRow, doc: &Value) -> Result<(), Fail> {
    let sizes = store.rr_sizes(run.id)?;
    if !sizes.is_empty() {
        say!(
            "  {:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
            "size",
            "transactions",
            "p50 ms",
            "mean ms",
            "p99 ms"
        );
        let cell = |v: Option<f64>| v.map(ms).unwrap_or_else(|| "-".into());
        for p in &sizes {
            say!(
                "  {:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
                p.size,
                p.transactions,
                cell(p.rtt_p50_ms),
                cell(p.rtt_mean_ms),
                cell(p.rtt_p99_ms)
            );
        }
    }
    if let Some(fit) = doc.get("fit").filter(|v| v.is_object()) {
        say!(
            "  fit       rtt = {} ms + {:.6} µs/byte x size (r² {:.3}, through the {}s)",
            ms(f(fit, "/intercept_ms").unwrap_or(0.0)),
            f(fit, "/slope_us_per_byte").unwrap_or(0.0),
            f(fit, "/r2").unwrap_or(0.0),
            fit.get("basis").and_then(Value::as_str).unwrap_or("p50")
        );
    }
    Ok(())
}
