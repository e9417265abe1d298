//! `linkperf model`: the flags and the printing; the prediction is the
//! library's `model` module (docs/model.md).

use clap::Args;
use linkperf::model::{self, describe, Path};
use linkperf_proto::{Protocol, TestConfig};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// The path: comma-separated keys rate=, rtt=, mtu=, framing= (ethernet,
    /// atm-aal5, ppp, none), loss=, ber=, cpu= (us per 10^6 bytes); they
    /// override the testbed's values.
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub path: Option<String>,
    /// Take the path from a testbed topology file.
    #[arg(long, value_name = "FILE")]
    pub testbed: Option<std::path::PathBuf>,
    /// With --testbed: this link only (NAME, a-b, NAME.a_to_b or NAME.b_to_a).
    #[arg(long, value_name = "NAME", requires = "testbed")]
    pub link: Option<String>,
    /// With --testbed: the path from this host (to --to).
    #[arg(long, value_name = "HOST", requires_all = ["testbed", "to"])]
    pub from: Option<String>,
    /// With --testbed: the path to this host (from --from).
    #[arg(long, value_name = "HOST", requires_all = ["testbed", "from"])]
    pub to: Option<String>,
    /// Predict a UDP flow (default TCP).
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// UDP: offered rate per stream (default: as fast as the link).
    #[arg(short = 'b', long, value_name = "RATE", value_parser = rate)]
    pub bitrate: Option<u64>,
    /// UDP payload bytes per datagram (default 1460).
    #[arg(short = 'l', long, value_name = "BYTES", value_parser = size)]
    pub length: Option<u64>,
    /// Both socket buffers (SO_SNDBUF and SO_RCVBUF), as `client -w`.
    #[arg(short = 'w', long, value_name = "BYTES", value_parser = size)]
    pub window: Option<u64>,
    #[arg(long, value_name = "BYTES", value_parser = size)]
    pub sndbuf: Option<u64>,
    #[arg(long, value_name = "BYTES", value_parser = size)]
    pub rcvbuf: Option<u64>,
    /// The exact largest window (TCP_WINDOW_CLAMP), as `client --window-clamp`.
    #[arg(long, value_name = "BYTES", value_parser = size)]
    pub window_clamp: Option<u64>,
    /// TCP MSS (default MTU - 52).
    #[arg(short = 'M', long, value_name = "BYTES")]
    pub mss: Option<u32>,
    /// Congestion control: reno, cubic or bbr (default: this host's).
    #[arg(short = 'C', long, value_name = "NAME")]
    pub congestion: Option<String>,
    /// Parallel streams.
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1)]
    pub parallel: u32,
    /// Share of a doubled receive buffer offered as window (default: this
    /// kernel's; see docs/model.md).
    #[arg(long, value_name = "FRACTION")]
    pub rcv_share: Option<f64>,
    /// Print the prediction as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

fn rate(s: &str) -> Result<u64, String> {
    linkperf_units::parse_rate(s).map_err(|e| e.to_string())
}
fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}

fn clamp32(v: Option<u64>) -> Option<u32> {
    v.map(|v| v.min(u64::from(u32::MAX)) as u32)
}

fn predict(args: &ModelArgs) -> Result<(Path, model::Prediction), model::ModelError> {
    let mut path = match &args.testbed {
        Some(file) => {
            let ends = args.from.as_deref().zip(args.to.as_deref());
            model::testbed::from_file(file, args.link.as_deref(), ends)?
        }
        None => Path::default(),
    };
    if let Some(text) = &args.path {
        describe::apply_path_text(&mut path, text)?;
    }
    let protocol = if args.udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    };
    let config = TestConfig {
        protocol,
        parallel: args.parallel,
        length: clamp32(args.length).unwrap_or(1460),
        sndbuf: clamp32(args.sndbuf.or(args.window)),
        rcvbuf: clamp32(args.rcvbuf.or(args.window)),
        mss: args.mss,
        congestion: args.congestion.clone(),
        bitrate: args.bitrate,
        window_clamp: clamp32(args.window_clamp),
        ..TestConfig::default()
    };
    let mut flow = describe::flow_of(&config)?;
    if args.udp && args.bitrate.is_none() {
        flow.udp_rate_bps = None;
    }
    let mut kernel = model::host::local();
    if let Some(share) = args.rcv_share {
        if !(share > 0.0 && share <= 1.0) {
            return Err(model::ModelError(format!(
                "--rcv-share: {share} is not a share (above 0, at most 1)"
            )));
        }
        kernel.rcv_share = share;
        kernel.rcv_share_source = "--rcv-share".into();
    }
    let prediction = model::predict(&path, &flow, &kernel)?;
    Ok((path, prediction))
}

pub fn run(args: ModelArgs) -> ExitCode {
    let (path, prediction) = match predict(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("linkperf model: {e}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        let v = serde_json::json!({
            "schema": "linkperf/1",
            "path": path,
            "prediction": prediction,
        });
        say!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values print")
        );
    } else {
        say_raw!("{}", describe::render(&prediction));
    }
    ExitCode::SUCCESS
}
