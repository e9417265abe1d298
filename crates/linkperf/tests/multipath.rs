//! `-m/--mptcp` over the two-path testbed (examples/testbeds/two-path.toml: hosts a and b
//! joined by a 30 Mbit/s link and a 20 Mbit/s one, each host multi-homed with `mptcp =
//! true`): the MPTCP connection carries one subflow per link, each at its link's payload
//! rate, so the aggregate exceeds the faster link's. And the kernel's refusal of MPTCP
//! (net.mptcp.enabled=0) is one line, not a fallback.
//!
//! They need root (namespaces, TAP devices) and are skipped with a message otherwise.

mod common;

use common::{bin, f64_at, linkperf_in, CliBed};

/// Payload bytes of a full 1500-byte TCP segment with timestamps (1448) over the Ethernet
/// wire bytes it takes (1538). MPTCP's DSS option takes a little more room per segment
/// (a few %), well inside the 10 % allowed.
const PAYLOAD_SHARE: f64 = 1448.0 / 1538.0;

/// The two-path example under its own name (so a user's testbed of the example's name is
/// left alone).
fn two_path(name: &str) -> CliBed {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/testbeds/two-path.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("name = \"two-path\"", &format!("name = \"{name}\""));
    CliBed::up(bin(), &std::env::temp_dir(), name, &text)
}

#[test]
fn mptcp_carries_a_subflow_per_link_at_each_links_payload_rate() {
    let Some(_turn) = common::testbed_turn() else {
        return;
    };
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let mut bed = two_path("lpmptcp");
        let mut server = bed.exec("b", bin());
        bed.serve("b", server.args(["server", "-q", "-m", "-p", "5320"]), 5320);
        let run = linkperf_in(
            &bed,
            "a",
            &[
                "client",
                "10.60.0.2",
                "-p",
                "5320",
                "-m",
                "-t",
                "6",
                "-i",
                "0",
                "-J",
                "--no-store",
            ],
        );
        let report = run.report();
        let stream = &report["summary"]["streams"][0];
        // The receiver's counts: bytes received per subflow over its data time.
        let subflows = stream["receiver"]["subflows"]
            .as_array()
            .unwrap_or_else(|| panic!("no subflows in the receiver's result: {stream}"));
        let links: [(&str, f64); 2] = [("10.60.0.1:", 30e6), ("10.60.0.3:", 20e6)];
        assert_eq!(subflows.len(), 2, "one subflow per link: {subflows:?}");
        for (source, rate) in links {
            let flow = subflows
                .iter()
                .find(|f| f["remote"].as_str().unwrap_or("").starts_with(source))
                .unwrap_or_else(|| panic!("no subflow from {source}: {subflows:?}"));
            let got = f64_at(flow, "/bits_per_second");
            let want = rate * PAYLOAD_SHARE;
            println!(
                "subflow {} -> {}: {:.2} Mbit/s (link payload rate {:.2})",
                flow["remote"],
                flow["local"],
                got / 1e6,
                want / 1e6
            );
            assert!(
                (got / want - 1.0).abs() <= 0.10,
                "subflow from {source}: {:.2} Mbit/s against its link's payload rate {:.2}",
                got / 1e6,
                want / 1e6
            );
        }
        let total = f64_at(stream, "/receiver/bits_per_second");
        let fastest = 30e6 * PAYLOAD_SHARE;
        println!(
            "aggregate {:.2} Mbit/s, faster link alone {:.2}",
            total / 1e6,
            fastest / 1e6
        );
        assert!(
            total > fastest,
            "MPTCP over both links: {:.2} Mbit/s, not above the faster link's {:.2}",
            total / 1e6,
            fastest / 1e6
        );
        assert!(
            run.stdout.contains("\"subflows\""),
            "JSON carries the subflows"
        );
    });
}

#[test]
fn a_kernel_refusing_mptcp_is_one_line() {
    let Some(_turn) = common::testbed_turn() else {
        return;
    };
    let mut bed = two_path("lpmpoff");
    let mut server = bed.exec("b", bin());
    bed.serve("b", server.args(["server", "-q", "-p", "5321"]), 5321);
    // MPTCP's switch is per network namespace: off in host a only.
    let off = bed
        .in_netns("a", "sysctl")
        .args(["-qw", "net.mptcp.enabled=0"])
        .status()
        .unwrap();
    assert!(off.success());
    let one_line = |what: &str, run: &linkperf_testsupport::process::Run, code: i32| {
        let err = run.stderr.trim();
        assert_eq!(run.code(), Some(code), "{what}: {err}");
        assert!(
            err.lines().count() == 1 && err.contains("net.mptcp.enabled"),
            "{what}: one line naming the switch: {err}"
        );
    };
    let client = linkperf_in(
        &bed,
        "a",
        &[
            "client",
            "10.60.0.2",
            "-p",
            "5321",
            "-m",
            "-t",
            "1",
            "--no-store",
        ],
    );
    one_line("client -m", &client, 2);
    let server = linkperf_in(&bed, "a", &["server", "-m", "-1", "-p", "5322"]);
    one_line("server -m", &server, 1);
}
