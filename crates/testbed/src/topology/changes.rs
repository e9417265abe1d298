//! Changes to running links, checked like the topology file: the `[schedule]` of a topology
//! file, a schedule file (`testbed set --schedule FILE`), and the `key=value` arguments of
//! `testbed set`. Links are named by their `name` or by their ends (`a-b` or `b-a`), with an
//! optional direction (`wan.a_to_b`).

use super::model::{Link, Topology, MAX_MTU, MAX_TXQUEUELEN, MIN_MTU};
use super::parse::{join_key, Parser};
use super::raw::{DirectionKeys, RawSchedule, RawSet, WholeLinkKeys};
use crate::error::TestbedError;
use crate::schedule::{LinkChange, Schedule, Step};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The link `text` names, and the directions it selects ([a_to_b, b_to_a]).
pub fn resolve_link(links: &[Link], text: &str) -> Result<(usize, [bool; 2]), String> {
    let (base, directions) = match text.rsplit_once('.') {
        Some((base, "a_to_b")) => (base, [true, false]),
        Some((base, "b_to_a")) => (base, [false, true]),
        Some((_, other)) => return Err(format!("'{other}' is not a direction (a_to_b or b_to_a)")),
        None => (text, [true, true]),
    };
    if let Some(i) = links.iter().position(|l| l.name.as_deref() == Some(base)) {
        return Ok((i, directions));
    }
    let by_ends: Vec<usize> = (0..links.len())
        .filter(|&i| {
            let [a, b] = &links[i].ends;
            base.match_indices('-').any(|(k, _)| {
                let (x, y) = (&base[..k], &base[k + 1..]);
                (a == x && b == y) || (a == y && b == x)
            })
        })
        .collect();
    match by_ends.as_slice() {
        [i] => Ok((*i, directions)),
        [] => {
            let known: Vec<String> = links
                .iter()
                .map(|l| match &l.name {
                    Some(n) => format!("{n} ({}-{})", l.ends[0], l.ends[1]),
                    None => format!("{}-{}", l.ends[0], l.ends[1]),
                })
                .collect();
            Err(format!(
                "no link '{base}' (links: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        }
        _ => Err(format!(
            "'{base}' matches several links; give them names (`name = ...` in [[link]])"
        )),
    }
}

impl Parser<'_> {
    /// One change: the direction keys of a table plus `mtu` and `txqueuelen`, for link
    /// `link`.
    fn change(
        &self,
        keys: &DirectionKeys<'_>,
        whole_link: WholeLinkKeys<'_>,
        (link, directions): (usize, [bool; 2]),
        table: &str,
        whole: Option<std::ops::Range<usize>>,
        links: &[Link],
    ) -> Result<LinkChange, TestbedError> {
        let overrides = self.overrides(keys, table)?;
        // Cell keys are checked against the link's values from its file (a change made by an
        // earlier `testbed set` is not known here; the emulator ignores cell keys that do not
        // fit, see `DirectionParams::cell_config`).
        let at = keys
            .cells
            .first()
            .map(|(s, _)| s)
            .or_else(|| keys.framing.map(|v| v.span()))
            .or_else(|| whole.clone());
        for (selected, params) in directions
            .iter()
            .zip([&links[link].a_to_b, &links[link].b_to_a])
        {
            if *selected {
                let mut p = params.clone();
                overrides.apply_to(&mut p);
                self.check_cells(&p, at.clone(), table)?;
            }
        }
        let whole_link_value = |v: Option<&Spanned<i64>>, key: &str, range: (i64, i64)| {
            let Some(m) = v else {
                return Ok(None);
            };
            let (value, span, key) = (*m.get_ref(), Some(m.span()), join_key(table, key));
            if !(range.0..=range.1).contains(&value) {
                let why = format!("{value} is outside {}..={}", range.0, range.1);
                return Err(self.error(span, &key, why));
            }
            if directions != [true, true] {
                let why = "applies to the whole link: name the link without a direction";
                return Err(self.error(span, &key, why));
            }
            Ok(Some(value as u32))
        };
        let mtu = whole_link_value(whole_link.mtu, "mtu", (MIN_MTU as i64, MAX_MTU as i64))?;
        let txqueuelen =
            whole_link_value(whole_link.txqueuelen, "txqueuelen", (1, MAX_TXQUEUELEN))?;
        if let Some(q) = whole_link.txqueuelen.filter(|_| !links[link].line_rate) {
            let why = "applies to a line_rate link (the queue of its hosts' interfaces); \
                       this link has line_rate = false, so its hosts' interfaces do not queue";
            return Err(self.error(Some(q.span()), &join_key(table, "txqueuelen"), why));
        }
        if mtu.is_none() && txqueuelen.is_none() && overrides == Default::default() {
            return Err(self.error(whole, table, "changes nothing: give at least one key"));
        }
        Ok(LinkChange {
            link,
            directions,
            overrides,
            mtu,
            txqueuelen,
        })
    }

    /// A schedule table; `prefix` names it in errors (`schedule.` in a topology file).
    pub(super) fn schedule(
        &self,
        raw: &RawSchedule,
        links: &[Link],
        prefix: &str,
        source: &str,
    ) -> Result<Schedule, TestbedError> {
        let step_key = format!("{prefix}step");
        let mut steps: Vec<Step> = Vec::new();
        for s in &raw.step {
            let at_key = format!("{step_key}.at");
            let at_ns = self.duration_ns(&s.at, &at_key)?;
            if let Some(last) = steps.last().filter(|l| l.at_ns > at_ns) {
                return Err(self.error(
                    Some(s.at.span()),
                    &at_key,
                    format!(
                        "{} s comes before the previous step's {} s: steps must be in time order",
                        at_ns as f64 / 1e9,
                        last.at_ns as f64 / 1e9
                    ),
                ));
            }
            let target = resolve_link(links, s.link.get_ref())
                .map_err(|m| self.error(Some(s.link.span()), &format!("{step_key}.link"), m))?;
            let span = Some(s.link.span());
            let whole_link = WholeLinkKeys {
                mtu: s.mtu.as_ref(),
                txqueuelen: s.txqueuelen.as_ref(),
            };
            let change = self.change(&s.keys(), whole_link, target, &step_key, span, links)?;
            steps.push(Step { at_ns, change });
        }
        let Some(last) = steps.last().map(|s| s.at_ns) else {
            return Err(self.error(None, &step_key, "a schedule needs at least one [[step]]"));
        };
        let repeat_ns = match &raw.repeat {
            Some(r) => {
                let key = format!("{prefix}repeat");
                let period = self.duration_ns(r, &key)?;
                if period <= last {
                    return Err(self.error(
                        Some(r.span()),
                        &key,
                        format!(
                            "the period ({} s) must be longer than the last step's time ({} s)",
                            period as f64 / 1e9,
                            last as f64 / 1e9
                        ),
                    ));
                }
                Some(period)
            }
            None => None,
        };
        Ok(Schedule {
            source: source.to_string(),
            steps,
            repeat_ns,
        })
    }
}

/// Reads a schedule file for the links of `topology`.
pub fn schedule_from_file(path: &Path, topology: &Topology) -> Result<Schedule, TestbedError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        TestbedError::bad(format!("cannot read schedule file {}: {e}", path.display()))
    })?;
    let label = path.display().to_string();
    let dir = path.parent().map(Path::to_path_buf);
    let parser = Parser::file(label.clone(), &text, dir);
    let raw: RawSchedule =
        toml::from_str(&text).map_err(|e| parser.error(e.span(), "", e.message()))?;
    parser.schedule(&raw, &topology.links, "", &label)
}

/// Reads `testbed set LINK key=value ...`: `link` is argument 1, `args` the rest. Values are
/// TOML values (`ber=1e-6`, `reorder=true`, `gilbert={p="1%",r="25%"}`), or strings when
/// they are not (`rate=10M`). Trace files are read relative to `base_dir`.
pub fn parse_set_args(
    topology: &Topology,
    link: &str,
    args: &[String],
    base_dir: Option<PathBuf>,
) -> Result<LinkChange, TestbedError> {
    const LABEL: &str = "testbed set";
    let target = resolve_link(&topology.links, link)
        .map_err(|m| TestbedError::bad(format!("{LABEL}: argument 1: {m}")))?;
    if args.is_empty() {
        return Err(TestbedError::bad(format!(
            "{LABEL}: give key=value pairs after the link, e.g. `{link} delay=20ms rate=10M`"
        )));
    }
    let mut doc = String::new();
    for (i, arg) in args.iter().enumerate() {
        let bad = |m: &str| TestbedError::bad(format!("{LABEL}: argument {}: {m}", i + 2));
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| bad(&format!("'{arg}' is not key=value (e.g. delay=20ms)")))?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            return Err(bad(&format!("'{key}' is not a key name")));
        }
        let value = value.trim();
        let is_toml = toml::from_str::<toml::Table>(&format!("v = {value}")).is_ok();
        let value = if is_toml {
            value.to_string()
        } else {
            toml::Value::String(value.to_string()).to_string()
        };
        doc.push_str(&format!("{key} = {value}\n"));
    }
    let parser = Parser {
        label: LABEL.to_string(),
        text: &doc,
        base_dir,
        unit: "argument",
        line_offset: 1,
    };
    let raw: RawSet = toml::from_str(&doc).map_err(|e| parser.error(e.span(), "", e.message()))?;
    let whole_link = WholeLinkKeys {
        mtu: raw.mtu.as_ref(),
        txqueuelen: raw.txqueuelen.as_ref(),
    };
    parser.change(&raw.keys(), whole_link, target, "", None, &topology.links)
}
