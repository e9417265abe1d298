//! One persistent transaction channel (a TCP data connection or the UDP
//! flow): open it, send a request, wait for an answer. It keeps no time and
//! no statistics; the transaction loops do.

use super::control::{fail, join_bytes, tcp_connect, HANDSHAKE_TIMEOUT};
use crate::client::ClientError;
use linkperf_proto::rr::{self, UDP_HEADER_LEN};
use linkperf_proto::{Protocol, TestConfig};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// A persistent transaction channel: one TCP connection or the UDP flow.
pub(super) enum Flow {
    Tcp {
        stream: TcpStream,
        request: Vec<u8>,
        response: Vec<u8>,
    },
    Udp {
        sock: UdpSocket,
        request: Vec<u8>,
        response_size: u32,
        buf: Vec<u8>,
    },
}

/// What came back.
#[derive(Clone, Copy)]
pub(super) struct Answer {
    /// UDP: the request it answers; TCP: `None`, answers come in order and
    /// each one is for the oldest request in flight.
    pub(super) seq: Option<u64>,
    pub(super) server_rx_ns: Option<u64>,
}

impl Flow {
    pub(super) fn open_tcp(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: u64,
        request: u32,
        response: u32,
        stall: Duration,
    ) -> Result<Flow, ClientError> {
        let mut stream = tcp_connect(server, bind, HANDSHAKE_TIMEOUT)?;
        stream
            .write_all(&join_bytes(cookie, request, response))
            .map_err(|e| fail(format!("data connection to {server}: {e}")))?;
        stream.set_read_timeout(Some(stall)).ok();
        Ok(Flow::Tcp {
            stream,
            request: vec![0u8; request as usize],
            response: vec![0u8; response as usize],
        })
    }

    pub(super) fn open_udp(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: u64,
        request: u32,
        response: u32,
    ) -> Result<Flow, ClientError> {
        let local = SocketAddr::new(
            bind.unwrap_or(if server.is_ipv6() {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0u8; 4])
            }),
            0,
        );
        let config = TestConfig {
            protocol: Protocol::Udp,
            ..Default::default()
        };
        let sock = crate::data::connect_udp(local, server, &config, cookie, 0).map_err(fail)?;
        let mut flow = Flow::Udp {
            sock,
            request: Vec::new(),
            response_size: 0,
            buf: vec![0u8; 65_536],
        };
        flow.set_sizes(request, response);
        Ok(flow)
    }

    /// UDP: the sizes of the next transactions (TCP fixes them per connection).
    pub(super) fn set_sizes(&mut self, request_size: u32, response: u32) {
        if let Flow::Udp {
            request,
            response_size,
            ..
        } = self
        {
            request.clear();
            request.resize(request_size as usize, 0);
            *response_size = response;
        }
    }

    pub(super) fn fd(&self) -> RawFd {
        match self {
            Flow::Tcp { stream, .. } => stream.as_raw_fd(),
            Flow::Udp { sock, .. } => sock.as_raw_fd(),
        }
    }

    pub(super) fn set_timeout(&self, d: Duration) {
        let _ = match self {
            Flow::Tcp { stream, .. } => stream.set_read_timeout(Some(d)),
            Flow::Udp { sock, .. } => sock.set_read_timeout(Some(d)),
        };
    }

    #[inline]
    pub(super) fn send(&mut self, seq: u64) -> std::io::Result<()> {
        match self {
            Flow::Tcp {
                stream, request, ..
            } => stream.write_all(request),
            Flow::Udp {
                sock,
                request,
                response_size,
                ..
            } => {
                rr::write_udp_request(&mut request[..UDP_HEADER_LEN], seq, *response_size);
                match sock.send(request) {
                    Ok(_) => Ok(()),
                    // A full send buffer or an ICMP error for an earlier
                    // datagram: this transaction is lost, the test goes on.
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::WouldBlock
                                | ErrorKind::ConnectionRefused
                                | ErrorKind::Interrupted
                        ) =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits for the next answer until the socket's read timeout; `Ok(None)`
    /// on timeout (UDP) or a datagram that is not an answer.
    #[inline]
    pub(super) fn recv(&mut self) -> std::io::Result<Option<Answer>> {
        match self {
            Flow::Tcp {
                stream, response, ..
            } => {
                let mut got = 0;
                while got < response.len() {
                    match stream.read(&mut response[got..]) {
                        Ok(0) => {
                            return Err(std::io::Error::new(
                                ErrorKind::UnexpectedEof,
                                "the server closed the data connection",
                            ))
                        }
                        Ok(n) => got += n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(Some(Answer {
                    seq: None,
                    server_rx_ns: rr::parse_tcp_stamp(response),
                }))
            }
            Flow::Udp { sock, buf, .. } => match sock.recv(buf) {
                Ok(n) => Ok(rr::parse_udp_response(&buf[..n]).map(|(seq, rx)| Answer {
                    seq: Some(seq),
                    server_rx_ns: Some(rx),
                })),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock
                            | ErrorKind::TimedOut
                            | ErrorKind::Interrupted
                            | ErrorKind::ConnectionRefused
                    ) =>
                {
                    Ok(None)
                }
                Err(e) => Err(e),
            },
        }
    }
}

/// Waits until `fd` is readable or `wait` has passed; true if readable.
pub(super) fn poll_readable(fd: RawFd, wait: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    rc > 0
}
