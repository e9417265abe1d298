//! A campaign in a testbed puts the model's prediction beside each flow: two
//! flows through one bottleneck each get half of the link's payload rate
//! (max-min fair share), worked here from the configured link. Two UDP
//! flows offering the same rate into a drop-tail queue lose the same share
//! of their datagrams, so each receives that half: measured within 3 %
//! (the emulator's drop-tail, 2 s of ~1,700 datagrams per flow).
//! Needs root (namespaces, TAP devices).

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
        for f in flows {
            let predicted = f["predicted"]["bits_per_second"].as_f64().unwrap();
            let measured = f["received"]["bits_per_second"].as_f64().unwrap();
            eprintln!(
                "{} -> {}: predicted {predicted:.0} ({}, {} sharing), measured {measured:.0}, share {share:.0}",
                f["from"], f["to"], f["predicted"]["binding"], f["predicted"]["sharing"]
            );
            assert_eq!(f["predicted"]["binding"], "fair_share");
            assert_eq!(f["predicted"]["sharing"], 2);
            assert!(
                (predicted / share - 1.0).abs() < 1e-3,
                "predicted {predicted}, the fair share is {share}"
            );
            assert!(
                (measured / share - 1.0).abs() <= 0.03,
                "measured {measured}, the fair share is {share}"
            );
        }
    });
}
