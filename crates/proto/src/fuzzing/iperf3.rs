//! Harness of the iperf3 codec: the control decoder for either peer, the
//! parameter and results readers, and the data stream formats.

use super::checks::{declared_len, Input};
use crate::iperf3::{
    could_be_cookie, is_cookie, parse_udp_header, stream_id, stream_index, udp_header_len,
    DecodeError, Decoder, Item, Params, Peer, Results, State, COOKIE_LEN, MAX_JSON,
};
use serde_json::Value;

/// The JSON limit a linkperf server sets on a stranger's parameters
/// (`iperf3::server::MAX_PARAMS_JSON`).
const PARAMS_LIMIT: usize = 64 * 1024;

/// First byte: bit 0 exact reads or chunks, bits 1-2 the peer and whether a
/// cookie opens the stream, bit 3 the JSON limit (a server's limit on
/// parameters, or the largest), bit 4 the data formats instead.
pub fn iperf3_codec(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte();
    if mode & 16 != 0 {
        return data_formats(input.rest());
    }
    let (peer, with_cookie) = [
        (Peer::Client, true),
        (Peer::Client, false),
        (Peer::Server, false),
        (Peer::Server, false),
    ][usize::from((mode >> 1) & 3)];
    let limit = if mode & 8 == 0 {
        PARAMS_LIMIT
    } else {
        MAX_JSON
    };
    let mut d = Decoder::new(peer, with_cookie);
    d.set_json_limit(limit);
    if mode & 1 == 0 {
        exact_reads(d, input, limit);
    } else {
        while !input.is_empty() {
            match d.feed(input.chunk()) {
                Ok(items) => items.iter().for_each(check_item),
                Err(DecodeError::TooLong(n)) => return assert!(n > limit),
                Err(_) => return,
            }
        }
    }
}

/// Reads [`Decoder::wanted`] bytes at a time, as the server does: each item
/// then consumes exactly the bytes fed since the previous one, so a JSON
/// document's size is checked against the limit and its length prefix.
fn exact_reads(mut d: Decoder, mut input: Input, limit: usize) {
    let mut since = Vec::new();
    loop {
        let want = d.wanted();
        assert!(want >= 1, "wanted() must ask for at least a byte");
        let bytes = input.take(want);
        if bytes.is_empty() {
            return;
        }
        since.extend_from_slice(bytes);
        let items = match d.feed(bytes) {
            Ok(items) => items,
            Err(DecodeError::TooLong(n)) => {
                assert!(n > limit && declared_len(&since) == Some(n));
                return;
            }
            Err(_) => return,
        };
        assert!(items.len() <= 1, "exact reads complete one item at a time");
        let Some(item) = items.first() else { continue };
        match item {
            Item::Json(_) => {
                let len = declared_len(&since).expect("JSON has a length");
                assert_eq!(since.len(), 4 + len, "a document is its whole frame");
                assert!(len <= limit, "decoded {len} bytes of JSON over {limit}");
            }
            Item::Cookie(c) => assert_eq!(since, c[..], "a cookie is its 37 bytes"),
            // A client's SERVER_ERROR bytes are skipped without an item.
            Item::State(s) => {
                let (last, before) = since.split_last().expect("a state has a byte");
                assert_eq!(*last, s.byte(), "a state is its byte");
                assert!(before.iter().all(|&b| b == State::ServerError.byte()));
            }
            // The SERVER_ERROR state byte, then the two numbers.
            Item::ServerError { i_errno, os_errno } => {
                assert_eq!(since[0], State::ServerError.byte());
                assert_eq!(since[1..5], i_errno.to_be_bytes());
                assert_eq!(since[5..], os_errno.to_be_bytes());
            }
        }
        check_item(item);
        since.clear();
    }
}

/// Whatever JSON a peer sends goes through both readers without a panic,
/// and parameters read back from what they write.
fn check_item(item: &Item) {
    match item {
        Item::Json(v) => {
            if let Ok(p) = Params::from_json(v) {
                check_params(&p);
            }
            if let Ok(r) = Results::from_json(v) {
                assert_eq!(
                    Results::from_json(&r.to_json()),
                    Ok(r),
                    "written, then read"
                );
            }
        }
        Item::Cookie(c) => assert!(is_cookie(c) && could_be_cookie(c)),
        Item::State(s) => assert_eq!(State::from_byte(s.byte()), Some(*s)),
        Item::ServerError { .. } => {}
    }
}

/// What a test's length and shape depend on survives writing and reading.
fn check_params(p: &Params) {
    let json: Value = p.to_json();
    let again = Params::from_json(&json).expect("written parameters read back");
    let shape = |p: &Params| (p.udp, p.omit, p.time, p.bytes, p.parallel, p.reverse, p.len);
    assert_eq!(shape(&again), shape(p), "{p:?} written as {json}");
}

/// iperf3 UDP headers (both counter widths), stream ids and cookie prefixes.
fn data_formats(bytes: &[u8]) {
    for wide in [false, true] {
        match parse_udp_header(bytes, wide) {
            Some(_) => assert!(bytes.len() >= udp_header_len(wide)),
            None => assert!(bytes.len() < udp_header_len(wide)),
        }
    }
    if let Some(head) = bytes.get(..4) {
        let id = u32::from_be_bytes(head.try_into().unwrap());
        if let Some(index) = stream_index(id) {
            assert_eq!(stream_id(index), id, "stream ids and indices are inverse");
        }
    }
    if is_cookie(bytes) {
        assert_eq!(bytes.len(), COOKIE_LEN);
        assert!(could_be_cookie(&bytes[..COOKIE_LEN / 2]));
    }
    let _ = could_be_cookie(bytes);
}
