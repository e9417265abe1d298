//! Campaign progress: run k of n with a time left that comes true, as plain
//! lines into a pipe and as one live line on a terminal. Needs root
//! (namespaces, TAP devices).

mod common;

use common::campaign::*;
use serde_json::Value;
use std::process::Stdio;
use std::time::Instant;

macro_rules! require_root {
    () => {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces")
    };
}

/// "12s", "3m05s", "1h02m" back to seconds.
fn eta_seconds(text: &str) -> f64 {
    let mut total = 0.0;
    let mut number = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' => number.push(c),
            'h' | 'm' | 's' => {
                let n: f64 = number.parse().unwrap();
                total += n * match c {
                    'h' => 3600.0,
                    'm' => 60.0,
                    _ => 1.0,
                };
                number.clear();
            }
            _ => panic!("not a duration: {text}"),
        }
    }
    total
}

/// A run line `run K/N: ...; elapsed X, ETA Y` as (K, N, ETA seconds).
fn run_line(line: &str) -> Option<(usize, usize, f64)> {
    let rest = line.strip_prefix("run ")?;
    let (counts, _) = rest.split_once(':')?;
    let (k, n) = counts.split_once('/')?;
    let eta = line.rsplit_once("ETA ")?.1.trim();
    Some((k.parse().ok()?, n.parse().ok()?, eta_seconds(eta)))
}

#[test]
fn progress_in_a_log_says_run_k_of_n_and_a_time_left_that_comes_true() {
    require_root!();
    // 2 sessions x 2 phases: 4 runs of 0.5 s delay + 1 s (+ 0.5 s pause between).
    let (bed, file) = bed_with_campaign(
        "progress",
        "cpg",
        1,
        "rate = \"40M\"\ndelay = \"1ms\"",
        "sessions = 2\nstart_delay = \"500ms\"\npause = \"500ms\"\n",
        "[[phase]]\nname = \"there\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\nbitrate = \"10M\"\nlength = 1400\n[[phase]]\nname = \"both\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\nbitrate = \"10M\"\nlength = 1400\nbidir = true\n",
    );
    // The ETAs and the paced rates are timings: a run the machine stalled is run again.
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let planned = 4.0 * (0.5 + 1.0) + 3.0 * 0.5;
        // Human output into a pipe, as under nohup: plain lines, read as they come.
        let started = Instant::now();
        let mut child = bed
            .campaign_command("a1", &file)
            .arg("--no-store")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut lines: Vec<(f64, String)> = Vec::new();
        for line in std::io::BufRead::lines(stdout) {
            lines.push((started.elapsed().as_secs_f64(), line.unwrap()));
        }
        let status = child.wait().unwrap();
        let ended = started.elapsed().as_secs_f64();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "{stderr}");
        assert!(
            !stderr.contains('\r'),
            "no live line into a pipe: {stderr:?}"
        );
        let runs: Vec<(f64, usize, usize, f64)> = lines
            .iter()
            .filter_map(|(t, l)| run_line(l).map(|(k, n, eta)| (*t, k, n, eta)))
            .collect();
        let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            runs.iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
            vec![(1, 4), (2, 4), (3, 4), (4, 4)],
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|l| l.starts_with("run 4/4: phase both session 2/2")),
            "{text:#?}"
        );
        // Before anything ran, the time left is the plan (whole seconds, rounded down).
        assert!(
            (runs[0].3 - planned).abs() <= 1.0,
            "first ETA {} for a plan of {planned} s",
            runs[0].3
        );
        each_eta_comes_true(&runs, ended);
        each_direction_has_its_own_row(&text);
    });
}

/// Every run line's time left, against what really was left when it was printed.
fn each_eta_comes_true(runs: &[(f64, usize, usize, f64)], ended: f64) {
    for (t, k, _, eta) in runs {
        let left = ended - t;
        eprintln!("run {k}: ETA {eta} s, really {left:.2} s left");
        // The plan leaves out connecting and collecting reports: once one run
        // has shown that overhead, the estimate includes it.
        let tolerance = if *k == 1 {
            0.3 * left + 1.0
        } else {
            0.15 * left + 1.0
        };
        assert!(
            (eta - left).abs() <= tolerance,
            "run {k}: ETA {eta} s, but {left:.2} s were left"
        );
    }
}

/// The text reports each direction of the bidir flow on its own row.
fn each_direction_has_its_own_row(text: &[&str]) {
    let rows = |from: &str| {
        text.iter()
            .filter(|l| l.trim_start().starts_with(&format!("{from} -> ")) && l.contains("bidir"))
            .count()
    };
    assert_eq!((rows("a1"), rows("b1")), (2, 2), "{text:#?}");
    for l in text
        .iter()
        .filter(|l| l.contains("bidir") && l.contains(" -> "))
    {
        let received = l.split_whitespace().nth(5).unwrap();
        let mbit: f64 = received.parse().unwrap();
        assert!(
            (mbit - 10.0).abs() < 0.5,
            "each direction received 10 Mbit/s: {l}"
        );
    }
}

#[test]
fn progress_on_a_terminal_is_one_live_line_with_the_time_left() {
    require_root!();
    let (bed, file) = bed_with_campaign(
        "tty",
        "cty",
        1,
        "delay = \"1ms\"",
        "sessions = 2\nstart_delay = \"300ms\"\npause = \"200ms\"\n",
        "[[phase]]\nname = \"p\"\nduration = \"2s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\nbitrate = \"5M\"\n",
    );
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills in two descriptors; the null arguments mean defaults.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty failed");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let child = bed
        .campaign_command("a1", &file)
        .args(["-J", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { master }, &mut seen);
        String::from_utf8_lossy(&seen).to_string()
    });
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON document alone");
    assert_eq!(v["phases"].as_array().unwrap().len(), 2);
    let tty = reader.join().unwrap();
    // Redrawn in place (carriage return, erase line), run 1 then run 2, with the time left.
    for k in [1, 2] {
        assert!(
            tty.contains(&format!("\r\x1b[2K[run {k}/2] phase p session {k}/2")),
            "{tty:?}"
        );
    }
    assert!(tty.contains("ETA "), "{tty:?}");
    // Nothing but the live line: no plain run lines, and it is erased at the end.
    assert!(!tty.contains("\nrun "), "{tty:?}");
    assert!(tty.ends_with("\r\x1b[2K"), "{tty:?}");
}
