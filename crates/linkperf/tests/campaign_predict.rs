//! A campaign in a testbed puts the model's prediction beside each flow: two
//! flows through one bottleneck each get half of the link's payload rate
//! (max-min fair share), worked here from the configured link. Both offer
//! 15 Mbit/s of 1400-byte datagrams with Poisson arrivals into a 20 Mbit/s
//! drop-tail queue: each place the link frees goes to the next arrival, so a
//! flow's received datagrams are binomial over those delivered, with its share
//! of the offered ones (checked to 4 sd, ~1.4 % here). Evenly paced flows
//! would not do: a full drop-tail queue gives each freed place to whichever
//! flow's packet comes next, so two equal CBR flows split by their relative
//! phase (measured 9.1-9.9 Mbit/s of 9.55 on a loaded machine, Floyd and
//! Jacobson's phase effects). Together they receive the link's payload rate
//! within 3 % (90 ms of the 3 s: the queue's drain, the agents' start spread).
//! Needs root (namespaces, TAP devices).

mod common;

use common::campaign::*;

#[test]
fn two_flows_through_one_bottleneck_are_predicted_their_fair_share() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces");
        let flow = |i: usize| {
            format!("[[phase.flow]]\nfrom = \"a{i}\"\nto = \"b{i}\"\nudp = true\ntraffic = \"idt=exp:747us;size=const:1400\"\n")
        };
        let (bed, file) = bed_with_campaign(
            "predict",
            "cpr",
            2,
            "name = \"wan\"\nrate = \"20M\"\ndelay = \"2ms\"\nqueue = \"60K\"",
            "testbed = \"cpr\"\nstart_delay = \"500ms\"\n",
            &format!(
                "[[phase]]\nname = \"shared\"\nduration = \"3s\"\n{}{}",
                flow(1),
                flow(2)
            ),
        );
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "campaign failed: {stderr}\n{v}");
        // 20 Mbit/s of 1400-byte datagrams: 1400 of 1466 wire bytes each; half each.
        let share = 20e6 * udp_payload_share(1400.0) / 2.0;
        let phase = phases(&v, "shared")[0];
        let flows = phase["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        let datagrams =
            |f: &serde_json::Value, side: &str| f[side]["bytes"].as_f64().unwrap() / 1400.0;
        let offered: f64 = flows.iter().map(|f| datagrams(f, "sent")).sum();
        let delivered: f64 = flows.iter().map(|f| datagrams(f, "received")).sum();
        let received_rate: f64 = flows
            .iter()
            .map(|f| f["received"]["bits_per_second"].as_f64().unwrap())
            .sum();
        for f in flows {
            let predicted = f["predicted"]["bits_per_second"].as_f64().unwrap();
            // Poisson arrivals: each place the link frees in the full queue goes to the
            // next arrival, which is this flow's with its share of the offered datagrams.
            let p = datagrams(f, "sent") / offered;
            let (expected, sd) = (delivered * p, (delivered * p * (1.0 - p)).sqrt());
            let got = datagrams(f, "received");
            eprintln!(
                "{} -> {}: predicted {predicted:.0} ({}, {} sharing), fair share {share:.0}; received {got:.0} datagrams, {expected:.0} ± {sd:.0} of the {delivered:.0} delivered as offered ({:.0} of {offered:.0})",
                f["from"], f["to"], f["predicted"]["binding"], f["predicted"]["sharing"], datagrams(f, "sent")
            );
            assert_eq!(f["predicted"]["binding"], "fair_share");
            assert_eq!(f["predicted"]["sharing"], 2);
            assert!(
                (predicted / share - 1.0).abs() < 1e-3,
                "predicted {predicted}, the fair share is {share}"
            );
            assert!(
                (got - expected).abs() <= 4.0 * sd,
                "received {got:.0} datagrams; as offered, {expected:.0} ± {sd:.0} of {delivered:.0}"
            );
        }
        eprintln!(
            "together {received_rate:.0} bit/s of the link's {:.0}",
            2.0 * share
        );
        assert!(
            (received_rate / (2.0 * share) - 1.0).abs() <= 0.03,
            "the two flows received {received_rate:.0} bit/s together; the link carries {:.0}",
            2.0 * share
        );
    });
}
