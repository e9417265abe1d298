//! An emulated testbed brought up and taken down through the `linkperf`
//! binary (`linkperf testbed up/down/exec/status`), with the processes a test
//! starts in its hosts. Everything is removed when the value is dropped,
//! whatever the test did, so no namespace outlives a test.

use crate::process::{output_ok, poll, spawn_quiet};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

pub struct CliBed {
    bin: PathBuf,
    name: String,
    file: PathBuf,
    /// Processes started in the testbed: killed before it goes down.
    pub children: Vec<Child>,
}

/// Two hosts `a` (ADDRESS_A) and `b` (ADDRESS_B) in a /24 and one link between
/// them with `link` as the body of its [[link]] table.
pub fn two_hosts(name: &str, address_a: &str, address_b: &str, link: &str) -> String {
    format!(
        "name = \"{name}\"\nseed = 1\n[[host]]\nname = \"a\"\naddress = \"{address_a}/24\"\n\
         [[host]]\nname = \"b\"\naddress = \"{address_b}/24\"\n[[link]]\nends = [\"a\", \"b\"]\n{link}\n"
    )
}

impl CliBed {
    /// Writes `topology` to DIR/NAME.toml and runs `BIN testbed up` on it
    /// (after taking down any leftover of the same name).
    pub fn up(bin: &str, dir: &Path, name: &str, topology: &str) -> CliBed {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, topology).unwrap();
        let _ = Command::new(bin).args(["testbed", "down", name]).output();
        output_ok(Command::new(bin).args(["testbed", "up"]).arg(&file));
        CliBed {
            bin: bin.into(),
            name: name.into(),
            file,
            children: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The network namespace of `host`.
    pub fn netns(&self, host: &str) -> String {
        format!("lp-{}-{host}", self.name)
    }

    /// `ip netns exec NS PROGRAM`, to add arguments to.
    pub fn in_netns(&self, host: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns(host)]).arg(program);
        c
    }

    /// `linkperf testbed exec --testbed NAME HOST -- PROGRAM`, to add arguments to.
    pub fn exec(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new(&self.bin);
        c.args([
            "testbed",
            "exec",
            "--testbed",
            &self.name,
            host,
            "--",
            program,
        ]);
        c
    }

    /// True when something in `host` listens on TCP `port`.
    pub fn listening(&self, host: &str, port: u16) -> bool {
        let out = self
            .in_netns(host, "ss")
            .args(["-Htln", "sport", "=", &format!(":{port}")])
            .output()
            .expect("run ss (iproute2)");
        !String::from_utf8_lossy(&out.stdout).trim().is_empty()
    }

    /// Waits (up to `limit`) until something in `host` listens on `port`.
    pub fn wait_listening(&self, host: &str, port: u16, limit: Duration) {
        let up = poll(limit, Duration::from_millis(20), || {
            self.listening(host, port).then_some(())
        });
        assert!(up.is_some(), "nothing listens on {host}:{port}");
    }

    /// Starts `cmd` (quiet) as a server in `host`, waits until it listens on
    /// `port` and keeps it until the testbed goes down; returns its index.
    pub fn serve(&mut self, host: &str, cmd: &mut Command, port: u16) -> usize {
        self.children.push(spawn_quiet(cmd));
        self.wait_listening(host, port, Duration::from_secs(10));
        self.children.len() - 1
    }

    /// This testbed's entry in `linkperf testbed status --json`.
    pub fn status(&self) -> Value {
        let out = Command::new(&self.bin)
            .args(["testbed", "status", &self.name, "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["testbeds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == self.name.as_str())
            .unwrap()
            .clone()
    }

    /// Counters of link `index`, direction `dir` ("a_to_b" or "b_to_a").
    pub fn counters(&self, index: usize, dir: &str) -> Value {
        let bed = self.status();
        let link = bed["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["index"] == index)
            .unwrap()
            .clone();
        link[dir]["counters"].clone()
    }
}

impl Drop for CliBed {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Err(e) = Command::new(&self.bin)
            .args(["testbed", "down", &self.name])
            .output()
        {
            eprintln!("testbed down {}: {e}", self.name);
        }
        let _ = std::fs::remove_file(&self.file);
    }
}
