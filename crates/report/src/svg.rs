//! SVG primitives: a string builder for the few elements the plots need.
//!
//! Coordinates are in pixels of the SVG's own viewBox. Text is escaped here,
//! so callers pass plain strings.

use crate::html::escape;
use std::fmt::Write as _;

/// Font size of tick labels and legends, in pixels.
pub const FONT: f64 = 12.0;
/// The font family every text element uses (system fonts only: no downloads).
pub const FONT_FAMILY: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif";

/// A coordinate or length, short: two decimals at most, no trailing zeros.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let r = (v * 100.0).round() / 100.0;
    let s = format!("{r:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Width of `text` at `size` pixels, estimated from character classes.
///
/// Layout needs it before a browser exists; the estimate errs on the wide
/// side so labels laid out with it do not overlap.
pub fn text_width(text: &str, size: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' => 0.32,
            'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' | 'I' => 0.42,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.92,
            c if c.is_ascii_uppercase() => 0.70,
            c if c.is_ascii_digit() => 0.58,
            c if c.is_ascii() => 0.56,
            _ => 0.80,
        })
        .sum();
    em * size
}

/// Marker shapes, so series stay apart without colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    TriangleDown,
    Plus,
    Cross,
}

impl Marker {
    pub const ALL: [Marker; 7] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
        Marker::TriangleDown,
        Marker::Plus,
        Marker::Cross,
    ];
}

/// How text sits on its anchor point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// Text attributes; `Text::new(size)` then adjust.
#[derive(Debug, Clone, Copy)]
pub struct Text<'a> {
    pub size: f64,
    pub anchor: Anchor,
    pub bold: bool,
    pub fill: &'a str,
    /// Degrees, clockwise, about the anchor point.
    pub rotate: f64,
    /// A white outline behind the glyphs, for text drawn over data.
    pub halo: bool,
}

impl Text<'_> {
    pub fn new(size: f64) -> Self {
        Text {
            size,
            anchor: Anchor::Start,
            bold: false,
            fill: "#222",
            rotate: 0.0,
            halo: false,
        }
    }
    pub fn anchor(mut self, anchor: Anchor) -> Self {
        self.anchor = anchor;
        self
    }
    pub fn bold(mut self) -> Self {
        self.bold = true;
        self
    }
    pub fn rotate(mut self, degrees: f64) -> Self {
        self.rotate = degrees;
        self
    }
}

/// Stroke attributes of lines.
#[derive(Debug, Clone, Copy)]
pub struct Stroke<'a> {
    pub color: &'a str,
    pub width: f64,
    /// SVG dash array, e.g. "6 4".
    pub dash: Option<&'a str>,
    /// Below 1: translucent, so a line drawn over it stays visible.
    pub opacity: f64,
}

impl<'a> Stroke<'a> {
    pub fn new(color: &'a str, width: f64) -> Self {
        Stroke {
            color,
            width,
            dash: None,
            opacity: 1.0,
        }
    }
    pub fn dashed(mut self, dash: &'a str) -> Self {
        self.dash = Some(dash);
        self
    }
    pub fn opacity(mut self, opacity: f64) -> Self {
        self.opacity = opacity;
        self
    }
    fn attrs(&self) -> String {
        let mut s = format!(
            "stroke=\"{}\" stroke-width=\"{}\"",
            escape(self.color),
            num(self.width)
        );
        if let Some(d) = self.dash {
            let _ = write!(s, " stroke-dasharray=\"{}\"", escape(d));
        }
        if self.opacity < 1.0 {
            let _ = write!(s, " stroke-opacity=\"{}\"", num(self.opacity));
        }
        s
    }
}

/// An SVG document under construction.
#[derive(Debug)]
pub struct Svg {
    out: String,
}

impl Svg {
    /// A new drawing of `width` x `height` pixels; `label` is its accessible name.
    pub fn new(width: f64, height: f64, label: &str) -> Self {
        let mut out = String::with_capacity(8192);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{l}\" font-family=\"{f}\">",
            w = num(width),
            h = num(height),
            l = escape(label),
            f = FONT_FAMILY.replace('\'', "&#39;"),
        );
        let _ = write!(
            out,
            "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#fff\"/>",
            num(width),
            num(height)
        );
        Svg { out }
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: Stroke) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            stroke.attrs()
        );
    }

    /// A polyline through `points`; `class` names it for tests and styling.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke, class: &str) {
        if points.is_empty() {
            return;
        }
        let mut pts = String::with_capacity(points.len() * 12);
        for (i, (x, y)) in points.iter().enumerate() {
            if i > 0 {
                pts.push(' ');
            }
            let _ = write!(pts, "{},{}", num(*x), num(*y));
        }
        let _ = write!(
            self.out,
            "<polyline class=\"{}\" points=\"{}\" fill=\"none\" {} stroke-linejoin=\"round\"/>",
            escape(class),
            pts,
            stroke.attrs()
        );
    }

    /// A filled rectangle with an optional hover title.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            escape(fill)
        );
        self.close_with_title(title, "rect");
    }

    /// A rectangle outline (plot frames, legend keys).
    pub fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: Stroke) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" {}/>",
            num(x),
            num(y),
            num(w),
            num(h),
            stroke.attrs()
        );
    }

    /// A marker centred on (x, y), `size` pixels across, with an optional hover title.
    pub fn marker(
        &mut self,
        shape: Marker,
        x: f64,
        y: f64,
        size: f64,
        color: &str,
        title: Option<&str>,
    ) {
        self.marker_styled(shape, (x, y), size, color, false, title);
    }

    /// A marker drawn as an outline only: drawn over or under a filled one
    /// at the same place, both stay visible.
    pub fn hollow_marker(
        &mut self,
        shape: Marker,
        x: f64,
        y: f64,
        size: f64,
        color: &str,
        title: Option<&str>,
    ) {
        self.marker_styled(shape, (x, y), size, color, true, title);
    }

    fn marker_styled(
        &mut self,
        shape: Marker,
        (x, y): (f64, f64),
        size: f64,
        color: &str,
        hollow: bool,
        title: Option<&str>,
    ) {
        let paint = if hollow {
            format!(
                "fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"",
                escape(color)
            )
        } else {
            format!(
                "fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.8\"",
                escape(color)
            )
        };
        let r = size / 2.0;
        let d = match shape {
            Marker::Circle => format!(
                "M{} {}a{r} {r} 0 1 0 {d} 0a{r} {r} 0 1 0 -{d} 0z",
                num(x - r),
                num(y),
                r = num(r),
                d = num(2.0 * r)
            ),
            Marker::Square => {
                let s = r * 0.9;
                format!(
                    "M{} {}h{d}v{d}h-{d}z",
                    num(x - s),
                    num(y - s),
                    d = num(2.0 * s)
                )
            }
            Marker::Triangle => format!(
                "M{} {}L{} {}L{} {}z",
                num(x),
                num(y - r * 1.1),
                num(x + r),
                num(y + r * 0.8),
                num(x - r),
                num(y + r * 0.8)
            ),
            Marker::TriangleDown => format!(
                "M{} {}L{} {}L{} {}z",
                num(x),
                num(y + r * 1.1),
                num(x + r),
                num(y - r * 0.8),
                num(x - r),
                num(y - r * 0.8)
            ),
            Marker::Diamond => format!(
                "M{} {}L{} {}L{} {}L{} {}z",
                num(x),
                num(y - r * 1.2),
                num(x + r),
                num(y),
                num(x),
                num(y + r * 1.2),
                num(x - r),
                num(y)
            ),
            Marker::Plus | Marker::Cross => {
                // Drawn as a thick outlined path so it reads at small sizes.
                let t = r * 0.35;
                let p = format!(
                    "M{} {}h{t2}v{a}h{a}v{t2}h-{a}v{a}h-{t2}v-{a}h-{a}v-{t2}h{a}z",
                    num(x - t),
                    num(y - r),
                    t2 = num(2.0 * t),
                    a = num(r - t)
                );
                if shape == Marker::Cross {
                    let _ = write!(
                        self.out,
                        "<path class=\"marker\" transform=\"rotate(45 {} {})\" d=\"{}\" {paint}",
                        num(x),
                        num(y),
                        p,
                    );
                    self.close_with_title(title, "path");
                    return;
                }
                p
            }
        };
        let _ = write!(self.out, "<path class=\"marker\" d=\"{d}\" {paint}");
        self.close_with_title(title, "path");
    }

    /// Opens a link around what follows (a marker to the table row it
    /// stands for); `href` is a fragment or relative address.
    pub fn link(&mut self, href: &str) {
        let _ = write!(self.out, "<a href=\"{}\">", escape(href));
    }

    pub fn end_link(&mut self) {
        self.out.push_str("</a>");
    }

    pub fn text(&mut self, x: f64, y: f64, content: &str, style: Text) {
        let anchor = match style.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = write!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\"",
            num(x),
            num(y),
            num(style.size),
            anchor,
            escape(style.fill)
        );
        if style.bold {
            self.out.push_str(" font-weight=\"bold\"");
        }
        if style.halo {
            self.out.push_str(
                " stroke=\"#fff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"",
            );
        }
        if style.rotate != 0.0 {
            let _ = write!(
                self.out,
                " transform=\"rotate({} {} {})\"",
                num(style.rotate),
                num(x),
                num(y)
            );
        }
        let _ = write!(self.out, ">{}</text>", escape(content));
    }

    /// Opens a group; `class` names it for tests and styling.
    pub fn group(&mut self, class: &str) {
        let _ = write!(self.out, "<g class=\"{}\">", escape(class));
    }

    pub fn end_group(&mut self) {
        self.out.push_str("</g>");
    }

    fn close_with_title(&mut self, title: Option<&str>, element: &str) {
        match title {
            Some(t) => {
                let _ = write!(self.out, "><title>{}</title></{}>", escape(t), element);
            }
            None => self.out.push_str("/>"),
        }
    }

    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_never_negative_zero() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(10.5), "10.5");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn text_is_escaped_and_elements_close() {
        let mut s = Svg::new(100.0, 50.0, "a <b> & \"c\"");
        s.text(1.0, 2.0, "x < y & z", Text::new(12.0));
        s.polyline(
            &[(0.0, 0.0), (10.0, 5.5)],
            Stroke::new("#000", 1.0),
            "series",
        );
        s.marker(Marker::Circle, 5.0, 5.0, 6.0, "#0072B2", Some("value <1>"));
        let out = s.finish();
        assert!(out.contains("aria-label=\"a &lt;b&gt; &amp; &quot;c&quot;\""));
        assert!(out.contains(">x &lt; y &amp; z</text>"));
        assert!(out.contains("points=\"0,0 10,5.5\""));
        assert!(out.contains("<title>value &lt;1&gt;</title></path>"));
        assert!(out.ends_with("</svg>"));
    }

    #[test]
    fn wider_text_measures_wider() {
        assert!(text_width("1000 Mbit/s", 12.0) > text_width("10", 12.0));
        assert!(text_width("WWW", 12.0) > text_width("iii", 12.0));
    }
}
