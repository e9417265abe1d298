//! The one-byte control states an iperf3 server drives a test with, and the
//! error numbers it reports after SERVER_ERROR. Only the bytes: reading them
//! off a connection is the decoder's job.

/// Control states (one signed byte on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    /// The server is busy (or refuses this client).
    AccessDenied,
    /// Followed by two big-endian i32: iperf3's error number and errno.
    ServerError,
}

impl State {
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// iperf3's own name for the state, as its source and debug output say it.
    pub fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::TestEnd => "TEST_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfStart => "IPERF_START",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
            State::ServerError => "SERVER_ERROR",
        }
    }

    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }
}

/// What a stock iperf3 server sends first to a client that is not an iperf3
/// client (a linkperf client's greeting): it takes the first 37 bytes for a
/// cookie and asks for the parameters (PARAM_EXCHANGE), or, busy with another
/// test, answers ACCESS_DENIED and closes; SERVER_ERROR when it fails. None
/// for a byte no iperf3 server sends first.
pub fn server_first_reply(byte: u8) -> Option<State> {
    match State::from_byte(byte)? {
        s @ (State::ParamExchange | State::AccessDenied | State::ServerError) => Some(s),
        _ => None,
    }
}

/// iperf3 error numbers (`i_errno`) a server sends after [`State::ServerError`];
/// the iperf3 client prints its own text for each.
pub mod errno {
    pub const BLOCKSIZE: i32 = 7;
    pub const MSS: i32 = 10;
    pub const UNIMPLEMENTED: i32 = 13;
    pub const NO_SCTP: i32 = 18;
    pub const UDP_BLOCKSIZE: i32 = 20;
    pub const BAD_TOS: i32 = 21;
    pub const NUM_STREAMS: i32 = 6;
    pub const RECV_PARAMS: i32 = 114;
    pub const ACCESS_DENIED: i32 = 121;
    pub const SET_CONGESTION: i32 = 134;
    pub const AUTH_TEST: i32 = 142;
    pub const STREAM_ACCEPT: i32 = 204;
}

/// What iperf3's client prints for the error numbers linkperf may meet.
pub fn error_text(i_errno: i32) -> String {
    match i_errno {
        errno::BLOCKSIZE => "block size too large".into(),
        errno::MSS => "TCP MSS too large".into(),
        errno::UNIMPLEMENTED => "an option you are trying to set is not implemented yet".into(),
        errno::NO_SCTP => "no SCTP support available".into(),
        errno::UDP_BLOCKSIZE => "block size invalid".into(),
        errno::BAD_TOS => "bad TOS value".into(),
        errno::NUM_STREAMS => "number of parallel streams too large".into(),
        errno::RECV_PARAMS => "unable to receive parameters from client".into(),
        errno::ACCESS_DENIED => "the server is busy running a test. try again later".into(),
        errno::SET_CONGESTION => "unable to set TCP_CONGESTION".into(),
        errno::AUTH_TEST => "test authorization failed".into(),
        errno::STREAM_ACCEPT => "unable to accept stream connection".into(),
        n => format!("iperf3 error {n}"),
    }
}

/// The bytes of a [`State::ServerError`] report.
pub fn server_error(i_errno: i32, os_errno: i32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = State::ServerError.byte();
    out[1..5].copy_from_slice(&i_errno.to_be_bytes());
    out[5..9].copy_from_slice(&os_errno.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_replies_of_an_iperf3_server() {
        assert_eq!(server_first_reply(9), Some(State::ParamExchange));
        assert_eq!(server_first_reply(0xff), Some(State::AccessDenied));
        assert_eq!(server_first_reply(0xfe), Some(State::ServerError));
        // States a server sends only later, and bytes that are no state.
        assert_eq!(server_first_reply(10), None);
        assert_eq!(server_first_reply(b'{'), None);
    }

    #[test]
    fn states_are_signed_bytes() {
        assert_eq!(State::ParamExchange.byte(), 9);
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        for b in 0..=255u8 {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::from_byte(3), None); // RESULT_REQUEST is never sent
    }
}
