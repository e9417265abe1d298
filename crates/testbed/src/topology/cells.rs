//! The cell-level ATM keys of a link direction (`cells`, `discard`, `epd_threshold`, `pcr`;
//! see `crate::atm`): each table's values, and the merged direction's consistency (AAL5
//! framing, a rate, a peak cell rate within the line's).

use super::parse::{join_key, Parser, Span};
use super::raw::{CellKeys, RawDirection, RawLink};
use crate::atm::Discard;
use crate::error::TestbedError;
use crate::framing::Framing;
use crate::params::{DirectionOverrides, DirectionParams};
use toml::Spanned;

/// Largest per-VC queue accepted (a 64 MiB switch buffer of 53-byte cells).
const MAX_CELLS: i64 = 1 << 20;

impl Parser<'_> {
    /// The values of one table's cell keys.
    pub(super) fn cell_keys(
        &self,
        k: &CellKeys<'_>,
        table: &str,
        o: &mut DirectionOverrides,
    ) -> Result<(), TestbedError> {
        if let Some(v) = k.cells {
            if !(1..=MAX_CELLS).contains(v.get_ref()) {
                return Err(self.error(
                    Some(v.span()),
                    &join_key(table, "cells"),
                    format!(
                        "{} is outside 1..={MAX_CELLS} (the cells each VC's queue holds, e.g. 256)",
                        v.get_ref()
                    ),
                ));
            }
            o.cells = Some(*v.get_ref() as u64);
        }
        if let Some(v) = k.discard {
            o.discard = Some(Discard::from_name(v.get_ref()).ok_or_else(|| {
                self.error(
                    Some(v.span()),
                    &join_key(table, "discard"),
                    format!("'{}' is not one of none, ppd, epd", v.get_ref()),
                )
            })?);
        }
        if let Some(v) = k.epd_threshold {
            if !(1..MAX_CELLS).contains(v.get_ref()) {
                return Err(self.error(
                    Some(v.span()),
                    &join_key(table, "epd_threshold"),
                    format!(
                        "{} is outside 1..{MAX_CELLS} (cells in the VC's queue above which EPD refuses a new frame)",
                        v.get_ref()
                    ),
                ));
            }
            o.epd_threshold = Some(*v.get_ref() as u64);
        }
        if let Some(v) = k.pcr {
            let key = join_key(table, "pcr");
            let bad = || {
                self.error(
                    Some(v.span()),
                    &key,
                    "must be a peak cell rate above 0 cells per second (e.g. 235849: 100 Mbit/s of cells)",
                )
            };
            let pcr = match v.get_ref() {
                toml::Value::Integer(i) if *i > 0 => *i as f64,
                toml::Value::Float(f) if *f >= 1.0 && f.is_finite() => *f,
                toml::Value::String(s) => linkperf_units::parse_count(s).map_err(|_| bad())? as f64,
                _ => return Err(bad()),
            };
            if pcr < 1.0 {
                return Err(bad());
            }
            o.pcr = Some(pcr.round() as u64);
        }
        Ok(())
    }

    /// [`Self::check_cells`] for a direction of a `[[link]]`: errors point at the direction
    /// table's first cell key, else the link table's, else the link's `ends`.
    pub(super) fn check_link_cells(
        &self,
        p: &DirectionParams,
        raw: &RawLink,
        table: &Option<Spanned<RawDirection>>,
        name: &str,
    ) -> Result<(), TestbedError> {
        let in_direction = table
            .as_ref()
            .and_then(|d| d.get_ref().keys().cells.first().map(|(s, _)| (s, name)));
        let (at, table) = in_direction
            .or_else(|| raw.keys().cells.first().map(|(s, _)| (s, "link")))
            .unwrap_or((raw.ends.span(), name));
        self.check_cells(p, Some(at), table)
    }

    /// A merged direction's cell keys fit its link: AAL5 framing, a rate (not a trace), a
    /// peak cell rate no higher than the line's cell rate, a threshold below the queue.
    /// `at` is where the error points (the first cell key, or the table).
    pub(super) fn check_cells(
        &self,
        p: &DirectionParams,
        at: Option<Span>,
        table: &str,
    ) -> Result<(), TestbedError> {
        let used = p.cells > 0 || p.pcr > 0 || p.discard != Discard::None || p.epd_threshold > 0;
        if !used {
            return Ok(());
        }
        let err = |key: &str, msg: String| self.error(at.clone(), &join_key(table, key), msg);
        if p.framing != Framing::AtmAal5 {
            return Err(err(
                "cells",
                format!(
                    "cell-level keys (cells, pcr, discard, epd_threshold) need framing = \"atm-aal5\"; this direction's framing is {}",
                    p.framing.name()
                ),
            ));
        }
        if p.rate_bps == 0 || p.trace.is_some() {
            return Err(err(
                "cells",
                "cell-level keys need a rate (the line's cell rate is rate / 424 bits); this direction has none or a trace".to_string(),
            ));
        }
        if p.pcr as f64 > p.cell_rate() {
            return Err(err(
                "pcr",
                format!(
                    "{} cells/s is above the line's cell rate ({:.0} cells/s at {} bit/s)",
                    p.pcr,
                    p.cell_rate().floor(),
                    p.rate_bps
                ),
            ));
        }
        if p.cells == 0 && (p.discard != Discard::None || p.epd_threshold > 0) {
            return Err(err(
                "discard",
                "discard and epd_threshold need a cell queue: give cells (e.g. 256)".to_string(),
            ));
        }
        if p.epd_threshold >= p.cells && p.epd_threshold > 0 {
            return Err(err(
                "epd_threshold",
                format!(
                    "{} cells is not below the queue's {} cells",
                    p.epd_threshold, p.cells
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::atm::Discard;
    use crate::topology::{parse_set_args, Topology};

    const HOSTS: &str = "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n";

    fn link(body: &str) -> Result<Topology, String> {
        let text = format!("{HOSTS}[[link]]\nends = [\"a\", \"b\"]\n{body}\n");
        Topology::from_toml_str("t", &text).map_err(|e| e.to_string())
    }

    #[test]
    fn cell_keys_parse_per_direction() {
        let t = link(
            "rate = \"100M\"\nframing = \"atm-aal5\"\ncells = 256\n\
             [link.a_to_b]\ndiscard = \"epd\"\nepd_threshold = 64\npcr = \"200000\"",
        )
        .unwrap();
        let (ab, ba) = (&t.links[0].a_to_b, &t.links[0].b_to_a);
        assert_eq!(
            (ab.cells, ab.discard, ab.epd_threshold, ab.pcr),
            (256, Discard::Epd, 64, 200_000)
        );
        assert_eq!((ba.cells, ba.discard, ba.pcr), (256, Discard::None, 0));
        let change = parse_set_args(&t, "a-b.b_to_a", &["discard=ppd".into()], None).unwrap();
        assert_eq!(change.overrides.discard, Some(Discard::Ppd));
    }

    #[test]
    fn bad_cell_keys_are_one_line_naming_the_line_and_key() {
        let atm = "rate = \"100M\"\nframing = \"atm-aal5\"\n";
        for (body, expected) in [
            (
                format!("{atm}cells = 0"),
                "topology 't': line 9: link.cells: 0 is outside 1..=1048576",
            ),
            (
                "rate = \"100M\"\ncells = 256".to_string(),
                "topology 't': line 8: link.cells: cell-level keys (cells, pcr, discard, epd_threshold) need framing = \"atm-aal5\"; this direction's framing is ethernet",
            ),
            (
                format!("{atm}cells = 256\ndiscard = \"rfc\""),
                "topology 't': line 10: link.discard: 'rfc' is not one of none, ppd, epd",
            ),
            (
                format!("{atm}pcr = 0"),
                "topology 't': line 9: link.pcr: must be a peak cell rate above 0",
            ),
            (
                format!("{atm}[link.a_to_b]\npcr = 300000"),
                "topology 't': line 10: link.a_to_b.pcr: 300000 cells/s is above the line's cell rate (235849 cells/s",
            ),
            (
                format!("{atm}cells = 256\nepd_threshold = 256"),
                "topology 't': line 9: link.epd_threshold: 256 cells is not below",
            ),
        ] {
            let e = link(&body).unwrap_err();
            assert!(e.starts_with(expected), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let t = link("rate = \"100M\"").unwrap();
        let e = parse_set_args(&t, "a-b", &["cells=256".into()], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cells: cell-level keys"), "{e}");
    }
}
