//! Emulated WAN testbeds: hosts in network namespaces joined by a userspace link emulator.

pub mod counters;
pub mod error;
pub mod framing;
pub mod impairment;
pub mod params;
pub mod rng;
pub mod scheduler;

pub use error::TestbedError;
pub mod presets;
pub mod topology;

pub use topology::Topology;
