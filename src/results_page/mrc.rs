//! `mrc --csv` tables on the page: per table, the miss-ratio curve of every policy over the
//! whole trace (its `total` rows: the miss rate against the capacity) and a line per policy
//! with the curve's ends. A table is recognised by its header ([`COLUMNS`]).

use std::path::{Path, PathBuf};

use formulations::Error;

use super::figure::{self, drawable, Chart, Key, Mark, Shape};
use super::table::Table;
use super::{escape, number, Page};

/// The columns of `mrc --csv` the page reads (the trace's context columns come before them).
pub const COLUMNS: [&str; 6] = [
    "policy",
    "capacity",
    "layer",
    "requests",
    "loads",
    "miss_rate",
];

/// Most points of a curve drawn: beyond, every k-th capacity (and the last), which a curve of
/// a few hundred pixels cannot tell apart.
const MAX_CURVE_POINTS: usize = 2000;

/// Points at which a curve gets no dots.
const DOTTED_UP_TO: usize = 40;

/// A policy's curve over the whole trace: (capacity, miss rate), by capacity.
struct Curve {
    policy: String,
    requests: u64,
    points: Vec<(u64, f64)>,
}

fn read_curves(path: &Path) -> Result<(Vec<Curve>, Vec<String>), Error> {
    let t = Table::read(path)?;
    let [policy, capacity, layer, requests, loads, miss_rate] = COLUMNS.map(|c| t.column(c));
    let (policy, capacity, layer) = (policy?, capacity?, layer?);
    let (requests, loads, miss_rate) = (requests?, loads?, miss_rate?);
    // The trace's name and the cache scope, when the table carries them.
    let mut about = Vec::new();
    for (column, what) in [("trace_name", "trace"), ("scope", "scope")] {
        if let (Ok(c), true) = (t.column(column), t.len() > 0) {
            about.push(format!("{what} <code>{}</code>", escape(t.text(0, c))));
        }
    }
    let mut curves: Vec<Curve> = Vec::new();
    for r in 0..t.len() {
        let c = t.required_count(r, capacity)?;
        let n = t.required_count(r, requests)?;
        t.required_count(r, loads)?;
        let rate = t
            .number(r, miss_rate)?
            .ok_or_else(|| t.refuse(r, miss_rate, "empty (a miss rate is needed)"))?;
        if t.text(r, layer) != "total" {
            t.text(r, layer)
                .parse::<u64>()
                .map_err(|_| t.refuse(r, layer, "neither a layer number nor `total`"))?;
            continue;
        }
        let name = t.text(r, policy);
        if name.is_empty() {
            return Err(t.refuse(r, policy, "empty (a policy name is needed)"));
        }
        match curves.iter_mut().find(|k| k.policy == name) {
            Some(k) => k.points.push((c, rate)),
            None => curves.push(Curve {
                policy: name.to_string(),
                requests: n,
                points: vec![(c, rate)],
            }),
        }
    }
    for k in &mut curves {
        k.points.sort_by_key(|p| p.0);
    }
    Ok((curves, about))
}

/// The miss-ratio section: a figure and a table per table file.
pub(super) fn section(paths: &[PathBuf], page: &mut Page) -> Result<(), Error> {
    page.h2("Miss-ratio curves", "mrc");
    for path in paths {
        let (curves, about) = read_curves(path)?;
        page.raw(&format!(
            "<h3><code>{}</code></h3>\n",
            escape(&path.display().to_string())
        ));
        if !about.is_empty() {
            page.paragraph(&(about.join(", ") + "."));
        }
        if curves.is_empty() {
            page.paragraph("No <code>total</code> rows: nothing to draw.");
            continue;
        }
        let rows: Vec<Vec<String>> = (curves.iter())
            .map(|k| {
                let (first, last) = (k.points[0], k.points[k.points.len() - 1]);
                vec![
                    escape(&k.policy),
                    k.requests.to_string(),
                    format!("{} .. {}", first.0, last.0),
                    number(Some(first.1)),
                    number(Some(last.1)),
                ]
            })
            .collect();
        page.table(
            &[
                "policy",
                "requests",
                "capacities",
                "miss rate at the smallest",
                "at the largest",
            ],
            &rows,
            1,
        );
        let mut chart = Chart {
            x_label: "capacity C (experts per cache)".into(),
            y_label: "miss rate (loads / requests)".into(),
            y_from_zero: true,
            x_integers: true,
            ..Chart::default()
        };
        let mut thinned = false;
        for (i, k) in curves.iter().enumerate() {
            let step = k.points.len().div_ceil(MAX_CURVE_POINTS);
            thinned |= step > 1;
            let mut points: Vec<(f64, f64)> = (k.points.iter().step_by(step))
                .chain(k.points.last().filter(|_| (k.points.len() - 1) % step != 0))
                .map(|&(c, m)| (c as f64, m))
                .filter(|p| drawable(p.0) && drawable(p.1))
                .collect();
            points.dedup();
            let color = figure::palette(i);
            if points.len() <= DOTTED_UP_TO {
                chart.marks.push(Mark::Points {
                    color,
                    shape: Shape::Dot,
                    points: points.clone(),
                });
            }
            chart.marks.push(Mark::Line { color, points });
            chart.legend.push((Key::Line(color), k.policy.clone()));
        }
        page.figure(
            &figure::svg(&chart),
            &format!(
                "Miss rate over the whole trace against the capacity, per policy{}.",
                if thinned {
                    format!(" (at most {MAX_CURVE_POINTS} capacities drawn per curve)")
                } else {
                    String::new()
                }
            ),
        );
    }
    Ok(())
}
