//! linkperf as a library: run a throughput test, a latency test, a sweep or a
//! campaign from a Rust program, serve tests, and analyse and store what was
//! measured. The `linkperf` binary (src/cli) only parses flags, dispatches
//! here and prints; docs/architecture.md draws the layers.
//!
//! Data flows one way, and a module imports only those listed before it
//! (`scripts/layers` checks this):
//!
//! - [`signals`]: the process's interrupt flag (Ctrl-C, SIGTERM).
//! - [`model`]: the throughput a described path should give (pure analysis).
//! - [`spec`]: what to run ([`TestSpec`]), as a user states it.
//! - [`dynamics`]: convergence metrics of `--sample` series (pure analysis).
//! - [`report`]: what was measured ([`TestResult`]), JSON schema `linkperf/1`.
//! - [`simulate`]: the ns-3 twin of a test through a testbed path.
//! - [`diagnose`]: why the numbers are what they are (pure analysis).
//! - [`doctor`]: this host's settings against what a target path needs.
//! - [`text`]: the human rendering of a result.
//! - [`tls`]: TLS for control connections (certificates, pins, channels).
//! - [`control`], [`data`]: control sessions and data connections on sockets.
//! - [`guard`]: a server's limits, cookies and event log (what it allows).
//! - [`client`]: runs one test against a server.
//! - [`iperf3`]: interoperability with stock iperf3 clients and servers.
//! - [`runner`]: one test against either kind of server.
//! - [`rr`]: request/response latency, connection set-up, latency under load.
//! - [`server`]: serves tests, rr sessions and iperf3 clients.
//! - [`archive`]: storing results in the archive.
//! - [`sweep`]: parameter studies of one test.
//! - [`campaign`]: many hosts, many flows, one synchronised experiment.
//! - [`reproduce`]: the seed experiments of `examples/seeds/`, run and compared.
//! - [`monitor`]: scheduled tests across a mesh, alerts, metrics and a dashboard.

pub mod signals;

pub mod model;

pub mod spec;

pub mod dynamics;

pub mod report;

pub mod simulate;

pub mod diagnose;
pub mod doctor;

pub mod text;

pub mod tls;

pub mod control;
pub mod data;
pub mod guard;

pub mod client;

pub mod iperf3;

pub mod runner;

pub mod rr;

pub mod server;

pub mod archive;

pub mod sweep;

pub mod campaign;

pub mod reproduce;

pub mod monitor;

pub use client::{ClientError, ClientOptions};
pub use report::Report as TestResult;
pub use report::SOFTWARE;
pub use runner::run_test;
pub use spec::{Peer, TestSpec};
