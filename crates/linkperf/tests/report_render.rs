//! `linkperf report`: a real sweep stored in a SQLite archive, reported by
//! ID; the page carries the measured means; bad input fails with one line.
//! (crates/report/tests/chromium.rs opens rendered pages in a browser.)

mod common;
#[path = "../../report/tests/common/svg.rs"]
mod report_svg;

use common::sweep::{export, Loopback};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    linkperf_testsupport::scratch("lp-report", name)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `linkperf report ID -o DIR/NAME --db DB` against a loopback archive,
/// asserted successful: the run and the page it wrote.
fn report_page(lo: &Loopback, id: &str, name: &str) -> (Run, String) {
    let page = s(&lo.dir.join(name));
    let run = linkperf(&["report", id, "-o", &page, "--db", &lo.db]);
    assert_eq!(run.code(), Some(0), "report {id} failed: {}", run.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    (run, html)
}

#[test]
fn report_of_a_stored_sweep_and_of_one_run() {
    let lo = Loopback::new("sweep");
    let (dir, db) = (&lo.dir, lo.db.as_str());
    let sweep = lo.sweep(&[
        "-t",
        "0.3",
        "-i",
        "0.1",
        "--vary",
        "window=32K,128K,512K",
        "--repeat",
        "2",
        "-J",
    ]);
    assert_eq!(sweep.code(), Some(0), "sweep failed: {}", sweep.stderr);
    let sweep = sweep.json();
    let id = sweep["id"].as_i64().expect("sweep id").to_string();

    let (run, html) = report_page(&lo, &id, "sweep.html");
    let page = s(&dir.join("sweep.html"));
    assert!(run.stdout.contains(&page), "says where: {}", run.stdout);
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
    let export = export(db, &id, "json").json();
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
    check_sweep_page(&html, &export);

    // One run of it, by its own id: a time series page.
    let run_id = runs[0]["id"].to_string();
    let (_, html) = report_page(&lo, &run_id, "run.html");
    assert!(html.contains("Throughput per interval"));
    check_run_lines(&html, &runs[0]["report"]);
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
}

/// What the sweep page of a real `--vary window=... --repeat 2` sweep must
/// show, against the measured runs in the archive's export.
fn check_sweep_page(html: &str, export: &Value) {
    // -w sets both socket buffers: neither is an option common to every run.
    let common = report_svg::common_options_table(html);
    for key in ["sndbuf", "rcvbuf"] {
        assert!(
            !common.contains(&format!(">{key}<")),
            "{key} listed as common"
        );
    }
    assert!(common.contains(">length<"), "{common}");

    // Every link leads to a row; each point's marker to its row, which
    // lists and links each of the point's runs.
    assert_eq!(report_svg::dangling_links(html), Vec::<String>::new());
    let (_, plot) = report_svg::plots(html).into_iter().next().expect("a plot");
    let links = report_svg::marker_links(plot);
    let runs = export["runs"].as_array().unwrap();
    for p in export["points"].as_array().unwrap() {
        assert!(links.contains(&format!("#point-{}", p["index"])));
        let start = html
            .find(&format!("<tr id=\"point-{}\"", p["index"]))
            .expect("point row");
        let row = &html[start..start + html[start..].find("</tr>").unwrap()];
        for id in p["runs"].as_array().unwrap() {
            assert!(row.contains(&format!("href=\"#run-{id}\"")));
        }
    }

    // Two runs per point: the error bars span the lowest to the highest run
    // (the archive's measured values), and none reaches below zero.
    assert!(html.contains("the lowest and the highest run at each point (min–max)"));
    let y = report_svg::numeric_axes(plot)
        .into_iter()
        .find(|a| a.vertical)
        .expect("y axis");
    let unit = if html.contains("Throughput (Gbit/s)") {
        1e9
    } else {
        1e6
    };
    let px = (y.value(0.0) - y.value(1.0)).abs(); // one pixel in axis units
    let bars: Vec<(f64, f64)> = report_svg::error_bars(plot)
        .into_iter()
        .filter(|b| b.3 == "#0072B2")
        .map(|b| (y.value(b.2) * unit, y.value(b.1) * unit))
        .collect();
    assert_eq!(bars.len(), 3, "one bar per point");
    for p in export["points"].as_array().unwrap() {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r["point"] == p["index"])
            .map(|r| {
                r["report"]["summary"]["received"]["bits_per_second"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        let (lo, hi) = (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        );
        assert!(
            bars.iter()
                .any(|b| (b.0 - lo).abs() < px * unit && (b.1 - hi).abs() < px * unit),
            "no bar from {lo} to {hi}: {bars:?}"
        );
    }
    assert!(bars.iter().all(|b| b.0 >= 0.0), "{bars:?}");
    for (title, plot) in report_svg::plots(html) {
        for axis in report_svg::numeric_axes(plot)
            .into_iter()
            .filter(|a| a.vertical)
        {
            if let Err(e) = report_svg::check_linear_axis(&axis) {
                panic!("{title}: {e}");
            }
        }
    }
}

/// The run page's throughput lines start at the first interval's start
/// (t = 0) and its first step is the first interval's measured rate. A line
/// may break later (where the two ends' interval clocks part by more than 1 %
/// of an interval, as a stalled machine makes them): each line's first
/// stretch is the one checked, a line being a colour, width and dash.
fn check_run_lines(html: &str, report: &Value) {
    let plot = report_svg::plot(html, "Throughput per interval");
    let axes = report_svg::numeric_axes(plot);
    let x = axes.iter().find(|a| !a.vertical).expect("time axis");
    let first = &report["intervals"][0];
    assert_eq!(first["start"].as_f64(), Some(0.0));
    let mut lines: Vec<report_svg::Polyline> = Vec::new();
    for l in report_svg::polylines(plot) {
        let same = |m: &report_svg::Polyline| {
            (m.color.as_str(), m.width, m.dash.as_deref())
                == (l.color.as_str(), l.width, l.dash.as_deref())
        };
        match lines.iter_mut().find(|m| same(m)) {
            Some(m) if m.points[0].0 <= l.points[0].0 => {}
            Some(m) => *m = l,
            None => lines.push(l),
        }
    }
    assert!(!lines.is_empty(), "no throughput line");
    for l in lines {
        assert!(
            (l.points[0].0 - x.pixel(0.0)).abs() < 0.6,
            "line starts at {} s",
            x.value(l.points[0].0)
        );
        let end = first["end"].as_f64().unwrap();
        assert!(
            (l.points[1].0 - x.pixel(end)).abs() < 0.6,
            "first step ends at {} s",
            x.value(l.points[1].0)
        );
    }
}

#[test]
fn report_marks_an_interrupted_run() {
    let lo = Loopback::new("interrupted-run");
    let db = lo.db.as_str();

    // A 10 s run stopped by Ctrl-C a second after its first interval report.
    let spawned = Instant::now();
    let mut child = spawn(&[
        "client",
        "127.0.0.1",
        "-p",
        &lo.port,
        "-t",
        "10",
        "-i",
        "0.5",
        "--db",
        db,
    ]);
    let lines = stdout_lines(&mut child);
    let first = lines
        .recv_timeout(Duration::from_secs(30))
        .expect("an interval line within 30 s");
    let first_at = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    send_signal(&child, libc::SIGINT);
    let signalled = Instant::now();
    let stderr = wait_stopped(child, Duration::from_secs(30));
    assert!(!stderr.contains("panicked"), "{first}\n{stderr}");
    let list = linkperf(&["results", "--db", db, "list", "--json"]).json();
    let entry = &list["entries"][0];
    assert_eq!(entry["interrupted"], Value::Bool(true), "{list:#}");
    let id = entry["id"].to_string();
    let (_, html) = report_page(&lo, &id, "run.html");
    let banner = html
        .find("<div class=\"banner\"")
        .expect("an interrupted banner");
    assert!(banner < html.find("<section").unwrap(), "above the results");
    let text =
        report_svg::strip_tags(&html[banner..banner + html[banner..].find("</div>").unwrap()]);
    assert!(
        text.contains(&format!("run {id} was stopped early (stopped after ")),
        "{text}"
    );
    // It ran at least its first 0.5 s interval and the second after it, at
    // most from its spawn to the signal (plus the 0.1 s the page rounds to).
    let ran: f64 = text
        .split("stopped after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .expect("seconds run");
    let least = 0.5 + (signalled - first_at).as_secs_f64() - 0.1;
    let most = (signalled - spawned).as_secs_f64() + 0.1;
    assert!(
        ran >= least && ran <= most,
        "{text}: not in {least:.2}..{most:.2} s"
    );
    assert!(text.contains(" of 10 s)"), "{text}");
    let row = report_svg::row_text(&html, &format!("row-run-{id}")).expect("run row");
    assert!(row.contains("interrupted (stopped after"), "{row}");
}

#[test]
fn report_marks_a_partial_sweep() {
    let lo = Loopback::new("interrupted-sweep");
    let db = lo.db.as_str();

    // A sweep of 2 x 3 runs of 0.5 s stopped once its first run is stored.
    let child = lo.spawn_sweep(&[
        "-t",
        "0.5",
        "-i",
        "0.25",
        "--vary",
        "window=64K,256K",
        "--repeat",
        "3",
        "-J",
    ]);
    wait_for_a_stored_sweep_run(db);
    send_signal(&child, libc::SIGINT);
    let sweep = wait_child(child, Duration::from_secs(60));
    assert_eq!(sweep.code(), Some(130), "{}", sweep.stderr);
    let id = sweep.json()["id"].to_string();
    let (_, html) = report_page(&lo, &id, "sweep.html");
    let export = export(db, &id, "json").json();
    let stored = export["runs"].as_array().unwrap().len();
    assert!(stored < 6, "the sweep was stopped: {stored} runs");
    assert!(
        html.contains(
            "<div class=\"banner\" role=\"alert\">Partial sweep: it stopped before it finished (interrupted, or a run failed)."
        ),
        "no partial banner"
    );
    assert!(html.contains(&format!("{stored} runs are stored of the 6 planned")));
    assert_eq!(report_svg::dangling_links(&html), Vec::<String>::new());
}

/// Waits (at most 60 s) until the archive holds a sweep with a run stored.
fn wait_for_a_stored_sweep_run(db: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The archive may be busy with the sweep's write: try again.
        let list = linkperf(&["results", "--db", db, "list", "--json"]);
        let stored = serde_json::from_str::<Value>(&list.stdout)
            .ok()
            .and_then(|l| {
                l["entries"]
                    .as_array()?
                    .iter()
                    .find(|e| e["kind"] == "sweep")?["runs"]
                    .as_u64()
            })
            .unwrap_or(0);
        if stored >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no sweep run stored within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn report_of_a_udp_run_summarises_the_jitter_it_plots() {
    let lo = Loopback::new("udp");
    let db = lo.db.as_str();
    let report = client_json(
        lo.server.port,
        &["-u", "-b", "50M", "-t", "2", "-i", "0.5", "--db", db],
    );
    let list = linkperf(&["results", "--db", db, "list", "--json"]).json();
    let id = list["entries"][0]["id"].to_string();
    let (_, html) = report_page(&lo, &id, "udp.html");
    // The mean of the per-interval jitter the plot shows, computed here from
    // the client's own report, is the summary's jitter; the final running
    // estimate is beside it under its own name.
    let j: Vec<f64> = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|iv| iv["sum"]["jitter_ms"].as_f64())
        .collect();
    assert!(j.len() >= 3, "{} intervals with jitter", j.len());
    let mean = j.iter().sum::<f64>() / j.len() as f64;
    let summary = html
        .split("<caption>Summary")
        .nth(1)
        .expect("summary")
        .split("</table>")
        .next()
        .unwrap();
    let rows: Vec<Vec<String>> = summary
        .split("</tr>")
        .map(|r| {
            report_svg::strip_tags(r)
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    let col = |name: &str| rows[0].iter().position(|h| h.ends_with(name)).expect(name);
    let shown = |name: &str| as_ms(&rows[1][col(name)]);
    // Three significant digits: within 0.5 %.
    let near = |a: f64, b: f64| (a - b).abs() <= 0.005 * b.abs() + 1e-6;
    assert!(
        near(shown("jitter, mean of intervals"), mean),
        "{rows:?} vs {mean}"
    );
    let last = report["summary"]["received"]["jitter_ms"].as_f64().unwrap();
    assert!(
        near(shown("jitter, final RFC 3550 estimate"), last),
        "{rows:?} vs {last}"
    );
    // The plot draws that mean as a line on its jitter axis.
    let plot = report_svg::plot(&html, "UDP loss and jitter");
    let legend = plot.split("mean jitter ").nth(1).expect("mean jitter line");
    assert!(near(as_ms(&legend[..legend.find('<').unwrap()]), mean));
    check_run_lines(&html, &report);
}

/// Waits for a child whose stdout is read elsewhere; returns its stderr.
fn wait_stopped(mut child: std::process::Child, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running {limit:?} after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err);
    err
}

/// The lines a child prints on stdout, as they come.
fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// "12.3 ms" or "47.0 µs" in milliseconds.
fn as_ms(text: &str) -> f64 {
    let (v, unit) = text.trim().split_once(' ').expect("value and unit");
    let v: f64 = v.parse().expect("a number");
    if unit == "µs" {
        v / 1000.0
    } else {
        v
    }
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = scratch("bad");
    let db = s(&dir.join("empty.db"));
    let out = s(&dir.join("x.html"));
    // An archive that exists but holds nothing (a missing one is refused too).
    drop(linkperf_store::Store::open(Some(&db)).unwrap());

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
