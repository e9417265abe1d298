//! Opening one test's data connections as the server's Ready asked: TCP
//! connections with their handshake options set before connect, or UDP
//! flows to the ports the server gave. Must not read or send control
//! messages.

use super::connect::{
    connect, fail, local_bind, stream_socket, unspecified, usage, ClientError, ClientOptions,
};
use super::exchange::Ready;
use crate::data;
use linkperf_engine::{DataSocket, StreamPlan};
use linkperf_proto::{DataHello, Preamble, Protocol, TestConfig};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};

/// One connected socket per stream, in id order; the buffer warnings of
/// the TCP sockets go to `warnings`.
pub(super) fn open(
    options: &ClientOptions,
    server: SocketAddr,
    ready: &Ready,
    warnings: &mut Vec<String>,
) -> Result<Vec<StreamPlan>, ClientError> {
    let config = &options.config;
    let data_addr = SocketAddr::new(server.ip(), ready.data_port.unwrap_or(server.port()));
    let mut plans = Vec::new();
    for (index, (id, role)) in data::stream_roles(config, false).into_iter().enumerate() {
        let port = options
            .cport
            .map(|p| p.saturating_add(index as u16))
            .unwrap_or(0);
        let bind = local_bind(options, server, port);
        let socket = match config.protocol {
            Protocol::Tcp => DataSocket::Tcp(open_tcp(
                options,
                server,
                bind,
                data_addr,
                ready.cookie,
                id,
                warnings,
            )?),
            Protocol::Udp => DataSocket::Udp(open_udp(config, server, bind, ready, id)?),
        };
        plans.push(StreamPlan { id, role, socket });
    }
    Ok(plans)
}

/// A TCP data connection: options set before connect (the handshake
/// negotiates them), then the preamble and the stream's hello.
fn open_tcp(
    options: &ClientOptions,
    server: SocketAddr,
    bind: Option<SocketAddr>,
    data_addr: SocketAddr,
    cookie: u64,
    id: u32,
    warnings: &mut Vec<String>,
) -> Result<TcpStream, ClientError> {
    let config = &options.config;
    let sock = stream_socket(server, bind, config.mptcp)?;
    warnings.extend(linkperf_engine::sockopt::apply_buffers(&sock, config));
    linkperf_engine::sockopt::apply_tcp(&sock, config).map_err(usage)?;
    connect(&sock, data_addr, options.connect_within())?;
    let mut stream: TcpStream = sock.into();
    let mut hello = Preamble::Data.bytes().to_vec();
    hello.extend_from_slice(
        &DataHello {
            cookie,
            stream_id: id,
        }
        .encode(),
    );
    stream
        .write_all(&hello)
        .map_err(|e| fail(format!("data connection {id}: {e}")))?;
    Ok(stream)
}

/// A UDP flow to the port the server opened for stream `id`.
fn open_udp(
    config: &TestConfig,
    server: SocketAddr,
    bind: Option<SocketAddr>,
    ready: &Ready,
    id: u32,
) -> Result<std::net::UdpSocket, ClientError> {
    let port = ready
        .endpoints
        .iter()
        .find(|e| e.id == id)
        .and_then(|e| e.udp_port)
        .ok_or_else(|| fail(format!("the server gave no UDP port for stream {id}")))?;
    let local = bind.unwrap_or_else(|| SocketAddr::new(unspecified(server), 0));
    data::connect_udp(
        local,
        SocketAddr::new(server.ip(), port),
        config,
        ready.cookie,
        id,
    )
    .map_err(fail)
}
