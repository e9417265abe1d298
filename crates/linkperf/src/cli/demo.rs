//! `linkperf demo`: the embedded default. A server on loopback inside this
//! process, a short TCP test and a short UDP test against it; as root, then two
//! TCP runs over an emulated WAN testbed, against a server this process runs
//! inside the testbed's server host.

use linkperf::{client, report, server, signals, text};
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
    match client::run(&options, &mut on_interval, Some(&signals::INTERRUPTED)) {
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
    signals::install();
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
    // After Ctrl-C the interrupted test's partial result is the last output.
    let go_on = || !signals::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed);
    let ok = run_one("TCP, one stream, loopback", addr, tcp)
        && go_on()
        && run_one(
            "UDP at 100 Mbit/s, 1460-byte datagrams, loopback",
            addr,
            udp,
        );
    let ok = ok && go_on() && emulated_wan();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The 600 km, 8.8 ms RTT OC-3c ATM path of the MAGIC testbed (seed 004).
const WAN_TOPOLOGY: &str = r#"
[[host]]
name = "a"
address = "10.231.0.1/24"
[[host]]
name = "b"
address = "10.231.0.2/24"
[[link]]
ends = ["a", "b"]
preset = "wan-600km"
queue = "1M"
"#;

/// As root: one window-limited and one well-tuned TCP run over an emulated
/// WAN link, side by side, then the testbed is removed.
fn emulated_wan() -> bool {
    if linkperf_testbed::require_root().is_err() {
        say!("\n(run as root to also see TCP over an emulated 600 km WAN link)");
        return true;
    }
    let name = format!("demo{}", std::process::id());
    let topology = match linkperf_testbed::Topology::from_toml_str(&name, WAN_TOPOLOGY) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("linkperf: demo testbed: {e}");
            return false;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => {
            eprintln!("linkperf: cannot find this program: {e}");
            return false;
        }
    };
    say!("\n== Emulated WAN: 600 km OC-3c ATM path, 8.8 ms RTT (testbed '{name}')");
    let testbed = match linkperf_testbed::up(&topology) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("linkperf: demo testbed: {e}");
            return false;
        }
    };
    let server_ip = testbed
        .ipv4("b")
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "10.231.0.2".into());
    // The server runs in this process, bound inside host b's namespace, as a sweep's does;
    // it is listening when start_server returns.
    let started = testbed
        .netns("b")
        .ok_or_else(|| "the demo testbed has no host b".to_string())
        .and_then(|netns| {
            let options = server::ServerOptions {
                verbose: false,
                ..Default::default()
            };
            linkperf::sweep::network::start_server(&netns, options)
        });
    let ok = match started {
        Ok(()) => wan_runs(&testbed, &exe, &server_ip),
        Err(e) => {
            eprintln!("linkperf: demo testbed: {e}");
            false
        }
    };
    if let Err(e) = linkperf_testbed::down(&name) {
        eprintln!("linkperf: removing the demo testbed: {e}");
    }
    ok
}

/// The window-limited and the well-tuned client run from host a; true when both succeed.
fn wan_runs(testbed: &linkperf_testbed::Testbed, exe: &str, server_ip: &str) -> bool {
    let mut ok = true;
    for (title, window) in [
        ("window-limited: -w 64K", "64K"),
        ("well tuned: -w 2M", "2M"),
    ] {
        if signals::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        say!("\n-- {title}");
        let status = testbed
            .command("a", exe)
            .args(["client", server_ip, "-t", "4", "-i", "1", "-w", window])
            .status();
        ok &= status.map(|s| s.success()).unwrap_or(false);
    }
    ok
}
