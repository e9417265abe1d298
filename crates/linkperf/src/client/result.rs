//! Turns what both ends measured into the test's [`Report`]: summaries and
//! their verdicts, each stream's sockets at both ends, warnings and errors.
//! Must not do I/O with the server.

use super::connect::ClientOptions;
use super::session::Outcome;
use crate::data;
use crate::diagnose;
use crate::report::{self, Report, Sides, StartInfo, StreamSockets, TestInfo};
use linkperf_engine::facts;
use linkperf_proto::results::{HostFacts, Role, SocketFacts};

/// What the client learnt while setting the test up.
pub(super) struct Setup {
    /// The server's port (the control connection's).
    pub port: u16,
    pub started_ms: u64,
    pub remote_facts: HostFacts,
    /// "shared", "synchronised" or "independent".
    pub clock: &'static str,
    /// This end's sockets, one per stream in id order.
    pub local_sockets: Vec<SocketFacts>,
    /// Set-up warnings, the server's and this end's.
    pub warnings: Vec<String>,
    /// The control connection's local address (the server's view of us).
    pub control_local: std::net::SocketAddr,
    /// The server's answer to `config.doctor` (None: not asked or not answered).
    pub server_doctor: Option<serde_json::Value>,
}

pub(super) fn report(options: &ClientOptions, setup: Setup, outcome: Outcome) -> Report {
    let config = &options.config;
    let Outcome {
        local,
        remote,
        intervals,
        interrupted,
        mut errors,
    } = outcome;
    let mut warnings = setup.warnings;
    for s in local.streams.iter().chain(remote.streams.iter()) {
        if let Some(e) = &s.error {
            errors.push(format!("stream {} ({:?}): {e}", s.id, s.role));
        }
    }
    warnings.extend(local.warnings.iter().cloned());
    warnings.extend(remote.warnings.iter().map(|w| format!("server: {w}")));
    let sides = Sides {
        config,
        local: &local,
        remote: &remote,
    };
    let (summary, summary_reverse) = diagnose::summaries(&sides);
    let remote_sockets = |id: u32| {
        remote
            .streams
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.socket.clone())
    };
    let streams = data::stream_roles(config, false)
        .iter()
        .zip(setup.local_sockets)
        .map(|((id, role), local)| StreamSockets {
            id: *id,
            direction: report::direction_name(*role == Role::Sender),
            local,
            remote: remote_sockets(*id),
        })
        .collect();
    Report {
        schema: report::SCHEMA,
        software: crate::report::SOFTWARE.into(),
        test: TestInfo {
            server: options.host.clone(),
            port: setup.port,
            config: config.clone(),
        },
        start: StartInfo {
            timestamp_unix_ms: setup.started_ms,
            local: facts::collect(crate::report::SOFTWARE),
            remote: setup.remote_facts,
            clock: setup.clock.into(),
            streams,
        },
        intervals,
        summary,
        summary_reverse,
        warnings,
        errors,
        interrupted,
        testbed: None,
        server_output: options.server_output.then(|| report::ServerOutput {
            client: setup.control_local.to_string(),
            side: remote,
        }),
        extra_data: None,
        // `client --doctor` adds this host's examination beside the server's.
        doctor: config.doctor.as_ref().map(|_| match setup.server_doctor {
            Some(answer) => serde_json::json!({ "server": answer }),
            None => serde_json::json!({ "server": null }),
        }),
    }
}
