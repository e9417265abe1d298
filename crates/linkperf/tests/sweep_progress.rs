//! Sweep progress where there is no terminal (a log under nohup, a pipe): one
//! plain line per run on stderr, naming the run and giving an ETA.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// "1m02s" -> 62, "3s" -> 3, "1h02m" -> 3720.
fn seconds(text: &str) -> u64 {
    let mut total = 0;
    let mut number = 0;
    for c in text.chars() {
        match c {
            '0'..='9' => number = number * 10 + u64::from(c.to_digit(10).unwrap()),
            'h' => (total, number) = (total + number * 3600, 0),
            'm' => (total, number) = (total + number * 60, 0),
            's' => (total, number) = (total + number, 0),
            _ => panic!("not a duration: {text}"),
        }
    }
    total + number
}

#[test]
fn without_a_terminal_each_run_prints_a_progress_line_with_an_eta() {
    let server = Server::start();
    let port = server.port.to_string();
    let started = Instant::now();
    // 2 points x 2 runs of 1 s each; stderr is a pipe, as under nohup.
    let run = wait_child(
        spawn(&[
            "sweep",
            "127.0.0.1",
            "-p",
            &port,
            "--no-store",
            "-t",
            "1",
            "--vary",
            "length=8K,64K",
            "--repeat",
            "2",
        ]),
        Duration::from_secs(120),
    );
    let wall = started.elapsed().as_secs();
    assert_eq!(run.code(), Some(0), "{}\n{}", run.stdout, run.stderr);
    let lines = run.stderr_lines();
    let labels = [
        "length=8K #1",
        "length=8K #2",
        "length=64K #1",
        "length=64K #2",
    ];
    assert_eq!(
        lines.len(),
        labels.len(),
        "one line per run: {:?}",
        run.stderr
    );
    for (k, (line, label)) in lines.iter().zip(labels).enumerate() {
        let prefix = format!("sweep: run {} of 4 ({label}), ", k + 1);
        assert!(line.starts_with(&prefix), "'{line}', want '{prefix}...'");
        let rest = &line[prefix.len()..];
        let (elapsed, eta) = rest.split_once(" elapsed, ").expect(line);
        // Every run before this one lasted at least its 1 s.
        let elapsed = seconds(elapsed);
        assert!(
            elapsed >= k as u64 && elapsed <= wall,
            "'{line}': {k} runs of 1 s done, sweep took {wall} s"
        );
        if k == 0 {
            assert_eq!(eta, "ETA after the first run", "{line}");
        } else {
            // Runs of at least 1 s: the runs left (this one included) take at
            // least that many seconds, and never more than the whole sweep.
            let eta = seconds(eta.strip_prefix("ETA ").expect(line));
            let left = (labels.len() - k) as u64;
            assert!(
                eta >= left && eta <= wall,
                "'{line}': {left} runs of 1 s left, sweep took {wall} s"
            );
        }
    }
    // The results table is on stdout, untouched by the progress lines.
    assert!(!run.stdout.contains("sweep: run"), "{}", run.stdout);
}
