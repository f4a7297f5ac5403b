//! `redundancy --csv` tables on the page: per table, the balancedness over layers of the best
//! plan found, of the proved upper bound (no plan does better) and of EPLB's plan, against the
//! redundant slots, as a table and a figure. A table is recognised by its header ([`COLUMNS`]).
//!
//! Over layers, balancedness is a step's: the sum of the layers' mean GPU loads over the sum
//! of their busiest GPUs. A row gives a layer's busiest GPU under the best plan (`max_load`),
//! EPLB's (`eplb_max_load`), the proved bound on the optimum (`bound`), and the best plan's
//! balancedness (mean / max_load), from which the layer's mean load is recovered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use formulations::Error;

use super::figure::{self, drawable, Chart, Key, Mark, Shape};
use super::table::Table;
use super::{escape, number, Page};

/// The columns of `redundancy --csv` the page reads.
pub const COLUMNS: [&str; 7] = [
    "slots",
    "redundant_slots",
    "layer",
    "max_load",
    "bound",
    "eplb_max_load",
    "balancedness",
];

/// One slot count summed over its layers.
#[derive(Debug, Default)]
struct Point {
    slots: u64,
    layers: u64,
    mean: f64,
    best: f64,
    bound: f64,
    eplb: f64,
}

impl Point {
    /// Balancedness over layers of a sum of maxima.
    fn over(&self, maxima: f64) -> Option<f64> {
        (maxima > 0.0).then(|| self.mean / maxima)
    }
}

/// The points of a table by redundant slots.
fn read_points(path: &Path) -> Result<BTreeMap<u64, Point>, Error> {
    let t = Table::read(path)?;
    let [slots, redundant, layer, max_load, bound, eplb, balancedness] =
        COLUMNS.map(|c| t.column(c));
    let (slots, redundant, layer, max_load) = (slots?, redundant?, layer?, max_load?);
    let (bound, eplb, balancedness) = (bound?, eplb?, balancedness?);
    let mut points: BTreeMap<u64, Point> = BTreeMap::new();
    for r in 0..t.len() {
        let needed = |column: usize, what: &str| {
            t.number(r, column)?
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| t.refuse(r, column, &format!("empty or negative ({what})")))
        };
        let s = t.required_count(r, slots)?;
        t.required_count(r, layer)?;
        let best = needed(max_load, "a load is needed")?;
        let point = points.entry(t.required_count(r, redundant)?).or_default();
        point.slots = s;
        point.layers += 1;
        point.mean += needed(balancedness, "a balancedness is needed")? * best;
        point.best += best;
        point.bound += needed(bound, "a bound is needed")?;
        point.eplb += needed(eplb, "EPLB's load is needed")?;
    }
    Ok(points)
}

/// The redundancy section: a table and a figure per table file.
pub(super) fn section(paths: &[PathBuf], page: &mut Page) -> Result<(), Error> {
    page.h2("Redundant slots", "redundancy");
    for path in paths {
        let points = read_points(path)?;
        page.raw(&format!(
            "<h3><code>{}</code></h3>\n",
            escape(&path.display().to_string())
        ));
        if points.is_empty() {
            page.paragraph("No rows: nothing to draw.");
            continue;
        }
        let rows: Vec<Vec<String>> = (points.iter())
            .map(|(redundant, p)| {
                vec![
                    redundant.to_string(),
                    p.slots.to_string(),
                    p.layers.to_string(),
                    number(p.over(p.best)),
                    number(p.over(p.bound)),
                    number(p.over(p.eplb)),
                ]
            })
            .collect();
        page.table(
            &[
                "redundant slots",
                "slots",
                "layers",
                "best plan",
                "no plan above",
                "EPLB",
            ],
            &rows,
            0,
        );
        let mut chart = Chart {
            x_label: "redundant slots".into(),
            y_label: "balancedness over layers (mean / max)".into(),
            x_integers: true,
            ..Chart::default()
        };
        let curves = [
            ("best plan found", Shape::Dot),
            ("proved upper bound", Shape::Ring),
            ("EPLB", Shape::Triangle),
        ];
        for (i, (name, shape)) in curves.into_iter().enumerate() {
            let maxima = |p: &Point| [p.best, p.bound, p.eplb][i];
            let points: Vec<(f64, f64)> = (points.iter())
                .filter_map(|(&r, p)| Some((r as f64, p.over(maxima(p))?)))
                .filter(|p| drawable(p.0) && drawable(p.1))
                .collect();
            let color = figure::palette(i);
            chart.marks.push(Mark::Points {
                color,
                shape,
                points: points.clone(),
            });
            chart.marks.push(Mark::Line { color, points });
            chart.legend.push((Key::Point(color, shape), name.into()));
        }
        page.figure(
            &figure::svg(&chart),
            "Balancedness over layers against the redundant slots: the best plan found, the \
             proved upper bound (no plan does better) and EPLB's plan.",
        );
    }
    Ok(())
}
