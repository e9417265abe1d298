//! `linkperf monitor`: schedule errors; a mesh of real agents on loopback
//! run on schedule, its results in the archive, scraped by a real
//! Prometheus and compared with the archive and with the configured paced
//! UDP rate; a host that is down; a restart that neither loses nor repeats a
//! test; the dashboard and a pair's series in headless Chromium.

mod common;
mod monitor_common;

use common::{bin, free_port};
use linkperf_store::{Location, Store};
use linkperf_testsupport::{scratch, skip};
use monitor_common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The paced UDP rate every mesh test asks for.
const RATE_BPS: f64 = 40e6;

fn check(dir: &Path, text: &str) -> (Option<i32>, String) {
    let file = dir.join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(bin())
        .args(["monitor", "run"])
        .arg(&file)
        .arg("--run-for")
        .arg("1s")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn invalid_schedules_are_one_line_naming_file_line_and_key() {
    let dir = scratch("lp-monitor", "bad");
    let good = format!(
        "{}[[group]]\nname = \"g\"\nmesh = [\"a\", \"b\"]\n\
         [[test]]\nname = \"t\"\ngroup = \"g\"\ninterval = \"2s\"\nduration = \"500ms\"\n",
        hosts_toml(&[("a", 1), ("b", 2)])
    );
    let file = dir.join("bad.toml");
    let path = file.display().to_string();
    let cases = [
        // line 9: the mesh naming a host that does not exist
        (
            good.replace("[\"a\", \"b\"]", "[\"a\", \"x\"]"),
            9,
            "mesh",
            "no host named 'x'",
        ),
        (
            good.replace("\"2s\"", "\"400ms\""),
            13,
            "interval",
            "longer than the test",
        ),
        (
            good.replace("mesh = [\"a\", \"b\"]", "include = [\"g\"]"),
            9,
            "include",
            "groups include each other: g -> g",
        ),
        (
            good.replace(
                "duration = \"500ms\"\n",
                "duration = \"500ms\"\nudpp = true\n",
            ),
            15,
            "udpp",
            "unknown key",
        ),
        (
            good.replace("duration", "durration"),
            10,
            "duration",
            "missing field",
        ),
        (
            good.replace("group = \"g\"", "group = \"h\""),
            12,
            "group",
            "no group named 'h'",
        ),
    ];
    for (text, line, key, what) in cases {
        let (code, err) = check(&dir, &text);
        assert_eq!(code, Some(2), "{err}");
        let err = err.trim_end();
        assert_eq!(err.lines().count(), 1, "{err}");
        let at = format!("linkperf: {path}:{line}:");
        assert!(err.starts_with(&at), "{err} does not start with {at}");
        assert!(
            err.contains(key) && err.contains(what),
            "{err}: want {key}, {what}"
        );
    }
}

fn schedule(agents: &[(&str, u16)]) -> String {
    format!(
        "{}[[group]]\nname = \"lab\"\nmesh = [\"a\", \"b\", \"c\"]\n\
         [[group]]\nname = \"with-down\"\ninclude = [\"lab\"]\npairs = [[\"a\", \"down\"]]\n\
         [[test]]\nname = \"udp40\"\ngroup = \"with-down\"\ninterval = \"4s\"\nslip = \"500ms\"\n\
         duration = \"400ms\"\nudp = true\nbitrate = \"40M\"\n\
         [test.alert]\nloss_above_percent = 5\nthroughput_below_percent = 50\n",
        hosts_toml(agents)
    )
}

fn archive(db: &Path) -> Store {
    Store::open_at(Location::Sqlite(db.to_path_buf())).unwrap()
}

/// Prometheus's latest value per (src, dst) of `metric`.
fn scraped(prom: &Prometheus, metric: &str) -> BTreeMap<(String, String), f64> {
    prom.query(metric)
        .iter()
        .filter_map(|s| {
            let m = &s["metric"];
            let v: f64 = s["value"][1].as_str()?.parse().ok()?;
            Some((
                (
                    m["src"].as_str()?.to_string(),
                    m["dst"].as_str()?.to_string(),
                ),
                v,
            ))
        })
        .collect()
}

#[test]
fn a_mesh_runs_on_schedule_is_scraped_survives_a_restart_and_renders() {
    // Rates are measured: a stalled machine gets another attempt.
    linkperf_testsupport::stall::retry_when_stalled(mesh_body);
}

fn mesh_body() {
    let dir = scratch("lp-monitor", "mesh");
    let agents = [agent(), agent(), agent()];
    let down = dead_port();
    let ports = [
        ("a", agents[0].port),
        ("b", agents[1].port),
        ("c", agents[2].port),
        ("down", down),
    ];
    let file = dir.join("mesh.toml");
    std::fs::write(&file, schedule(&ports)).unwrap();
    let db = dir.join("monitor.db");
    let http = format!("127.0.0.1:{}", free_port());
    let args = |run_for: &str| {
        vec![
            "--db".to_string(),
            db.display().to_string(),
            "--spool".to_string(),
            dir.join("spool").display().to_string(),
            "--http".to_string(),
            http.clone(),
            "--run-for".to_string(),
            run_for.to_string(),
        ]
    };
    let first_args = args("60s");
    let refs: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let mut first = Controller::start(&file, &refs);
    first.wait_events("http", 1, Duration::from_secs(10));
    let prom = Prometheus::start(&dir, &http);
    // Every pair once: 6 mesh pairs and the one towards the host that is down.
    first.wait_events("result", 7, Duration::from_secs(30));
    match &prom {
        Some(p) => prometheus_matches_archive_and_rate(p, &db),
        None => skip("prometheus is not installed: /metrics not scraped"),
    }
    // A crash: whatever runs now is not stored, so it runs again after the restart.
    let _ = first.child.kill();
    first.wait(Duration::from_secs(10));
    let mut store = archive(&db);
    let stored_next: BTreeMap<String, i64> =
        store.monitor_next_runs().unwrap().into_iter().collect();
    let before = store.monitor_results().unwrap();
    drop(store);

    let second_args = args("9s");
    let refs: Vec<&str> = second_args.iter().map(String::as_str).collect();
    let mut second = Controller::start(&file, &refs);
    second.wait_events("http", 1, Duration::from_secs(10));
    dashboard_in_chromium(&dir, &http, &db);
    assert_eq!(second.wait(Duration::from_secs(30)), Some(0));
    let after = archive(&db).monitor_results().unwrap();
    restart_lost_and_repeated_nothing(&before, &after, &stored_next, &second.events("result"));
    down_host_failed_and_alerted_once(&db, &after);
}

fn prometheus_matches_archive_and_rate(prom: &Prometheus, db: &Path) {
    let metric = "linkperf_throughput_bits_per_second{test=\"udp40\"}";
    let got = common::poll(Duration::from_secs(20), Duration::from_millis(500), || {
        let v = scraped(prom, metric);
        (v.len() == 6).then_some(v)
    })
    .unwrap_or_else(|| {
        panic!(
            "prometheus never had the 6 pairs: {:?}",
            scraped(prom, metric)
        )
    });
    let loss = scraped(prom, "linkperf_loss_ratio");
    let mut store = archive(db);
    for ((src, dst), bps) in &got {
        let stored = store.monitor_series("udp40", src, dst, 0).unwrap();
        // The scraped value is one the archive holds for that pair, exactly.
        let row = stored
            .iter()
            .find(|r| r.throughput_bps == Some(*bps))
            .unwrap_or_else(|| panic!("{src}->{dst}: {bps} is not in the archive: {stored:?}"));
        assert_eq!(
            loss.get(&(src.clone(), dst.clone())),
            row.loss_ratio.as_ref()
        );
        // Physics: a paced 40 Mbit/s sender over loopback delivers 40 Mbit/s;
        // one datagram of 1470 bytes early or late over 0.4 s is 0.07 %, the
        // rest is the pacer's start and the receiver's last read on a loaded host.
        assert!(
            (bps / RATE_BPS - 1.0).abs() < 0.05,
            "{src}->{dst}: {bps} bit/s"
        );
        assert!(row.loss_ratio.unwrap() < 0.01, "{row:?}");
    }
    let failures = scraped(prom, "linkperf_test_failures_total");
    assert!(
        failures[&("a".to_string(), "down".to_string())] >= 1.0,
        "{failures:?}"
    );
    assert_eq!(failures[&("a".to_string(), "b".to_string())], 0.0);
}

fn restart_lost_and_repeated_nothing(
    before: &[linkperf_store::MonitorResult],
    after: &[linkperf_store::MonitorResult],
    stored_next: &BTreeMap<String, i64>,
    log: &[Value],
) {
    assert_eq!(
        &after[..before.len()],
        before,
        "the first run's results changed"
    );
    let new = &after[before.len()..];
    for (job, next) in stored_next {
        let mut parts = job.split('/');
        let (t, s, d) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let runs: Vec<i64> = new
            .iter()
            .filter(|r| r.test == t && r.src == s && r.dst == d)
            .map(|r| r.started_unix_ms)
            .collect();
        // Not lost: every job ran after the restart. Not twice: never before
        // the time the first run stored for it.
        assert!(!runs.is_empty(), "{job} did not run after the restart");
        assert!(
            runs[0] >= *next,
            "{job} ran at {} before its stored time {next}",
            runs[0]
        );
        // And within the run, never before the next time the last run logged.
        let logged: Vec<(i64, i64)> = log
            .iter()
            .filter(|e| e["job"] == job.as_str())
            .map(|e| {
                (
                    e["started_unix_ms"].as_i64().unwrap(),
                    e["next_unix_ms"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            logged.iter().map(|l| l.0).collect::<Vec<_>>(),
            runs,
            "{job}"
        );
        for w in logged.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "{job} ran at {} before its next time {}",
                w[1].0,
                w[0].1
            );
        }
    }
    assert_eq!(stored_next.len(), 7, "{stored_next:?}");
}

fn down_host_failed_and_alerted_once(db: &Path, after: &[linkperf_store::MonitorResult]) {
    let failed: Vec<_> = after.iter().filter(|r| r.dst == "down").collect();
    assert!(failed.len() >= 2, "{failed:?}");
    for r in &failed {
        assert!(!r.ok);
        let reason = r.reason.as_deref().unwrap_or("");
        assert!(reason.contains("refused"), "{reason}");
    }
    // The other pairs went on: every mesh result succeeded.
    assert!(
        after.iter().filter(|r| r.dst != "down").all(|r| r.ok),
        "{after:?}"
    );
    let alerts = archive(db).monitor_alerts(None, 100).unwrap();
    let down: Vec<_> = alerts.iter().filter(|a| a.dst == "down").collect();
    assert_eq!(down.len(), 1, "{alerts:?}");
    assert_eq!(down[0].kind, "failure");
}

fn dashboard_in_chromium(dir: &Path, http: &str, db: &Path) {
    let Some(browser) = chromium() else {
        skip("chromium is not installed: the dashboard was not rendered");
        return;
    };
    let profile = dir.join("chromium");
    let grid = dump_dom(&browser, &profile, &format!("http://{http}/"));
    // The grid: a cell per pair, each linking to its series.
    let cells = grid.matches("<td class=\"cell ").count();
    assert_eq!(cells, 7, "{grid}");
    let href = "series?test=udp40&amp;src=a&amp;dst=b";
    assert!(grid.contains(&format!("href=\"{href}\"")), "{grid}");
    assert!(grid.contains("class=\"cell ok\"") && grid.contains("class=\"cell failed\""));
    assert!(
        grid.contains("Latest alerts") && grid.contains("a -&gt; down"),
        "{grid}"
    );
    let before = archive(db).monitor_series("udp40", "a", "b", 0).unwrap();
    let page = dump_dom(
        &browser,
        &profile,
        &format!("http://{http}/series?test=udp40&src=a&dst=b"),
    );
    let after = archive(db).monitor_series("udp40", "a", "b", 0).unwrap();
    // Each stored result is a row with its start time, nothing else is.
    let rows: Vec<i64> = page
        .split("<tr id=\"t")
        .skip(1)
        .filter_map(|s| s.split('"').next()?.parse().ok())
        .collect();
    let stored: Vec<i64> = after.iter().map(|r| r.started_unix_ms).collect();
    assert!(
        rows.len() >= before.len() && !rows.is_empty(),
        "{rows:?} vs {before:?}"
    );
    assert_eq!(rows[..], stored[..rows.len()], "{page}");
    assert!(page.contains("<svg"), "the series has no plot: {page}");
    std::fs::write(dir.join("dashboard.html"), &grid).unwrap();
    std::fs::write(dir.join("series.html"), &page).unwrap();
}
