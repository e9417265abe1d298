//! The TCP round-trip times of a report: the summary's min and max are those
//! of the smoothed-RTT samples seen during the test, not of per-stream means,
//! and rttvar is the kernel's rttvar.

mod common;
use common::*;
use serde_json::Value;

/// The non-omitted intervals' sender tcp_info blocks.
fn sender_intervals(r: &Value) -> Vec<&Value> {
    array_at(r, "/intervals")
        .iter()
        .filter(|i| i["omitted"] == false)
        .flat_map(|i| array_at(i, "/streams"))
        .map(|s| &s["sender"]["tcp"])
        .filter(|t| t.is_object())
        .collect()
}

#[test]
fn rtt_summary_spans_the_samples_seen_in_the_intervals() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        // Bulk TCP on loopback: the queue in the socket buffers grows and drains,
        // so the smoothed RTT moves between tens of microseconds and milliseconds.
        let r = loopback_json(&["-t", "3", "-i", "0.5", "-P", "1"]);
        assert_valid(&r);
        let rtt = &r["summary"]["tcp"]["rtt_ms"];
        let (mean, min, max) = (
            f64_at(rtt, "/mean"),
            f64_at(rtt, "/min"),
            f64_at(rtt, "/max"),
        );
        assert!(max >= mean && mean >= min, "{rtt}");

        let intervals = sender_intervals(&r);
        assert!(intervals.len() >= 5, "{intervals:?}");
        let mut interval_max = f64::MIN;
        let mut interval_min = f64::MAX;
        let mut at_end = Vec::new();
        for t in &intervals {
            let (lo, hi, end) = (
                f64_at(t, "/rtt_min_ms"),
                f64_at(t, "/rtt_max_ms"),
                f64_at(t, "/rtt_ms"),
            );
            // The reading at the interval's end is one of its samples.
            assert!(lo <= end && end <= hi, "{t}");
            interval_max = interval_max.max(hi);
            interval_min = interval_min.min(lo);
            at_end.push(end);
        }
        assert_eq!(max, interval_max, "summary max is the largest interval max");
        assert_eq!(
            min, interval_min,
            "summary min is the smallest interval min"
        );

        // A smoothed RTT averages raw samples, none of which is below the
        // kernel's min_rtt (both in whole microseconds).
        let kernel_min = f64_at(rtt, "/kernel_min_rtt");
        assert!(
            min >= kernel_min - 0.001,
            "min {min} < kernel min_rtt {kernel_min}"
        );

        // The intervals ended on different RTTs, so at -P 1 the largest seen
        // cannot be the mean of the samples.
        at_end.dedup();
        assert!(
            at_end.len() > 1,
            "every interval ended on the same RTT: {at_end:?}"
        );
        assert!(
            max > mean,
            "max {max} == mean {mean} although the intervals differ"
        );

        // Sampled every 10 ms while sending: about 300 over 3 s; a loaded
        // machine may delay the sampler, not by a factor of three.
        let samples = u64_at(rtt, "/samples");
        assert!(samples >= 100, "{samples} samples over 3 s");

        // rttvar is tcp_info's, reported under that name.
        assert!(rtt.get("var").is_none(), "{rtt}");
        assert!(f64_at(rtt, "/rttvar") >= 0.0);
    });
}
