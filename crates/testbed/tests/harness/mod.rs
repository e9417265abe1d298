//! The runner shared by the testbed's test binaries (harness = false): `up` re-executes the
//! current executable as `<exe> testbed emulate --state DIR`, and the `exec` tests run
//! `<exe> testbed exec ...`, so each test binary also behaves like `linkperf testbed`.

#![allow(dead_code)]

use clap::Parser;
use linkperf_testbed::{down, up, LinkCounters, Testbed, TestbedCommand, Topology};
use std::time::Instant;

pub type TestFn = fn();

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    #[command(subcommand)]
    Testbed(TestbedCommand),
}

/// Runs `linkperf testbed ...` if that is what we were started as; returns otherwise.
fn act_as_linkperf(args: &[String]) {
    if args.get(1).map(String::as_str) != Some("testbed") {
        return;
    }
    let Command::Testbed(cmd) = Cli::parse_from(args).command;
    match linkperf_testbed::run(cmd) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("linkperf: {e}");
            std::process::exit(e.exit_code());
        }
    }
}

/// The test binary's main: runs the selected tests (all, or those whose name contains an
/// argument), each caught on its own, and prints a libtest-like summary.
pub fn main_with(tests: &[(&str, TestFn)]) {
    let args: Vec<String> = std::env::args().collect();
    act_as_linkperf(&args);
    let filters: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<&(&str, TestFn)> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    if linkperf_testbed::require_root().is_err() {
        for (name, _) in &selected {
            linkperf_testsupport::skip_named(
                name,
                "testbed tests need root (namespaces, TAP devices); CI runs them as root",
            );
        }
        println!(
            "test result: ok. 0 passed; 0 failed; {} ignored; 0 measured; 0 filtered out",
            selected.len()
        );
        return;
    }
    println!("running {} tests", selected.len());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in selected {
        let start = Instant::now();
        // A timing test that failed while the machine was stalled runs again (the stall
        // and the retry are printed and logged): see linkperf_testsupport::stall.
        let outcome =
            std::panic::catch_unwind(|| linkperf_testsupport::stall::retry_named(name, test));
        let secs = start.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({secs:.1}s)");
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED ({secs:.1}s)");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!("\ntest result: {verdict}. {passed} passed; {failed} failed; 0 ignored; 0 measured; {} filtered out", tests.len() - passed - failed);
    if failed > 0 {
        std::process::exit(101);
    }
}

/// Brings a testbed up for the duration of a test and always takes it down.
pub struct Guard(pub Testbed);

impl Guard {
    pub fn up(name: &str, toml: &str) -> Guard {
        let _ = down(name);
        let topo = Topology::from_toml_str(name, toml).expect("topology parses");
        Guard(up(&topo).unwrap_or_else(|e| panic!("up {name}: {e}")))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = down(self.0.name()) {
            eprintln!("down {}: {e}", self.0.name());
        }
    }
}

impl std::ops::Deref for Guard {
    type Target = Testbed;
    fn deref(&self) -> &Testbed {
        &self.0
    }
}

pub fn direction<'a>(counters: &'a [LinkCounters], link: usize, dir: &str) -> &'a LinkCounters {
    counters
        .iter()
        .find(|c| c.link == link && c.direction == dir)
        .expect("direction counters")
}

/// Two hosts a, b and one link with the given body (keys of the [[link]] table).
pub fn pair(link_body: &str) -> String {
    format!("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n{link_body}\n")
}

/// `[[host]]` tables named `names`, with no other keys.
pub fn hosts(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("[[host]]\nname = \"{n}\"\n"))
        .collect()
}

pub fn ns(tb: &Testbed, host: &str) -> String {
    tb.netns(host).unwrap()
}
