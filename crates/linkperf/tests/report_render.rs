//! `linkperf report`: a real sweep stored in a SQLite archive, reported by
//! ID; the page carries the measured means; bad input fails with one line.
//! (crates/report/tests/chromium.rs opens rendered pages in a browser.)

mod common;
#[path = "../../report/tests/common/svg.rs"]
mod report_svg;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn report_of_a_stored_sweep_and_of_one_run() {
    let dir = scratch("sweep");
    let db = s(&dir.join("archive.db"));
    let server = Server::start();
    let port = server.port.to_string();
    let sweep = wait_child(
        spawn(&[
            "sweep",
            "127.0.0.1",
            "-p",
            &port,
            "--db",
            &db,
            "-t",
            "0.3",
            "-i",
            "0.1",
            "--vary",
            "window=32K,128K,512K",
            "--repeat",
            "2",
            "-J",
        ]),
        Duration::from_secs(120),
    );
    assert_eq!(sweep.code(), Some(0), "sweep failed: {}", sweep.stderr);
    let sweep = sweep.json();
    let id = sweep["id"].as_i64().expect("sweep id").to_string();

    let page = dir.join("sweep.html");
    let run = linkperf(&["report", &id, "-o", &s(&page), "--db", &db]);
    assert_eq!(run.code(), Some(0), "report failed: {}", run.stderr);
    assert!(run.stdout.contains(&s(&page)), "says where: {}", run.stdout);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing fetched from anywhere.
    assert!(!html.contains("<script") && !html.contains(" src=") && !html.contains("<link"));
    assert!(html.contains("Socket buffer (-w), log scale"));
    // Each point's measured mean, as the sweep printed it, is on the page
    // (the hover text of its marker), and every run is in the table.
    let points = sweep["points"].as_array().expect("points");
    assert_eq!(points.len(), 3);
    for p in points {
        let mean = p["received_bits_per_second"]["mean"]
            .as_f64()
            .expect("mean");
        let text = linkperf_units::format_rate(mean);
        assert!(html.contains(&text), "page lacks the mean {text} of {p}");
    }
    let export = linkperf(&["results", "export", &id, "--format", "json", "--db", &db]).json();
    let runs = export["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6);
    for r in runs {
        let row = report_svg::row_text(&html, &format!("run-{}", r["id"]));
        assert!(
            row.is_some_and(|t| t.starts_with(&format!("{} |", r["id"]))),
            "runs table lacks run {}",
            r["id"]
        );
    }
    // The received curve has one vertex per point.
    let first_line = html.split("<polyline").nth(1).expect("a polyline");
    let pts = first_line.split('"').nth(3).expect("points attribute");
    assert_eq!(pts.split_whitespace().count(), 3, "{pts}");

    // One run of it, by its own id: a time series page.
    let run_id = runs[0]["id"].to_string();
    let page = dir.join("run.html");
    let r = linkperf(&["report", &run_id, "-o", &s(&page), "--db", &db]);
    assert_eq!(r.code(), Some(0), "report failed: {}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Throughput per interval"));
    let received = runs[0]["report"]["summary"]["received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    assert!(html.contains(&format!(
        "mean received {}",
        linkperf_units::format_rate(received)
    )));

    // --from-export reads the same export from a file and gives the same page.
    let file = dir.join("export.json");
    std::fs::write(&file, serde_json::to_string(&export).unwrap()).unwrap();
    let again = dir.join("again.html");
    let r = linkperf(&["report", "--from-export", &s(&file), "-o", &s(&again)]);
    assert_eq!(r.code(), Some(0), "{}", r.stderr);
    let by_id = std::fs::read_to_string(dir.join("sweep.html")).unwrap();
    assert_eq!(std::fs::read_to_string(&again).unwrap(), by_id);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = scratch("bad");
    let db = s(&dir.join("empty.db"));
    let out = s(&dir.join("x.html"));

    let line = linkperf(&["report", "424242", "-o", &out, "--db", &db])
        .assert_one_line_failure(2)
        .to_string();
    assert!(line.contains("424242"), "{line}");

    let line = linkperf(&["report", "--from-export", "/nonexistent/e.json", "-o", &out])
        .assert_one_line_failure(2)
        .to_string();
    assert!(line.contains("/nonexistent/e.json"), "{line}");

    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{not json").unwrap();
    let line = linkperf(&["report", "--from-export", &s(&junk), "-o", &out])
        .assert_one_line_failure(2)
        .to_string();
    assert!(line.contains("not JSON"), "{line}");

    let partial = dir.join("partial.json");
    let doc: Value = serde_json::json!({"schema": "linkperf/1", "kind": "sweep", "id": 1, "runs": [],
        "sweep": {"vary": [{"name": "window", "values": ["4K"]}]}, "points": [{"params": {}}]});
    std::fs::write(&partial, doc.to_string()).unwrap();
    let line = linkperf(&["report", "--from-export", &s(&partial), "-o", &out])
        .assert_one_line_failure(2)
        .to_string();
    assert!(line.contains("points[0].params.window"), "{line}");

    let newer = dir.join("newer.json");
    std::fs::write(
        &newer,
        r#"{"schema": "linkperf/7", "kind": "run", "id": 1, "runs": []}"#,
    )
    .unwrap();
    let line = linkperf(&["report", "--from-export", &s(&newer), "-o", &out])
        .assert_one_line_failure(2)
        .to_string();
    assert!(line.contains("newer"), "{line}");

    // A good export to a place that cannot be written.
    let good = dir.join("good.json");
    let report = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../report/tests/fixtures/run_udp.json"
    ))
    .unwrap();
    let report: Value = serde_json::from_str(&report).unwrap();
    let export = serde_json::json!({"schema": "linkperf/1", "kind": "run", "id": 5,
        "runs": [{"id": 5, "report": report}]});
    std::fs::write(&good, export.to_string()).unwrap();
    let line = linkperf(&[
        "report",
        "--from-export",
        &s(&good),
        "-o",
        "/nonexistent/dir/r.html",
    ])
    .assert_one_line_failure(1)
    .to_string();
    assert!(line.contains("/nonexistent/dir/r.html"), "{line}");
    // ... and to a good place: written, and no temporary file left beside it.
    let ok = linkperf(&["report", "--from-export", &s(&good), "-o", &out]);
    assert_eq!(ok.code(), Some(0), "{}", ok.stderr);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("UDP loss and jitter"));

    linkperf(&["report", "-o", &out]).assert_one_line_failure(2);
    let _ = std::fs::remove_dir_all(&dir);
}
