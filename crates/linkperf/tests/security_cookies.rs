//! Session cookies (issue 17): they must not reveal the server's clock or
//! be guessable, and wrong-cookie attempts are rate-limited and logged.

mod common;
use common::hostile::{closed_within, connect_from, Control};
use common::*;
use linkperf_proto::{ClientMessage, Preamble, ServerMessage, TestConfig};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Undoes the mix the server's cookies used to be made with (murmur3's
/// 64-bit finaliser over time ^ pid ^ counter): what it gives is the
/// server's clock in ns if the cookie was made that way, noise otherwise.
fn unmix(cookie: u64, pid: u32) -> u64 {
    const C: u64 = 0xff51_afd7_ed55_8ccd;
    // The inverse of C modulo 2^64 by Newton's iteration (C is odd).
    let mut inverse = C;
    for _ in 0..6 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(C.wrapping_mul(inverse)));
    }
    assert_eq!(C.wrapping_mul(inverse), 1);
    let mut x = cookie;
    x ^= x >> 33; // a shift of at least half the width is its own inverse
    x = x.wrapping_mul(inverse);
    x ^= x >> 33;
    // The first cookie of a process has counter 0.
    x ^ u64::from(pid).rotate_left(32)
}

#[test]
fn a_cookie_does_not_reveal_the_servers_clock() {
    let server = Server::start();
    let mut control = Control::open(server.port);
    control.send(&ClientMessage::Setup {
        config: Box::new(TestConfig {
            duration_s: 1.0,
            ..Default::default()
        }),
    });
    let cookie = match control.next() {
        ServerMessage::Ready { cookie, .. } => cookie,
        other => panic!("expected ready, got {other:?}"),
    };
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let clock = unmix(cookie, server.pid());
    let off_s = (clock as f64 - now_ns as f64).abs() / 1e9;
    println!("cookie {cookie:#018x}: unmixed it is {off_s:.3e} s from now");
    // A random cookie lands within a minute of now with probability
    // 1.2e11 / 1.8e19 (7e-9).
    assert!(
        off_s > 60.0,
        "the cookie gives away the server's clock to within {off_s} s"
    );
}

#[test]
fn wrong_cookies_are_logged_then_rate_limited() {
    let server = Server::start();
    let attempts = 30;
    let mut unread = 0;
    for i in 0..attempts {
        let mut c = connect_from("127.0.0.7", server.port).unwrap();
        let mut hello = Preamble::Data.bytes().to_vec();
        hello.extend_from_slice(&(0xdead_0000_u64 + i).to_be_bytes());
        hello.extend_from_slice(&0u32.to_be_bytes());
        if c.write_all(&hello).is_err() {
            unread += 1;
            continue;
        }
        assert!(
            closed_within(&c, Duration::from_secs(5)),
            "a wrong cookie's connection stayed open"
        );
    }
    let lines = || -> Vec<String> {
        server
            .stderr_lines()
            .into_iter()
            .filter(|l| l.contains("127.0.0.7"))
            .collect()
    };
    let limited = poll(Duration::from_secs(5), Duration::from_millis(50), || {
        lines().into_iter().find(|l| l.contains("rate-limited"))
    });
    let wrong = lines()
        .iter()
        .filter(|l| l.contains("wrong-cookie"))
        .count();
    println!(
        "{attempts} wrong cookies: {wrong} logged, then {limited:?}; {unread} refused at write"
    );
    assert!(limited.is_some(), "no rate limit logged: {:?}", lines());
    // The limit is 10 per 10 s: 9 logged singly, the 10th as the limit.
    assert_eq!(wrong, 9, "{:?}", lines());
    // Refusals after the limit are logged at most 20 a second, each naming it.
    assert!(lines().len() <= attempts as usize, "{:?}", lines());
    // Others are served meanwhile.
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}
