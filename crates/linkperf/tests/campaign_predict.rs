//! A campaign in a testbed puts the model's prediction beside each flow: two
//! flows through one bottleneck each get half of the link's payload rate
//! (max-min fair share), worked here from the configured link. UDP flows
//! into a full drop-tail queue lose the same share of what each offers, so
//! each receives the link's payload rate times its share of the offered
//! load: with both offering their 15 Mbit/s, the half the model predicts.
//! Measured within 5 % of that (the emulator's drop-tail over ~1,700
//! datagrams per flow; a sender a busy machine held back catches up in
//! bursts, of which a full queue drops more). Needs root (namespaces, TAP
//! devices).

mod common;

use common::campaign::*;

#[test]
fn two_flows_through_one_bottleneck_are_predicted_their_fair_share() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces");
        let flow = |i: usize| {
            format!("[[phase.flow]]\nfrom = \"a{i}\"\nto = \"b{i}\"\nudp = true\nbitrate = \"15M\"\nlength = 1400\n")
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
        let sent = |f: &serde_json::Value| f["sent"]["bits_per_second"].as_f64().unwrap();
        let offered: f64 = flows.iter().map(sent).sum();
        for f in flows {
            let predicted = f["predicted"]["bits_per_second"].as_f64().unwrap();
            let measured = f["received"]["bits_per_second"].as_f64().unwrap();
            // The link's payload rate shared as the offered load arrived.
            let arrived = (2.0 * share * sent(f) / offered).min(sent(f));
            eprintln!(
                "{} -> {}: predicted {predicted:.0} ({}, {} sharing), measured {measured:.0} of {:.0} sent, share {share:.0}, as offered {arrived:.0}",
                f["from"], f["to"], f["predicted"]["binding"], f["predicted"]["sharing"], sent(f)
            );
            assert_eq!(f["predicted"]["binding"], "fair_share");
            assert_eq!(f["predicted"]["sharing"], 2);
            assert!(
                (predicted / share - 1.0).abs() < 1e-3,
                "predicted {predicted}, the fair share is {share}"
            );
            assert!(
                (measured / arrived - 1.0).abs() <= 0.05,
                "measured {measured}, the link's share as offered is {arrived} (fair share {share})"
            );
        }
    });
}
