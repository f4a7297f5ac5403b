//! Text for terminals: the one table renderer of the command line and the few number formats
//! the tables share.

use crate::problem::{ExactReport, Reference};
use formulations::milp::MilpStatus;

/// A plain text table: the first `left` columns left-aligned, the others right-aligned.
pub fn table(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < left {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        format!("  {}\n", parts.join("  ").trim_end())
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    out.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

/// Seconds as milliseconds with 4 decimals, `-` for none.
pub fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.4}", v * 1e3))
}

/// How a MILP solve ended, for a table cell: `optimal`, or the status with its gap.
pub fn status(e: &ExactReport) -> String {
    match (e.status, e.gap) {
        (MilpStatus::Optimal, _) => "optimal".into(),
        (s, Some(g)) => format!("{s} (gap {:.2}%)", g * 100.0),
        (s, None) => s.to_string(),
    }
}

/// What ratios are taken against, in words.
pub fn reference(r: Reference) -> String {
    match r {
        Reference::Optimum(v) => format!("proved optimum {v:.6}"),
        Reference::Bound(v) => format!("no proved optimum; best proved bound {v:.6}"),
        Reference::None => "no optimum or bound".into(),
    }
}
