//! The campaign page: for each phase (direction) the aggregate series with
//! session means and the per-flow sent and received bars, the overview and
//! per-host tables. It must not read the intervals of single runs.

use super::sections::{config_section, hosts_section, runs_section};
use super::shared::{legend_only, mean, or_dash};
use crate::export::{Export, Phase};
use crate::format;
use crate::html::{Cell, Section, Table};
use crate::plots::{
    color, Axis, Band, BarPlot, BarSeries, LinePlot, Point, Quantity, Rule, Series,
};

pub(super) fn campaign_page(ex: &Export) -> (String, String, Vec<Section>) {
    let title = match &ex.campaign_name {
        Some(n) => format!("Campaign {}: {n}", ex.id),
        None => format!("Campaign {}", ex.id),
    };
    // Phases of the same name are sessions of one measurement.
    let mut groups: Vec<(String, Vec<&Phase>)> = Vec::new();
    for p in &ex.phases {
        match groups.iter_mut().find(|g| g.0 == p.name) {
            Some(g) => g.1.push(p),
            None => groups.push((p.name.clone(), vec![p])),
        }
    }
    let sessions = groups.iter().map(|g| g.1.len()).max().unwrap_or(0);
    let subtitle = format!(
        "{} phase{}, up to {sessions} session{} each, {} flows",
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        if sessions == 1 { "" } else { "s" },
        ex.phases.iter().map(|p| p.flows.len()).max().unwrap_or(0)
    );
    let mut sections = Vec::new();
    let mut overview = Table::new(header_cells(
        &[
            "phase",
            "sessions",
            "mean aggregate",
            "worst session",
            "best session",
            "flows short",
        ],
        1,
    ))
    .caption("Overview: aggregate received throughput per phase (mean of the per-interval sums)");
    overview.row_headers = true;
    for (k, (name, phases)) in groups.iter().enumerate() {
        let (sec, row) = phase_section(k, name, phases);
        overview.row(row);
        sections.push(sec);
    }
    if groups.is_empty() {
        let mut s = Section::new("phases", "Phases");
        s.note("The export has no phases.");
        sections.push(s);
    } else {
        let mut s = Section::new("overview", "Overview");
        s.push(&overview.render());
        s.note("A session or flow is marked when it falls more than 5% short: a session's mean below the median session's, a flow's received rate below what it sent or below the target.");
        if !ex.flags.is_empty() {
            let mut ft = Table::new(
                ["finding", "phase", "session", "subject", "message"]
                    .iter()
                    .map(|h| Cell::text(*h))
                    .collect(),
            )
            .caption(format!("What the campaign flagged ({})", ex.flags.len()));
            for fl in &ex.flags {
                ft.row(vec![
                    Cell::text(fl.kind.replace('_', " ")).flag(true),
                    Cell::text(or_dash(fl.phase.clone())),
                    Cell::text(or_dash(fl.session.clone())),
                    Cell::text(or_dash(fl.subject.clone())),
                    Cell::text(fl.message.clone()),
                ]);
            }
            s.push(&ft.render());
        }
        sections.insert(0, s);
    }
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, subtitle, sections)
}

/// Each host's sent and received rate, mean over the sessions, as the
/// campaign computed them.
pub(super) fn hosts_table(phases: &[&Phase], sec: &mut Section) {
    let mut hosts: Vec<(String, Vec<[Option<f64>; 4]>)> = Vec::new();
    for p in phases {
        for h in &p.hosts {
            let row = [h.sent, h.received, h.peers_sent, h.shortfall_percent];
            match hosts.iter_mut().find(|x| x.0 == h.name) {
                Some(x) => x.1.push(row),
                None => hosts.push((h.name.clone(), vec![row])),
            }
        }
    }
    if hosts.is_empty() {
        return;
    }
    let mut t = Table::new(
        header_cells(
            &["host", "sent", "received", "its peers sent to it", "shortfall"],
            1,
        ),
    )
    .caption("Hosts (mean over sessions); shortfall: how much less a host received than its peers sent it");
    t.row_headers = true;
    for (name, rows) in hosts {
        let m = |k: usize| mean(&rows.iter().filter_map(|r| r[k]).collect::<Vec<_>>());
        let short = m(3).is_some_and(|x| x > 5.0);
        t.row(vec![
            Cell::text(name),
            Cell::num(m(0).map(format::rate).unwrap_or("–".into())),
            Cell::num(m(1).map(format::rate).unwrap_or("–".into())).flag(short),
            Cell::num(m(2).map(format::rate).unwrap_or("–".into())),
            Cell::num(m(3).map(format::percent).unwrap_or("–".into())).flag(short),
        ]);
    }
    sec.push(&t.render());
}

pub(super) fn session_name(p: &Phase, i: usize) -> String {
    p.session.clone().unwrap_or_else(|| (i + 1).to_string())
}

/// (from, to), sent, received and predicted rates, one entry per session.
pub(super) type FlowRates = ((String, String), Vec<f64>, Vec<f64>, Vec<f64>);

pub(super) fn phase_section(k: usize, name: &str, phases: &[&Phase]) -> (Section, Vec<Cell>) {
    let mut sec = Section::new(&format!("phase-{k}"), format!("Phase: {name}"));
    // Aggregate time series, sessions one after the other.
    let (plot, session_means, overall) = aggregate_plot(name, phases);
    if plot.has_data() {
        sec.figure(
            &plot.render(),
            "Aggregate throughput received per interval (the sum over all flows), each session in its own band with its mean; the black dashed line is the mean over all sessions.",
        );
    } else {
        sec.note("No aggregate intervals in this phase.");
    }
    // Sessions table with the short ones marked.
    let mut means: Vec<f64> = session_means.iter().filter_map(|s| s.1).collect();
    means.sort_by(f64::total_cmp);
    let median = if means.is_empty() {
        None
    } else {
        Some(means[means.len() / 2])
    };
    sec.push(&sessions_table(&session_means, median).render());

    // Per flow, averaged over sessions.
    let flows = flow_rates(phases);
    let target = phases.iter().find_map(|p| p.target);
    let shorts = if flows.is_empty() {
        0
    } else {
        sec.figure(
            &flow_bars(name, &flows, target).render(),
            "Mean rate each flow's sender sent and its receiver received, over all sessions of this phase.",
        );
        let (ft, shorts) = flows_table(&flows, target);
        sec.push(&ft.render());
        shorts
    };
    super::twin::campaign_phase(name, phases, &mut sec);
    hosts_table(phases, &mut sec);
    let worst = session_means
        .iter()
        .filter_map(|s| s.1.map(|m| (s.0.clone(), m)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let best = session_means
        .iter()
        .filter_map(|s| s.1.map(|m| (s.0.clone(), m)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let short_session = worst
        .as_ref()
        .zip(median)
        .is_some_and(|(w, m)| w.1 < 0.95 * m);
    let row = vec![
        Cell::text(name),
        Cell::num(phases.len().to_string()),
        Cell::num(overall.map(format::rate).unwrap_or("–".into())),
        Cell::num(
            worst
                .map(|(n, m)| format!("{} (session {n})", format::rate(m)))
                .unwrap_or("–".into()),
        )
        .flag(short_session),
        Cell::num(
            best.map(|(n, m)| format!("{} (session {n})", format::rate(m)))
                .unwrap_or("–".into()),
        ),
        Cell::num(format!("{shorts} of {}", flows.len())).flag(shorts > 0),
    ];
    (sec, row)
}

/// A session's name, mean, interval count, lowest and highest interval.
type SessionMean = (String, Option<f64>, usize, f64, f64);

/// The aggregate series of each session one after the other, each in its
/// band with its mean; with the sessions' means and the mean over all.
fn aggregate_plot(name: &str, phases: &[&Phase]) -> (LinePlot, Vec<SessionMean>, Option<f64>) {
    let mut plot = LinePlot::new(
        format!("Aggregate throughput, {name}"),
        Axis::new("Time, sessions one after another", Quantity::Seconds).zero(),
        Axis::new("Aggregate throughput", Quantity::Rate).zero(),
    );
    let mut agg = Series::new("received per interval (sum over flows)", color(0));
    agg.width = 1.8;
    let total_points: usize = phases.iter().map(|p| p.intervals.len()).sum();
    if total_points <= 60 {
        agg.marker = Some(crate::svg::Marker::Circle);
    }
    // Wide and pale under the received line, which stays visible inside it.
    let mut sent = Series::new("sent per interval (sum over flows)", color(1));
    sent.band = true;
    let mut offset = 0.0;
    let mut session_means: Vec<SessionMean> = Vec::new();
    let mut all = Vec::new();
    for (i, p) in phases.iter().enumerate() {
        let sname = session_name(p, i);
        let mut dur: f64 = 0.0;
        let mut vals = Vec::new();
        let mut prev_end = 0.0;
        for (j, iv) in p.intervals.iter().enumerate() {
            let t = iv
                .end
                .or(iv.start.map(|s| s + 1.0))
                .unwrap_or((j + 1) as f64);
            // Each interval's rate is drawn across the interval.
            let t0 = iv.start.unwrap_or(prev_end);
            prev_end = t;
            dur = dur.max(t);
            let mut pt = Point::over(offset + t0, offset + t, iv.bits_per_second);
            pt.tip = Some(format!(
                "session {sname}, {} s: {}",
                format::trim(t, 2),
                format::rate(iv.bits_per_second)
            ));
            agg.points.push(pt);
            vals.push(iv.bits_per_second);
            if let Some(sv) = iv.sent {
                sent.points.push(Point::over(offset + t0, offset + t, sv));
            }
        }
        agg.points.push(Point::new(f64::NAN, f64::NAN));
        sent.points.push(Point::new(f64::NAN, f64::NAN));
        let m = mean(&vals);
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        session_means.push((sname.clone(), m, vals.len(), lo, hi));
        all.extend(vals);
        plot.bands.push(Band {
            x0: offset,
            x1: offset + dur,
            label: format!("session {sname}"),
            shaded: true,
        });
        if let Some(m) = m {
            plot.rules.push(Rule {
                y: m,
                span: Some((offset, offset + dur)),
                label: format::rate(m),
                color: "#D55E00",
                dash: Some("6 3"),
                right: false,
                inline: true,
            });
        }
        offset += dur;
    }
    plot.series.push(agg);
    if sent.points.iter().any(|p| p.y.is_finite()) {
        plot.series.push(sent);
    }
    plot.series.push(legend_only(
        "session mean (value beside each)",
        "#D55E00",
        Some("6 3"),
    ));
    let overall = mean(&all);
    if let Some(m) = overall {
        plot.rules.push(Rule {
            y: m,
            span: None,
            label: format!("mean over all sessions {}", format::rate(m)),
            color: "#000000",
            dash: Some("8 4"),
            right: false,
            inline: false,
        });
    }
    (plot, session_means, overall)
}

/// The sessions with their mean, range and ratio to the median session;
/// the short ones marked.
fn sessions_table(session_means: &[SessionMean], median: Option<f64>) -> Table {
    let mut st = Table::new(header_cells(
        &[
            "session",
            "intervals",
            "mean",
            "min",
            "max",
            "vs median session",
        ],
        1,
    ))
    .caption("Sessions: aggregate received throughput");
    st.row_headers = true;
    for (sname, m, n, lo, hi) in session_means {
        let ratio = m
            .zip(median)
            .map(|(a, b)| if b > 0.0 { a / b } else { 1.0 });
        let short = ratio.is_some_and(|r| r < 0.95);
        st.row(vec![
            Cell::text(sname.clone()),
            Cell::num(n.to_string()),
            Cell::num(m.map(format::rate).unwrap_or("–".into())).flag(short),
            Cell::num(if lo.is_finite() {
                format::rate(*lo)
            } else {
                "–".into()
            }),
            Cell::num(if hi.is_finite() {
                format::rate(*hi)
            } else {
                "–".into()
            }),
            Cell::num(
                ratio
                    .map(|r| format!("{} %", format::sig3(r * 100.0)))
                    .unwrap_or("–".into()),
            )
            .flag(short),
        ]);
    }
    st
}

/// Each flow's sent and received rates, one entry per session.
fn flow_rates(phases: &[&Phase]) -> Vec<FlowRates> {
    let mut flows: Vec<FlowRates> = Vec::new();
    for p in phases {
        for fl in &p.flows {
            let key = (fl.from.clone(), fl.to.clone());
            let entry = match flows.iter().position(|x| x.0 == key) {
                Some(i) => &mut flows[i],
                None => {
                    flows.push((key, Vec::new(), Vec::new(), Vec::new()));
                    flows.last_mut().expect("pushed")
                }
            };
            if let Some(s) = fl.sent {
                entry.1.push(s);
            }
            if let Some(r) = fl.received {
                entry.2.push(r);
            }
            if let Some(p) = fl.predicted {
                entry.3.push(p);
            }
        }
    }
    flows
}

/// Sent against received, a pair of bars per flow, with the target rate.
fn flow_bars(name: &str, flows: &[FlowRates], target: Option<f64>) -> BarPlot {
    let mut bars = BarPlot::new(
        format!("Sent vs received per flow, {name} (mean over sessions)"),
        "Flow (sender → receiver)",
        Axis::new("Throughput", Quantity::Rate),
    );
    bars.categories = flows
        .iter()
        .map(|((a, b), ..)| format!("{a}\n→ {b}"))
        .collect();
    bars.series = vec![
        BarSeries {
            label: "sent (by the sender)".into(),
            color: color(0),
            values: flows.iter().map(|f| mean(&f.1)).collect(),
        },
        BarSeries {
            label: "received (by the receiver)".into(),
            color: color(1),
            values: flows.iter().map(|f| mean(&f.2)).collect(),
        },
    ];
    if let Some(t) = target {
        bars.rules.push(Rule {
            y: t,
            span: None,
            label: format!("target {}", format::rate(t)),
            color: "#000000",
            dash: Some("6 4"),
            right: false,
            inline: false,
        });
    }
    bars
}

/// The flows with their means; marked: received short of sent or of the
/// target. Returns the table and the number of short flows.
fn flows_table(flows: &[FlowRates], target: Option<f64>) -> (Table, usize) {
    let mut shorts = 0;
    let mut ft = Table::new(header_cells(
        &[
            "from",
            "to",
            "sessions",
            "sent",
            "received",
            "received / sent",
            "worst session received",
        ],
        2,
    ))
    .caption(
        "Flows (mean over sessions); marked: received more than 5% below sent or below the target; predicted: the model's bound for the flow, a fair share of a bottleneck flows share (docs/model.md)",
    );
    let modelled = flows.iter().any(|f| !f.3.is_empty());
    if modelled {
        ft.headers.push(Cell::num("predicted"));
        ft.headers.push(Cell::num("received / predicted"));
    }
    for ((a, b), sent, recv, predicted) in flows {
        let (ms, mr) = (mean(sent), mean(recv));
        let ratio = ms.zip(mr).map(|(s, r)| if s > 0.0 { r / s } else { 1.0 });
        let short_ratio = ratio.is_some_and(|r| r < 0.95);
        let short_target = target.zip(mr).is_some_and(|(t, r)| r < 0.95 * t);
        let short_sent = target.zip(ms).is_some_and(|(t, s)| s < 0.95 * t);
        if short_ratio || short_target || short_sent {
            shorts += 1;
        }
        let mut row = vec![
            Cell::text(a.clone()),
            Cell::text(b.clone()),
            Cell::num(sent.len().max(recv.len()).to_string()),
            Cell::num(ms.map(format::rate).unwrap_or("–".into())).flag(short_sent),
            Cell::num(mr.map(format::rate).unwrap_or("–".into())).flag(short_target),
            Cell::num(
                ratio
                    .map(|r| format!("{} %", format::sig3(r * 100.0)))
                    .unwrap_or("–".into()),
            )
            .flag(short_ratio),
            Cell::num(
                recv.iter()
                    .copied()
                    .reduce(f64::min)
                    .map(format::rate)
                    .unwrap_or("–".into()),
            ),
        ];
        if modelled {
            let mp = mean(predicted);
            row.push(Cell::num(mp.map(format::rate).unwrap_or("–".into())));
            row.push(Cell::num(
                mr.zip(mp)
                    .map(|(r, p)| format!("{:.3}", r / p))
                    .unwrap_or("–".into()),
            ));
        }
        ft.row(row);
    }
    (ft, shorts)
}

/// A table's header: the first `text` columns name text, the rest numbers.
fn header_cells(names: &[&str], text: usize) -> Vec<Cell> {
    names
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i < text {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect()
}
