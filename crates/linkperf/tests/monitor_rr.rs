//! Latency (rr) tests in a monitoring schedule: a controller orders real
//! agents in two testbed namespaces to measure request/response RTT towards
//! each other over an emulated link of known delay; the archive holds each
//! pair's RTT, and a threshold below the link's RTT raises one alert per
//! pair. The tests' own ping-pong crosses the same link all the while: each
//! pair's median is held to the reference's over the same second, its fastest
//! transaction to the link's delays. Needs root (namespaces); skipped otherwise.

mod common;

use common::bin;
use common::pingpong::{self, median};
use linkperf_store::{Location, Store};
use linkperf_testsupport::bed::{two_hosts, CliBed};

/// One-way delay of the link; a transaction's RTT is twice it.
const DELAY_MS: f64 = 5.0;

fn schedule(a: &str, b: &str) -> String {
    format!(
        "[[host]]\nname = \"a\"\naddress = \"{a}\"\n[[host]]\nname = \"b\"\naddress = \"{b}\"\n\
         [[group]]\nname = \"pair\"\nmesh = [\"a\", \"b\"]\n\
         [[test]]\nname = \"latency\"\nkind = \"rr\"\ngroup = \"pair\"\ninterval = \"20s\"\n\
         slip = \"200ms\"\nduration = \"1s\"\nudp = true\nrequest = 64\nresponse = \"1K\"\n\
         rate = \"50/s\"\n\
         [test.alert]\nrtt_p99_above = \"{}ms\"\n",
        // Below the link's RTT: every result crosses it.
        2.0 * DELAY_MS - 2.0
    )
}

#[test]
fn rr_tests_in_a_schedule_measure_the_link_rtt_and_alert_on_it() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        linkperf_testsupport::require_root!("the rr monitor test needs root for namespaces");
        let dir = linkperf_testsupport::scratch("lp-monitor", "rr");
        let name = format!("mr{}", std::process::id() % 100_000);
        let link = format!("delay = \"{DELAY_MS}ms\"");
        let topology = two_hosts(&name, "10.91.0.1", "10.91.0.2", &link);
        let mut bed = CliBed::up(bin(), &dir, &name, &topology);
        for host in ["a", "b"] {
            let mut agent = bed.in_netns(host, bin());
            agent.args(["server", "--allow-third-party", "-q"]);
            bed.serve(host, &mut agent, 5211);
        }
        let file = dir.join("latency.toml");
        std::fs::write(&file, schedule("10.91.0.1", "10.91.0.2")).unwrap();
        let db = dir.join("monitor.db");
        let echo = pingpong::Echo::start(&bed.netns("b"), "10.91.0.2".parse().unwrap());
        let reference = pingpong::Meanwhile::start(bed.netns("a"), echo.addr);
        let out = bed
            .in_netns("a", bin())
            .args(["monitor", "run"])
            .arg(&file)
            .arg("--db")
            .arg(&db)
            .arg("--spool")
            .arg(dir.join("spool"))
            .args(["--run-for", "3s"])
            .output()
            .unwrap();
        let reference = reference.stop();
        let log = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{log}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut store = Store::open_at(Location::Sqlite(db)).unwrap();
        let results = store.monitor_results().unwrap();
        assert_eq!(results.len(), 2, "one run per pair: {results:?}\n{log}");
        let rtt = 2.0 * DELAY_MS;
        for r in &results {
            assert!(r.ok, "{r:?}");
            assert_eq!(r.throughput_bps, None, "an rr test has no throughput");
            let mean = r.rtt_mean_s.unwrap() * 1e3;
            let p99 = r.rtt_p99_s.unwrap() * 1e3;
            // The agent's whole report is archived beside the figures.
            let run = store.run(r.run_id.unwrap(), true).unwrap().unwrap();
            let report = run.report.unwrap();
            assert_eq!(report["test"]["kind"], "rr");
            assert_eq!(report["test"]["response"], 1024);
            let p50 = report["summary"]["rtt_ms"]["p50"].as_f64().unwrap();
            let fastest = report["summary"]["rtt_ms"]["min"].as_f64().unwrap();
            assert_eq!(report["summary"]["rtt_ms"]["p99"].as_f64(), Some(p99));
            // The reference's exchanges while this pair's second ran (the
            // order reaches the agent a little after its start time).
            let during: Vec<f64> = reference
                .iter()
                .filter(|(at, _)| (r.started_unix_ms..r.started_unix_ms + 1500).contains(at))
                .map(|&(_, rtt)| rtt)
                .collect();
            let reference_p50 = median(&during);
            let seen = format!(
                "{} -> {}: RTT fastest {fastest:.3}, p50 {p50:.3}, mean {mean:.3}, p99 {p99:.3} \
                 ms; the test's ping-pong meanwhile: p50 {reference_p50:.3} ms of {}",
                r.src,
                r.dst,
                during.len()
            );
            println!("{seen}");
            assert!(during.len() >= 20, "{seen}");
            // The emulator's floor and the hosts' stacks: 2 % + 0.1 ms, as
            // `linkperf rr` itself is held to on such a link (rr.rs). The
            // median meets the path's as the ping-pong saw it at that time
            // (a stalled emulator delays both alike); the fastest exchange
            // meets the link's two delays, and none beats them.
            let tolerance = 0.02 * rtt + 0.1;
            assert!((p50 - reference_p50).abs() <= tolerance, "{seen}");
            assert!((-0.02..=tolerance).contains(&(fastest - rtt)), "{seen}");
            assert!(p99 >= mean && mean >= rtt - 0.02, "{r:?}");
            // 50 requests in 1 s, each answered: UDP over a lossless link.
            assert_eq!(r.loss_ratio, Some(0.0), "{r:?}");
        }
        let alerts = store.monitor_alerts(None, 100).unwrap();
        let rtt_alerts: Vec<_> = alerts.iter().filter(|a| a.kind == "rtt").collect();
        assert_eq!(rtt_alerts.len(), 2, "one RTT alert per pair: {alerts:?}");
        assert!(alerts.iter().all(|a| a.kind == "rtt"), "{alerts:?}");
    });
}

#[test]
fn rr_tests_refuse_throughput_keys_and_thresholds() {
    let dir = linkperf_testsupport::scratch("lp-monitor", "rr-bad");
    let good = schedule("127.0.0.1:1", "127.0.0.1:2");
    let cases = [
        ("udp = true\n", "udp = true\nparallel = 4\n", "parallel", 18),
        ("rate = \"50/s\"\n", "rate = \"fast\"\n", "rate", 20),
        (
            "rtt_p99_above",
            "throughput_below_percent = 50\nrtt_p99_above",
            "throughput_below_percent",
            22,
        ),
        ("kind = \"rr\"\n", "kind = \"ping\"\n", "kind", 12),
        ("kind = \"rr\"\n", "", "request", 17),
    ];
    let file = dir.join("bad.toml");
    let path = file.display().to_string();
    for (from, to, key, line) in cases {
        std::fs::write(&file, good.replace(from, to)).unwrap();
        let out = std::process::Command::new(bin())
            .args(["monitor", "run"])
            .arg(&file)
            .args(["--run-for", "1s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let err = err.trim_end();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let at = format!("linkperf: {path}:{line}: key '{key}'");
        assert!(err.starts_with(&at), "{err} does not start with {at}");
    }
}

/// The order itself, over loopback: an agent without --allow-third-party
/// refuses it, a run its own command line would refuse is refused with the
/// reason, and a counted run comes back with every transaction answered.
#[test]
fn an_agent_runs_an_ordered_rr_measurement_or_says_why_not() {
    use linkperf::client::run_third_party_rr;
    use linkperf_proto::messages::RrRequest;
    let target = common::Server::start();
    let closed = common::Server::start();
    let agent = common::Server::start_with(&["--allow-third-party"]);
    let to = ("127.0.0.1", target.port);
    let request = RrRequest {
        count: Some(300),
        burst: 1,
        duration_s: 10.0,
        interval_s: 0.0,
        ..Default::default()
    };
    let refused = run_third_party_rr(("127.0.0.1", closed.port), to, &request, None, None)
        .unwrap_err()
        .message;
    assert!(refused.contains("--allow-third-party"), "{refused}");
    let bad = RrRequest {
        burst: 0,
        ..request.clone()
    };
    let why = run_third_party_rr(("127.0.0.1", agent.port), to, &bad, None, None)
        .unwrap_err()
        .message;
    assert!(why.contains("--burst 0"), "{why}");
    let report = run_third_party_rr(("127.0.0.1", agent.port), to, &request, None, None).unwrap();
    assert_eq!(report["test"]["kind"], "rr");
    assert_eq!(report["summary"]["transactions"], 300);
    // The target's own count: the agent, not the controller, ran them.
    assert_eq!(report["summary"]["server"]["transactions"], 300);
}
