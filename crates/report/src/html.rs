//! The HTML document: shell with inline CSS, sections, tables, escaping.
//!
//! The page loads nothing: no scripts, fonts, or images from anywhere, and a
//! Content-Security-Policy that forbids fetching so a viewer can trust that.

use std::fmt::Write as _;

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab/newline are not valid in HTML text.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One table cell: text (escaped when rendered) and how it is shown.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub text: String,
    /// Right-aligned, tabular figures.
    pub numeric: bool,
    /// Highlighted as short of expectations.
    pub flagged: bool,
    /// Hover text.
    pub title: Option<String>,
    /// The text is a link to this address (a fragment such as "#run-12").
    pub href: Option<String>,
    /// Further links after the text: (text, address), e.g. the runs of a point.
    pub links: Vec<(String, String)>,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            ..Cell::default()
        }
    }
    pub fn num(s: impl Into<String>) -> Cell {
        Cell {
            text: s.into(),
            numeric: true,
            ..Cell::default()
        }
    }
    pub fn flag(mut self, flagged: bool) -> Cell {
        self.flagged = flagged;
        self
    }
    pub fn title(mut self, t: impl Into<String>) -> Cell {
        self.title = Some(t.into());
        self
    }
    pub fn link(mut self, href: impl Into<String>) -> Cell {
        self.href = Some(href.into());
        self
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::text(s)
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::text(s)
    }
}

/// A table with a header row; the first column may be a row header.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub caption: Option<String>,
    pub headers: Vec<Cell>,
    pub rows: Vec<Vec<Cell>>,
    /// The first cell of each row is a header (`<th scope=row>`).
    pub row_headers: bool,
    pub class: &'static str,
    /// An id per row (an anchor links can lead to); missing ones have none.
    pub row_ids: Vec<Option<String>>,
    /// A class per row ("interrupted"); missing ones have none.
    pub row_classes: Vec<Option<&'static str>>,
}

impl Table {
    pub fn new(headers: Vec<Cell>) -> Table {
        Table {
            headers,
            class: "data",
            ..Table::default()
        }
    }

    pub fn caption(mut self, c: impl Into<String>) -> Table {
        self.caption = Some(c.into());
        self
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// A row with an id (so `#id` links to it) and an optional class.
    pub fn row_at(&mut self, id: impl Into<String>, class: Option<&'static str>, cells: Vec<Cell>) {
        let i = self.rows.len();
        self.row_ids.resize(i + 1, None);
        self.row_classes.resize(i + 1, None);
        self.row_ids[i] = Some(id.into());
        self.row_classes[i] = class;
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<div class=\"scroll\"><table class=\"{}\">",
            self.class
        );
        if let Some(c) = &self.caption {
            let _ = write!(out, "<caption>{}</caption>", escape(c));
        }
        if !self.headers.is_empty() {
            out.push_str("<thead><tr>");
            for h in &self.headers {
                cell(&mut out, h, "th", Some("col"));
            }
            out.push_str("</tr></thead>");
        }
        out.push_str("<tbody>");
        for (k, r) in self.rows.iter().enumerate() {
            match self.row_ids.get(k).cloned().flatten() {
                Some(id) => {
                    let _ = write!(out, "<tr id=\"{}\"", escape(&id));
                    if let Some(c) = self.row_classes.get(k).copied().flatten() {
                        let _ = write!(out, " class=\"{c}\"");
                    }
                    out.push('>');
                }
                None => out.push_str("<tr>"),
            }
            for (i, c) in r.iter().enumerate() {
                if i == 0 && self.row_headers {
                    cell(&mut out, c, "th", Some("row"));
                } else {
                    cell(&mut out, c, "td", None);
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
        out
    }
}

fn cell(out: &mut String, c: &Cell, tag: &str, scope: Option<&str>) {
    let mut classes = Vec::new();
    if c.numeric {
        classes.push("n");
    }
    if c.flagged {
        classes.push("short");
    }
    let _ = write!(out, "<{tag}");
    if let Some(s) = scope {
        let _ = write!(out, " scope=\"{s}\"");
    }
    if !classes.is_empty() {
        let _ = write!(out, " class=\"{}\"", classes.join(" "));
    }
    if let Some(t) = &c.title {
        let _ = write!(out, " title=\"{}\"", escape(t));
    }
    out.push('>');
    match &c.href {
        Some(h) => {
            let _ = write!(out, "<a href=\"{}\">{}</a>", escape(h), escape(&c.text));
        }
        None => out.push_str(&escape(&c.text)),
    }
    for (text, h) in &c.links {
        let _ = write!(out, " <a href=\"{}\">{}</a>", escape(h), escape(text));
    }
    let _ = write!(out, "</{tag}>");
}

/// A two-column key/value table.
pub fn facts(rows: &[(String, String)]) -> String {
    let mut t = Table::new(Vec::new());
    t.class = "facts";
    t.row_headers = true;
    for (k, v) in rows {
        t.row(vec![Cell::text(k.clone()), Cell::text(v.clone())]);
    }
    t.render()
}

/// A page section: heading, anchor, and already rendered HTML body.
#[derive(Debug, Clone)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub body: String,
}

impl Section {
    pub fn new(id: &str, title: impl Into<String>) -> Section {
        Section {
            id: id.to_string(),
            title: title.into(),
            body: String::new(),
        }
    }
    /// Appends already rendered HTML.
    pub fn push(&mut self, html: &str) {
        self.body.push_str(html);
    }
    /// Appends a paragraph of plain text.
    pub fn para(&mut self, text: &str) {
        let _ = write!(self.body, "<p>{}</p>", escape(text));
    }
    /// Appends a small explanatory note.
    pub fn note(&mut self, text: &str) {
        let _ = write!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }
    /// Appends a figure: an SVG and its caption.
    pub fn figure(&mut self, svg: &str, caption: &str) {
        let _ = write!(
            self.body,
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            escape(caption)
        );
    }
    /// Appends a sub-heading.
    pub fn heading(&mut self, text: &str) {
        let _ = write!(self.body, "<h3>{}</h3>", escape(text));
    }
    /// Appends `html` inside a disclosure that starts open when `open`.
    pub fn details(&mut self, summary: &str, html: &str, open: bool) {
        let _ = write!(
            self.body,
            "<details{}><summary>{}</summary>{}</details>",
            if open { " open" } else { "" },
            escape(summary),
            html
        );
    }
}

const CSS: &str = "\
:root{color-scheme:light}\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;\
margin:0 auto;padding:16px 24px 48px;max-width:1120px;color:#222;background:#fff;line-height:1.4}\
h1{font-size:1.6em;margin:0.4em 0 0.1em}h2{font-size:1.25em;margin:1.6em 0 0.5em;\
border-bottom:1px solid #ccc;padding-bottom:4px}h3{font-size:1.05em;margin:1.2em 0 0.4em}\
.sub{color:#555;margin:0 0 0.8em}nav{font-size:0.92em;margin:0.6em 0 1em}\
nav a{margin-right:1em;color:#0b5394;text-decoration:none}nav a:hover{text-decoration:underline}\
figure{margin:0.6em 0 1.4em}figcaption{font-size:0.9em;color:#444;max-width:1000px}\
svg.plot{display:block;max-width:100%;height:auto}\
.scroll{overflow-x:auto;margin:0.4em 0 1em}\
table{border-collapse:collapse;font-size:0.84em}caption{text-align:left;font-weight:600;padding:4px 0}\
th,td{border:1px solid #d4d4d4;padding:2px 6px;vertical-align:top}\
thead th{background:#f1f3f5;text-align:left}tbody th{text-align:left;font-weight:600}tbody tr:nth-child(even){background:#fafafa}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
table.facts th{text-align:left;background:#f7f7f7;font-weight:600;white-space:nowrap}\
.short{background:#fde2d4 !important;font-weight:600}\
.note{font-size:0.9em;color:#444}.warn{color:#a33}\
.banner{border:2px solid #b3261e;background:#fdecea;color:#7a1c14;padding:8px 12px;\
margin:0.6em 0 1em;border-radius:4px;font-weight:600}\
tr.interrupted td,tr.interrupted th{background:#fdecea}\
tr:target td,tr:target th{background:#fff3bf !important}td a,th a{color:#0b5394}\
details{margin:0.5em 0}summary{cursor:pointer;color:#0b5394}\
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(340px,1fr));gap:8px 24px}\
footer{margin-top:3em;font-size:0.85em;color:#666}\
@media print{nav,summary{display:none}details{display:block}}";

/// Renders the whole page.
// Used by pages without banners (the report kinds being added beside these).
#[allow(dead_code)]
pub fn document(title: &str, subtitle: &str, sections: &[Section], footer: &str) -> String {
    document_with_banners(title, subtitle, &[], sections, footer)
}

/// Renders the whole page with warnings in a box under the title, before
/// anything else (an interrupted run: its numbers cover only part of it).
pub fn document_with_banners(
    title: &str,
    subtitle: &str,
    banners: &[String],
    sections: &[Section],
    footer: &str,
) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = write!(
        out,
        "<title>{}</title><style>{CSS}</style></head>",
        escape(title)
    );
    let _ = write!(
        out,
        "<body><header><h1>{}</h1><p class=\"sub\">{}</p></header>",
        escape(title),
        escape(subtitle)
    );
    for b in banners {
        let _ = write!(
            out,
            "<div class=\"banner\" role=\"alert\">{}</div>",
            escape(b)
        );
    }
    if sections.len() > 2 {
        out.push_str("<nav>");
        for s in sections {
            let _ = write!(
                out,
                "<a href=\"#{}\">{}</a>",
                escape(&s.id),
                escape(&s.title)
            );
        }
        out.push_str("</nav>");
    }
    for s in sections {
        let _ = write!(
            out,
            "<section id=\"{}\"><h2>{}</h2>{}</section>",
            escape(&s.id),
            escape(&s.title),
            s.body
        );
    }
    let _ = writeln!(out, "<footer>{}</footer></body></html>", escape(footer));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{0}b\nc"), "a\u{FFFD}b\nc");
        assert_eq!(escape("ünïcode → ok"), "ünïcode → ok");
    }

    #[test]
    fn tables_escape_cells_and_mark_numbers() {
        let mut t = Table::new(vec![Cell::text("host"), Cell::num("rate")]).caption("<c>");
        t.row(vec![Cell::text("<b>"), Cell::num("941").flag(true)]);
        let html = t.render();
        assert!(html.contains("<caption>&lt;c&gt;</caption>"));
        assert!(html.contains("<td>&lt;b&gt;</td>"));
        assert!(html.contains("<td class=\"n short\">941</td>"));
        assert!(html.contains("<th scope=\"col\" class=\"n\">rate</th>"));
    }

    #[test]
    fn document_is_self_contained() {
        let mut s = Section::new("a", "A & B");
        s.para("x");
        let page = document("T <1>", "sub", &[s], "foot");
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>T &lt;1&gt;</title>"));
        assert!(page.contains("<h2>A &amp; B</h2>"));
        assert!(!page.contains("<script"));
        assert!(!page.contains("http://") && !page.contains("https://"));
    }
}
