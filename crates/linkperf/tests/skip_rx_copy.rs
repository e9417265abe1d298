//! `--skip-rx-copy`: TCP receivers read with MSG_TRUNC (the kernel discards the payload),
//! on the server (a forward test) and on the client (-R), and still count exactly the bytes
//! asked for with -n; UDP refuses it with one line.

mod common;

use common::{loopback_client, loopback_json, u64_at};

const ASKED: u64 = 50_000_000;

#[test]
fn the_receiver_discarding_in_the_kernel_counts_exactly_the_bytes_asked() {
    for reverse in [false, true] {
        let n = ASKED.to_string();
        let mut args = vec!["-n", &n, "--skip-rx-copy", "-i", "0", "--no-store"];
        if reverse {
            args.push("-R");
        }
        let report = loopback_json(&args);
        let stream = &report["summary"]["streams"][0];
        let (sent, received) = (
            u64_at(stream, "/sender/bytes"),
            u64_at(stream, "/receiver/bytes"),
        );
        println!("reverse {reverse}: sent {sent}, received {received} of {ASKED}");
        assert_eq!(sent, ASKED, "reverse {reverse}: the sender's count");
        assert_eq!(received, ASKED, "reverse {reverse}: the receiver's count");
        assert_eq!(report["test"]["skip_rx_copy"], true);
    }
}

#[test]
fn udp_refuses_skip_rx_copy_in_one_line() {
    let run = loopback_client(&["-u", "--skip-rx-copy", "-t", "1", "--no-store"]);
    let err = run.stderr.trim();
    assert_eq!(run.code(), Some(2), "{err}");
    assert!(
        err.lines().count() == 1 && err.contains("--skip-rx-copy") && err.contains("-u"),
        "{err}"
    );
}
