//! The seed experiments' tests: `linkperf reproduce` on the experiments of
//! examples/seeds/, without storing, as one JSON document.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// examples/seeds/ of this checkout.
pub fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/seeds")
}

/// `linkperf reproduce NAME -J`, the whole document. Prints the wall time it
/// took (the suite's budget is kept by the experiments' reduced durations).
pub fn reproduce_doc(name: &str) -> Value {
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_linkperf"))
        .args(["reproduce", name, "--no-store", "-J", "--dir"])
        .arg(seeds_dir())
        .output()
        .expect("run linkperf reproduce");
    eprintln!(
        "  reproduce {name}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "reproduce {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("reproduce JSON")
}
