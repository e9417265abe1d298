//! Sections every page shares: the test configuration (the options common
//! to every run), the host facts of both ends, and the table of all runs.
//! They read only the export and draw no plots.

use super::shared::{f, id_list, interrupted, run_anchor, s, stopped_after};
use crate::export::{scalar_text, Export, Kind, RunData, Vary};
use crate::format;
use crate::html::{self, Cell, Section, Table};
use serde_json::Value;

pub(super) fn value_text(key: &str, v: &Value) -> String {
    let size_keys = ["length", "sndbuf", "rcvbuf", "window", "mss", "bytes"];
    let rate_keys = ["bitrate", "pacing_rate"];
    match v {
        Value::Null => "default".to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if size_keys.contains(&key) && x >= 1024.0 {
                format!("{} ({})", n, format::size_label(x))
            } else if rate_keys.contains(&key) {
                format::rate_label(x)
            } else {
                n.to_string()
            }
        }
        Value::Array(a) => a
            .iter()
            .map(|x| scalar_text(x).unwrap_or_else(|| x.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) => v.to_string(),
        other => scalar_text(other).unwrap_or_default(),
    }
}

pub(super) fn object_facts(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, x)| (k.clone(), value_text(k, x)))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn config_section(ex: &Export) -> Section {
    let mut sec = Section::new("config", "Test configuration");
    if let Some(meta) = &ex.sweep {
        let mut rows = Vec::new();
        for v in &meta.vary {
            rows.push((
                format!("--vary {}", v.name),
                format!(
                    "{}{}",
                    v.values.join(", "),
                    match v.geometric {
                        Some(true) => " (geometric)",
                        Some(false) => " (arithmetic)",
                        None => "",
                    }
                ),
            ));
        }
        if let Some(r) = meta.repeat {
            rows.push(("repeat".into(), r.to_string()));
        }
        if let Some(o) = &meta.order {
            rows.push(("order".into(), o.clone()));
        }
        if let Some(sd) = &meta.seed {
            rows.push(("shuffle seed".into(), sd.clone()));
        }
        if let Some(id) = &meta.id {
            rows.push(("sweep id".into(), id.clone()));
        }
        for k in ["confidence", "pause_s", "max_runs"] {
            if let Some(x) = meta.raw.get(k).filter(|x| !x.is_null()) {
                rows.push((k.to_string(), value_text(k, x)));
            }
        }
        sec.heading("Sweep");
        sec.push(&html::facts(&rows));
        if let Some(b) = meta.base_options {
            // A varied option is not common, whatever the base value says.
            let mut rows = object_facts(b);
            rows.retain(|(k, _)| !varied_key(&meta.vary, k));
            if !rows.is_empty() {
                sec.heading("Options common to every run");
                sec.push(&html::facts(&rows));
            }
        }
    }
    if let Some(r) = ex.runs.first() {
        if let Some(test) = r.report.get("test") {
            let mut rows = object_facts(test);
            if let Some(meta) = ex.sweep.as_ref().filter(|_| ex.kind == Kind::Sweep) {
                rows.retain(|(k, _)| k != "start_at_unix_ms");
                for (k, v) in rows.iter_mut() {
                    if varied_key(&meta.vary, k) {
                        *v = format!("{v} (in this run; the sweep varies it)");
                    }
                }
            }
            sec.heading(&format!(
                "As run (run {}{})",
                r.id,
                if ex.runs.len() > 1 {
                    ", the first; swept options differ between runs"
                } else {
                    ""
                }
            ));
            sec.push(&html::facts(&rows));
        }
    }
    if ex.kind == Kind::Campaign {
        if let Some(c) = ex.raw.get("campaign").filter(|c| c.is_object()) {
            sec.heading("Campaign");
            sec.push(&html::facts(&object_facts(c)));
        }
    }
    if sec.body.is_empty() {
        sec.note("The export carries no configuration.");
    }
    sec
}

/// The option names a swept parameter sets, as a test configuration or a
/// sweep's base options name them: `window` sets both socket buffers.
pub(super) fn config_keys(vary_name: &str) -> Vec<String> {
    let n = vary_name.trim_start_matches('-');
    let keys: &[&str] = match n {
        "window" | "w" => &["window", "sndbuf", "rcvbuf"],
        "length" | "l" => &["length"],
        "parallel" | "P" => &["parallel"],
        "bitrate" | "b" => &["bitrate"],
        "pacing-rate" | "pacing_rate" => &["pacing_rate"],
        "pacing-timer" | "pacing_timer" => &["pacing_timer_us"],
        "congestion" | "C" => &["congestion"],
        "nodelay" | "no-delay" | "N" => &["nodelay", "no_delay"],
        "time" | "t" => &["time", "duration_s"],
        "bytes" | "n" => &["bytes"],
        "mss" | "set-mss" | "set_mss" | "M" => &["mss", "set_mss"],
        "omit" | "O" => &["omit", "omit_s"],
        "udp" | "u" => &["udp", "protocol"],
        "reverse" | "R" | "bidir" => &["reverse", "bidir", "direction"],
        "zerocopy" | "Z" => &["zerocopy"],
        "dont-fragment" | "dont_fragment" => &["dont_fragment"],
        _ => &[],
    };
    let mut out: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    out.push(n.replace('-', "_"));
    out
}

/// Whether the option named `key` is set by one of the swept parameters.
pub(super) fn varied_key(vary: &[Vary], key: &str) -> bool {
    let key = key.replace('-', "_");
    vary.iter().any(|v| config_keys(&v.name).contains(&key))
}

/// Rows of host facts; sysctls under their names so people can set them.
pub(super) fn host_rows(local: &Value, remote: &Value) -> Vec<Vec<Cell>> {
    let known: [(&str, &str); 10] = [
        ("hostname", "host name"),
        ("kernel", "kernel"),
        ("software", "software"),
        ("cpus", "CPUs"),
        ("congestion_default", "net.ipv4.tcp_congestion_control"),
        (
            "congestion_available",
            "net.ipv4.tcp_available_congestion_control",
        ),
        ("rmem_max", "net.core.rmem_max"),
        ("wmem_max", "net.core.wmem_max"),
        ("tcp_rmem", "net.ipv4.tcp_rmem (min default max)"),
        ("tcp_wmem", "net.ipv4.tcp_wmem (min default max)"),
    ];
    let show = |v: Option<&Value>, key: &str| -> String {
        match v {
            None | Some(Value::Null) => "–".into(),
            Some(Value::Array(a)) if key.starts_with("tcp_") && key.ends_with("mem") => a
                .iter()
                .map(|x| {
                    x.as_f64()
                        .map(|b| format!("{} ({})", b as u64, format::size_label(b)))
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join("  "),
            Some(Value::Number(n)) if key.ends_with("mem_max") => {
                let b = n.as_f64().unwrap_or(0.0);
                format!("{n} ({})", format::size_label(b))
            }
            Some(x) => value_text(key, x),
        }
    };
    let mut rows = Vec::new();
    for (k, label) in known {
        if local.get(k).is_some() || remote.get(k).is_some() {
            rows.push(vec![
                Cell::text(label),
                Cell::text(show(local.get(k), k)),
                Cell::text(show(remote.get(k), k)),
            ]);
        }
    }
    let mut extra: Vec<String> = Vec::new();
    for o in [local, remote] {
        if let Some(o) = o.as_object() {
            for k in o.keys() {
                if !known.iter().any(|(n, _)| n == k) && !extra.contains(k) {
                    extra.push(k.clone());
                }
            }
        }
    }
    for k in extra {
        rows.push(vec![
            Cell::text(k.clone()),
            Cell::text(show(local.get(&k), &k)),
            Cell::text(show(remote.get(&k), &k)),
        ]);
    }
    rows
}

pub(super) fn hosts_section(ex: &Export) -> Section {
    let mut sec = Section::new("hosts", "Host facts");
    // Runs grouped by identical host facts, so a changed kernel or sysctl shows.
    let mut groups: Vec<(String, &Value, &Value, Vec<i64>)> = Vec::new();
    for r in &ex.runs {
        let (Some(l), Some(rm)) = (
            r.report.pointer("/start/local"),
            r.report.pointer("/start/remote"),
        ) else {
            continue;
        };
        let key = format!("{l}{rm}");
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.3.push(r.id),
            None => groups.push((key, l, rm, vec![r.id])),
        }
    }
    if groups.is_empty() {
        sec.note("The export carries no host facts.");
        return sec;
    }
    if groups.len() > 1 {
        sec.push(&format!(
            "<p class=\"warn\">The hosts changed during these runs: {} different sets of facts (kernel, congestion control or buffer sysctls).</p>",
            groups.len()
        ));
    }
    let total = groups.len();
    for (_, l, r, ids) in groups.into_iter().take(4) {
        let mut t = Table::new(vec![
            Cell::text("fact"),
            Cell::text("local (client)"),
            Cell::text("remote (server)"),
        ]);
        t.row_headers = true;
        if total > 1 {
            t = t.caption(format!("runs {}", id_list(&ids)));
        }
        for row in host_rows(l, r) {
            t.row(row);
        }
        sec.push(&t.render());
    }
    sec
}

pub(super) fn runs_section(ex: &Export) -> Section {
    let mut sec = Section::new("runs", "All runs");
    if ex.runs.is_empty() {
        sec.note("The export has no runs.");
        return sec;
    }
    let sweep_params: Vec<String> = ex
        .sweep
        .as_ref()
        .map(|m| m.vary.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let mut headers = vec![Cell::num("run")];
    if ex.kind == Kind::Sweep {
        headers.push(Cell::num("point"));
        headers.push(Cell::num("rep."));
        headers.extend(sweep_params.iter().map(|p| Cell::text(p.clone())));
    }
    for h in [
        "started (UTC)",
        "test",
        "sent",
        "received",
        "retr. / loss",
        "RTT",
        "CPU local",
        "CPU remote",
        "limited by / error",
    ] {
        headers.push(
            if h == "started (UTC)" || h == "test" || h.starts_with("limited") {
                Cell::text(h)
            } else {
                Cell::num(h)
            },
        );
    }
    let mut t = Table::new(headers);
    for r in &ex.runs {
        let class = interrupted(r.report).then_some("interrupted");
        // A run page's sections already carry "run-ID".
        let id = match ex.kind {
            Kind::Run => format!("row-run-{}", r.id),
            _ => run_anchor(r.id).trim_start_matches('#').to_string(),
        };
        t.row_at(id, class, run_row(ex, r, &sweep_params));
    }
    let n = ex.runs.len();
    if ex.kind != Kind::Run {
        sec.push(
            "<p class=\"note\">Each run's own page, with its time series: <code>linkperf report RUN_ID -o run.html</code> (with the same <code>--db</code> as this report); hover a run's id for its command.</p>"
        );
    }
    sec.details(
        &format!("{n} run{}", if n == 1 { "" } else { "s" }),
        &t.render(),
        n <= 100,
    );
    sec
}

pub(super) fn test_line(rep: &Value) -> String {
    let proto = s(rep, "/test/protocol").unwrap_or_default().to_uppercase();
    let p = f(rep, "/test/parallel").unwrap_or(1.0);
    let dur = f(rep, "/test/duration_s");
    let dir = match s(rep, "/test/direction").as_deref() {
        Some("reverse") => ", reverse",
        Some("bidir") => ", bidirectional",
        _ => "",
    };
    let mut out = proto;
    if p > 1.0 {
        out.push_str(&format!(" ×{p}"));
    }
    if let Some(d) = dur {
        out.push_str(&format!(", {} s", format::trim(d, 2)));
    }
    out.push_str(dir);
    out
}

pub(super) fn run_row(ex: &Export, r: &RunData, params: &[String]) -> Vec<Cell> {
    let rep = r.report;
    let mut row = vec![Cell::num(r.id.to_string()).title(format!(
        "this run's page: linkperf report {id} -o run-{id}.html",
        id = r.id
    ))];
    if ex.kind == Kind::Sweep {
        row.push(Cell::num(
            r.point.map(|p| p.to_string()).unwrap_or("–".into()),
        ));
        row.push(Cell::num(
            r.repetition.map(|p| p.to_string()).unwrap_or("–".into()),
        ));
        let point = r
            .point
            .and_then(|i| ex.points.iter().find(|p| p.index as u64 == i))
            .or_else(|| ex.points.iter().find(|p| p.runs.contains(&r.id)));
        for name in params {
            row.push(Cell::text(point.and_then(|p| p.param(name)).unwrap_or("–")));
        }
    }
    let started = r.started_unix_ms.or_else(|| {
        rep.pointer("/start/timestamp_unix_ms")
            .and_then(Value::as_i64)
    });
    row.push(Cell::text(
        started
            .map(|ms| format::utc(ms).trim_end_matches(" UTC").to_string())
            .unwrap_or("–".into()),
    ));
    if let Some(e) = rep.get("error").and_then(Value::as_str) {
        row.push(Cell::text(r.kind.clone().unwrap_or("test".into())));
        for _ in 0..6 {
            row.push(Cell::num("–"));
        }
        row.push(Cell::text(format!("error: {e}")).flag(true));
        return row;
    }
    row.push(Cell::text(test_line(rep)));
    let mut sent = f(rep, "/summary/sent/bits_per_second");
    let mut recv = f(rep, "/summary/received/bits_per_second");
    if let (Some(a), Some(b)) = (
        f(rep, "/summary_reverse/sent/bits_per_second"),
        f(rep, "/summary_reverse/received/bits_per_second"),
    ) {
        sent = sent.map(|x| x + a);
        recv = recv.map(|x| x + b);
    }
    row.push(Cell::num(sent.map(format::rate).unwrap_or("–".into())));
    row.push(Cell::num(recv.map(format::rate).unwrap_or("–".into())));
    let retr = f(rep, "/summary/sent/retransmits");
    let loss = f(rep, "/summary/received/loss_percent");
    row.push(Cell::num(match (retr, loss) {
        (_, Some(l)) => format::percent(l),
        (Some(r), None) => format!("{}", r as u64),
        _ => "–".into(),
    }));
    row.push(Cell::num(
        f(rep, "/summary/tcp/rtt_ms/mean")
            .map(format::millis)
            .unwrap_or("–".into()),
    ));
    for side in ["local", "remote"] {
        row.push(Cell::num(
            f(rep, &format!("/summary/cpu/{side}/total_percent"))
                .map(format::percent)
                .unwrap_or("–".into()),
        ));
    }
    let mut verdict = s(rep, "/summary/verdict/limited_by").unwrap_or_default();
    let errors: Vec<String> = rep
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(scalar_text).collect())
        .unwrap_or_default();
    let failed = !errors.is_empty();
    if failed {
        verdict = format!("error: {}", errors.join("; "));
    }
    let stopped = interrupted(rep);
    if stopped {
        verdict = format!("interrupted ({}); {verdict}", stopped_after(rep));
    }
    let mut cell = Cell::text(verdict).flag(failed || stopped);
    if let Some(e) = s(rep, "/summary/verdict/explanation") {
        cell = cell.title(e);
    }
    row.push(cell);
    row
}
