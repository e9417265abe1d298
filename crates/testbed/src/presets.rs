//! Named link types from the seed reports, usable as `preset = "..."` in a `[[link]]`.
//! Explicit keys in the link (or its direction tables) override what a preset sets.

use crate::framing::Framing;
use crate::params::DirectionOverrides;

pub struct Preset {
    pub name: &'static str,
    pub description: &'static str,
    pub mtu: u32,
    pub settings: DirectionOverrides,
}

const MS: u64 = 1_000_000;
const NO_BER: Option<f64> = None;

fn preset(
    name: &'static str,
    description: &'static str,
    mtu: u32,
    rate_bps: u64,
    delay_ns: u64,
    framing: Framing,
    ber: Option<f64>,
) -> Preset {
    Preset {
        name,
        description,
        mtu,
        settings: DirectionOverrides {
            rate_bps: Some(rate_bps),
            delay_ns: Some(delay_ns),
            framing: Some(framing),
            ber,
            ..Default::default()
        },
    }
}

/// All presets, in the order `docs/testbed.md` lists them.
pub fn all() -> Vec<Preset> {
    vec![
        preset(
            "oc3c-atm",
            "ATM over SONET OC-3c: 149.76 Mbit/s cell stream (155.52 line), AAL5, MTU 9180",
            9180,
            149_760_000,
            0,
            Framing::AtmAal5,
            NO_BER,
        ),
        preset(
            "oc12c-atm",
            "ATM over SONET OC-12c: 599.04 Mbit/s cell stream (622.08 line), AAL5, MTU 9180",
            9180,
            599_040_000,
            0,
            Framing::AtmAal5,
            NO_BER,
        ),
        preset(
            "e3-34m-atm",
            "ATM over E3 (G.832): 33.92 Mbit/s cell stream (34.368 line), AAL5, MTU 9180",
            9180,
            33_920_000,
            0,
            Framing::AtmAal5,
            NO_BER,
        ),
        preset(
            "ds3",
            "DS3/T3 with HDLC/PPP: 44.736 Mbit/s, MTU 4470",
            4470,
            44_736_000,
            0,
            Framing::None,
            NO_BER,
        ),
        preset(
            "ds3-atm",
            "ATM over DS3 (PLCP): 40.704 Mbit/s cell stream, AAL5, MTU 9180",
            9180,
            40_704_000,
            0,
            Framing::AtmAal5,
            NO_BER,
        ),
        preset(
            "fddi",
            "FDDI ring: 100 Mbit/s, MTU 4352",
            4352,
            100_000_000,
            0,
            Framing::None,
            NO_BER,
        ),
        preset(
            "fast-ethernet",
            "100BASE-T: 100 Mbit/s, MTU 1500",
            1500,
            100_000_000,
            0,
            Framing::Ethernet,
            NO_BER,
        ),
        preset(
            "gige",
            "Gigabit Ethernet: 1 Gbit/s, MTU 1500",
            1500,
            1_000_000_000,
            0,
            Framing::Ethernet,
            NO_BER,
        ),
        preset(
            "gige-jumbo",
            "Gigabit Ethernet with jumbo frames: MTU 9000",
            9000,
            1_000_000_000,
            0,
            Framing::Ethernet,
            NO_BER,
        ),
        preset(
            "10ge",
            "10 Gigabit Ethernet: 10 Gbit/s, MTU 1500",
            1500,
            10_000_000_000,
            0,
            Framing::Ethernet,
            NO_BER,
        ),
        preset(
            "wan-600km",
            "MAGIC testbed path: OC-3c ATM over 600 km, 4.4 ms one-way (8.8 ms RTT)",
            9180,
            149_760_000,
            4_400_000,
            Framing::AtmAal5,
            NO_BER,
        ),
        preset(
            "geo-satellite",
            "Geostationary satellite hop: 2.048 Mbit/s (E1), 270 ms one-way",
            1500,
            2_048_000,
            270 * MS,
            Framing::None,
            NO_BER,
        ),
        preset(
            "radio-34m",
            // Measured through this preset (docs/testbed.md, "TCP through radio-34m"):
            // at BER 1e-6 reno, cubic and bbr lose 16, 24 and 7 %; reno and cubic
            // halve near 1.5-2e-6, bbr near 3e-6 (seed 000's 1996 link halved at 1e-6).
            "34 Mbit/s microwave radio (ATM over E3), 0.1 ms, BER 1e-7 (set ber to the link's); \
             TCP halves near BER 1.5-3e-6 here",
            9180,
            33_920_000,
            100_000,
            Framing::AtmAal5,
            Some(1e-7),
        ),
    ]
}

pub fn find(name: &str) -> Option<Preset> {
    all().into_iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::DirectionParams;

    #[test]
    fn required_presets_exist_with_their_defining_numbers() {
        for name in [
            "oc3c-atm",
            "e3-34m-atm",
            "ds3",
            "gige",
            "10ge",
            "wan-600km",
            "geo-satellite",
            "radio-34m",
        ] {
            assert!(find(name).is_some(), "{name}");
        }
        let mut p = DirectionParams::default();
        find("wan-600km").unwrap().settings.apply_to(&mut p);
        assert_eq!(p.delay_ns * 2, 8_800_000);
        let geo = find("geo-satellite").unwrap().settings;
        assert_eq!(geo.delay_ns, Some(270 * MS));
        assert!(find("radio-34m").unwrap().settings.ber.unwrap() > 0.0);
        assert!(find("nope").is_none());
        let mut names = names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all().len());
    }

    #[test]
    fn oc3c_preset_caps_tcp_near_135_mbit() {
        let p = find("oc3c-atm").unwrap();
        let wire = p.settings.framing.unwrap().wire_bytes(p.mtu as u64) as f64;
        let mss = (p.mtu - 52) as f64;
        let goodput = p.settings.rate_bps.unwrap() as f64 * mss / wire;
        assert!((134e6..136e6).contains(&goodput), "{goodput}");
    }
}
