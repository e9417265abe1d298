//! Framing of control messages: a 4-byte big-endian length, then that many
//! bytes of JSON. JSON keeps the protocol readable in a packet capture and easy
//! to extend; the length prefix keeps parsing trivial and bounded.

use serde::{de::DeserializeOwned, Serialize};
use std::fmt;

/// Control messages are small; anything larger is a broken or hostile peer.
pub const MAX_FRAME: usize = 4 * 1024 * 1024;
// The decoder relies on it: a valid length's first byte is zero.
const _: () = assert!(MAX_FRAME < 1 << 24);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The peer announced a frame (first number) larger than the limit
    /// (second number; [`MAX_FRAME`] unless set lower).
    TooLarge(usize, usize),
    /// The frame is not a valid message.
    Malformed(String),
    /// A frame cannot start with this byte (its length would exceed
    /// [`MAX_FRAME`]): the peer speaks another protocol. Known as soon as the
    /// first byte arrives, so a foreign peer is recognised without waiting
    /// for the rest of a length it will never send.
    Foreign(u8),
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::TooLarge(n, limit) => {
                write!(
                    f,
                    "control message of {n} bytes exceeds the {limit}-byte limit"
                )
            }
            CodecError::Malformed(why) => write!(f, "malformed control message: {why}"),
            CodecError::Foreign(byte) => write!(
                f,
                "the peer does not speak linkperf's protocol (a message cannot start with byte 0x{byte:02x})"
            ),
        }
    }
}

impl std::error::Error for CodecError {}

/// Encodes one message as a frame.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("control messages always serialise");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Accumulates bytes and yields whole messages.
#[derive(Debug)]
pub struct Decoder {
    buffer: Vec<u8>,
    /// The largest frame accepted now (at most [`MAX_FRAME`]).
    limit: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            buffer: Vec::new(),
            limit: MAX_FRAME,
        }
    }
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts frames of at most `limit` bytes from now on (capped at
    /// [`MAX_FRAME`]): a server takes only small frames from a peer that has
    /// not said hello, so a stranger cannot make it buffer megabytes.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(MAX_FRAME);
    }

    /// Adds bytes read from the connection.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// How many more bytes are needed before the next frame can complete
    /// (at least 1 when nothing is buffered); lets blocking callers read exactly.
    pub fn wanted(&self) -> usize {
        if self.buffer.len() < 4 {
            return 4 - self.buffer.len();
        }
        let len = frame_len(&self.buffer);
        (4 + len).saturating_sub(self.buffer.len()).max(1)
    }

    /// Returns the next complete message, `Ok(None)` if more bytes are needed.
    pub fn next_message<T: DeserializeOwned>(&mut self) -> Result<Option<T>, CodecError> {
        // MAX_FRAME < 2^24: every length starts with a zero byte.
        if let Some(&first) = self.buffer.first() {
            if first != 0 {
                return Err(CodecError::Foreign(first));
            }
        }
        if self.buffer.len() < 4 {
            return Ok(None);
        }
        let len = frame_len(&self.buffer);
        if len > self.limit {
            return Err(CodecError::TooLarge(len, self.limit));
        }
        if self.buffer.len() < 4 + len {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..4 + len).skip(4).collect();
        serde_json::from_slice(&frame)
            .map(Some)
            .map_err(|e| CodecError::Malformed(e.to_string()))
    }
}

fn frame_len(buffer: &[u8]) -> usize {
    u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::ClientMessage;

    #[test]
    fn a_foreign_first_byte_is_refused_at_once() {
        // What a stock iperf3 server sends first: PARAM_EXCHANGE (9), alone.
        let mut d = Decoder::new();
        d.feed(&[9]);
        assert_eq!(
            d.next_message::<ClientMessage>().unwrap_err(),
            CodecError::Foreign(9)
        );
        // A linkperf frame's first byte is zero: no verdict before the length.
        let mut d = Decoder::new();
        d.feed(&[0]);
        assert_eq!(d.next_message::<ClientMessage>().unwrap(), None);
    }

    #[test]
    fn frames_survive_arbitrary_splits() {
        let messages = vec![
            ClientMessage::Start {
                start_at_unix_ms: None,
            },
            ClientMessage::Cancel {
                reason: "bored".into(),
            },
        ];
        let mut bytes = Vec::new();
        for m in &messages {
            bytes.extend(encode(m));
        }
        for split in 1..bytes.len() {
            let mut d = Decoder::new();
            let mut out = Vec::new();
            for chunk in bytes.chunks(split) {
                d.feed(chunk);
                while let Some(m) = d.next_message::<ClientMessage>().unwrap() {
                    out.push(m);
                }
            }
            assert_eq!(out, messages, "split {split}");
        }
    }

    #[test]
    fn oversized_and_garbage_frames_are_errors_not_panics() {
        let mut d = Decoder::new();
        d.feed(&[0x00, 0x41, 0x00, 0x00]);
        assert!(matches!(
            d.next_message::<ClientMessage>(),
            Err(CodecError::TooLarge(0x41_0000, MAX_FRAME))
        ));
        let mut d = Decoder::new();
        d.feed(&[0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(
            d.next_message::<ClientMessage>(),
            Err(CodecError::Foreign(0xff))
        ));
        let mut d = Decoder::new();
        d.feed(&[0, 0, 0, 3, b'{', b'x', b'}']);
        assert!(matches!(
            d.next_message::<ClientMessage>(),
            Err(CodecError::Malformed(_))
        ));
        let mut d = Decoder::new();
        d.feed(&encode(&serde_json::json!({"type": "no_such_message"})));
        assert!(matches!(
            d.next_message::<ClientMessage>(),
            Err(CodecError::Malformed(_))
        ));
    }

    #[test]
    fn a_lowered_limit_refuses_at_the_length() {
        let mut d = Decoder::new();
        d.set_limit(4096);
        d.feed(&[0, 0, 0x10, 0x01]);
        assert_eq!(
            d.next_message::<ClientMessage>().unwrap_err(),
            CodecError::TooLarge(4097, 4096)
        );
    }

    #[test]
    fn wanted_counts_down_to_a_frame() {
        let frame = encode(&ClientMessage::Start {
            start_at_unix_ms: None,
        });
        let mut d = Decoder::new();
        assert_eq!(d.wanted(), 4);
        d.feed(&frame[..4]);
        assert_eq!(d.wanted(), frame.len() - 4);
    }
}
