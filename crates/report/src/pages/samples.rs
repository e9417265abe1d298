//! The `--sample` time series of a page's runs: each stream's congestion
//! window and its throughput sample by sample against time, the runs
//! overlaid (a colour per run, a dash per stream) so runs of one setting
//! can be compared by eye. Plot data only.

use super::directions::{direction_label, directions};
use super::run_plots::{time_axis, STREAM_DASHES};
use super::shared::f;
use crate::export::RunData;
use crate::format;
use crate::html::Section;
use crate::plots::{color, Axis, LinePlot, Point, Quantity, Series};
use serde_json::Value;

/// Most lines one plot overlays (seven colours by six dashes stay apart).
const MAX_LINES: usize = 42;

/// One stream of one run and its two ends' samples.
struct Stream<'a> {
    run: usize,
    run_id: i64,
    stream: usize,
    label: String,
    sender: &'a [Value],
    receiver: &'a [Value],
}

fn samples_at<'a>(st: &'a Value, end: &str) -> &'a [Value] {
    st.pointer(&format!("/{end}/samples"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn streams<'a>(runs: &[&'a RunData<'a>]) -> Vec<Stream<'a>> {
    let mut out = Vec::new();
    for (run, r) in runs.iter().enumerate() {
        let dirs = directions(r.report);
        for d in &dirs {
            let list = d.summary.get("streams").and_then(Value::as_array);
            for (k, st) in list.into_iter().flatten().enumerate() {
                let (sender, receiver) = (samples_at(st, "sender"), samples_at(st, "receiver"));
                if sender.is_empty() && receiver.is_empty() {
                    continue;
                }
                let id = st.get("id").and_then(Value::as_i64).unwrap_or(k as i64);
                let mut label = format!("stream {id}");
                if runs.len() > 1 {
                    label = format!("run {}, {label}", r.id);
                }
                if dirs.len() > 1 {
                    label = format!("{label}, {}", direction_label(&d.name));
                }
                out.push(Stream {
                    run,
                    run_id: r.id,
                    stream: k,
                    label,
                    sender,
                    receiver,
                });
            }
        }
    }
    out
}

/// One run: a colour per stream; several: a colour per run (the dash
/// tells the streams apart).
fn line(s: &Stream, many_runs: bool, points: Vec<Point>) -> Series {
    let mut line = Series::new(
        s.label.clone(),
        color(if many_runs { s.run } else { s.stream }),
    );
    line.width = 1.4;
    line.dash = STREAM_DASHES[s.stream % STREAM_DASHES.len()];
    line.points = points;
    line
}

/// cwnd (bytes) of each sender sample.
fn cwnd_points(samples: &[Value]) -> Vec<Point> {
    samples
        .iter()
        .filter_map(|s| Some(Point::new(f(s, "/t")?, f(s, "/cwnd_bytes")?)))
        .collect()
}

/// Each sample's bytes over the time since the previous one, as a rate
/// held over that span (the first sample's span starts at the test's).
fn rate_points(samples: &[Value]) -> Vec<Point> {
    let mut out = Vec::with_capacity(samples.len());
    let mut before = 0.0;
    for s in samples {
        let (Some(t), Some(bytes)) = (f(s, "/t"), f(s, "/bytes")) else {
            continue;
        };
        if t > before {
            out.push(Point::over(before, t, bytes * 8.0 / (t - before)));
        }
        before = t;
    }
    out
}

/// The section of cwnd and throughput plots, when any of `runs` sampled.
pub(super) fn samples_section(runs: &[&RunData]) -> Option<Section> {
    let mut all = streams(runs);
    if all.is_empty() {
        return None;
    }
    let total = all.len();
    all.truncate(MAX_LINES);
    let mut sec = Section::new("samples", "Time series (--sample)");
    let period = runs
        .iter()
        .find_map(|r| f(r.report, "/test/sample_s"))
        .map(|p| format!(" every {}", format::millis(p * 1e3)))
        .unwrap_or_default();
    let runs_text: Vec<String> = {
        let mut ids: Vec<i64> = all.iter().map(|s| s.run_id).collect();
        ids.dedup();
        ids.iter().map(i64::to_string).collect()
    };
    let many = runs_text.len() > 1;
    if total > all.len() {
        sec.note(&format!(
            "The first {} of {total} sampled streams are drawn.",
            all.len()
        ));
    }
    let mut cwnd = LinePlot::new(
        "Congestion window, sample by sample",
        time_axis(),
        Axis::new("Congestion window", Quantity::Bytes).zero(),
    );
    let mut rate = LinePlot::new(
        "Throughput, sample by sample",
        time_axis(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    for s in &all {
        cwnd.series.push(line(s, many, cwnd_points(s.sender)));
        // What arrived; a peer that took no samples leaves the sender's writes.
        let from = if s.receiver.is_empty() {
            s.sender
        } else {
            s.receiver
        };
        rate.series.push(line(s, many, rate_points(from)));
    }
    let overlaid = if many {
        format!(
            " Runs {} overlaid, a colour per run, a dash pattern per stream.",
            runs_text.join(", ")
        )
    } else {
        String::new()
    };
    if cwnd.has_data() {
        sec.figure(
            &cwnd.render(),
            &format!("Each TCP sender's congestion window (tcp_info snd_cwnd x snd_mss), sampled{period} on the sender's clock.{overlaid}"),
        );
    }
    if rate.has_data() {
        sec.figure(
            &rate.render(),
            &format!("Each stream's throughput from one sample to the next{period}: the bytes the receiver read (the sender's writes when the receiver took no samples) over the time between samples.{overlaid}"),
        );
    }
    Some(sec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sample_rate_is_its_bytes_over_the_time_since_the_last() {
        let s = [
            json!({"t": 0.01, "bytes": 12500}),
            json!({"t": 0.03, "bytes": 50000}),
        ];
        let p = rate_points(&s);
        assert_eq!((p[0].x0, p[0].x, p[0].y), (Some(0.0), 0.01, 1e7));
        assert_eq!(p[1].x0, Some(0.01));
        assert!((p[1].y - 2e7).abs() < 1e-3, "{}", p[1].y);
    }
}
