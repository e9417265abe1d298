//! Harness of the rr protocol: its control frames (server and client ends)
//! and its UDP and TCP data formats.

use super::checks::{declared_len, Input};
use crate::codec::CodecError;
use crate::rr::{
    self, RrClientMessage, RrClientSession, RrPhase, RrServerMessage, RrServerSession,
};
use crate::{udp, Protocol};

/// First byte: 0 the server reading exactly what it wants (and answering as
/// a server does), 1 the server fed chunks, 2 the client, 3 the data formats.
pub fn rr_codec(data: &[u8]) {
    let mut input = Input::new(data);
    match input.byte() % 4 {
        0 => server_exact(input),
        1 => server_chunks(input),
        2 => client_chunks(input),
        _ => data_formats(input),
    }
}

/// The server as it runs: reads [`RrServerSession::wanted`] bytes at a time,
/// answers Hello with Welcome and Finish with Done. A frame never exceeds
/// [`rr::MAX_CLIENT_FRAME`], and after a Join not one byte of the raw
/// requests that follow has been swallowed by the frame decoder.
fn server_exact(mut input: Input) {
    let mut s = RrServerSession::new();
    let mut frame = Vec::new();
    loop {
        let bytes = input.take(s.wanted());
        if bytes.is_empty() {
            return;
        }
        frame.extend_from_slice(bytes);
        let got = match s.receive(bytes) {
            Ok(got) => got,
            Err(rr::RrError::Codec(CodecError::TooLarge(n, limit))) => {
                assert_eq!(limit, rr::MAX_CLIENT_FRAME);
                assert!(n > limit && declared_len(&frame) == Some(n));
                return;
            }
            Err(_) => return,
        };
        assert!(got.len() <= 1, "exact reads complete one frame at a time");
        let Some(m) = got.first() else { continue };
        let len = declared_len(&frame).expect("a frame has a length");
        assert_eq!(frame.len(), 4 + len, "a message is its whole frame");
        assert!(
            len <= rr::MAX_CLIENT_FRAME,
            "a {len}-byte rr frame was decoded"
        );
        frame.clear();
        match (m, s.phase()) {
            (RrClientMessage::Join { .. }, phase) => {
                assert_eq!(phase, RrPhase::Data);
                assert_eq!(s.wanted(), 4, "bytes after the join were buffered");
                // Raw requests follow: no frame is read any more.
                assert!(s.receive(input.rest()).is_err());
                return;
            }
            (RrClientMessage::Hello { .. }, RrPhase::Greeted) => {
                let welcome = RrServerMessage::Welcome {
                    version: rr::RR_VERSION,
                    software: "fuzz".into(),
                    cookie: 1,
                    udp_port: None,
                    boot_id: None,
                };
                s.send(&welcome).expect("a greeted session takes a welcome");
                assert_eq!(s.phase(), RrPhase::Running);
            }
            (RrClientMessage::Finish, RrPhase::Finishing) => {
                let done = RrServerMessage::Done {
                    requests: 0,
                    transactions: 0,
                    connections: 0,
                };
                s.send(&done).expect("a finishing session takes done");
                assert_eq!(s.phase(), RrPhase::Closed);
            }
            (m, phase) => panic!("{m:?} accepted, leaving phase {phase:?}"),
        }
    }
}

fn server_chunks(mut input: Input) {
    let mut s = RrServerSession::new();
    while !input.is_empty() {
        if s.receive(input.chunk()).is_err() {
            return;
        }
    }
}

fn client_chunks(mut input: Input) {
    let mut c = RrClientSession::new();
    if input.byte() & 1 == 0 {
        let hello = RrClientMessage::Hello {
            version: rr::RR_VERSION,
            software: "fuzz".into(),
            protocol: Protocol::Udp,
        };
        c.send(&hello).expect("a new session sends hello");
    }
    while !input.is_empty() {
        if c.receive(input.chunk()).is_err() {
            return;
        }
    }
}

/// UDP requests, responses and hellos, linkperf UDP data headers, TCP
/// stamps and size checks. A request never asks for a reply larger than a
/// datagram or smaller than the header, whatever its bytes.
fn data_formats(mut input: Input) {
    let bytes = input.rest();
    if let Some((seq, response)) = rr::parse_udp_request(bytes) {
        assert!((rr::MIN_UDP_MESSAGE..=rr::MAX_UDP_MESSAGE).contains(&response));
        assert_eq!(seq.to_be_bytes(), bytes[..8]);
        assert_eq!(response.to_be_bytes(), bytes[8..12]);
    } else if bytes.len() >= rr::UDP_HEADER_LEN {
        let asked = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
        assert!(!(rr::MIN_UDP_MESSAGE..=rr::MAX_UDP_MESSAGE).contains(&asked));
    }
    if let Some((seq, rx)) = rr::parse_udp_response(bytes) {
        let mut buf = [0u8; rr::UDP_HEADER_LEN];
        rr::write_udp_response(&mut buf, seq, rx);
        assert_eq!(buf, bytes[..rr::UDP_HEADER_LEN]);
    }
    if let Some(stamp) = rr::parse_tcp_stamp(bytes) {
        let mut buf = bytes.to_vec();
        rr::write_tcp_stamp(&mut buf, stamp);
        assert_eq!(buf, bytes);
    }
    let _ = udp::parse(bytes);
    if let Some((cookie, stream)) = udp::parse_hello(bytes) {
        assert_eq!(
            udp::write_hello(cookie, stream)[..],
            bytes[..udp::HELLO_LEN]
        );
    }
    if let Some(head) = bytes.get(..8) {
        let size = u64::from_be_bytes(head.try_into().unwrap());
        for protocol in [Protocol::Udp, Protocol::Tcp] {
            if let Ok(n) = rr::check_size("--request", size, protocol) {
                assert_eq!(u64::from(n), size);
                assert!((1..=rr::MAX_TCP_MESSAGE).contains(&n));
            }
        }
    }
}
