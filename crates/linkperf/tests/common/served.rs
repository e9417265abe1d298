//! A two-host testbed with a linkperf server in `b`, and clients run in `a`
//! against it; and a command's JSON output that must have succeeded.

use linkperf_testsupport::bed::{two_hosts, CliBed};
use serde_json::Value;
use std::process::Output;

/// Hosts a (SUBNET.1) and b (SUBNET.2) joined by `link` (the body of its
/// [[link]] table), `linkperf server` listening in b on its default port.
pub struct ServedBed {
    pub bed: CliBed,
    peer: String,
}

impl ServedBed {
    pub fn up(name: &str, subnet: &str, link: &str) -> ServedBed {
        let (a, peer) = (format!("{subnet}.1"), format!("{subnet}.2"));
        let topology = two_hosts(name, &a, &peer, link);
        let mut bed = CliBed::up(super::bin(), &std::env::temp_dir(), name, &topology);
        let mut server = bed.exec("b", super::bin());
        bed.serve("b", server.args(["server", "-q"]), 5211);
        ServedBed { bed, peer }
    }

    /// `linkperf client B -i 0 --no-store ARGS` in a, which must succeed.
    pub fn client(&self, args: &[&str]) -> Output {
        let out = self
            .bed
            .exec("a", super::bin())
            .args(["client", &self.peer, "-i", "0", "--no-store"])
            .args(args)
            .output()
            .expect("run linkperf client in host a");
        assert!(
            out.status.success(),
            "client {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The client's JSON document (`-J` added).
    pub fn client_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["-J"];
        all.extend_from_slice(args);
        output_json(self.client(&all), "client")
    }
}

/// The JSON a command printed; it must have succeeded.
pub fn output_json(out: Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}
