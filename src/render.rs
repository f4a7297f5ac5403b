//! Text for terminals: the one table renderer of the command line and the few number formats
//! the tables share.

use crate::problem::{ExactReport, Reference};
use formulations::milp::MilpStatus;

/// The command line's one table: a header, a rule, the rows; the first `left` columns
/// left-aligned, the others (numbers) right-aligned. On a terminal the table fits its width,
/// wrapping the widest text columns (comfy-table's dynamic arrangement); piped, it is never
/// wrapped, so scripts see whole lines.
pub fn table(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING)
        .set_style(comfy_table::TableComponent::HeaderLines, '-')
        .set_style(comfy_table::TableComponent::MiddleHeaderIntersections, ' ')
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_header(headers.to_vec());
    for row in rows {
        t.add_row(row.clone());
    }
    for (i, column) in t.column_iter_mut().enumerate() {
        if i == 0 {
            // Names (methods, claim ids) are never wrapped.
            column.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
        if i >= left {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    // No borders: trailing padding is noise.
    let mut text: String = t
        .to_string()
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect();
    if text.is_empty() {
        text.push('\n');
    }
    text
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

/// The status cell of a method's line in a `compare` table: [`status`] for an exact solve, `-`
/// for a method that is none (one rule for every problem's table).
pub fn status_cell(e: Option<&ExactReport>) -> String {
    e.map_or("-".into(), status)
}

/// What ratios are taken against, in words.
pub fn reference(r: Reference) -> String {
    match r {
        Reference::Optimum { value, source } => format!("proved optimum {value:.6} ({source})"),
        Reference::Bound { value, source } => {
            format!("no proved optimum; best proved bound {value:.6} ({source})")
        }
        Reference::None => "no optimum or bound".into(),
    }
}

/// A unit enum's name in files (its serde name), for text: never Rust's debug spelling.
pub fn name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

/// Numbers as `a, b, c` in the given format.
pub fn list<T>(values: &[T], format: impl Fn(&T) -> String) -> String {
    values.iter().map(format).collect::<Vec<_>>().join(", ")
}

/// A two-column table of named values (a report's summary).
pub fn pairs(rows: &[(&str, String)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.clone()])
        .collect();
    table(&["measure", "value"], &rows, 1)
}
