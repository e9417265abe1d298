//! `linkperf simulate`: the flags and the printing; the simulation is the
//! library's `simulate` module (docs/simulate.md).

use clap::Args;
use linkperf::archive;
use linkperf::simulate::{self, SimSpec};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// The testbed topology file whose path is simulated.
    #[arg(long, value_name = "FILE")]
    pub testbed: std::path::PathBuf,
    /// The sending host (with --to; default: a two-host testbed's first host).
    #[arg(long, value_name = "HOST", requires = "to")]
    pub from: Option<String>,
    /// The receiving host (with --from).
    #[arg(long, value_name = "HOST", requires = "from")]
    pub to: Option<String>,
    /// A link schedule file (as `testbed set --schedule`), in place of the
    /// topology's [schedule]; its times count from the test's start.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<std::path::PathBuf>,
    /// Seconds of sending.
    #[arg(short = 't', long, value_name = "SECONDS", default_value_t = 10.0)]
    pub time: f64,
    /// Interval report period, seconds.
    #[arg(short = 'i', long, value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,
    /// Period of the cwnd/RTT time series (as `client --sample`).
    #[arg(long, value_name = "PERIOD", default_value = "10ms", value_parser = period)]
    pub sample: f64,
    /// Congestion control: reno, cubic, bic or bbr (default: this host's).
    #[arg(short = 'C', long, value_name = "NAME")]
    pub congestion: Option<String>,
    /// Parallel streams.
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1)]
    pub parallel: u32,
    /// Socket buffers, as `client -w`.
    #[arg(short = 'w', long, value_name = "BYTES", value_parser = size)]
    pub window: Option<u64>,
    /// The exact largest window, as `client --window-clamp`.
    #[arg(long, value_name = "BYTES", value_parser = size)]
    pub window_clamp: Option<u64>,
    /// The sender's congestion window never exceeds N segments: what the
    /// route metric `cwnd lock N` (ip route ... cwnd lock N) does on Linux.
    #[arg(long, value_name = "SEGMENTS", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub cwnd_clamp: Option<u32>,
    /// Reverse: data from --to to --from.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Print the result as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Results archive: a SQLite file or a postgres:// URL.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the result in the archive.
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
}

fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}
fn period(s: &str) -> Result<f64, String> {
    linkperf_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())
}

pub fn run(args: SimulateArgs) -> ExitCode {
    let spec = SimSpec {
        testbed: args.testbed.clone(),
        ends: args.from.clone().zip(args.to.clone()),
        reverse: args.reverse,
        duration_s: args.time,
        interval_s: args.interval,
        sample_s: args.sample,
        congestion: args.congestion.clone(),
        streams: args.parallel,
        window: args.window,
        window_clamp: args.window_clamp,
        cwnd_clamp: args.cwnd_clamp,
    };
    let doc = match simulate::run_with_schedule(&spec, args.schedule.as_deref()) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("linkperf: simulate: {e}");
            return ExitCode::from(if e.usage { 2 } else { 1 });
        }
    };
    let stored = (!args.no_store)
        .then(|| {
            let run = linkperf_store::NewRun::from_test_report(doc.clone());
            archive::store(&run, args.db.as_deref())
        })
        .flatten();
    if args.json {
        let out = archive::WithId::new(&doc, &stored);
        say!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
    } else {
        print_text(&doc, &stored);
    }
    ExitCode::SUCCESS
}

fn print_text(doc: &serde_json::Value, stored: &archive::StoredAt) {
    let num = |p: &str| doc.pointer(p).and_then(serde_json::Value::as_f64);
    say!(
        "{} simulation: {} -> {}, {}, {} stream(s)",
        doc["source"].as_str().unwrap_or(""),
        doc["simulation"]["from"].as_str().unwrap_or(""),
        doc["simulation"]["to"].as_str().unwrap_or(""),
        doc["test"]["congestion"].as_str().unwrap_or(""),
        doc["test"]["parallel"]
    );
    for iv in doc["intervals"].as_array().into_iter().flatten() {
        say!(
            "[SUM] {:6.2}-{:6.2} s  {:8.2} Mbit/s  retr {}",
            iv["start"].as_f64().unwrap_or(0.0),
            iv["end"].as_f64().unwrap_or(0.0),
            iv["sum"]["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6,
            iv["sum"]["retransmits"]
        );
    }
    say!(
        "received {:.2} Mbit/s over {:.1} s, retransmits {}, mean srtt {:.1} ms",
        num("/summary/received/bits_per_second").unwrap_or(0.0) / 1e6,
        num("/summary/received/seconds").unwrap_or(0.0),
        doc["summary"]["sent"]["retransmits"],
        num("/summary/tcp/rtt_ms/mean").unwrap_or(f64::NAN)
    );
    if let Some((id, at)) = stored {
        say!("stored as run {id} in {at}");
    }
}
