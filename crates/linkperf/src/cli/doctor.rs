//! `linkperf doctor`: the flags and the printing; the examination, the rules and the
//! changes are the library's `doctor` module.

use clap::Args;
use linkperf::doctor::{self, Target};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// The rate the path must carry (bits per second: 10G, 940M).
    #[arg(long, value_name = "RATE", default_value = "10G", value_parser = rate)]
    pub target_rate: u64,
    /// The path's loaded round-trip time (measured under load; the idle RTT undersizes
    /// the buffers).
    #[arg(long, value_name = "DURATION", default_value = "20ms", value_parser = duration)]
    pub rtt: std::time::Duration,
    /// The path's MTU, when known: the interfaces are checked against it.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u64>,
    /// Make the changes (as root), then print what changed and how to undo it.
    #[arg(long)]
    pub apply: bool,
    /// Print the examination as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

fn rate(s: &str) -> Result<u64, String> {
    linkperf_units::parse_rate(s).map_err(|e| e.to_string())
}
fn duration(s: &str) -> Result<std::time::Duration, String> {
    linkperf_units::parse_duration(s).map_err(|e| e.to_string())
}

pub fn run(args: DoctorArgs) -> ExitCode {
    let target = match Target::new(args.target_rate as f64, args.rtt.as_secs_f64(), args.mtu) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    let exam = doctor::examine(&target);
    let applied = args.apply.then(|| doctor::apply(&exam));
    if args.json {
        let mut v = serde_json::to_value(&exam).expect("the examination serialises");
        if let Some(done) = &applied {
            v["applied"] = serde_json::to_value(done).expect("applied changes serialise");
        }
        say!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values print")
        );
    } else {
        say_raw!("{}", doctor::render(&exam, applied.as_deref()));
    }
    let failed = applied.iter().flatten().any(|a| a.error.is_some());
    ExitCode::from(if failed { 1 } else { 0 })
}
