//! Campaigns that change the network (issue 12): a phase's `set` and the
//! `link.*` entries of `vary` set the links of a running testbed before the
//! phase runs. Expectations come from the configured links: the UDP payload
//! share of each varied rate, and the binomial spread of a set loss rate.
//! Needs root (namespaces, TAP devices).

mod common;

use common::campaign::*;
use serde_json::Value;

#[test]
fn phases_and_vary_set_the_testbeds_links() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces");
        // 30 Mbit/s offered into the varied rate (above it: the link's payload rate
        // arrives); then 5 Mbit/s through a link that a phase sets to lose 10 %.
        let flow = |rate: &str| {
            format!("[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\nbitrate = \"{rate}\"\nlength = 1400\n")
        };
        let (bed, file) = bed_with_campaign(
        "links",
        "cln",
        1,
        "name = \"wan\"\nrate = \"40M\"\ndelay = \"2ms\"\nqueue = \"60K\"",
        "testbed = \"cln\"\nvary = [\"link.wan.rate=10M,20M\"]\nstart_delay = \"500ms\"\npause = \"200ms\"\n",
        &format!(
            "[[phase]]\nname = \"clean\"\nduration = \"2s\"\nset = [\"link.wan.a_to_b.loss=0\"]\n{}\
             [[phase]]\nname = \"lossy\"\nduration = \"2s\"\nset = [\"link.wan.a_to_b.loss=10%\"]\n{}",
            flow("30M"),
            flow("5M")
        ),
    );
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "campaign failed: {stderr}\n{v}");
        let mut rates_seen = Vec::new();
        for p in phases(&v, "clean") {
            let rate = rate_of(p);
            rates_seen.push(rate);
            assert_eq!(p["params"]["link.wan.a_to_b.loss"], "0", "{}", p["params"]);
            let payload = udp_payload_share(1400.0) * rate;
            let got = p["flows"][0]["received"]["bits_per_second"]
                .as_f64()
                .unwrap();
            eprintln!("clean at {rate}: received {got:.0} bit/s, payload rate {payload:.0}");
            assert!(
                got <= payload * 1.02,
                "{got} above the link's payload rate {payload}"
            );
            assert!(
                got >= payload * 0.9,
                "{got} far below the link's payload rate {payload}"
            );
        }
        assert_eq!(rates_seen, [10e6, 20e6]);
        for p in phases(&v, "lossy") {
            let f = &p["flows"][0]["received"];
            let lost = f["lost_packets"].as_f64().unwrap();
            // Every datagram is 1400 bytes: what arrived, counted by the receiver.
            let total = f["bytes"].as_f64().unwrap() / 1400.0 + lost;
            // 5 Mbit/s of 1400-byte datagrams for 2 s: about 890, each lost with p = 0.1.
            let sigma = (0.1 * 0.9 / total).sqrt();
            let share = lost / total;
            eprintln!(
                "lossy at {}: lost {lost} of {total} ({share:.4}, sigma {sigma:.4})",
                rate_of(p)
            );
            assert!(
                (share - 0.1).abs() <= 4.0 * sigma,
                "lost {share} of the datagrams, set 10 %"
            );
        }
    });
}

/// The varied rate of a phase result, in bit/s.
fn rate_of(p: &Value) -> f64 {
    let r = p["params"]["link.wan.rate"].as_str().unwrap();
    linkperf_units::parse_rate(r).unwrap() as f64
}

#[test]
fn a_bad_link_setting_stops_the_campaign_before_anything_runs() {
    linkperf_testsupport::require_root!("campaign tests need root for network namespaces");
    let (bed, file) = bed_with_campaign(
        "links-bad",
        "clb",
        1,
        "name = \"wan\"\nrate = \"40M\"",
        "testbed = \"clb\"\n",
        "[[phase]]\nname = \"p\"\nduration = \"1s\"\nset = [\"link.lan.rate=10M\"]\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\n",
    );
    let (code, v, stderr) = bed.campaign("a1", &file, &[]);
    eprintln!("{stderr}");
    assert_eq!(code, 2, "{stderr}\n{v}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("link.lan.rate") && stderr.contains("no link 'lan'"),
        "{stderr}"
    );
    // Without a testbed to apply them to, link settings are refused too.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("testbed = \"clb\"\n", "");
    let orphan = write(file.parent().unwrap(), "orphan.toml", &text);
    let (code, _, stderr) = bed.campaign("a1", &orphan, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("testbed = \"NAME\""), "{stderr}");
}
