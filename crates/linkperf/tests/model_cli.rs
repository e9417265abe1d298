//! `linkperf model` from flags and from a topology file, its refusals (one
//! line, exit 2), and a client's `--path`: the prediction in the result and a
//! verdict that names the assumption broken when the measurement falls short.
//! Expected values are worked here from the described link.

mod common;

use common::linkperf;
use linkperf_testsupport::json::f64_at;
use serde_json::Value;

fn model_json(args: &[&str]) -> Value {
    let mut all = vec!["model", "-J"];
    all.extend_from_slice(args);
    let run = linkperf(&all);
    assert_eq!(run.code(), Some(0), "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("model JSON")
}

#[test]
fn flags_and_a_testbed_file_give_the_bottleneck_and_the_window() {
    // ATM at 10 Mbit/s: 1448 payload bytes per 32 cells of 53.
    let doc = model_json(&["--path", "rate=10M,rtt=20ms,framing=atm"]);
    assert_eq!(doc["prediction"]["binding"], "link");
    let want = 10e6 * 1448.0 / (32.0 * 53.0);
    assert!((f64_at(&doc, "/prediction/value") - want).abs() < 1.0);
    // A path of two links: 100 Mbit/s + 2 ms each way, then 10 Mbit/s Ethernet
    // + 8 ms each way; a 64 KiB clamp is 45 segments over 20 ms + one frame.
    let dir = std::env::temp_dir().join(format!("lp-model-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.toml");
    std::fs::write(
        &file,
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[switch]]\nname = \"s\"\n\
         [[link]]\nends = [\"a\", \"s\"]\nrate = \"100M\"\ndelay = \"2ms\"\n\
         [[link]]\nname = \"wan\"\nends = [\"s\", \"b\"]\nrate = \"10M\"\ndelay = \"8ms\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let doc = model_json(&["--testbed", f, "--window-clamp", "64K"]);
    let rtt = 0.020 + 2.0 * 1538.0 * 8.0 / 10e6;
    let window = 45.0 * 1448.0 * 8.0 / rtt;
    assert_eq!(doc["prediction"]["binding"], "link");
    assert!((f64_at(&doc, "/prediction/bounds/window") - window).abs() < 1.0);
    assert!((f64_at(&doc, "/prediction/value") - 10e6 * 1448.0 / 1538.0).abs() < 1.0);
    // One link only: wan's 8 ms each way.
    let doc = model_json(&["--testbed", f, "--link", "wan", "--window-clamp", "64K"]);
    let rtt = 0.016 + 2.0 * 1538.0 * 8.0 / 10e6;
    assert!((f64_at(&doc, "/prediction/bounds/window") - 45.0 * 1448.0 * 8.0 / rtt).abs() < 1.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_descriptions_are_one_line_and_exit_2() {
    for (args, names) in [
        (vec!["--path", "rate=10M,rtt=0ms"], "rtt"),
        (vec!["--path", "rate=10M"], "rtt"),
        (vec!["--path", "rate=10M,rtt=20ms", "-w", "0"], "window"),
        (vec!["--path", "rate=10M,rtt=20ms,framing=fddi"], "framing"),
        (vec!["--path", "rtt=20ms"], "nothing bounds"),
        (vec!["--testbed", "/nonexistent/x.toml"], "x.toml"),
    ] {
        let mut all = vec!["model"];
        all.extend_from_slice(&args);
        let run = linkperf(&all);
        assert_eq!(run.code(), Some(2), "{args:?}: {}", run.stderr);
        assert_eq!(
            run.stderr.trim().lines().count(),
            1,
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(names), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    // The client refuses an incomplete path before it runs anything.
    let run = linkperf(&["client", "127.0.0.1", "-p", "1", "--path", "rate=10M"]);
    assert_eq!(run.code(), Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("rtt"), "{}", run.stderr);
}

#[test]
fn a_client_with_a_path_carries_the_prediction_and_says_what_broke() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        // Paced at 10 Mbit/s on loopback but described as a 100 Mbit/s path:
        // the prediction is the link's (100M x 1448 / 1538), the ratio the
        // paced rate over it, and the verdict names the broken assumption.
        let doc = common::loopback_json(&[
            "-t",
            "1",
            "-i",
            "0",
            "--no-store",
            "-b",
            "10M",
            "--path",
            "rate=100M,rtt=1ms",
        ]);
        let want = 100e6 * 1448.0 / 1538.0;
        let predicted = f64_at(&doc, "/summary/prediction/value");
        assert!((predicted - want).abs() < 1.0, "{predicted}");
        let measured = f64_at(&doc, "/summary/received/bits_per_second");
        let ratio = f64_at(&doc, "/summary/measured_over_predicted");
        assert!((ratio - measured / want).abs() < 1e-9);
        // 10 Mbit/s paced (a 1 s test's first burst adds a little) is far below
        // 0.8 of the link: the verdict must say what broke.
        assert!(ratio < 0.8, "paced 10M of {want}: {ratio}");
        let explanation = doc["summary"]["verdict"]["explanation"].as_str().unwrap();
        assert!(
            explanation.contains("broke the assumption of a sender that always has data"),
            "{explanation}"
        );
        assert!(
            doc["summary"]["verdict"]["evidence"]["predicted_bits_per_second"].is_number(),
            "{}",
            doc["summary"]["verdict"]
        );
    });
}
