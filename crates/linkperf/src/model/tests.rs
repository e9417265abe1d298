//! The model against values worked by hand from the formulas' sources.
use super::*;

fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-6 * want.abs(),
        "{got} is not {want}"
    );
}

fn path(rate: Option<f64>, rtt: f64, framing: Framing) -> Path {
    Path {
        rate_bps: rate,
        rtt_s: rtt,
        framing,
        ..Path::default()
    }
}

#[test]
fn the_link_rate_after_framing_binds_a_free_flow() {
    let k = Kernel::default();
    // Ethernet: 1448 payload bytes per 1538 on the wire.
    let p = predict(
        &path(Some(40e6), 0.02, Framing::Ethernet),
        &Flow::default(),
        &k,
    )
    .unwrap();
    assert_eq!(p.binding, "link");
    close(p.value, 40e6 * 1448.0 / 1538.0);
    // ATM AAL5: 1500 + 16 = 1516 -> 32 cells of 53 bytes = 1696.
    let p = predict(
        &path(Some(10e6), 0.02, Framing::AtmAal5),
        &Flow::default(),
        &k,
    )
    .unwrap();
    close(p.value, 10e6 * 1448.0 / 1696.0);
    // PPP: 7 bytes per frame.
    let p = predict(&path(Some(2e6), 0.02, Framing::Ppp), &Flow::default(), &k).unwrap();
    close(p.value, 2e6 * 1448.0 / 1507.0);
}

#[test]
fn a_window_binds_at_whole_segments_over_the_round_trip() {
    let k = Kernel::default();
    let flow = Flow {
        window: Some(65536),
        ..Flow::default()
    };
    let p = predict(&path(Some(100e6), 0.02, Framing::Ethernet), &flow, &k).unwrap();
    assert_eq!(p.binding, "window");
    // 45 whole segments (65160 bytes); RTT 20 ms + two 1538-byte frames at
    // 100 Mbit/s (the delayed ACK follows the second segment).
    let rtt = 0.02 + 2.0 * 1538.0 * 8.0 / 100e6;
    close(p.value, 65160.0 * 8.0 / rtt);
    close(p.rtt_s, rtt);
    // Two streams: two windows.
    let two = predict(
        &path(Some(100e6), 0.02, Framing::Ethernet),
        &Flow {
            streams: 2,
            ..flow.clone()
        },
        &k,
    )
    .unwrap();
    close(two.value, 2.0 * 65160.0 * 8.0 / rtt);
}

#[test]
fn a_receive_buffer_is_doubled_capped_and_shared() {
    let k = Kernel {
        rmem_max: Some(212_992),
        ..Kernel::default()
    };
    // 32 KiB asked: 64 KiB held, half of it window = 32768 -> 22 segments.
    let small = Flow {
        rcvbuf: Some(32768),
        ..Flow::default()
    };
    let p = predict(&path(None, 0.01, Framing::Ethernet), &small, &k).unwrap();
    close(p.value, 22.0 * 1448.0 * 8.0 / 0.01);
    // 1 MiB asked, capped at rmem_max: 2 x 212992 / 2 = 212992 -> 147 segments.
    let big = Flow {
        rcvbuf: Some(1 << 20),
        ..Flow::default()
    };
    let p = predict(&path(None, 0.01, Framing::Ethernet), &big, &k).unwrap();
    close(p.value, 147.0 * 1448.0 * 8.0 / 0.01);
    // tcp_adv_win_scale = 2: three quarters of 64 KiB = 49152 -> 33 segments.
    let k2 = Kernel {
        rcv_share: 0.75,
        ..Kernel::default()
    };
    let p = predict(&path(None, 0.01, Framing::Ethernet), &small, &k2).unwrap();
    close(p.value, 33.0 * 1448.0 * 8.0 / 0.01);
    // Linux 6.6+: 1448 of a 2304-byte truesize (2048 + 256) = 160/256 in the
    // kernel's 8-bit ratio: 65536 x 160 / 256 = 40960 -> 28 segments.
    let k3 = Kernel {
        rcv_share: 0.0,
        ..Kernel::default()
    };
    assert_eq!(scaling_ratio(1448), 160.0 / 256.0);
    // MTU 9180 (seed 004's ATM path): 9194-byte frames leave 9128 bytes in
    // three 4 KiB pages + 512 + 256 = 13056 -> 178/256, the ratio this
    // kernel's window_clamp showed for -w 32K there (65536 x 178/256 = 45568).
    assert_eq!(scaling_ratio(9128), 178.0 / 256.0);
    let p = predict(&path(None, 0.01, Framing::Ethernet), &small, &k3).unwrap();
    close(p.value, 28.0 * 1448.0 * 8.0 / 0.01);
    // A send buffer of 16 KiB holds 32 KiB in flight at most.
    let send = Flow {
        sndbuf: Some(16384),
        ..Flow::default()
    };
    let p = predict(&path(None, 0.01, Framing::Ethernet), &send, &k).unwrap();
    assert_eq!(p.binding, "send_buffer");
    close(p.value, 32768.0 * 8.0 / 0.01);
}

#[test]
fn loss_bounds_follow_padhye_mathis_and_cubic() {
    let k = Kernel::default();
    let lossy = Path {
        loss: 0.01,
        ..path(None, 0.02, Framing::Ethernet)
    };
    let reno = Flow {
        congestion: Congestion::Reno,
        ..Flow::default()
    };
    let p = predict(&lossy, &reno, &k).unwrap();
    assert_eq!(p.binding, "loss_reno");
    // 0.375 W² + 0.5 W = 100 -> W = 15.676868: 100 packets in 8.838434 RTTs.
    let want = 1448.0 * 8.0 * 100.0 / 8.838434 / 0.02;
    assert!((p.value / want - 1.0).abs() < 1e-6, "{} vs {want}", p.value);
    // Worked in formulas.rs: 710,343 B/s with T0 = 200 ms + RTT.
    assert!((p.reference["loss_padhye"] - 710_342.84 * 8.0).abs() < 10.0);
    close(p.reference["loss_mathis"], 886_715.287 * 8.0);
    // CUBIC at 1 % loss and 20 ms is in its Reno-friendly region: the same figure.
    let p = predict(&lossy, &Flow::default(), &k).unwrap();
    assert_eq!(p.binding, "loss_cubic");
    assert!((p.value - 710_342.84 * 8.0).abs() < 10.0, "{}", p.value);
    // BBR has no loss response in the model: nothing else bounds it.
    let bbr = Flow {
        congestion: Congestion::Bbr,
        ..Flow::default()
    };
    assert!(predict(&lossy, &bbr, &k).is_err());
}

#[test]
fn udp_loses_by_random_loss_and_by_bit_errors_per_frame() {
    let k = Kernel::default();
    let flow = Flow {
        protocol: Protocol::Udp,
        udp_length: 1472,
        udp_rate_bps: Some(5e6),
        ..Flow::default()
    };
    let lossy = Path {
        loss: 0.01,
        ..path(Some(40e6), 0.02, Framing::Ethernet)
    };
    let p = predict(&lossy, &flow, &k).unwrap();
    assert_eq!(p.binding, "offered");
    close(p.value, 5e6 * 0.99);
    // Unpaced: the link, 1472 of 1538 bytes, less the loss.
    let free = Flow {
        udp_rate_bps: None,
        ..flow.clone()
    };
    let p = predict(&lossy, &free, &k).unwrap();
    close(p.value, 40e6 * 1472.0 / 1538.0 * 0.99);
    // BER 1e-6 on a 1514-byte frame: (1 - 1e-6)^12112 = 0.98796105 arrive.
    let noisy = Path {
        ber: 1e-6,
        ..path(Some(40e6), 0.02, Framing::Ethernet)
    };
    let p = predict(&noisy, &flow, &k).unwrap();
    assert!((p.value - 5e6 * 0.987_961_05).abs() < 1.0, "{}", p.value);
    // 4000-byte datagrams in three fragments (1500, 1500, 1068 bytes of IP).
    let big = Flow {
        udp_length: 4000,
        udp_rate_bps: None,
        ..flow
    };
    let p = predict(&path(Some(40e6), 0.02, Framing::Ethernet), &big, &k).unwrap();
    close(p.value, 40e6 * 4000.0 / (1538.0 + 1538.0 + 1106.0));
}

#[test]
fn cpu_service_demand_bounds() {
    let host = Path {
        cpu_us_per_mb: Some(1000.0),
        ..path(Some(10e9), 0.001, Framing::Ethernet)
    };
    // 1000 us per 10^6 bytes: 1000 MB/s = 8 Gbit/s, below a 10 Gbit/s link.
    let p = predict(&host, &Flow::default(), &Kernel::default()).unwrap();
    assert_eq!(p.binding, "cpu");
    close(p.value, 8e9);
}

#[test]
fn bad_descriptions_are_refused_with_the_parameter_named() {
    let k = Kernel::default();
    let ok = path(Some(10e6), 0.02, Framing::Ethernet);
    let err = |p: &Path, f: &Flow| predict(p, f, &k).unwrap_err().0;
    assert!(err(&path(Some(10e6), 0.0, Framing::Ethernet), &Flow::default()).starts_with("rtt"));
    assert!(err(&path(Some(0.0), 0.02, Framing::Ethernet), &Flow::default()).starts_with("rate"));
    let zero = Flow {
        window: Some(0),
        ..Flow::default()
    };
    assert!(err(&ok, &zero).starts_with("window"));
    let mss = Flow {
        mss: Some(1480),
        ..Flow::default()
    };
    assert!(err(&ok, &mss).starts_with("mss"));
    let all_lost = Path {
        loss: 1.0,
        ..ok.clone()
    };
    assert!(err(&all_lost, &Flow::default()).starts_with("loss"));
    assert!(err(&path(None, 0.02, Framing::Ethernet), &Flow::default()).starts_with("nothing"));
}

#[test]
fn per_packet_processing_bounds_tcp_and_udp() {
    // Seed 004's SGI at 550 us per 9000-byte packet: one 8948-byte segment each.
    let slow = Path {
        mtu: 9000,
        processing: vec![(550e-6, 0.0)],
        ..path(Some(1e9), 0.01, Framing::Ethernet)
    };
    let p = predict(&slow, &Flow::default(), &Kernel::default()).unwrap();
    assert_eq!(p.binding, "processing");
    close(p.value, 8948.0 * 8.0 / 550e-6);
    // A router at 100 us + 100 ns per frame byte: a 1000-byte datagram is a
    // 1028-byte packet, 1042 frame bytes, 204.2 us; two streams share it.
    let router = Path {
        processing: vec![(100e-6, 100e-9)],
        ..path(None, 0.01, Framing::Ethernet)
    };
    let udp = Flow {
        protocol: Protocol::Udp,
        streams: 2,
        udp_length: 1000,
        udp_rate_bps: Some(30e6),
        ..Flow::default()
    };
    let p = predict(&router, &udp, &Kernel::default()).unwrap();
    assert_eq!(p.binding, "processing");
    close(p.value, 1000.0 * 8.0 / 204.2e-6);
    // Seed 002's two routers in series: the Cisco (420 us + 70 ns per frame
    // byte) is the slower for 1450-byte datagrams (1492 frame bytes: 524.4
    // us against 346.7), the Bay (190 us + 105 ns) for 8192-byte ones.
    let two = Path {
        mtu: 9180,
        processing: vec![(420e-6, 70e-9), (190e-6, 105e-9)],
        ..path(None, 0.01, Framing::Ethernet)
    };
    for (len, seconds) in [
        (1450, 420e-6 + 70e-9 * 1492.0),
        (8192, 190e-6 + 105e-9 * 8234.0),
    ] {
        let flow = Flow {
            udp_length: len,
            udp_rate_bps: None,
            streams: 1,
            ..udp.clone()
        };
        let p = predict(&two, &flow, &Kernel::default()).unwrap();
        close(p.bounds["processing"], len as f64 * 8.0 / seconds);
    }
}
