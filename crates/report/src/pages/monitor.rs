//! The monitoring dashboard (`linkperf monitor run --http`): per test, a
//! grid of source (rows) by destination (columns) whose cells show the
//! pair's latest result coloured against the test's thresholds and link to
//! the pair's time series; then the latest alerts. The controller gathers
//! the data; this is a pure function of it. The series page is in
//! `monitor_series`.

use crate::format;
use crate::html::{self, escape, Cell, Section, Table};
use std::fmt::Write as _;

/// How a cell compares with its thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// A threshold is crossed.
    Alert,
    /// The latest test failed.
    Failed,
    /// Not measured yet.
    None,
}

impl Verdict {
    fn class(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Alert => "alert",
            Verdict::Failed => "failed",
            Verdict::None => "none",
        }
    }
}

/// One pair's cell.
#[derive(Debug, Clone)]
pub struct GridCell {
    pub src: String,
    pub dst: String,
    pub verdict: Verdict,
    /// The figure shown (e.g. "39.9 Mbit/s").
    pub text: String,
    /// Why (thresholds crossed, failure reason), as hover text.
    pub detail: String,
    /// The pair's series page.
    pub href: String,
}

/// One test's grid.
#[derive(Debug, Clone)]
pub struct Grid {
    pub test: String,
    /// What the test runs ("UDP 40 Mbit/s every 2 s").
    pub description: String,
    pub hosts: Vec<String>,
    pub cells: Vec<GridCell>,
}

#[derive(Debug, Clone)]
pub struct AlertLine {
    pub unix_ms: i64,
    pub test: String,
    pub src: String,
    pub dst: String,
    pub kind: String,
    pub message: String,
    pub href: String,
}

#[derive(Debug, Clone)]
pub struct Dashboard {
    pub title: String,
    pub generated_unix_ms: i64,
    pub grids: Vec<Grid>,
    pub alerts: Vec<AlertLine>,
}

/// Colours of the verdicts: green, red, dark red, grey (with text, so the
/// grid reads without colour too).
pub(crate) const GRID_CSS: &str = "<style>table.mgrid td.cell{text-align:center;min-width:6em}\
td.ok{background:#d8f0d8}td.alert{background:#fcd9a8}td.failed{background:#f4b4b0}\
td.none{background:#eee;color:#777}td.self{background:#fff}</style>";

pub fn dashboard(d: &Dashboard) -> String {
    let mut sections = Vec::new();
    for g in &d.grids {
        let mut s = Section::new(&format!("test-{}", g.test), format!("Test {}", g.test));
        s.para(&g.description);
        s.push(GRID_CSS);
        s.push(&grid_table(g));
        sections.push(s);
    }
    let mut alerts = Section::new("alerts", "Latest alerts");
    if d.alerts.is_empty() {
        alerts.para("No alert has been raised.");
    } else {
        alerts.push(&alert_table(&d.alerts).render());
    }
    sections.push(alerts);
    let subtitle = format!(
        "{} test(s); latest result of each pair, as of {}. Green: within the thresholds; \
         orange: a threshold crossed; red: the test failed; grey: not run yet.",
        d.grids.len(),
        format::utc(d.generated_unix_ms)
    );
    html::document(
        &d.title,
        &subtitle,
        &sections,
        "Made by `linkperf monitor run --http` from its archive.",
    )
}

fn grid_table(g: &Grid) -> String {
    let mut out = String::from("<table class=\"mgrid\"><thead><tr><th>source \\ destination</th>");
    for h in &g.hosts {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for src in &g.hosts {
        let _ = write!(out, "<tr><th scope=\"row\">{}</th>", escape(src));
        for dst in &g.hosts {
            match g.cells.iter().find(|c| &c.src == src && &c.dst == dst) {
                Some(c) => {
                    let _ = write!(
                        out,
                        "<td class=\"cell {}\" title=\"{}\" data-src=\"{}\" data-dst=\"{}\">\
                         <a href=\"{}\">{}</a></td>",
                        c.verdict.class(),
                        escape(&c.detail),
                        escape(src),
                        escape(dst),
                        escape(&c.href),
                        escape(&c.text)
                    );
                }
                None => out.push_str("<td class=\"self\"></td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

pub(crate) fn alert_table(alerts: &[AlertLine]) -> Table {
    let mut t = Table::new(vec![
        Cell::text("time (UTC)"),
        Cell::text("test"),
        Cell::text("pair"),
        Cell::text("kind"),
        Cell::text("alert"),
    ]);
    for a in alerts {
        t.row(vec![
            Cell::text(format::utc(a.unix_ms)),
            Cell::text(a.test.clone()),
            Cell::text(format!("{} -> {}", a.src, a.dst)).link(a.href.clone()),
            Cell::text(a.kind.clone()),
            Cell::text(a.message.clone()),
        ]);
    }
    t
}
