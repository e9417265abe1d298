//! A two-host testbed with a linkperf server in `b`, and clients run in `a`
//! against it; and a command's JSON output that must have succeeded.

use linkperf_testsupport::bed::{two_hosts, CliBed};
use linkperf_testsupport::process::output_ok;
use serde_json::Value;
use std::process::{Command, Output};

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

    /// `linkperf client B -i 0 --no-store ARGS` in a.
    fn client_command(&self, args: &[&str]) -> Command {
        let mut cmd = self.bed.exec("a", super::bin());
        cmd.args(["client", &self.peer, "-i", "0", "--no-store"])
            .args(args);
        cmd
    }

    /// The client's output; it must have succeeded.
    pub fn client(&self, args: &[&str]) -> Output {
        output_ok(&mut self.client_command(args))
    }

    /// The client's JSON document (`-J` added); it must have succeeded.
    pub fn client_json(&self, args: &[&str]) -> Value {
        command_json(self.client_command(args).arg("-J"))
    }
}

/// The JSON a command printed; it must have succeeded.
pub fn command_json(cmd: &mut Command) -> Value {
    serde_json::from_slice(&output_ok(cmd).stdout).expect("JSON")
}
