//! What a sweep runs: `--vary NAME=VALUES` parsed and checked, value ranges
//! expanded, the cartesian product of the points, and the order of the runs.
//! A name `link.LINK[.DIRECTION].KEY` varies an emulated link instead of a
//! client option: its shape is checked here, its values against the testbed's
//! topology by `network`.

use crate::spec::TestSpec;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a parameter's values are written and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Bytes, binary prefixes (4K = 4096).
    Size,
    /// Bits/s, SI prefixes (10M = 10^7).
    Rate,
    Seconds,
    Count,
    Bool,
    Text,
}

struct ParamDef {
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
}

/// The client options a sweep can vary, by their long name (and short flag).
const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "window",
        aliases: &["w"],
        kind: Kind::Size,
    },
    ParamDef {
        name: "sndbuf",
        aliases: &[],
        kind: Kind::Size,
    },
    ParamDef {
        name: "rcvbuf",
        aliases: &[],
        kind: Kind::Size,
    },
    ParamDef {
        name: "length",
        aliases: &["l"],
        kind: Kind::Size,
    },
    ParamDef {
        name: "parallel",
        aliases: &["P"],
        kind: Kind::Count,
    },
    ParamDef {
        name: "bitrate",
        aliases: &["b"],
        kind: Kind::Rate,
    },
    ParamDef {
        name: "pacing-rate",
        aliases: &["pacing_rate"],
        kind: Kind::Rate,
    },
    ParamDef {
        name: "pacing-timer",
        aliases: &["pacing_timer"],
        kind: Kind::Text,
    },
    ParamDef {
        name: "congestion",
        aliases: &["C"],
        kind: Kind::Text,
    },
    ParamDef {
        name: "nodelay",
        aliases: &["N", "no-delay"],
        kind: Kind::Bool,
    },
    ParamDef {
        name: "time",
        aliases: &["t"],
        kind: Kind::Seconds,
    },
    ParamDef {
        name: "bytes",
        aliases: &["n"],
        kind: Kind::Size,
    },
    ParamDef {
        name: "mss",
        aliases: &["M", "set-mss"],
        kind: Kind::Size,
    },
    ParamDef {
        name: "omit",
        aliases: &["O"],
        kind: Kind::Seconds,
    },
    ParamDef {
        name: "udp",
        aliases: &["u"],
        kind: Kind::Bool,
    },
    ParamDef {
        name: "reverse",
        aliases: &["R"],
        kind: Kind::Bool,
    },
    ParamDef {
        name: "bidir",
        aliases: &[],
        kind: Kind::Bool,
    },
    ParamDef {
        name: "zerocopy",
        aliases: &["Z"],
        kind: Kind::Bool,
    },
    ParamDef {
        name: "dont-fragment",
        aliases: &["dont_fragment"],
        kind: Kind::Bool,
    },
    // Traffic models (docs/traffic.md): a whole model, or one part of one.
    ParamDef {
        name: "traffic",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "traffic.idt",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "traffic.size",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "traffic.on",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "traffic.off",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "traffic-seed",
        aliases: &[],
        kind: Kind::Count,
    },
    ParamDef {
        name: "dscp",
        aliases: &[],
        kind: Kind::Text,
    },
    ParamDef {
        name: "clamp",
        aliases: &["window-clamp", "window_clamp"],
        kind: Kind::Size,
    },
    ParamDef {
        name: "sample",
        aliases: &[],
        kind: Kind::Seconds,
    },
];

/// Most values one `--vary` may expand to, and most points a sweep may have.
const MAX_VALUES: usize = 1000;
const MAX_POINTS: usize = 100_000;

/// One `--vary`: a parameter and its values as they will be shown and stored.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Vary {
    pub name: String,
    pub values: Vec<String>,
    /// The values grow by a constant factor: plot on a log axis.
    pub geometric: bool,
}

fn find(name: &str) -> Option<&'static ParamDef> {
    PARAMS
        .iter()
        .find(|p| p.name == name || p.aliases.contains(&name))
}

fn known_names() -> String {
    PARAMS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

fn parse_number(kind: Kind, text: &str) -> Result<f64, String> {
    let t = text.trim();
    let r = match kind {
        Kind::Size => linkperf_units::parse_size(t).map(|v| v as f64),
        Kind::Rate => linkperf_units::parse_rate(t).map(|v| v as f64),
        Kind::Seconds => linkperf_units::parse_duration(t).map(|d| d.as_secs_f64()),
        Kind::Count => linkperf_units::parse_count(t).map(|v| v as f64),
        Kind::Bool | Kind::Text => unreachable!("not numeric"),
    };
    r.map_err(|e| e.to_string())
}

fn normalise_bool(text: &str) -> Option<&'static str> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Some("on"),
        "off" | "no" | "false" | "0" => Some("off"),
        _ => None,
    }
}

/// Writes a generated value the way a user would: exact binary prefixes for
/// sizes (8K, 1M), exact SI prefixes for rates (10M), plain numbers otherwise.
fn format_value(kind: Kind, v: f64) -> String {
    let exact = |v: f64, base: f64, prefixes: &[&str]| {
        let mut x = v.round() as u64;
        let mut i = 0;
        let base = base as u64;
        while x >= base && x.is_multiple_of(base) && i + 1 < prefixes.len() {
            x /= base;
            i += 1;
        }
        format!("{x}{}", prefixes[i])
    };
    match kind {
        Kind::Size => exact(v, 1024.0, &["", "K", "M", "G", "T"]),
        Kind::Rate => exact(v, 1000.0, &["", "k", "M", "G", "T"]),
        Kind::Count => format!("{}", v.round() as u64),
        Kind::Seconds => {
            let s = format!("{:.6}", v);
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        Kind::Bool | Kind::Text => unreachable!("not numeric"),
    }
}

/// Parses `NAME=V1,V2,...`, `NAME=START..END*FACTOR` or `NAME=START..END+STEP`.
pub fn parse_vary(spec: &str) -> Result<Vary, String> {
    let (name, values) = spec.split_once('=').ok_or_else(|| {
        format!("--vary '{spec}': expected NAME=VALUES, e.g. window=4K,8K,16K or window=4K..4M*2")
    })?;
    let name = name.trim().trim_start_matches('-');
    if is_link(name) {
        return parse_link_vary(name, values.trim());
    }
    let def = find(name).ok_or_else(|| {
        format!(
            "--vary: '{name}' is not a client option that can vary; use one of: {}, \
             or link.LINK.KEY with --testbed",
            known_names()
        )
    })?;
    let values = values.trim();
    if values.is_empty() {
        return Err(format!("--vary {}: no values given", def.name));
    }
    let bad = |v: &str, why: String| format!("--vary {}: '{v}': {why}", def.name);
    let numeric = !matches!(def.kind, Kind::Bool | Kind::Text);
    if let Some((start, rest)) = values.split_once("..") {
        if !numeric {
            return Err(format!(
                "--vary {}: ranges need numbers; list the values instead",
                def.name
            ));
        }
        return parse_range(def, start, rest);
    }
    let mut out = Vec::new();
    for v in values.split(',') {
        let v = v.trim();
        if v.is_empty() {
            return Err(format!("--vary {}: empty value in '{values}'", def.name));
        }
        match def.kind {
            Kind::Bool => out.push(
                normalise_bool(v)
                    .ok_or_else(|| bad(v, "expected on or off".into()))?
                    .to_string(),
            ),
            Kind::Text => out.push(v.to_string()),
            kind => {
                parse_number(kind, v).map_err(|e| bad(v, e))?;
                out.push(v.to_string());
            }
        }
    }
    if out.len() > MAX_VALUES {
        return Err(format!(
            "--vary {}: {} values; at most {MAX_VALUES}",
            def.name,
            out.len()
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = out.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(format!("--vary {}: '{dup}' is listed twice", def.name));
    }
    let geometric = numeric && looks_geometric(def.kind, &out);
    Ok(Vary {
        name: def.name.into(),
        values: out,
        geometric,
    })
}

/// Whether a `--vary` name sets an emulated link (`link.wan.rate`).
pub fn is_link(name: &str) -> bool {
    name.starts_with("link.")
}

/// `link.wan.a_to_b.rate` as (`wan.a_to_b`, `rate`): the link as `testbed set`
/// names it, and the key.
pub fn link_target(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("link.")?;
    let (link, key) = rest.rsplit_once('.')?;
    let key_ok = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    (!link.is_empty() && key_ok).then_some((link, key))
}

/// A link parameter's value as a number, for the axis: rates and sizes with
/// their prefixes, durations in seconds, plain numbers (BER) as they are.
fn link_number(key: &str, text: &str) -> Option<f64> {
    let t = text.trim();
    match key {
        "rate" => linkperf_units::parse_rate(t).ok().map(|v| v as f64),
        "delay" | "jitter" => linkperf_units::parse_duration(t)
            .ok()
            .map(|d| d.as_secs_f64()),
        "queue" => linkperf_units::parse_size(t).ok().map(|v| v as f64),
        _ => t.trim_end_matches('%').parse::<f64>().ok(),
    }
    .filter(|v| v.is_finite())
}

/// `link.LINK[.DIRECTION].KEY=V1,V2,...`: a list (the values are the ones
/// `testbed set LINK KEY=VALUE` takes, checked later against the topology).
fn parse_link_vary(name: &str, values: &str) -> Result<Vary, String> {
    let (_, key) = link_target(name).ok_or_else(|| {
        format!(
            "--vary {name}: expected link.LINK.KEY or link.LINK.DIRECTION.KEY, \
             e.g. link.wan.rate=10M,100M"
        )
    })?;
    if values.is_empty() {
        return Err(format!("--vary {name}: no values given"));
    }
    if values.contains("..") {
        return Err(format!(
            "--vary {name}: link values are a list (V1,V2,...), not a range"
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for v in values.split(',').map(str::trim) {
        if v.is_empty() {
            return Err(format!("--vary {name}: empty value in '{values}'"));
        }
        if out.iter().any(|o| o == v) {
            return Err(format!("--vary {name}: '{v}' is listed twice"));
        }
        out.push(v.to_string());
    }
    if out.len() > MAX_VALUES {
        return Err(format!(
            "--vary {name}: {} values; at most {MAX_VALUES}",
            out.len()
        ));
    }
    let nums: Option<Vec<f64>> = out.iter().map(|v| link_number(key, v)).collect();
    let geometric = nums.is_some_and(looks_geometric_numbers);
    Ok(Vary {
        name: name.to_string(),
        values: out,
        geometric,
    })
}

/// A list is plotted on a log axis when its values grow by a constant factor
/// of at least 1.5, or span two decades.
fn looks_geometric(kind: Kind, values: &[String]) -> bool {
    let nums: Vec<f64> = values
        .iter()
        .filter_map(|v| parse_number(kind, v).ok())
        .collect();
    looks_geometric_numbers(nums)
}

fn looks_geometric_numbers(nums: Vec<f64>) -> bool {
    if nums.len() < 3 || nums.iter().any(|&x| x <= 0.0) {
        return false;
    }
    let mut sorted = nums;
    sorted.sort_by(f64::total_cmp);
    let ratios: Vec<f64> = sorted.windows(2).map(|w| w[1] / w[0]).collect();
    let first = ratios[0];
    let constant = ratios.iter().all(|r| (r / first - 1.0).abs() < 0.05) && first >= 1.5;
    constant || sorted[sorted.len() - 1] / sorted[0] >= 100.0
}

fn parse_range(def: &ParamDef, start: &str, rest: &str) -> Result<Vary, String> {
    let name = def.name;
    let malformed = || {
        format!(
            "--vary {name}: '{start}..{rest}' is not a range; write START..END*FACTOR (geometric) \
             or START..END+STEP (arithmetic)"
        )
    };
    let (end, step, geometric) = if let Some((e, f)) = rest.rsplit_once('*') {
        (e, f, true)
    } else if let Some((e, s)) = rest.rsplit_once('+') {
        (e, s, false)
    } else {
        return Err(malformed());
    };
    if start.trim().is_empty() || end.trim().is_empty() || step.trim().is_empty() {
        return Err(malformed());
    }
    let num = |t: &str| parse_number(def.kind, t).map_err(|e| format!("--vary {name}: {e}"));
    let (a, b) = (num(start)?, num(end)?);
    if a > b {
        return Err(format!(
            "--vary {name}: the range {start}..{end} is empty (start above end)"
        ));
    }
    let mut values = Vec::new();
    if geometric {
        let factor: f64 = step
            .trim()
            .parse()
            .map_err(|_| format!("--vary {name}: factor '{step}' is not a number"))?;
        if !(factor.is_finite() && factor > 1.0) {
            return Err(format!(
                "--vary {name}: the factor must be above 1, got '{step}'"
            ));
        }
        if a <= 0.0 {
            return Err(format!(
                "--vary {name}: a geometric range must start above 0"
            ));
        }
        let mut k = 0;
        loop {
            let v = a * factor.powi(k);
            if v > b * (1.0 + 1e-9) {
                break;
            }
            values.push(v);
            k += 1;
            if values.len() > MAX_VALUES {
                break;
            }
        }
    } else {
        let s = num(step)?;
        if s <= 0.0 {
            return Err(format!(
                "--vary {name}: the step must be above 0, got '{step}'"
            ));
        }
        let mut k = 0.0;
        loop {
            let v = a + k * s;
            if v > b + s * 1e-9 {
                break;
            }
            values.push(v);
            k += 1.0;
            if values.len() > MAX_VALUES {
                break;
            }
        }
    }
    if values.len() > MAX_VALUES {
        return Err(format!(
            "--vary {name}: the range gives more than {MAX_VALUES} values"
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let text = format_value(def.kind, v);
        if out.last() != Some(&text) {
            out.push(text);
        }
    }
    Ok(Vary {
        name: name.into(),
        values: out,
        geometric,
    })
}

/// The point's parameters, by name.
pub type Params = BTreeMap<String, String>;

/// Every combination of the values, the first `--vary` changing slowest.
pub fn expand(varies: &[Vary]) -> Result<Vec<Params>, String> {
    let mut names = std::collections::HashSet::new();
    for v in varies {
        if !names.insert(v.name.as_str()) {
            return Err(format!(
                "--vary {} is given twice; list all its values once",
                v.name
            ));
        }
    }
    let total = varies
        .iter()
        .try_fold(1usize, |acc, v| acc.checked_mul(v.values.len()))
        .filter(|&n| n <= MAX_POINTS)
        .ok_or_else(|| format!("the sweep has more than {MAX_POINTS} points; vary fewer values"))?;
    let mut points = Vec::with_capacity(total);
    for k in 0..total {
        let mut rest = k;
        let mut p = Params::new();
        for v in varies.iter().rev() {
            let n = v.values.len();
            p.insert(v.name.clone(), v.values[rest % n].clone());
            rest /= n;
        }
        points.push(p);
    }
    Ok(points)
}

/// Sets one varied option (by any of its names) on the test of a point;
/// link parameters are the testbed's, not the test's, and leave it as it is.
pub fn apply(spec: &mut TestSpec, name: &str, value: &str) -> Result<(), String> {
    if is_link(name) {
        return Ok(());
    }
    let def = find(name).ok_or_else(|| format!("'{name}' is not a client option"))?;
    spec.set(def.name, value)
}

/// Run order: every (point, repetition) pair.
pub fn schedule(points: usize, repeat: usize, shuffle_seed: Option<u64>) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = (0..points)
        .flat_map(|p| (0..repeat).map(move |r| (p, r)))
        .collect();
    if let Some(seed) = shuffle_seed {
        let mut rng = SplitMix64(seed);
        // Fisher-Yates.
        for i in (1..runs.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            runs.swap(i, j);
        }
    }
    runs
}

/// A small seeded generator: the same seed gives the same order on resume.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A seed from the clock, for `--shuffle` without `--seed`.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    // Keep it within JSON's exact integer range.
    SplitMix64(t ^ u64::from(std::process::id())).next() >> 11
}

/// "window=4K length=1K", for messages and progress.
pub fn label(p: &Params) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_the_user_spelling() {
        let v = parse_vary("window=4K,8K, 16K").unwrap();
        assert_eq!(v.name, "window");
        assert_eq!(v.values, ["4K", "8K", "16K"]);
        assert!(v.geometric);
        let v = parse_vary("-P=1,2,3").unwrap();
        assert_eq!((v.name.as_str(), v.geometric), ("parallel", false));
        let v = parse_vary("N=on,off").unwrap();
        assert_eq!(
            (v.name.as_str(), v.values.clone()),
            ("nodelay", vec!["on".into(), "off".into()])
        );
        assert_eq!(
            parse_vary("C=reno,cubic").unwrap().values,
            ["reno", "cubic"]
        );
    }

    #[test]
    fn geometric_and_arithmetic_ranges() {
        let v = parse_vary("window=4K..4M*2").unwrap();
        assert_eq!(v.values.len(), 11);
        assert_eq!(v.values.first().unwrap(), "4K");
        assert_eq!(v.values[1], "8K");
        assert_eq!(v.values.last().unwrap(), "4M");
        assert!(v.geometric);
        let v = parse_vary("length=1000..9000+1000").unwrap();
        assert_eq!(v.values.len(), 9);
        assert_eq!(v.values[0], "1000");
        assert_eq!(v.values[8], "9000");
        assert!(!v.geometric);
        assert_eq!(
            parse_vary("b=10M..1G*10").unwrap().values,
            ["10M", "100M", "1G"]
        );
        assert_eq!(
            parse_vary("time=0.5..1.5+0.5").unwrap().values,
            ["0.5", "1", "1.5"]
        );
        // The end need not be reached exactly.
        assert_eq!(parse_vary("l=1K..5K+3K").unwrap().values, ["1K", "4K"]);
        // Values are checked the same way the client checks its options.
        assert_eq!(parse_vary("length=1K..2K+1K").unwrap().values, ["1K", "2K"]);
    }

    #[test]
    fn bad_specs_name_the_problem() {
        let e = parse_vary("frobnicate=1,2").unwrap_err();
        assert!(e.contains("'frobnicate'") && e.contains("window"), "{e}");
        assert!(parse_vary("window").unwrap_err().contains("NAME=VALUES"));
        assert!(parse_vary("window=").unwrap_err().contains("no values"));
        assert!(parse_vary("window=4K,,8K")
            .unwrap_err()
            .contains("empty value"));
        assert!(parse_vary("window=4X").unwrap_err().contains("'4X'"));
        assert!(parse_vary("window=4M..4K*2").unwrap_err().contains("empty"));
        assert!(parse_vary("window=4K..4M")
            .unwrap_err()
            .contains("not a range"));
        assert!(parse_vary("window=4K..4M*1")
            .unwrap_err()
            .contains("above 1"));
        assert!(parse_vary("window=4K..4M*x")
            .unwrap_err()
            .contains("not a number"));
        assert!(parse_vary("window=..4M*2")
            .unwrap_err()
            .contains("not a range"));
        assert!(parse_vary("length=0..9000+0").unwrap_err().contains("step"));
        assert!(parse_vary("length=1..1000000+1")
            .unwrap_err()
            .contains("more than"));
        assert!(parse_vary("nodelay=maybe")
            .unwrap_err()
            .contains("on or off"));
        assert!(parse_vary("C=a..b+1")
            .unwrap_err()
            .contains("ranges need numbers"));
        assert!(parse_vary("window=4K,4K").unwrap_err().contains("twice"));
    }

    #[test]
    fn link_varies_keep_their_values_and_leave_the_test_alone() {
        let v = parse_vary("link.wan.ber=1e-8,1e-7,1e-6,1e-5").unwrap();
        assert_eq!((v.name.as_str(), v.geometric), ("link.wan.ber", true));
        assert_eq!(v.values, ["1e-8", "1e-7", "1e-6", "1e-5"]);
        assert!(!parse_vary("link.wan.rate=20M,50M").unwrap().geometric);
        assert_eq!(
            link_target("link.a-b.b_to_a.delay"),
            Some(("a-b.b_to_a", "delay"))
        );
        assert!(parse_vary("link.wan=1")
            .unwrap_err()
            .contains("link.LINK.KEY"));
        assert!(parse_vary("link.wan.Rate=1").is_err());
        assert!(parse_vary("link.wan.rate=1M..8M*2")
            .unwrap_err()
            .contains("list"));
        assert!(parse_vary("link.wan.rate=1M,1M")
            .unwrap_err()
            .contains("twice"));
        let mut spec = TestSpec::new("h");
        apply(&mut spec, "link.wan.rate", "20M").unwrap();
        assert_eq!(spec, TestSpec::new("h"));
    }

    #[test]
    fn expansion_is_the_cartesian_product_first_slowest() {
        let a = parse_vary("window=4K,8K").unwrap();
        let b = parse_vary("length=1K,8K,64K").unwrap();
        let points = expand(&[a.clone(), b]).unwrap();
        assert_eq!(points.len(), 6);
        assert_eq!(label(&points[0]), "length=1K window=4K");
        assert_eq!(label(&points[2]), "length=64K window=4K");
        assert_eq!(label(&points[3]), "length=1K window=8K");
        assert!(expand(&[a.clone(), a]).unwrap_err().contains("twice"));
        assert_eq!(expand(&[]).unwrap(), vec![Params::new()]);
    }

    #[test]
    fn order_is_fixed_or_a_seeded_permutation() {
        let fixed = schedule(3, 2, None);
        assert_eq!(fixed, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        let s1 = schedule(10, 3, Some(42));
        let s2 = schedule(10, 3, Some(42));
        let s3 = schedule(10, 3, Some(43));
        assert_eq!(s1, s2, "same seed, same order");
        assert_ne!(s1, s3);
        assert_ne!(s1, schedule(10, 3, None));
        let mut sorted = s1.clone();
        sorted.sort();
        assert_eq!(sorted, schedule(10, 3, None), "a permutation");
    }

    #[test]
    fn apply_sets_the_client_options() {
        let mut args = TestSpec::new("h");
        apply(&mut args, "window", "64K").unwrap();
        apply(&mut args, "l", "8K").unwrap();
        apply(&mut args, "P", "4").unwrap();
        apply(&mut args, "C", "reno").unwrap();
        apply(&mut args, "time", "0.5").unwrap();
        let c = args.config();
        assert_eq!((c.sndbuf, c.rcvbuf), (Some(65536), Some(65536)));
        assert_eq!((c.length, c.parallel, c.duration_s), (8192, 4, 0.5));
        assert_eq!(c.congestion.as_deref(), Some("reno"));
        // Switching to UDP brings UDP's defaults unless the user set them.
        let mut args = TestSpec::new("h");
        apply(&mut args, "udp", "on").unwrap();
        let c = args.config();
        assert_eq!(c.protocol, linkperf_proto::Protocol::Udp);
        assert_eq!((c.length, c.bitrate), (1460, Some(1_000_000)));
        apply(&mut args, "reverse", "on").unwrap();
        assert_eq!(args.config().direction, linkperf_proto::Direction::Reverse);
    }
}
