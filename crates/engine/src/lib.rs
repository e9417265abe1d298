//! The linkperf data plane: streams on OS threads with blocking sockets (TCP
//! receivers on a few epoll loops), socket options, pacing, counters,
//! tcp_info sampling and CPU accounting.
//! Nothing here prints or stores; callers get [`side::SideEvent`]s and a
//! [`linkperf_proto::results::SideResult`].

pub mod arrivals;
pub mod cpu;
pub mod delays;
pub mod facts;
pub mod kernel_drops;
pub mod mmsg;
pub mod modelsend;
pub mod mptcp;
pub mod pacer;
mod receivers;
pub mod rtnetlink;
pub mod rttsample;
mod sampler;
mod samplers;
pub mod series;
pub mod side;
pub mod sink;
pub mod sockopt;
pub mod stream;
pub mod tcpinfo;
pub mod udpformat;
pub mod udptrack;
pub mod zerocopy;

pub use side::{EventSink, LocalSide, SideEvent, StreamPlan};
pub use stream::{udp_stream_memory, DataSocket};
pub use udpformat::UdpFormat;
