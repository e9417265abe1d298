//! linkperf's traffic models, without I/O: distributions of inter-departure
//! times and sizes ([`dist`]), the models users choose ([`model`]: full, cbr,
//! bursts, stochastic with ON/OFF, traces), a flow's model per direction
//! ([`flow`]), replayed traces
//! ([`trace`]), named application profiles ([`profiles`]) and the send
//! schedule a sender follows ([`schedule`]), all from one seeded generator
//! ([`rng`]) so a run is reproducible from its seed.

pub mod dist;
pub mod flow;
pub mod model;
pub mod profiles;
pub mod rng;
pub mod schedule;
pub mod trace;

pub use dist::{Dist, Quantity};
pub use flow::Traffic;
pub use model::{Model, OnOff};
pub use schedule::{Message, Schedule};
pub use trace::Trace;
