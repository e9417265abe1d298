//! `linkperf simulate`'s refusals: a topology element the ns-3 scenario does
//! not model, a congestion control without an ns-3 model, a link schedule step
//! the scenario cannot apply while running, a bad schedule file, and
//! ns-3 missing each give one line naming what is wrong and what is accepted,
//! and exit 2. And a stored simulation is marked as ns-3's in the archive.

mod common;

use std::path::PathBuf;
use std::process::Command;

const HOSTS: &str = "name = \"simbad\"\n[[host]]\nname = \"a\"\naddress = \"10.77.0.1/24\"\n\
    [[host]]\nname = \"b\"\naddress = \"10.77.0.2/24\"\n[[link]]\nends = [\"a\", \"b\"]\n";

fn topology(tag: &str, link: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-simulate-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.toml");
    std::fs::write(&file, format!("{HOSTS}{link}\n")).unwrap();
    file
}

/// Runs `simulate` and returns (exit code, stderr).
fn simulate(file: &PathBuf, extra: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(common::bin());
    cmd.args(["simulate", "--testbed"])
        .arg(file)
        .args(["-t", "1", "--no-store"]);
    cmd.args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run linkperf simulate");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn one_line(stderr: &str, wants: &[&str]) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    for w in wants {
        assert!(stderr.contains(w), "'{w}' missing in: {stderr}");
    }
}

#[test]
fn unknown_congestion_control_lists_the_models() {
    let file = topology("cc", "rate = \"10M\"\ndelay = \"5ms\"");
    let (code, err) = simulate(&file, &["-C", "vegas"], &[]);
    assert_eq!(code, 2, "{err}");
    one_line(&err, &["vegas", "reno, cubic, bic, bbr"]);
}

#[test]
fn unmodelled_element_is_named() {
    let file = topology(
        "jitter",
        "rate = \"10M\"\ndelay = \"5ms\"\njitter = \"1ms\"",
    );
    let (code, err) = simulate(&file, &["-C", "cubic"], &[]);
    assert_eq!(code, 2, "{err}");
    one_line(&err, &["jitter", "does not model", "rate, delay, queue"]);
}

#[test]
fn schedule_step_ns3_cannot_apply_is_named() {
    // Loss at a time is simulated; jitter switched on at a time is not.
    let file = topology(
        "schedule",
        "name = \"l\"\nrate = \"10M\"\ndelay = \"5ms\"\n[schedule]\n[[schedule.step]]\nat = \"0.5s\"\nlink = \"l\"\nloss = \"100%\"\n[[schedule.step]]\nat = \"0.6s\"\nlink = \"l\"\njitter = \"2ms\"",
    );
    let (code, err) = simulate(&file, &["-C", "cubic"], &[]);
    assert_eq!(code, 2, "{err}");
    one_line(&err, &["step 2", "sets jitter", "on link l", "loss"]);
}

#[test]
fn unreadable_schedule_file_is_one_line() {
    let file = topology("schedfile", "name = \"l\"\nrate = \"10M\"\ndelay = \"5ms\"");
    let bad = file.with_file_name("steps.toml");
    std::fs::write(
        &bad,
        "[[step]]\nat = \"1s\"\nlink = \"nosuch\"\nloss = \"1%\"\n",
    )
    .unwrap();
    let (code, err) = simulate(
        &file,
        &["-C", "cubic", "--schedule", bad.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    one_line(&err, &["nosuch"]);
}

#[test]
fn missing_ns3_says_how_to_install() {
    let file = topology("missing", "rate = \"10M\"\ndelay = \"5ms\"");
    let empty = std::env::temp_dir().join(format!("lp-simulate-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let (code, err) = simulate(
        &file,
        &["-C", "cubic"],
        &[("LINKPERF_NS3_PC_DIR", empty.to_str().unwrap())],
    );
    assert_eq!(code, 2, "{err}");
    one_line(
        &err,
        &["ns-3 is not installed", "apt-get install libns3-dev"],
    );
}

#[test]
fn stored_simulation_is_marked_as_ns3() {
    if !common::ns3_installed() {
        return;
    }
    let file = topology(
        "store",
        "rate = \"20M\"\ndelay = \"5ms\"\nqueue_packets = 50",
    );
    let db = file.with_file_name("archive.sqlite");
    let out = Command::new(common::bin())
        .args(["simulate", "--testbed"])
        .arg(&file)
        .args(["-t", "2", "-C", "reno", "-J", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = doc["id"].as_i64().expect("stored id");
    // The link's payload rate bounds it: 20 Mbit/s x 1448 / 1538.
    let rate = common::f64_at(&doc, "/summary/received/bits_per_second");
    assert!(rate > 0.5 * 20e6 * 1448.0 / 1538.0 && rate <= 20e6 * 1448.0 / 1538.0);
    let shown = Command::new(common::bin())
        .args(["results", "show", &id.to_string(), "-J", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let stored: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(stored["source"], common::installed_ns3_source(), "{stored}");
}
