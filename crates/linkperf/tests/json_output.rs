//! The `-J` and `--json-stream` documents match schema/linkperf-1*.schema.json,
//! and the schema is strict enough to reject what it should.

mod common;
use common::*;
use serde_json::{json, Value};

#[test]
fn tcp_report_validates() {
    let r = loopback_json(&["-t", "1"]);
    assert_valid(&r);
    assert!(r["summary"]["sent"]["retransmits"].is_u64());
    assert!(r["summary"]["received"]["jitter_ms"].is_null());
    assert!(r["summary"]["tcp"]["rtt_ms"]["mean"].is_number());
}

#[test]
fn udp_report_validates() {
    let r = loopback_json(&["-u", "-b", "5M", "-t", "1"]);
    assert_valid(&r);
}

#[test]
fn reverse_report_validates() {
    let r = loopback_json(&["-R", "-t", "1"]);
    assert_valid(&r);
}

#[test]
fn bidir_report_validates() {
    let r = loopback_json(&["--bidir", "-t", "1"]);
    assert_valid(&r);
}

#[test]
fn bidir_udp_report_validates() {
    let r = loopback_json(&["--bidir", "-u", "-b", "2M", "-t", "1"]);
    assert_valid(&r);
    assert!(u64_at(&r, "/summary_reverse/received/packets") > 0);
}

#[test]
fn parallel_report_validates() {
    let r = loopback_json(&["-P", "2", "-t", "1"]);
    assert_valid(&r);
}

#[test]
fn schema_rejects_what_it_should() {
    let r = loopback_json(&["-n", "1M"]);
    assert_valid(&r);
    let broken = |f: &dyn Fn(&mut Value)| {
        let mut v = r.clone();
        f(&mut v);
        check_schema("linkperf-1.schema.json", &v).is_err()
    };
    assert!(broken(&|v| v["schema"] = json!("linkperf/2")));
    assert!(broken(&|v| {
        v.as_object_mut().unwrap().remove("summary");
    }));
    assert!(broken(&|v| v["summary"]["received"]["bytes"] = json!(-1)));
    assert!(broken(
        &|v| v["summary"]["sent"]["retransmits"] = json!(null)
    ));
    assert!(broken(
        &|v| v["summary"]["received"]["jitter_ms"] = json!(0.1)
    ));
    assert!(broken(&|v| {
        v["summary"].as_object_mut().unwrap().remove("tcp");
    }));
    assert!(broken(&|v| v["summary_reverse"] = v["summary"].clone()));
    assert!(broken(&|v| v["unexpected"] = json!(1)));
    assert!(broken(&|v| v["summary"]["direction"] = json!("sideways")));
    // A UDP report must not pass as TCP and vice versa.
    assert!(broken(&|v| v["test"]["protocol"] = json!("udp")));
}

#[test]
fn json_stream_lines_are_intervals_then_one_summary() {
    let run = loopback_client(&["--json-stream", "-t", "2", "-i", "0.5"]);
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        lines.len() >= 4,
        "want >= 3 intervals and a summary, got {lines:#?}"
    );
    let (last, intervals) = lines.split_last().unwrap();
    assert_eq!(last["event"], "summary");
    assert_eq!(last["data"]["schema"], "linkperf/1");
    for l in &lines {
        assert_eq!(l["schema"], "linkperf/1");
        assert_valid_stream_line(l);
    }
    for i in intervals {
        assert_eq!(i["event"], "interval", "summary must come last, once");
    }
    // The summary repeats the intervals it was built from.
    let data: Vec<&Value> = intervals.iter().map(|i| &i["data"]).collect();
    let in_summary: Vec<&Value> = array_at(&last["data"], "/intervals").iter().collect();
    assert_eq!(data, in_summary);
    assert!(u64_at(&last["data"], "/summary/received/bytes") > 0);
}

#[test]
fn stream_schema_rejects_a_bare_report() {
    let r = loopback_json(&["-n", "1M"]);
    assert!(check_schema("linkperf-1-stream.schema.json", &r).is_err());
    let line = json!({"schema": "linkperf/1", "event": "interval", "data": r});
    assert!(check_schema("linkperf-1-stream.schema.json", &line).is_err());
    let line = json!({"schema": "linkperf/1", "event": "summary", "data": r});
    assert!(check_schema("linkperf-1-stream.schema.json", &line).is_ok());
}

#[test]
fn omitted_intervals_are_marked_and_left_out_of_the_summary() {
    let r = loopback_json(&["-O", "1", "-t", "2", "-i", "0.5"]);
    assert_valid(&r);
    assert_eq!(f64_at(&r, "/test/omit_s"), 1.0);
    let intervals = array_at(&r, "/intervals");
    assert!(intervals.len() >= 3, "{intervals:#?}");
    let mut total = 0;
    let mut omitted_bytes = 0;
    for i in intervals {
        let (start, end) = (f64_at(i, "/start"), f64_at(i, "/end"));
        let bytes = u64_at(i, "/sum/received_bytes");
        total += bytes;
        if end <= 1.0 {
            assert_eq!(i["omitted"], true, "[{start}, {end}] is in the warm-up");
        }
        if start >= 1.0 {
            assert_eq!(i["omitted"], false, "[{start}, {end}] is after the warm-up");
        }
        if i["omitted"] == true {
            omitted_bytes += bytes;
        }
    }
    assert!(omitted_bytes > 0, "the warm-up carried data");
    let summary = u64_at(&r, "/summary/received/bytes");
    assert!(summary > 0);
    assert!(
        summary < total,
        "summary {summary} must exclude the warm-up (all intervals {total})"
    );
    let seconds = f64_at(&r, "/summary/received/seconds");
    let last_end = f64_at(intervals.last().unwrap(), "/end");
    assert!(
        seconds < last_end - 0.5,
        "summary covers {seconds} s of a {last_end} s test with -O 1"
    );
}

#[test]
fn run_failure_document_validates() {
    let port = free_port();
    let run = client(port, &["-t", "1", "-J"]);
    run.assert_one_line_failure(1);
    let doc = run.json();
    assert_eq!(doc["schema"], "linkperf/1");
    assert!(doc["error"].as_str().unwrap().contains("refused"), "{doc}");
    assert_valid(&doc);
    // The error document is not a report, and a report field makes it invalid.
    let mut bad = doc.clone();
    bad["interrupted"] = json!(false);
    assert!(check_schema("linkperf-1.schema.json", &bad).is_err());
}

#[test]
fn server_refusal_document_validates() {
    let run = loopback_client(&["-R", "-C", "nosuch", "-t", "1", "-J"]);
    run.assert_one_line_failure(1);
    let doc = run.json();
    assert!(doc["error"].as_str().unwrap().contains("nosuch"), "{doc}");
    assert_valid(&doc);
}
