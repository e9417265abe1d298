//! `linkperf-server`, the server in a binary of its own: it serves real
//! `linkperf` clients on loopback as `linkperf server` does (bytes counted at
//! both ends, a paced UDP rate against the rate asked for, the reverse
//! direction), and its usage errors are one line with exit 2. Its
//! configuration defaults are tested in `install_config`.

mod common;

use common::{assert_rate, client, client_json, run_lean, u64_at, Server};

#[test]
fn it_serves_tcp_both_ways_and_paced_udp() {
    let server = Server::start_lean(&["--server-max-tests", "4"]);
    // TCP, both directions: the byte count asked for arrives whole.
    for args in [&["-n", "1M"][..], &["-n", "1M", "-R"][..]] {
        let mut all = args.to_vec();
        all.push("--no-store");
        let r = client_json(server.port, &all);
        assert_eq!(
            u64_at(&r, "/summary/received/bytes"),
            1 << 20,
            "{args:?}: {r:#}"
        );
        assert_eq!(u64_at(&r, "/summary/sent/bytes"), 1 << 20, "{args:?}");
    }
    // UDP at 20 Mbit/s for 2 s: the server counts what the pacer was told
    // to send, within 5 % (loopback loses nothing at this rate).
    let r = client_json(
        server.port,
        &["-u", "-b", "20M", "-t", "2", "-l", "1200", "--no-store"],
    );
    assert_rate(&r, "/summary/received/bits_per_second", 20e6, 0.05);
    // The server's own line for each test, as `linkperf server` prints it:
    // its own counts.
    for want in [
        "TCP Forward x1 ",
        "received 1.00 MiB, sent 0 B",
        "TCP Reverse x1 ",
        "received 0 B, sent 1.00 MiB",
        "UDP Forward x1 ",
    ] {
        let seen = server.wait_stdout(std::time::Duration::from_secs(5), |l| l.contains(want));
        assert!(seen.is_some(), "{want}: {:?}", server.stdout_lines());
    }
    let refused = client(server.port, &["-n", "1K", "-P", "200", "--no-store"]);
    let err = refused.assert_one_line_failure(1);
    assert!(
        err.contains("stream"),
        "-P 200 on a server that allows fewer: {err}"
    );
}

#[test]
fn usage_errors_are_one_line_with_exit_2() {
    for (args, says) in [
        (&["--bogus"][..], "'--bogus'"),
        (&["-p", "70000"][..], "70000"),
        (&["--data-ports", "9-3"][..], "LOW-HIGH"),
        (&["--server-max-tests", "many"][..], "'many'"),
    ] {
        let run = run_lean(args);
        let err = run.assert_one_line_failure(2);
        assert!(err.starts_with("linkperf-server: "), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let help = run_lean(&["--help"]);
    help.assert_success("--help");
    assert!(
        help.stdout.contains("--server-max-tests"),
        "{}",
        help.stdout
    );
    let version = run_lean(&["--version"]);
    version.assert_success("--version");
    assert_eq!(
        version.stdout.trim(),
        format!("linkperf-server {}", env!("CARGO_PKG_VERSION"))
    );
}
