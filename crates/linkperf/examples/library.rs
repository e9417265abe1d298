//! linkperf used from a Rust program: two servers on loopback inside this
//! process, then a throughput test, a latency test, a sweep of the window
//! and a two-agent campaign through the library's public API, printing a
//! line per result. `cargo run --release -p linkperf --example library`.

use linkperf::campaign::{self, LiveLine};
use linkperf::rr::{self, RrSpec};
use linkperf::server::{Server, ServerOptions};
use linkperf::sweep::run::{self as sweep_run, Plan, SweepOptions};
use linkperf::{client, ClientOptions, TestSpec};
use linkperf_store::{Location, Store};
use linkperf_units::format_rate;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A server on an ephemeral loopback port, serving from its own threads;
/// agents of a campaign must allow third-party tests.
fn server(allow_third_party: bool) -> Result<SocketAddr, String> {
    let options = ServerOptions {
        port: 0,
        bind: Some([127, 0, 0, 1].into()),
        verbose: false,
        allow_third_party,
        ..Default::default()
    };
    Ok(Server::bind(options)?.spawn())
}

fn throughput(at: SocketAddr) -> Result<(), String> {
    let mut spec = TestSpec::new(at.ip().to_string());
    spec.port = at.port();
    spec.time = 1.0;
    spec.parallel = 2;
    spec.validate()?;
    let report =
        client::run(&ClientOptions::from_spec(&spec), &mut |_| {}, None).map_err(|e| e.message)?;
    let received = report.summary.received.bits_per_second;
    println!(
        "test: 2 TCP streams for 1 s received {}",
        format_rate(received)
    );
    Ok(())
}

fn latency(at: SocketAddr) -> Result<(), String> {
    let mut spec = RrSpec::new(at.ip().to_string());
    spec.port = at.port();
    spec.time = 1.0;
    let plan = spec.plan()?;
    let report =
        rr::client::run(&plan, &mut |_| {}, &AtomicBool::new(false)).map_err(|e| e.message)?;
    println!(
        "rr: {} transactions, median RTT {:.1} us",
        report.summary.transactions,
        report.summary.rtt_ms.p50 * 1000.0
    );
    Ok(())
}

/// Prints nothing while the sweep runs.
struct Quiet;
impl sweep_run::Observer for Quiet {
    fn planned(&mut self, _: usize) {}
    fn run_started(&mut self, _: &str) {}
    fn run_stored(&mut self) {}
}

fn window_sweep(at: SocketAddr) -> Result<(), String> {
    let mut base = TestSpec::new(at.ip().to_string());
    base.port = at.port();
    base.time = 0.5;
    base.interval = 0.0;
    let options = SweepOptions {
        vary: vec!["window=16K,256K".into()],
        repeat: Some(2),
        ..Default::default()
    };
    let plan = Plan::new(base, &options, None)?;
    let mut store = Store::open_at(Location::Memory).map_err(|e| e.to_string())?;
    let id = store
        .create_sweep(&plan.record(vec![]))
        .map_err(|e| e.to_string())?;
    let (ran, outcome) =
        sweep_run::execute(&mut store, id, &plan, &AtomicBool::new(false), &mut Quiet);
    outcome.map_err(|stop| format!("the sweep stopped: {stop:?}"))?;
    let sweep = store
        .sweep(id)
        .map_err(|e| e.to_string())?
        .ok_or("no sweep")?;
    let runs = store.sweep_runs(id, false).map_err(|e| e.to_string())?;
    println!("sweep: {ran} runs");
    for point in linkperf::sweep::summarise(&sweep, &runs) {
        let mean = point.received.as_ref().map_or(0.0, |s| s.mean);
        println!("  {}: mean {}", point.label(), format_rate(mean));
    }
    Ok(())
}

/// Prints nothing while the campaign runs.
struct Silent;
impl campaign::Observer for Silent {
    fn warning(&mut self, message: &str) {
        eprintln!("campaign: {message}");
    }
    fn run_started(&mut self, _: &str) {}
    fn interval(&mut self, _: &str, _: u32, _: Option<&LiveLine>, _: usize) {}
}

fn two_agent_campaign(a: SocketAddr, b: SocketAddr) -> Result<(), String> {
    let file = std::env::temp_dir().join(format!("linkperf-example-{}.toml", std::process::id()));
    let text = format!(
        "name = \"example\"\nstart_delay = \"300ms\"\n\
         [[agent]]\nname = \"a\"\naddress = \"{a}\"\n\
         [[agent]]\nname = \"b\"\naddress = \"{b}\"\n\
         [[phase]]\nname = \"a-to-b\"\nduration = \"1s\"\n\
         [[phase.flow]]\nfrom = \"a\"\nto = \"b\"\nudp = true\nbitrate = \"50M\"\n"
    );
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    let loaded = campaign::load(&file.to_string_lossy());
    let _ = std::fs::remove_file(&file);
    let mut plan = loaded?;
    let cancel = Arc::new(AtomicBool::new(false));
    let result = campaign::run(&mut plan, false, &cancel, &mut Silent)?;
    for phase in &result.phases {
        println!(
            "campaign: phase {} received {} in all",
            phase.name,
            format_rate(phase.aggregate.received_bits_per_second)
        );
    }
    Ok(())
}

fn main() -> Result<(), String> {
    let a = server(true)?;
    let b = server(true)?;
    throughput(a)?;
    latency(a)?;
    window_sweep(a)?;
    two_agent_campaign(a, b)
}
