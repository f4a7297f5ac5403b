//! A `sweep --out` or `merge --out` folder on the page: the spec (`sweep.json`), the summary
//! per method ([`crate::sweep::summarize`], the table `sweep` ends with) and, per axis of the
//! grid, each method's objective and ratio against the axis's values: the mean over the
//! cells with that value (its seeds, and the other axes' values), whiskers from the least to
//! the largest.

use std::path::Path;

use formulations::Error;

use super::figure::{self, drawable, Chart, Key, Mark, Shape};
use super::table::Table;
use super::{escape, number, Page};
use crate::sweep::{summarize, SweepHeader, SUMMARY_HEADERS};
use crate::sweepable::Row;

/// The y axis of the ratios' figures.
const RATIO: &str = "ratio (objective / reference)";

/// The rows of results.csv with each row's axis values, and the axes' names (their paths).
struct Results {
    axes: Vec<String>,
    rows: Vec<(Vec<String>, Row)>,
}

fn read_results(path: &Path) -> Result<Results, Error> {
    let t = Table::read(path)?;
    let (seed, sha) = (t.column("seed")?, t.column("instance_sha256")?);
    if sha < seed {
        return Err(t.refuse_header(
            "instance_sha256 comes before seed: the axes' columns stand between them",
        ));
    }
    let [_, method, objective, objective_name, ratio, reference_kind, reference, feasible, solver_status, gap, secondary, secondary_name, runtime_s] =
        crate::sweep::RESULT_COLUMNS.map(|c| t.column(c));
    let cell = t.column("cell");
    let (cell, method, objective, objective_name, ratio) =
        (cell?, method?, objective?, objective_name?, ratio?);
    let (reference_kind, reference, feasible, solver_status, gap) =
        (reference_kind?, reference?, feasible?, solver_status?, gap?);
    let (secondary, secondary_name, runtime_s) = (secondary?, secondary_name?, runtime_s?);
    let axes = t.header[seed + 1..sha].to_vec();
    let mut rows = Vec::with_capacity(t.len());
    for r in 0..t.len() {
        let text = |c: usize| t.text(r, c).to_string();
        if t.text(r, method).is_empty() {
            return Err(t.refuse(r, method, "empty (a method name is needed)"));
        }
        let row = Row {
            cell: t.required_count(r, cell)?,
            seed: t.required_count(r, seed)?,
            instance_sha256: text(sha),
            method: text(method),
            objective: t.number(r, objective)?,
            objective_name: text(objective_name),
            ratio: t.number(r, ratio)?,
            reference_kind: text(reference_kind),
            reference: t.number(r, reference)?,
            feasible: t.flag(r, feasible)?,
            solver_status: Some(text(solver_status)).filter(|s| !s.is_empty()),
            gap: t.number(r, gap)?,
            secondary: t.number(r, secondary)?,
            secondary_name: text(secondary_name),
            runtime_s: t.number(r, runtime_s)?,
        };
        rows.push(((seed + 1..sha).map(text).collect(), row));
    }
    Ok(Results { axes, rows })
}

/// The sweep section of the page.
pub(super) fn section(dir: &Path, page: &mut Page) -> Result<(), Error> {
    let results = read_results(&dir.join("results.csv"))?;
    page.h2("Sweep", "sweep");
    let spec = dir.join("sweep.json");
    if spec.exists() {
        let h: SweepHeader = formulations::error::read_json(&spec)?;
        let s = &h.spec;
        let axes: Vec<String> = (s.axes.iter())
            .map(|a| {
                let values: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
                format!(
                    "<code>{}</code> = {}",
                    escape(&a.path),
                    escape(&values.join(", "))
                )
            })
            .collect();
        page.paragraph(&format!(
            "Spec (<code>sweep.json</code>, SHA-256 <code>{}</code>): problem <code>{}</code>, \
             {}, seeds {}, methods {}, MILP time limit {} s; axes: {}. {} cells in the grid{}.",
            escape(&h.spec_sha256),
            escape(&s.problem),
            match (&s.preset, &s.config) {
                (_, Some(c)) => format!(
                    "configuration <code>{}</code>",
                    escape(&c.display().to_string())
                ),
                (Some(p), None) => format!("preset <code>{}</code>", escape(p)),
                (None, None) => "the default preset".into(),
            },
            escape(&serde_json::to_string(&s.seeds).unwrap_or_default()),
            escape(&s.methods.join(", ")),
            s.time_limit_s,
            if axes.is_empty() {
                "none".into()
            } else {
                axes.join("; ")
            },
            h.cells,
            h.shard
                .map(|sh| format!(" (this folder: shard {}/{})", sh.index, sh.count))
                .unwrap_or_default(),
        ));
    }
    let cells: std::collections::BTreeSet<u64> = results.rows.iter().map(|r| r.1.cell).collect();
    page.paragraph(&format!(
        "<code>results.csv</code>: {} rows, {} cells. Ratio: objective / the cell's reference \
         (a proved optimum, else a proved bound); worst: the ratio farthest from 1.",
        results.rows.len(),
        cells.len()
    ));
    let summary = summarize(results.rows.iter().map(|r| &r.1));
    let rows: Vec<Vec<String>> = summary.iter().map(|m| m.cells(escape, number)).collect();
    page.table(&SUMMARY_HEADERS, &rows, 1);
    let methods: Vec<&str> = summary.iter().map(|m| m.method.as_str()).collect();
    let objective_name = results
        .rows
        .iter()
        .map(|r| r.1.objective_name.as_str())
        .find(|n| !n.is_empty())
        .unwrap_or("objective");
    for (a, axis) in results.axes.iter().enumerate() {
        page.raw(&format!("<h3>Along <code>{}</code></h3>\n", escape(axis)));
        for label in [objective_name, RATIO] {
            let value = |r: &Row| if label == RATIO { r.ratio } else { r.objective };
            if let Some((chart, left_out)) = axis_chart(&results, a, &methods, &value, label) {
                let mut caption = format!(
                    "Each method's <code>{}</code> against <code>{}</code>: the mean over the \
                     cells with that value (seeds{}), whiskers from the least to the largest.",
                    escape(label),
                    escape(axis),
                    if results.axes.len() > 1 {
                        " and the other axes' values"
                    } else {
                        ""
                    }
                );
                if left_out > 0 {
                    caption.push_str(&format!(
                        " {left_out} values not drawn (not finite, or beyond 1e12)."
                    ));
                }
                page.figure(&figure::svg(&chart), &caption);
            }
        }
    }
    Ok(())
}

/// The chart of one quantity along axis `a`, and how many values it could not draw; None when
/// no row has the quantity.
fn axis_chart(
    results: &Results,
    a: usize,
    methods: &[&str],
    value: &dyn Fn(&Row) -> Option<f64>,
    label: &str,
) -> Option<(Chart, usize)> {
    if !results.rows.iter().any(|r| value(&r.1).is_some()) {
        return None;
    }
    // The axis's values in order of appearance (the spec's); numbers on a numeric axis.
    let mut values: Vec<&str> = Vec::new();
    for (axes, _) in &results.rows {
        if !values.contains(&axes[a].as_str()) {
            values.push(&axes[a]);
        }
    }
    let numeric: Option<Vec<f64>> = (values.iter())
        .map(|v| v.parse::<f64>().ok().filter(|x| drawable(*x)))
        .collect();
    let position = |v: &str| -> f64 {
        let k = values.iter().position(|x| *x == v).unwrap_or(0);
        numeric.as_ref().map_or(k as f64, |n| n[k])
    };
    // Methods side by side around each value, a little apart, so whiskers do not hide each
    // other: 3 % of the closest two values' distance per method.
    let mut xs: Vec<f64> = values.iter().map(|v| position(v)).collect();
    xs.sort_by(f64::total_cmp);
    let gap = (xs.windows(2).map(|w| w[1] - w[0]))
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let gap = if gap.is_finite() { gap } else { 1.0 };
    let mut chart = Chart {
        x_label: results.axes[a].clone(),
        y_label: label.into(),
        categories: numeric
            .is_none()
            .then(|| values.iter().map(|v| v.to_string()).collect()),
        x_integers: (numeric.iter().flatten()).all(|x| x.fract() == 0.0),
        ..Chart::default()
    };
    // The values per (method, axis value), in one pass over the rows.
    let mut groups: std::collections::BTreeMap<(usize, usize), Vec<f64>> = Default::default();
    for (axes, r) in &results.rows {
        let (Some(m), Some(v)) = (
            methods.iter().position(|m| *m == r.method),
            values.iter().position(|v| *v == axes[a]),
        ) else {
            continue;
        };
        groups.entry((m, v)).or_default().extend(value(r));
    }
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|p, q| position(values[*p]).total_cmp(&position(values[*q])));
    let mut left_out = 0;
    for (m, method) in methods.iter().enumerate() {
        let dodge = (m as f64 - (methods.len() as f64 - 1.0) / 2.0) * 0.03 * gap;
        let (mut line, mut spans) = (Vec::new(), Vec::new());
        for &v in &order {
            let ys = groups.get(&(m, v)).map_or(&[][..], Vec::as_slice);
            let drawn: Vec<f64> = ys.iter().copied().filter(|y| drawable(*y)).collect();
            left_out += ys.len() - drawn.len();
            if drawn.is_empty() {
                continue;
            }
            let x = position(values[v]) + dodge;
            let lo = drawn.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = drawn.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            line.push((x, drawn.iter().sum::<f64>() / drawn.len() as f64));
            if hi > lo {
                spans.push((x, lo, hi));
            }
        }
        if line.is_empty() {
            continue;
        }
        let color = figure::palette(m);
        chart.marks.push(Mark::Whiskers { color, spans });
        chart.marks.push(Mark::Line {
            color,
            points: line.clone(),
        });
        chart.marks.push(Mark::Points {
            color,
            shape: Shape::Dot,
            points: line,
        });
        chart.legend.push((Key::Line(color), method.to_string()));
    }
    if label == RATIO {
        let grey = figure::palette(7);
        chart.marks.push(Mark::HRule {
            color: grey,
            y: 1.0,
        });
        chart.legend.push((Key::Dashed(grey), "ratio 1".into()));
    }
    Some((chart, left_out))
}
