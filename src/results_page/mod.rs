//! `moe-opt report DIR [-o OUT.html]`: one self-contained HTML page of a run's results, to read
//! or send without moe-opt, Python or a network: tables, figures as inline SVG and the page's
//! own few lines of CSS; no script, no font file, no link outside the page.
//!
//! What DIR is, its files tell:
//! * `claims.csv` (with `instances.csv`, and `run.json` when written by this version): a
//!   `verify --out` folder. Per claim: the verdict, its certificate counts, the ratios against
//!   the bound and the counterexample with its re-check command (`claims.rs`);
//! * `results.csv` (with `sweep.json`): a `sweep --out` or `merge --out` folder. The summary
//!   per method and, per axis, each method's objective and ratio (`sweep.rs`);
//! * any other CSV whose header is that of `mrc --csv`: miss-ratio curves (`mrc.rs`); or of
//!   `redundancy --csv`: balancedness against the redundant slots, the best plan, the proved
//!   upper bound and EPLB's (`redundancy.rs`). Either table may also be given as the file
//!   itself.
//!
//! A folder may hold several (a verify run beside a sweep); a folder with none is refused,
//! naming it and what is missing, and a malformed file is refused naming the file, the line
//! and the column. The page depends only on the files read (and the moe-opt version written
//! in its footer): the same folder gives the same bytes.
//!
//! Figures are drawn by the `plotters` crate: pure Rust, writing SVG text that goes into the
//! page as it is, so the command line makes a report with nothing else installed (the
//! notebooks, with matplotlib, stay the place for custom analysis). Its features are
//! `svg_backend` alone: the points, lines, rectangles, dashed lines and text the charts need
//! are plotters' core elements. Without the `ttf` feature plotters has no font metrics and
//! lays out text with its estimate of 0.7 em per character; the SVG backend writes text as
//! `<text>` elements that the viewer sets in its own sans-serif, so label widths are
//! approximate and the layout leaves room for them (`figure.rs`). `ttf` would bring font-kit
//! and the system's font libraries for nothing an SVG shows.

mod claims;
mod figure;
mod mrc;
mod redundancy;
mod sweep;
mod table;

pub(crate) use claims::read_claims;

use std::path::{Path, PathBuf};

use formulations::Error;

use table::Table;

/// A rendered page.
#[derive(Debug, Clone)]
pub struct Page {
    body: String,
    figures: usize,
}

impl Page {
    /// The HTML page, whole.
    pub fn html(&self, title: &str) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
             {}<footer>Made by <code>moe-opt report</code> (moe-opt {}) from the files named \
             above.</footer>\n</body>\n</html>\n",
            self.body,
            crate::report::VERSION,
            title = escape(title),
        )
    }

    /// Figures on the page.
    pub fn figures(&self) -> usize {
        self.figures
    }

    fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    fn h2(&mut self, title: &str, id: &str) {
        self.raw(&format!("<h2 id=\"{id}\">{}</h2>\n", escape(title)));
    }

    /// A paragraph of HTML (escaped by the caller).
    fn paragraph(&mut self, html: &str) {
        self.raw(&format!("<p>{html}</p>\n"));
    }

    /// A table of HTML cells; columns from `left` on are numbers (right-aligned).
    fn table(&mut self, headers: &[&str], rows: &[Vec<String>], left: usize) {
        let class = |i: usize| if i >= left { " class=\"num\"" } else { "" };
        let mut html = String::from("<table>\n<thead><tr>");
        for (i, h) in headers.iter().enumerate() {
            html.push_str(&format!("<th{}>{}</th>", class(i), escape(h)));
        }
        html.push_str("</tr></thead>\n<tbody>\n");
        for row in rows {
            html.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                html.push_str(&format!("<td{}>{cell}</td>", class(i)));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</tbody>\n</table>\n");
        self.raw(&html);
    }

    /// A figure: an SVG element and its caption (HTML).
    fn figure(&mut self, svg: &str, caption: &str) {
        self.figures += 1;
        self.raw(&format!(
            "<figure>\n{}\n<figcaption>Figure {}. {caption}</figcaption>\n</figure>\n",
            svg.trim_end(),
            self.figures
        ));
    }
}

const STYLE: &str = "body { font-family: sans-serif; max-width: 64rem; margin: 2rem auto; \
padding: 0 1rem; color: #222; line-height: 1.4; }
h1 { font-size: 1.5rem; word-break: break-all; }
h2 { border-bottom: 2px solid #ccc; margin-top: 2.5rem; }
h3 { margin-bottom: 0.3rem; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.8rem; }
th, td { padding: 0.2rem 0.5rem; border-bottom: 1px solid #ddd; text-align: left; \
vertical-align: top; }
th { border-bottom: 2px solid #999; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
figure { margin: 1rem 0; break-inside: avoid; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85rem; color: #555; }
.verdict { padding: 0 0.4rem; border-radius: 0.3rem; color: #fff; font-size: 0.85rem; \
white-space: nowrap; }
.holds { background: #2a7d2a; }
.violated { background: #c0392b; }
.inconclusive { background: #7f7f7f; }
.witnessed { background: #1f7a7a; }
.not-witnessed { background: #a0a0a0; }
.measured { background: #2c6fbb; }
pre { background: #f4f4f4; padding: 0.5rem; white-space: pre-wrap; word-break: break-all; }
section { border-top: 1px solid #eee; margin-top: 1.5rem; }
footer { margin-top: 3rem; font-size: 0.8rem; color: #777; }
@page { size: A4; margin: 1.5cm; }
@media print { table { font-size: 0.72rem; } }
";

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number for a table: 4 decimals between 1e-3 and 1e6, else 4 significant digits; `-` for
/// none.
fn number(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) if (1e-3..1e6).contains(&v.abs()) => format!("{v:.4}"),
        Some(v) => format!("{v:.3e}"),
    }
}

/// The page of an output folder, or of one `mrc --csv` table.
pub fn render(input: &Path) -> Result<Page, Error> {
    let meta = std::fs::metadata(input).map_err(|source| Error::Io {
        path: input.to_path_buf(),
        source,
    })?;
    let mut page = Page {
        body: String::new(),
        figures: 0,
    };
    if !meta.is_dir() {
        let header = Table::read(input)?.header;
        if has_columns(&header, &mrc::COLUMNS) {
            mrc::section(&[input.to_path_buf()], &mut page)?;
        } else if has_columns(&header, &redundancy::COLUMNS) {
            redundancy::section(&[input.to_path_buf()], &mut page)?;
        } else {
            let missing = |columns: &[&str]| -> String {
                (columns.iter().copied())
                    .filter(|c| !header.iter().any(|h| h == c))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(Error::Invalid {
                path: input.to_path_buf(),
                field: "line 1".into(),
                reason: format!(
                    "not a table of `mrc --csv` (no column {}) nor of `redundancy --csv` (no \
                     column {}); a file to report on is one of those tables or an output folder",
                    missing(&mrc::COLUMNS),
                    missing(&redundancy::COLUMNS)
                ),
            });
        }
        return Ok(page);
    }
    let has = |name: &str| input.join(name).is_file();
    let curves = tables_in(input, &mrc::COLUMNS)?;
    let redundancy = tables_in(input, &redundancy::COLUMNS)?;
    if !has("claims.csv") && !has("results.csv") && curves.is_empty() && redundancy.is_empty() {
        return Err(Error::Invalid {
            path: input.to_path_buf(),
            field: "folder".into(),
            reason: "not an output folder of `verify --out` (no claims.csv), `sweep --out` or \
                     `merge --out` (no results.csv), and no table of `mrc --csv` or \
                     `redundancy --csv` in it"
                .into(),
        });
    }
    if has("claims.csv") {
        if !has("instances.csv") {
            return Err(Error::Invalid {
                path: input.to_path_buf(),
                field: "instances.csv".into(),
                reason: "missing: a verify folder holds claims.csv and instances.csv".into(),
            });
        }
        claims::section(input, &mut page)?;
    }
    if has("results.csv") {
        sweep::section(input, &mut page)?;
    }
    if !curves.is_empty() {
        mrc::section(&curves, &mut page)?;
    }
    if !redundancy.is_empty() {
        redundancy::section(&redundancy, &mut page)?;
    }
    Ok(page)
}

/// Whether a table's header has every one of `columns`.
fn has_columns(header: &[String], columns: &[&str]) -> bool {
    columns.iter().all(|c| header.iter().any(|h| h == c))
}

/// The tables among a folder's CSV files whose header has `columns`, by name (the tables of
/// verify and sweep left aside).
fn tables_in(dir: &Path, columns: &[&str]) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let ours = ["claims.csv", "instances.csv", "results.csv"].contains(&name);
        if path.is_file()
            && !ours
            && path.extension().is_some_and(|e| e == "csv")
            && Table::header_of(&path).is_some_and(|h| has_columns(&h, columns))
        {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_keep_their_digits() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(number(Some(0.632120558)), "0.6321");
        assert_eq!(number(Some(9.1e-6)), "9.100e-6");
        assert_eq!(number(Some(0.0)), "0");
        assert_eq!(number(None), "-");
    }
}
