//! The network as a campaign parameter: a phase's `set` and the `link.*`
//! entries of `vary` change the links of a running emulated testbed
//! (`testbed = "NAME"`) before the phase runs, with `testbed set`'s checks.
//! Everything is checked against the testbed's topology when the file is
//! loaded, so a bad name or value stops the campaign before anything runs.

use super::file::at;
use super::plan::{Campaign, Phase, Point};
use crate::sweep::network::link_change;
use crate::sweep::plan::is_link;
use linkperf_testbed::Testbed;

/// Checks every link setting of every phase and sweep point against the
/// running testbed the file names (and that there is one where needed).
pub fn check(
    path: &str,
    text: &str,
    testbed: Option<&toml::Spanned<String>>,
    campaign: &Campaign,
) -> Result<(), String> {
    let varied: Vec<&String> = campaign
        .points
        .iter()
        .flat_map(|p| p.keys())
        .filter(|k| is_link(k))
        .collect();
    let any_set = campaign.phases.iter().any(|p| !p.set.is_empty());
    let Some(name) = testbed else {
        return match (varied.first(), any_set) {
            (None, false) => Ok(()),
            _ => Err(format!(
                "{path}: link settings need the testbed they apply to: add testbed = \"NAME\" (a testbed that is up)"
            )),
        };
    };
    let testbed = Testbed::attach(name.get_ref()).map_err(|e| {
        at(
            path,
            text,
            name.span(),
            "testbed",
            &format!("{e} (bring it up with `linkperf testbed up FILE`)"),
        )
    })?;
    for phase in &campaign.phases {
        if let Some(key) = phase.set.keys().find(|k| varied.contains(k)) {
            return Err(format!(
                "{path}: phase '{}' sets {key}, which vary varies: keep one",
                phase.name
            ));
        }
        for point in &campaign.points {
            changes(&testbed, &in_force(point, phase))
                .map_err(|m| format!("{path}: phase '{}': {m}", phase.name))?;
        }
    }
    Ok(())
}

/// The link settings for `phase` at sweep `point`: the point's `link.*`
/// values and the phase's own `set`.
pub fn in_force(point: &Point, phase: &Phase) -> Point {
    let mut links: Point = point
        .iter()
        .filter(|(k, _)| is_link(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    links.extend(phase.set.clone());
    links
}

/// Sets `links` on the campaign's testbed, all together (nothing to do
/// without any). They stay in force until a later phase changes them.
pub fn apply(campaign: &Campaign, links: &Point) -> Result<(), String> {
    if links.is_empty() {
        return Ok(());
    }
    let name = campaign.testbed.as_deref().unwrap_or_default();
    let testbed =
        Testbed::attach(name).map_err(|e| format!("cannot reach testbed '{name}': {e}"))?;
    let changes = changes(&testbed, links)?;
    testbed
        .set(&changes)
        .map(|_| ())
        .map_err(|e| format!("cannot set {}: {e}", crate::sweep::plan::label(links)))
}

fn changes(
    testbed: &Testbed,
    links: &Point,
) -> Result<Vec<linkperf_testbed::schedule::LinkChange>, String> {
    links
        .iter()
        .map(|(k, v)| link_change(testbed.topology(), k, v))
        .collect()
}
