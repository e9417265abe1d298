//! `linkperf demo`: the embedded default. A server on loopback inside this
//! process, a short TCP test and a short UDP test against it.

use crate::{client, report, server, text};
use linkperf_proto::{Protocol, TestConfig};
use std::process::ExitCode;

fn run_one(title: &str, addr: std::net::SocketAddr, config: TestConfig) -> bool {
    say!("\n== {title}");
    let udp = config.protocol == Protocol::Udp;
    let options = client::ClientOptions {
        host: addr.ip().to_string(),
        port: addr.port(),
        config,
        ..Default::default()
    };
    say!(
        "{}",
        text::header(&options.config, &options.host, options.port)
    );
    say!("{}", text::interval_header(udp));
    let mut on_interval = |i: &report::IntervalReport| say!("{}", text::interval(i, udp));
    match client::run(
        &options,
        &mut on_interval,
        Some(&crate::signals::INTERRUPTED),
    ) {
        Ok(r) => {
            say_raw!("{}", text::summary(&r));
            r.errors.is_empty()
        }
        Err(e) => {
            eprintln!("linkperf: {}", e.message);
            false
        }
    }
}

pub fn run() -> ExitCode {
    crate::signals::install();
    let options = server::ServerOptions {
        port: 0,
        bind: Some([127, 0, 0, 1].into()),
        verbose: false,
        ..Default::default()
    };
    let addr = match server::Server::bind(options) {
        Ok(s) => s.spawn(),
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    };
    say!("linkperf demo: a server on {addr} inside this process, two short tests against it.");
    let tcp = TestConfig {
        duration_s: 3.0,
        ..Default::default()
    };
    let udp = TestConfig {
        protocol: Protocol::Udp,
        duration_s: 3.0,
        length: 1460,
        bitrate: Some(100_000_000),
        ..Default::default()
    };
    let ok = run_one("TCP, one stream, loopback", addr, tcp)
        && run_one(
            "UDP at 100 Mbit/s, 1460-byte datagrams, loopback",
            addr,
            udp,
        );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
