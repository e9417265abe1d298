//! Sweeps through an emulated testbed (`--testbed FILE.toml`): which hosts
//! are client and server, `link.*` parameters checked against the topology
//! with the checks of `testbed set`, and the [`Session`] that builds or
//! reuses the testbed, serves tests in the server host, sets each point's
//! links and runs each test in the client host.
//!
//! Client and server run in this process, each on a thread that entered its
//! host's network namespace (setns): sockets belong to the namespace of the
//! thread that creates them, and threads inherit it. So the test is the same
//! `run_test` with the same report and interrupt flag as without a testbed,
//! no test options travel through a command line, and nothing outlives the
//! sweep as a stray process in a namespace.

use super::plan::{self, Params, Vary};
use crate::client::ClientError;
use crate::report::Report;
use crate::runner::run_test;
use crate::server::{Server, ServerOptions};
use crate::spec::TestSpec;
use linkperf_testbed::schedule::{LinkChange, Schedule};
use linkperf_testbed::topology::parse_set_args;
use linkperf_testbed::{Testbed, Topology};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Where a sweep runs: a topology file and its client and server hosts.
#[derive(Debug, Clone)]
pub struct Network {
    /// The topology file, absolute.
    pub file: PathBuf,
    pub topology: Topology,
    pub client_host: String,
    pub server_host: String,
}

impl Network {
    /// Reads `file` and picks the hosts: by default the topology's first
    /// host runs the client and its second the server.
    pub fn load(
        file: &Path,
        client_host: Option<&str>,
        server_host: Option<&str>,
    ) -> Result<Network, String> {
        let topology = Topology::from_file(file).map_err(|e| e.to_string())?;
        let names: Vec<&str> = topology.hosts.iter().map(|h| h.name.as_str()).collect();
        let pick = |given: Option<&str>, default: usize, flag: &str| match given {
            Some(h) if names.contains(&h) => Ok(h.to_string()),
            Some(h) => Err(format!(
                "{flag} {h}: {} has no host '{h}' (hosts: {})",
                file.display(),
                names.join(", ")
            )),
            None => names.get(default).map(|h| h.to_string()).ok_or_else(|| {
                format!(
                    "{} has {} host(s); a sweep needs a client and a server host",
                    file.display(),
                    names.len()
                )
            }),
        };
        let client_host = pick(client_host, 0, "--client-host")?;
        let server_host = pick(server_host, 1, "--server-host")?;
        if client_host == server_host {
            return Err(format!(
                "--client-host and --server-host are both '{client_host}'; the test must cross the testbed"
            ));
        }
        Ok(Network {
            file: std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()),
            topology,
            client_host,
            server_host,
        })
    }

    /// The server host's IPv4 address: the sweep's HOST.
    pub fn server_address(&self) -> String {
        self.topology
            .host(&self.server_host)
            .map(|h| h.ipv4.to_string())
            .unwrap_or_default()
    }

    /// Checks every value of every `link.*` vary as `testbed set` would.
    pub fn check(&self, varies: &[Vary]) -> Result<(), String> {
        for v in varies.iter().filter(|v| plan::is_link(&v.name)) {
            for value in &v.values {
                link_change(&self.topology, &v.name, value).map_err(|m| format!("--vary {m}"))?;
            }
        }
        Ok(())
    }

    /// The sweep record's description of the testbed.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file,
            "name": self.topology.name,
            "client_host": self.client_host,
            "server_host": self.server_host,
        })
    }
}

/// The change `link.LINK[.DIR].KEY=value` asks for, checked by `testbed set`'s parser
/// (sweeps and campaigns name link parameters alike).
pub fn link_change(topology: &Topology, name: &str, value: &str) -> Result<LinkChange, String> {
    let (link, key) =
        plan::link_target(name).ok_or_else(|| format!("{name}: expected link.LINK.KEY"))?;
    parse_set_args(topology, link, &[format!("{key}={value}")], None).map_err(|e| {
        // "testbed set: argument 2: ..." names the wrong thing here.
        let m = e.to_string();
        let m = m.strip_prefix("testbed set: ").unwrap_or(&m);
        let m = m
            .strip_prefix("argument 1: ")
            .or_else(|| m.strip_prefix("argument 2: "))
            .unwrap_or(m);
        format!("{name}={value}: {m}")
    })
}

/// Runs `f` on a new thread inside namespace `netns`; the thread ends with it.
pub(crate) fn in_namespace<T: Send>(
    netns: &str,
    f: impl FnOnce() -> T + Send,
) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            linkperf_testbed::netns::enter_netns(netns).map_err(|e| e.to_string())?;
            Ok(f())
        })
        .join()
        .map_err(|_| "the thread running in the testbed panicked".to_string())?
    })
}

/// A testbed in use by a sweep: built (or found up), a server listening in
/// the server host, the links as the last point set them.
pub struct Session {
    testbed: Testbed,
    network: Network,
    /// This session built the testbed, so [`Session::finish`] removes it.
    built: bool,
    client_netns: String,
    /// The link parameters in force (`link.*` entries of the last point).
    applied: Option<Params>,
}

impl Session {
    /// Builds the testbed unless it is up, checks the links against the
    /// running one, and starts a server in the server host on `port`
    /// (unless one already listens there).
    pub fn start(network: &Network, varies: &[Vary], port: u16) -> Result<Session, String> {
        linkperf_testbed::require_root().map_err(|e| e.to_string())?;
        let name = &network.topology.name;
        let (testbed, built) = match Testbed::attach(name) {
            Ok(tb) => (tb, false),
            Err(_) => (
                linkperf_testbed::up(&network.topology)
                    .map_err(|e| format!("cannot build testbed '{name}': {e}"))?,
                true,
            ),
        };
        let netns = |host: &str| {
            testbed
                .netns(host)
                .ok_or_else(|| format!("testbed '{name}' (up already) has no host '{host}'"))
        };
        let started = (|| {
            let client_netns = netns(&network.client_host)?;
            let server_netns = netns(&network.server_host)?;
            // A testbed found up may differ from the file: check against what runs.
            let running = Network {
                topology: testbed.topology().clone(),
                ..network.clone()
            };
            running.check(varies)?;
            let options = ServerOptions {
                port,
                verbose: false,
                ..Default::default()
            };
            start_server(&server_netns, options)?;
            Ok(client_netns)
        })();
        match started {
            Ok(client_netns) => Ok(Session {
                testbed,
                network: network.clone(),
                built,
                client_netns,
                applied: None,
            }),
            Err(e) => {
                if built {
                    let _ = linkperf_testbed::down(name);
                }
                Err(e)
            }
        }
    }

    /// Sets the links of `params` (its `link.*` entries) unless they are in
    /// force already; all of them together.
    pub fn set_point(&mut self, params: &Params) -> Result<(), String> {
        let links: Params = params
            .iter()
            .filter(|(k, _)| plan::is_link(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if links.is_empty() || self.applied.as_ref() == Some(&links) {
            return Ok(());
        }
        let changes = links
            .iter()
            .map(|(k, v)| {
                link_change(self.testbed.topology(), k, v).map_err(|m| format!("--vary {m}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.testbed
            .set(&changes)
            .map_err(|e| format!("cannot set {}: {e}", plan::label(&links)))?;
        self.applied = Some(links);
        Ok(())
    }

    /// Starts `schedule` now (its times count from here), replacing one
    /// still running: a run that follows starts with it.
    pub fn start_schedule(&self, schedule: &Schedule) -> Result<(), String> {
        self.testbed
            .start_schedule(schedule)
            .map(|_| ())
            .map_err(|e| format!("cannot start the link schedule: {e}"))
    }

    /// One test from the client host.
    pub fn run(&self, spec: &TestSpec, interrupt: &AtomicBool) -> Result<Report, ClientError> {
        let spec = TestSpec {
            testbed: Some(self.network.topology.name.clone()),
            ..spec.clone()
        };
        in_namespace(&self.client_netns, || {
            run_test(&spec, &mut |_| {}, Some(interrupt))
        })
        .map_err(|message| ClientError {
            message,
            exit_code: 1,
        })?
    }

    /// `linkperf rr` probes from the client host (seed experiments that
    /// measure latency rather than throughput).
    pub fn run_rr(
        &self,
        plan: &crate::rr::Plan,
        interrupt: &AtomicBool,
    ) -> Result<crate::rr::report::RrReport, ClientError> {
        in_namespace(&self.client_netns, || {
            crate::rr::client::run(plan, &mut |_| {}, interrupt)
        })
        .map_err(|message| ClientError {
            message,
            exit_code: 1,
        })?
    }

    /// Removes the testbed if this session built it (a testbed found up
    /// stays, with the last point's link values).
    pub fn finish(self) -> Result<(), String> {
        if !self.built {
            return Ok(());
        }
        linkperf_testbed::down(&self.network.topology.name).map_err(|e| {
            format!(
                "cannot remove testbed '{}': {e}",
                self.network.topology.name
            )
        })
    }
}

/// A linkperf server in namespace `netns`, on its own thread for the rest of
/// the process (its connections' threads inherit the namespace). A server
/// already listening on its port there is used as it is.
pub fn start_server(netns: &str, options: ServerOptions) -> Result<(), String> {
    let port = options.port;
    let listening = in_namespace(netns, || {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    })?;
    if listening {
        return Ok(());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let netns = netns.to_string();
    std::thread::Builder::new()
        .name("lp-sweep-server".into())
        .spawn(move || {
            let bound = linkperf_testbed::netns::enter_netns(&netns)
                .map_err(|e| e.to_string())
                .and_then(|()| Server::bind(options));
            match bound {
                Ok(server) => {
                    let _ = tx.send(Ok(()));
                    server.run();
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        })
        .map_err(|e| format!("cannot start the server thread: {e}"))?;
    rx.recv()
        .map_err(|_| "the server thread ended before listening".to_string())?
        .map_err(|e| format!("the server in the testbed: {e}"))
}
