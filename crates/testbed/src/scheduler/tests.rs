//! Unit tests of the link direction scheduler.

use super::*;
use crate::framing::Framing;
use crate::impairment::JitterDistribution;

fn scheduler(params: DirectionParams) -> Scheduler<u64> {
    with_mtu(params, 1500)
}

fn with_mtu(params: DirectionParams, mtu: u32) -> Scheduler<u64> {
    Scheduler::new(
        params,
        mtu,
        42,
        Arc::new(DirectionCounters::default()),
        Arc::new(DirectionTiming::default()),
        0,
    )
}

/// Offers `count` frames of `frame_bytes` every `gap_ns`, drains everything and returns
/// (sequence number, release time) of the delivered frames.
fn run(s: &mut Scheduler<u64>, count: u64, frame_bytes: usize, gap_ns: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for i in 0..count {
        let now = i * gap_ns;
        while let Some(e) = s.pop_due(now) {
            out.push((e.item, now));
        }
        s.offer(now, frame_bytes, i);
    }
    while let Some(t) = s.next_release_ns() {
        if let Some(e) = s.pop_due(t) {
            out.push((e.item, t));
        }
    }
    out
}

#[test]
fn delay_only_shifts_every_frame_by_the_delay() {
    let mut s = scheduler(DirectionParams {
        delay_ns: 4_400_000,
        ..Default::default()
    });
    assert_eq!(s.offer(1_000, 100, 0), Verdict::Accepted);
    assert_eq!(s.next_release_ns(), Some(4_401_000));
    assert!(s.pop_due(4_400_999).is_none());
    let e = s.pop_due(4_401_000).unwrap();
    assert_eq!((e.item, e.bytes, e.finish_ns), (0, 100, 1_000));
}

#[test]
fn rate_spaces_frames_by_their_wire_time() {
    // 1514-byte frames = 1500 IP bytes = 1538 wire bytes; at 100 Mbit/s that is 123.04 us.
    let mut s = scheduler(DirectionParams {
        rate_bps: 100_000_000,
        ..Default::default()
    });
    let out = run(&mut s, 500, 1514, 0);
    assert_eq!(out.len(), 500);
    let span = (out[499].1 - out[0].1) as f64;
    assert!((span / 499.0 - 123_040.0).abs() < 2.0, "{}", span / 499.0);
}

#[test]
fn atm_framing_charges_cells() {
    let params = DirectionParams {
        rate_bps: 149_760_000,
        framing: Framing::AtmAal5,
        ..Default::default()
    };
    let mut s = with_mtu(params, 9180);
    let out = run(&mut s, 101, 9180 + 14, 0);
    let per_frame = (out[100].1 - out[0].1) as f64 / 100.0;
    let expected = 192.0 * 53.0 * 8.0 * 1e9 / 149.76e6;
    assert!(
        (per_frame - expected).abs() < 1.0,
        "{per_frame} vs {expected}"
    );
}

#[test]
fn drop_tail_queue_limits_bytes_and_counts_drops_and_high_water() {
    let params = DirectionParams {
        rate_bps: 10_000_000,
        queue_bytes: Some(20 * 1024),
        queue_packets: None,
        ..Default::default()
    };
    let mut s = scheduler(params);
    // A back-to-back burst of 100 frames of 1042 bytes: 19 fit in 20 KiB.
    let out = run(&mut s, 100, 1042, 0);
    assert_eq!(out.len(), 19);
    let c = s.counters().snapshot();
    assert_eq!(c.dropped_queue, 81);
    assert_eq!(c.queue_high_water_bytes, 19 * 1042);
    assert_eq!(c.queue_high_water_packets, 19);
}

#[test]
fn packet_limit_and_draining_queue() {
    let params = DirectionParams {
        rate_bps: 8_000_000,
        queue_packets: Some(5),
        ..Default::default()
    };
    let mut s = scheduler(params);
    // 1000 IP bytes + 38 = 1038 wire bytes = 1038 us each; offered every 500 us the queue
    // grows by one frame per ~2 offers until 5 are held, then half the offers drop.
    let out = run(&mut s, 1000, 1014, 500_000);
    let c = s.counters().snapshot();
    assert_eq!(c.queue_high_water_packets, 5);
    assert_eq!(out.len() as u64 + c.dropped_queue, 1000);
    let expected_delivered = 1000.0 * 500.0 / 1038.0;
    assert!(
        (out.len() as f64 - expected_delivered).abs() < 8.0,
        "{}",
        out.len()
    );
}

#[test]
fn unlimited_rate_never_queues() {
    let mut s = scheduler(DirectionParams {
        queue_packets: Some(1),
        ..Default::default()
    });
    let out = run(&mut s, 1000, 1514, 0);
    assert_eq!(out.len(), 1000);
}

#[test]
fn oversize_frames_are_dropped() {
    let mut s = scheduler(DirectionParams::default());
    assert_eq!(s.offer(0, 1515, 0), Verdict::Dropped(DropReason::Oversize));
    assert_eq!(s.counters().snapshot().dropped_oversize, 1);
}

#[test]
fn jitter_keeps_fifo_order_unless_reorder_is_set() {
    let base = DirectionParams {
        delay_ns: 10_000_000,
        jitter_ns: 5_000_000,
        jitter_distribution: JitterDistribution::Uniform,
        ..Default::default()
    };
    let mut fifo = scheduler(base.clone());
    let out = run(&mut fifo, 2000, 100, 100_000);
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
    let mut reorder = scheduler(DirectionParams {
        reorder: true,
        ..base
    });
    let out = run(&mut reorder, 2000, 100, 100_000);
    assert_eq!(out.len(), 2000);
    let inversions = out.windows(2).filter(|w| w[0].0 > w[1].0).count();
    assert!(inversions > 100, "{inversions}");
    assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
}

#[test]
fn lost_frames_still_occupy_the_wire() {
    let params = DirectionParams {
        rate_bps: 100_000_000,
        loss: 0.5,
        ..Default::default()
    };
    let mut s = scheduler(params);
    let out = run(&mut s, 1000, 1514, 0);
    let c = s.counters().snapshot();
    assert_eq!(out.len() as u64 + c.dropped_loss, 1000);
    // The last delivered frame leaves after at least as many slots as frames offered before it.
    let (last_seq, last_t) = *out.last().unwrap();
    assert!(last_t >= (last_seq + 1) * 123_040 - 1);
}

#[test]
fn a_rate_change_applies_to_the_bits_not_yet_sent() {
    // 1514-byte frames at 100 Mbit/s: 123.04 us each. Ten queued at t = 0.
    let mut s = scheduler(DirectionParams {
        rate_bps: 100_000_000,
        ..Default::default()
    });
    for i in 0..10 {
        s.offer(0, 1514, i);
    }
    // Halfway through the third frame, the rate doubles: the rest of it takes 30.76 us,
    // the seven after it 61.52 us each.
    let t = 2 * 123_040 + 61_520;
    assert_eq!(
        s.set_params(
            t,
            DirectionParams {
                rate_bps: 200_000_000,
                ..Default::default()
            },
            1500
        ),
        0
    );
    let mut last = 0;
    while let Some(next) = s.next_release_ns() {
        if let Some(e) = s.pop_due(next) {
            last = e.finish_ns;
        }
    }
    let expected = t + 61_520 / 2 + 7 * 61_520;
    assert!(last.abs_diff(expected) <= 2, "{last} vs {expected}");
    assert_eq!(s.counters().snapshot().dropped_resize, 0);
}

#[test]
fn a_delay_decrease_lets_new_packets_pass_those_in_flight() {
    let mut s = scheduler(DirectionParams {
        delay_ns: 10_000_000,
        ..Default::default()
    });
    s.offer(0, 100, 1);
    s.set_params(
        1_000,
        DirectionParams {
            delay_ns: 2_000_000,
            ..Default::default()
        },
        1500,
    );
    s.offer(2_000, 100, 2);
    let first = s
        .pop_due(2_002_000)
        .expect("the new packet leaves at 2 ms + 2 ms");
    assert_eq!(first.item, 2);
    assert_eq!(s.pop_due(10_000_000).unwrap().item, 1);
}

#[test]
fn a_shrinking_queue_drops_its_tail_and_counts_it_apart() {
    let mut s = scheduler(DirectionParams {
        rate_bps: 1_000_000,
        queue_packets: Some(100),
        ..Default::default()
    });
    for i in 0..50 {
        s.offer(0, 1000, i);
    }
    assert_eq!(s.queued().0, 50);
    let dropped = s.set_params(
        0,
        DirectionParams {
            rate_bps: 1_000_000,
            queue_packets: Some(20),
            ..Default::default()
        },
        1500,
    );
    assert_eq!(dropped, 30);
    let c = s.counters().snapshot();
    assert_eq!((c.dropped_resize, c.dropped_queue), (30, 0));
    let out = run(&mut s, 0, 1000, 0);
    assert_eq!(
        out.iter().map(|o| o.0).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
}

#[test]
fn a_trace_serialises_at_its_delivery_opportunities() {
    use crate::trace::Trace;
    // Two opportunities per ms: 2 x 1504 bytes per ms = 24.064 Mbit/s of IP packets.
    let trace = Trace::from_list("t", (1..=100).flat_map(|m| [m, m]).collect());
    let params = DirectionParams {
        trace: Some(trace),
        rate_bps: 1,
        queue_packets: None,
        ..Default::default()
    };
    let mut s = with_mtu(params, 1504);
    // 1000 full-size packets offered at once leave two per ms, wrapping round the trace.
    let out = run(&mut s, 1000, 1504 + 14, 0);
    assert_eq!(out.len(), 1000);
    assert_eq!(out[0].1, 1_000_000);
    assert_eq!(out[999].1, 500_000_000);
    let c = s.counters().snapshot();
    assert_eq!(c.dropped_queue, 0);
}

#[test]
fn the_queueing_delay_is_sampled_uniformly_in_time() {
    // 1000-byte frames at 80 Mbit/s: 1024 wire bytes, 102.4 us each. Ten at t = 0 make
    // 1024 us of backlog, then the link idles until 2 ms: sampled every 100 us, the
    // delay a packet arriving then would see is 0 (at 0, just before the ten), then 924,
    // 824, ... 24 us, then zeros.
    let mut s = scheduler(DirectionParams {
        rate_bps: 80_000_000,
        ..Default::default()
    });
    for i in 0..10 {
        s.offer(0, 1000, i);
    }
    while s.pop_due(2_000_000).is_some() {}
    let b = s.timing().backlog.snapshot();
    assert_eq!(b.count, 21);
    assert_eq!(
        b.sum_ns,
        (1..11).map(|k| 1_024_000 - k * 100_000).sum::<u64>()
    );
    assert_eq!(b.max_ns, 924_000);
    // 16th of 21 sorted samples: eleven zeros, then 24, 124, 224, 324, 424 us.
    assert!(b.quantile(0.75).unwrap().abs_diff(424_000) < 3_000, "{b:?}");
    // Per packet, the ten waited 0, 102.4, ... 921.6 us.
    let q = s.timing().queueing.snapshot();
    assert_eq!(q.count, 10);
    assert!(q.sum_ns.abs_diff(4_608_000) < 10, "{}", q.sum_ns);
}
