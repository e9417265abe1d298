//! Emulated WAN testbeds: hosts in network namespaces joined by a userspace link emulator.
//!
//! A topology file names hosts, switches, routers and links ([`Topology`]); [`up`] builds it
//! (one namespace per host, switch or router, a TAP device per link end, static routes, an
//! emulator process that forwards frames between the TAPs applying rate, delay, jitter, loss,
//! bit errors, queue limit, framing overhead and the receiving end's per-packet processing),
//! [`down`] removes every trace of it.

pub mod atm;
pub mod circuit;
pub mod cli;
pub mod control;
pub mod counters;
pub mod cpu_limit;
pub mod delay_line;
pub mod emulator;
pub mod error;
pub mod exec;
pub mod forwarder;
pub mod framing;
pub mod gso;
pub mod impairment;
pub mod mailbox;
pub mod mptcp;
pub mod netns;
pub mod nic;
pub mod params;
pub mod presets;
pub mod priority;
pub mod probe;
pub mod processing;
pub mod rng;
pub mod routes;
pub mod schedule;
pub mod scheduler;
pub mod stamps;
pub mod state;
pub mod status;
pub mod tap;
pub mod tcp_metrics;
pub mod testbed;
pub mod timing;
pub mod topology;
pub mod trace;

pub use cli::{run, TestbedCommand};
pub use counters::{CounterValues, LinkCounters};
pub use error::TestbedError;
pub use netns::require_root;
pub use testbed::{down, up, Testbed};
pub use topology::Topology;
