//! Reading a rendered report back: its SVG plots, their axes (tick label
//! against pixel), lines, error bars and links, so tests check what a reader
//! sees rather than the code that drew it. Shared with
//! crates/linkperf/tests/report_render.rs.

#![allow(dead_code)]

/// The `<svg>...</svg>` plots of a page, with their titles (aria-label).
pub fn plots(html: &str) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("svg closes") + start + 6;
        let svg = &rest[start..end];
        out.push((attr(svg, "aria-label").unwrap_or_default(), svg));
        rest = &rest[end..];
    }
    out
}

/// The plot whose title starts with `title`.
pub fn plot<'a>(html: &'a str, title: &str) -> &'a str {
    plots(html)
        .into_iter()
        .find(|(t, _)| t.starts_with(title))
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no plot titled {title:?}"))
}

/// The value of attribute `name` in the first tag of `tag`.
pub fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let end = tag[i..].find('"')? + i;
    Some(unescape(&tag[i..end]))
}

fn num_attr(tag: &str, name: &str) -> Option<f64> {
    attr(tag, name)?.parse().ok()
}

pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// One `<text>` element.
#[derive(Debug, Clone)]
pub struct Label {
    pub x: f64,
    pub y: f64,
    pub size: f64,
    pub anchor: String,
    pub rotated: bool,
    pub text: String,
}

pub fn labels(svg: &str) -> Vec<Label> {
    let mut out = Vec::new();
    for chunk in svg.split("<text").skip(1) {
        let Some(close) = chunk.find('>') else {
            continue;
        };
        let tag = &chunk[..close];
        let Some(end) = chunk.find("</text>") else {
            continue;
        };
        out.push(Label {
            x: num_attr(tag, "x").unwrap_or(f64::NAN),
            y: num_attr(tag, "y").unwrap_or(f64::NAN),
            size: num_attr(tag, "font-size").unwrap_or(0.0),
            anchor: attr(tag, "text-anchor").unwrap_or_default(),
            rotated: tag.contains("transform="),
            text: unescape(&chunk[close + 1..end]),
        });
    }
    out
}

/// A numeric axis as drawn: (the value its label says, the pixel it sits at).
#[derive(Debug, Clone)]
pub struct Ticks {
    pub vertical: bool,
    pub ticks: Vec<(f64, f64)>,
}

impl Ticks {
    /// The pixel of `value`, from the first and last tick (a linear axis).
    pub fn pixel(&self, value: f64) -> f64 {
        let (v0, p0) = self.ticks[0];
        let (v1, p1) = self.ticks[self.ticks.len() - 1];
        p0 + (value - v0) * (p1 - p0) / (v1 - v0)
    }
    /// The value at `pixel`.
    pub fn value(&self, pixel: f64) -> f64 {
        let (v0, p0) = self.ticks[0];
        let (v1, p1) = self.ticks[self.ticks.len() - 1];
        v0 + (pixel - p0) * (v1 - v0) / (p1 - p0)
    }
}

/// The short horizontal lines of a plot (tick marks of vertical axes): their y.
fn tick_marks(svg: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for chunk in svg.split("<line").skip(1) {
        let tag = &chunk[..chunk.find("/>").unwrap_or(chunk.len())];
        if let (Some(x1), Some(y1), Some(x2), Some(y2)) = (
            num_attr(tag, "x1"),
            num_attr(tag, "y1"),
            num_attr(tag, "x2"),
            num_attr(tag, "y2"),
        ) {
            if y1 == y2 && (x2 - x1).abs() <= 6.0 && x1 != x2 {
                out.push(y1);
            }
        }
    }
    out
}

/// The numeric tick labels of a plot's axes: vertical axes are labels of the
/// tick font (12 px) that share an x and an end (left axis) or start (right
/// axis) anchor, placed at the tick mark beside them (a label's baseline
/// sits below its tick); the horizontal axis shares a y with a middle anchor.
pub fn numeric_axes(svg: &str) -> Vec<Ticks> {
    let marks = tick_marks(svg);
    let ls: Vec<Label> = labels(svg)
        .into_iter()
        .filter(|l| l.size == 12.0 && !l.rotated)
        .collect();
    let mut out = Vec::new();
    // (vertical, the shared x or y, anchor, ticks)
    type Group = (bool, f64, String, Vec<(f64, f64)>);
    let mut groups: Vec<Group> = Vec::new();
    for l in &ls {
        let Ok(v) = l.text.trim().parse::<f64>() else {
            continue;
        };
        let vertical = l.anchor != "middle";
        let key = if vertical { l.x } else { l.y };
        let pixel = if vertical {
            // The tick mark within a line height above the baseline.
            match marks
                .iter()
                .filter(|m| **m <= l.y && l.y - **m < l.size)
                .min_by(|a, b| (l.y - **a).total_cmp(&(l.y - **b)))
            {
                Some(m) => *m,
                None => continue,
            }
        } else {
            l.x
        };
        match groups
            .iter_mut()
            .find(|g| g.0 == vertical && g.1 == key && g.2 == l.anchor)
        {
            Some(g) => g.3.push((v, pixel)),
            None => groups.push((vertical, key, l.anchor.clone(), vec![(v, pixel)])),
        }
    }
    for (vertical, _, _, mut ticks) in groups {
        if ticks.len() >= 2 {
            ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
            out.push(Ticks { vertical, ticks });
        }
    }
    out
}

/// Whether `step` is 1, 2, 2.5 or 5 times a power of ten.
pub fn is_nice_step(step: f64) -> bool {
    if !(step.is_finite() && step > 0.0) {
        return false;
    }
    let m = step / 10f64.powf(step.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .any(|n| (m - n).abs() < 1e-6)
}

/// Checks a linear axis: labels at a constant nice step, each label the
/// exact value at its pixel (evenly spaced pixels). Returns what is wrong.
pub fn check_linear_axis(t: &Ticks) -> Result<(), String> {
    let v: Vec<f64> = t.ticks.iter().map(|x| x.0).collect();
    let step = v[1] - v[0];
    if !is_nice_step(step) {
        return Err(format!("step {step} of {v:?} is not 1, 2, 2.5 or 5 x 10^k"));
    }
    for (i, w) in t.ticks.windows(2).enumerate() {
        let (dv, dp) = (w[1].0 - w[0].0, w[1].1 - w[0].1);
        if (dv - step).abs() > 1e-6 * step {
            return Err(format!("labels {v:?}: uneven step at {i}"));
        }
        let dp0 = t.ticks[1].1 - t.ticks[0].1;
        if (dp - dp0).abs() > 0.05 {
            return Err(format!("labels {v:?} at uneven pixels: {:?}", t.ticks));
        }
    }
    Ok(())
}

/// The vertices of each polyline of `svg`.
pub fn polylines(svg: &str) -> Vec<Polyline> {
    let mut out = Vec::new();
    for chunk in svg.split("<polyline").skip(1) {
        let tag = &chunk[..chunk.find("/>").unwrap_or(chunk.len())];
        let points = attr(tag, "points")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| {
                let (x, y) = p.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect();
        out.push(Polyline {
            points,
            color: attr(tag, "stroke").unwrap_or_default(),
            width: num_attr(tag, "stroke-width").unwrap_or(1.0),
            dash: attr(tag, "stroke-dasharray"),
            opacity: num_attr(tag, "stroke-opacity").unwrap_or(1.0),
        });
    }
    out
}

#[derive(Debug, Clone)]
pub struct Polyline {
    pub points: Vec<(f64, f64)>,
    pub color: String,
    pub width: f64,
    pub dash: Option<String>,
    pub opacity: f64,
}

/// Vertical error bars drawn in the data groups: (x, y top, y bottom, colour).
pub fn error_bars(svg: &str) -> Vec<(f64, f64, f64, String)> {
    let mut out = Vec::new();
    for group in svg.split("<g class=\"series\">").skip(1) {
        let group = &group[..group.find("</g>").unwrap_or(group.len())];
        for chunk in group.split("<line").skip(1) {
            let tag = &chunk[..chunk.find("/>").unwrap_or(chunk.len())];
            let (Some(x1), Some(y1), Some(x2), Some(y2)) = (
                num_attr(tag, "x1"),
                num_attr(tag, "y1"),
                num_attr(tag, "x2"),
                num_attr(tag, "y2"),
            ) else {
                continue;
            };
            if x1 == x2 && y1 != y2 {
                let color = attr(tag, "stroke").unwrap_or_default();
                out.push((x1, y1.min(y2), y1.max(y2), color));
            }
        }
    }
    out
}

/// Every `href="#x"` of the page whose target `id="x"` is missing.
pub fn dangling_links(html: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for chunk in html.split("href=\"#").skip(1) {
        let id = &chunk[..chunk.find('"').unwrap_or(0)];
        if !html.contains(&format!("id=\"{id}\"")) && !missing.iter().any(|m| m == id) {
            missing.push(id.to_string());
        }
    }
    missing
}

/// The link targets of the markers of a plot, in drawing order.
pub fn marker_links(svg: &str) -> Vec<String> {
    svg.split("<a href=\"")
        .skip(1)
        .filter(|c| c.contains("class=\"marker\""))
        .map(|c| unescape(&c[..c.find('"').unwrap_or(0)]))
        .collect()
}

/// The text of the table row with id `id`, tags removed, cells joined by |.
pub fn row_text(html: &str, id: &str) -> Option<String> {
    let start = html.find(&format!("<tr id=\"{id}\""))?;
    let end = html[start..].find("</tr>")? + start;
    Some(strip_tags(&html[start..end]))
}

/// Text without tags; a cell end becomes " | ".
pub fn strip_tags(s: &str) -> String {
    let s = s.replace("</td>", " | ").replace("</th>", " | ");
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(&out)
}

/// The table under a sweep page's "Options common to every run" heading.
pub fn common_options_table(html: &str) -> &str {
    html.split("<h3>Options common to every run</h3>")
        .nth(1)
        .expect("common options")
        .split("</table>")
        .next()
        .unwrap()
}
