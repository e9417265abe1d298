//! Raw protocol clients for the security tests: they speak linkperf's and
//! iperf3's control protocols by hand, so a test can send what no honest
//! client would (a spoofed UDP source, an absurd config) and read exactly
//! what the server answers.

use linkperf_proto::iperf3::{self, State};
use linkperf_proto::session::ClientSession;
use linkperf_proto::{ClientMessage, Preamble, ServerMessage, PROTOCOL_VERSION};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A linkperf control connection after preamble, hello and welcome.
pub struct Control {
    pub stream: TcpStream,
    pub session: ClientSession,
}

impl Control {
    pub fn open(port: u16) -> Control {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream.write_all(&Preamble::Control.bytes()).unwrap();
        let mut control = Control {
            stream,
            session: ClientSession::new(),
        };
        control.send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: "security test".into(),
        });
        let welcome = control.next();
        assert!(
            matches!(welcome, ServerMessage::Welcome { .. }),
            "{welcome:?}"
        );
        control
    }

    pub fn send(&mut self, m: &ClientMessage) {
        let bytes = self.session.send(m).unwrap();
        self.stream.write_all(&bytes).unwrap();
    }

    /// The server's next message (panics if it closes first).
    pub fn next(&mut self) -> ServerMessage {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let want = self.session.wanted().min(buf.len());
            let n = self.stream.read(&mut buf[..want]).expect("server answers");
            assert!(n > 0, "server closed the control connection");
            if let Some(m) = self.session.receive(&buf[..n]).unwrap().into_iter().next() {
                return m;
            }
        }
    }
}

/// An iperf3 control connection that sent `params` (JSON) and returns the
/// server's answer to them: the state byte and, after SERVER_ERROR, the
/// iperf3 error number.
pub fn iperf3_params(port: u16, params: &str) -> (TcpStream, State, Option<i32>) {
    let mut control = TcpStream::connect(("127.0.0.1", port)).unwrap();
    control
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    control
        .write_all(&iperf3::make_cookie(&[b'a'; 36]))
        .unwrap();
    let mut state = [0u8; 1];
    control.read_exact(&mut state).unwrap();
    assert_eq!(State::from_byte(state[0]), Some(State::ParamExchange));
    control
        .write_all(&(params.len() as u32).to_be_bytes())
        .unwrap();
    control.write_all(params.as_bytes()).unwrap();
    control.read_exact(&mut state).unwrap();
    let answer = State::from_byte(state[0]).expect("an iperf3 state");
    let errno = (answer == State::ServerError).then(|| {
        let mut e = [0u8; 4];
        control.read_exact(&mut e).unwrap();
        i32::from_be_bytes(e)
    });
    (control, answer, errno)
}

/// A TCP connection to the server from `source` (an address of 127/8), as
/// a client on another host would open it.
pub fn connect_from(source: &str, port: u16) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    let from: std::net::SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&from.into())?;
    let to: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    socket.connect_timeout(&to.into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// True when the server closed `stream` within `limit` (a read sees the
/// end or a reset); false when it is still open.
pub fn closed_within(mut stream: &TcpStream, limit: Duration) -> bool {
    let end = std::time::Instant::now() + limit;
    let mut buf = [0u8; 256];
    loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// A process's resident memory and its peak, in bytes (VmRSS, VmHWM).
pub fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A process's CPU time (user + system) in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which may hold spaces: utime is the
    // 14th field overall, stime the 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}
