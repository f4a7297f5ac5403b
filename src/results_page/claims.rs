//! A `verify --out` folder on the page: the run's settings (`run.json`), the claims' table
//! (`claims.csv`: verdicts and certificate counts), and per claim its ratios against its bound
//! (`instances.csv`) and its counterexample with the command that re-checks it.
//!
//! A claim gets a figure when some instance has a ratio: each instance's ratio in file order
//! (generated, then searched), coloured by outcome, with the claim's bound as a dashed line.
//! When the bound differs between instances (Thm. 1's (1 - kappa_max)/2, ZipMoE's 3 - 1/L) the
//! figure shows ratio / bound against 1 instead, so one line serves every instance. Above
//! [`MAX_STRIP`] instances the points would blur (and bloat the page): a histogram instead.

use std::collections::BTreeMap;
use std::path::Path;

use formulations::Error;

use super::figure::{self, drawable, Chart, Key, Mark, Shape};
use super::table::Table;
use super::{escape, number, Page};
use crate::claims::{ClaimKind, Verdict};
use crate::verify::claims_csv::ClaimRow;
use crate::verify::RunSettings;

/// Most instances of a claim drawn one by one; more make a histogram.
pub const MAX_STRIP: usize = 1000;

const OUTCOMES: [&str; 7] = [
    "pass",
    "fail",
    "inconclusive",
    "measured",
    "boundary",
    "vacuous",
    "not_applicable",
];
const SOURCES: [&str; 2] = ["generated", "searched"];

/// The ratio of one instance of a claim (a line of instances.csv with a ratio).
struct Ratio {
    source: &'static str,
    outcome: &'static str,
    ratio: f64,
    bound: Option<f64>,
    /// The interval of the ratio where OPT is only bracketed.
    interval: Option<(f64, f64)>,
}

/// The rows of a `verify` run's claims.csv, by [`ClaimRow`]'s schema (a folder written before
/// some of its columns reads their defaults); a bad cell, a missing column or an empty or
/// repeated claim id is refused naming the file, the line and the column.
pub(crate) fn read_claims(path: &Path) -> Result<Vec<ClaimRow>, Error> {
    let t = Table::read(path)?;
    let claims: Vec<ClaimRow> = t.deserialize()?;
    for (r, c) in claims.iter().enumerate() {
        if c.id.is_empty() || claims[..r].iter().any(|earlier| earlier.id == c.id) {
            return Err(t.refuse(r, t.column("id")?, "empty or repeated claim id"));
        }
    }
    Ok(claims)
}

/// The ratios of instances.csv per claim id; every row's claim must be in `claims`.
fn read_ratios(path: &Path, claims: &[ClaimRow]) -> Result<BTreeMap<String, Vec<Ratio>>, Error> {
    let t = Table::read(path)?;
    let (claim, source, outcome, ratio, bound) = (
        t.column("claim")?,
        t.column("source")?,
        t.column("outcome")?,
        t.column("ratio")?,
        t.column("bound")?,
    );
    let interval = ["ratio_low", "ratio_high"].map(|c| t.column(c).ok());
    let mut by_claim: BTreeMap<String, Vec<Ratio>> = BTreeMap::new();
    for r in 0..t.len() {
        let end = |k: usize| interval[k].map_or(Ok(None), |c| t.number(r, c));
        let (low, high) = (end(0)?, end(1)?);
        let id = t.text(r, claim);
        if !claims.iter().any(|c| c.id == id) {
            return Err(t.refuse(r, claim, &format!("{id:?} is not a claim of claims.csv")));
        }
        let (source, outcome) = (
            t.one_of(r, source, &SOURCES)?,
            t.one_of(r, outcome, &OUTCOMES)?,
        );
        if let Some(value) = t.number(r, ratio)? {
            by_claim.entry(id.to_string()).or_default().push(Ratio {
                source,
                outcome,
                ratio: value,
                bound: t.number(r, bound)?,
                interval: low.zip(high),
            });
        }
    }
    Ok(by_claim)
}

/// The verify section of the page.
pub(super) fn section(dir: &Path, page: &mut Page) -> Result<(), Error> {
    let claims = read_claims(&dir.join("claims.csv"))?;
    let ratios = read_ratios(&dir.join("instances.csv"), &claims)?;
    page.h2("Claims", "claims");
    let settings = dir.join("run.json");
    if settings.exists() {
        let s: RunSettings = formulations::error::read_json(&settings)?;
        page.paragraph(&format!(
            "Run settings (<code>run.json</code>): {} claims, <code>--instances {}</code>, \
             <code>--seed {}</code>, <code>--search {}</code>, <code>--restarts {}</code>, \
             <code>--time-limit {}</code>.",
            s.claims.len(),
            s.instances,
            s.seed,
            s.search,
            s.restarts,
            s.time_limit_s.map_or("none".into(), |t| format!("{t}"))
        ));
    }
    let tally: Vec<String> = Verdict::ALL
        .iter()
        .map(|v| (v, claims.iter().filter(|c| c.verdict == *v).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{n} {}", v.as_str()))
        .collect();
    page.paragraph(&format!(
        "{} claims: {}. Only the stated ones are the papers' own; inferred claims, sanity \
         checks (true by construction) and measurements (no bound, no verdict) are moe-opt's. \
         A ratio claim's outcome rests on a certificate: a proved optimum, a proved bound on \
         OPT (passes) or a solver's incumbent (fails); the margin is the claim's signed slack, \
         below 0 exactly on a failure. The verdict is over the instances inside the run's tier \
         (`--tier`, default the paper's model); beside it each tier's verdict.",
        claims.len(),
        tally.join(", ")
    ));
    let rows: Vec<Vec<String>> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let worst = match (c.worst_ratio_low, c.worst_ratio_high) {
                (Some(lo), Some(hi)) => format!("in [{}, {}]", number(Some(lo)), number(Some(hi))),
                _ => number(c.worst_ratio),
            };
            vec![
                format!("<a href=\"#claim-{i}\">{}</a>", escape(&c.id)),
                c.kind.map_or("", ClaimKind::as_str).to_string(),
                verdict_badge(c.verdict),
                escape(&c.tiers_text()),
                c.checked.to_string(),
                c.failed.to_string(),
                format!("{} / {}", c.vacuous, c.not_applicable),
                c.inconclusive.to_string(),
                format!("{} / {} / {}", c.by_optimum, c.by_bound, c.by_incumbent),
                number(c.worst_margin),
                match c.bound_at_worst {
                    Some(b) if worst != "-" => format!("{worst} ({})", number(Some(b))),
                    _ => worst,
                },
            ]
        })
        .collect();
    page.table(
        &[
            "claim",
            "kind",
            "verdict",
            "regime / model / extension",
            "checked",
            "failed",
            "vacuous / not applicable",
            "inconclusive",
            "optimum / bound / incumbent",
            "worst margin",
            "worst ratio (bound)",
        ],
        &rows,
        3,
    );
    for (i, c) in claims.iter().enumerate() {
        claim_section(
            dir,
            page,
            i,
            c,
            ratios.get(&c.id).map_or(&[], Vec::as_slice),
        );
    }
    Ok(())
}

fn claim_section(dir: &Path, page: &mut Page, i: usize, c: &ClaimRow, ratios: &[Ratio]) {
    page.raw(&format!(
        "<section id=\"claim-{i}\">\n<h3>{} {}</h3>\n",
        escape(&c.id),
        verdict_badge(c.verdict)
    ));
    let ClaimRow {
        checked,
        failed,
        inconclusive,
        by_optimum,
        by_bound,
        by_incumbent,
        vacuous,
        not_applicable,
        bracketed,
        ..
    } = *c;
    let kind = c
        .kind
        .map_or(String::new(), |k| format!(", {}", k.as_str()));
    let mut text = format!(
        "{} ({}{kind}). Bound: {}.<br>Checked {checked} (failed {failed}), vacuous {vacuous} \
         (the bound trivial there: no evidence), not applicable {not_applicable} (outside the \
         claim's premise), inconclusive {inconclusive}; decided by a proved optimum \
         {by_optimum}, by a bound {by_bound}, by an incumbent {by_incumbent}.",
        escape(&c.place),
        escape(&c.paper),
        escape(&c.bound),
    );
    if let Some(m) = c.worst_margin {
        text.push_str(&format!(" Worst margin {}.", number(Some(m))));
    }
    if bracketed > 0 {
        // OPT only bracketed on some instances: their ratios are intervals, not numbers.
        if let Some(r) = range((c.ratio_low, c.ratio_high)) {
            text.push_str(&format!(
                " Ratios to OPT within {r} ({bracketed} of {checked} only bracketed: OPT \
                 lies between a bound and a feasible solution's value)."
            ));
        }
    } else if let Some(r) = range((c.ratio_min, c.ratio_max)) {
        text.push_str(&format!(" Ratios {r}"));
        if let (Some(p), Some(m)) = (c.ratio_p05, c.ratio_median) {
            let (p, m) = (number(Some(p)), number(Some(m)));
            text.push_str(&format!(" (5 % quantile {p}, median {m})"));
        }
        text.push('.');
    }
    if let Some(m) = range((c.measured_min, c.measured_max)) {
        text.push_str(&format!(" Measured {m}."));
    }
    page.paragraph(&text);
    if !ratios.is_empty() {
        let (chart, caption) = ratio_chart(ratios);
        page.figure(&figure::svg(&chart), &caption);
    }
    if let Some(counterexample) = &c.counterexample {
        let file = dir.join(counterexample);
        page.paragraph(&format!(
            "Counterexample <code>{}</code>{}: {}",
            escape(&file.display().to_string()),
            if file.is_file() {
                ""
            } else {
                " (not in the folder)"
            },
            escape(&c.note)
        ));
        page.raw(&format!(
            "<pre><code>{}</code></pre>\n",
            escape(&crate::verify::recheck_command(&c.id, &file))
        ));
    } else if !c.note.is_empty() {
        page.paragraph(&escape(&c.note));
    }
    page.raw("</section>\n");
}

/// The figure of a claim's ratios and its caption (HTML).
fn ratio_chart(ratios: &[Ratio]) -> (Chart, String) {
    let bounds: Vec<Option<f64>> = ratios.iter().map(|r| r.bound).collect();
    let constant = bounds
        .first()
        .copied()
        .filter(|b| bounds.iter().all(|x| x == b));
    // What is drawn per instance: the ratio, or ratio / bound when the bound varies.
    let varies = constant.is_none();
    let value = |r: &Ratio| match varies {
        true => r.bound.filter(|b| *b > 0.0).map(|b| r.ratio / b),
        false => Some(r.ratio),
    };
    let label = if varies { "ratio / bound" } else { "ratio" };
    let line = match constant {
        None => Some((1.0, "bound (= 1)".to_string())),
        Some(Some(b)) => Some((b, format!("bound {}", number(Some(b))))),
        Some(None) => None,
    };
    let drawn: Vec<(&Ratio, f64)> = ratios
        .iter()
        .filter_map(|r| value(r).filter(|v| drawable(*v)).map(|v| (r, v)))
        .collect();
    let searched = ratios.iter().filter(|r| r.source == "searched").count();
    let mut caption = format!(
        "{} per instance: {} generated, {searched} searched",
        if label == "ratio" {
            "Ratio"
        } else {
            "Ratio / bound (the bound differs between instances)"
        },
        ratios.len() - searched
    );
    if drawn.len() < ratios.len() {
        caption.push_str(&format!(
            "; {} not drawn (a ratio or bound that is not a finite number within 1e12, or a \
             bound <= 0)",
            ratios.len() - drawn.len()
        ));
    }
    let rule_color = plotters::style::RGBColor(0, 0, 0);
    let mut chart = Chart::default();
    let outcome_color = |o: &str| match o {
        "pass" => figure::palette(0),
        "fail" => figure::palette(3),
        "boundary" => figure::palette(1),
        "vacuous" => figure::palette(4),
        _ => figure::palette(7),
    };
    if drawn.len() <= MAX_STRIP {
        chart.x_label = "instance (generated, then searched)".into();
        chart.x_integers = true;
        chart.y_label = label.into();
        for outcome in OUTCOMES {
            for source in SOURCES {
                let points: Vec<(f64, f64)> = (drawn.iter().enumerate())
                    .filter(|(_, (r, _))| r.outcome == outcome && r.source == source)
                    .map(|(k, (_, v))| (k as f64, *v))
                    .collect();
                if points.is_empty() {
                    continue;
                }
                let shape = match (source, outcome) {
                    ("searched", _) => Shape::Triangle,
                    (_, "inconclusive") => Shape::Ring,
                    _ => Shape::Dot,
                };
                let color = outcome_color(outcome);
                chart.marks.push(Mark::Points {
                    color,
                    shape,
                    points,
                });
                chart
                    .legend
                    .push((Key::Point(color, shape), format!("{outcome} ({source})")));
            }
        }
        // Where OPT is only bracketed the ratio is an interval: drawn as a whisker through the
        // point (one of its ends).
        let spans: Vec<(f64, f64, f64)> = (drawn.iter().enumerate())
            .filter_map(|(k, (r, _))| {
                let (lo, hi) = r.interval?;
                let over = |x: f64| match varies {
                    true => r.bound.filter(|b| *b > 0.0).map(|b| x / b),
                    false => Some(x),
                };
                let (lo, hi) = (over(lo)?, over(hi)?);
                (drawable(lo) && drawable(hi)).then_some((k as f64, lo, hi))
            })
            .collect();
        if !spans.is_empty() {
            caption.push_str(&format!(
                "; {} only bracketed (OPT between a bound and a feasible value): their ratio is \
                 the interval drawn",
                spans.len()
            ));
            let color = figure::palette(7);
            chart.marks.push(Mark::Whiskers { color, spans });
            chart
                .legend
                .push((Key::Line(color), "ratio interval (OPT bracketed)".into()));
        }
        if let Some((y, words)) = line {
            chart.marks.push(Mark::HRule {
                color: rule_color,
                y,
            });
            chart.legend.push((Key::Dashed(rule_color), words));
        }
    } else {
        caption.push_str(&format!(
            "; more than {MAX_STRIP}: a histogram of 40 bins, failures in red"
        ));
        chart.x_label = label.into();
        chart.y_label = "instances".into();
        chart.y_from_zero = true;
        let values: Vec<f64> = drawn.iter().map(|d| d.1).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let width = if hi > lo { (hi - lo) / 40.0 } else { 1.0 };
        let bin = |v: f64| (((v - lo) / width) as usize).min(39);
        let mut all = [0u64; 40];
        let mut fails = [0u64; 40];
        for (r, v) in &drawn {
            all[bin(*v)] += 1;
            if r.outcome == "fail" {
                fails[bin(*v)] += 1;
            }
        }
        for (counts, color, words) in [
            (all, figure::palette(0), "instances"),
            (fails, figure::palette(3), "failed"),
        ] {
            let bars = (0..40)
                .filter(|&k| counts[k] > 0)
                .map(|k| {
                    let a = lo + k as f64 * width;
                    (a, a + width, counts[k] as f64)
                })
                .collect();
            chart.marks.push(Mark::Bars { color, bars });
            chart.legend.push((Key::Bar(color), words.into()));
        }
        if let Some((x, words)) = line {
            chart.marks.push(Mark::VRule {
                color: rule_color,
                x,
            });
            chart.legend.push((Key::Dashed(rule_color), words));
        }
    }
    (chart, caption)
}

/// The verdict in a coloured badge; its class is the verdict with `-` for spaces
/// (`not-witnessed`).
fn verdict_badge(verdict: Verdict) -> String {
    let verdict = verdict.as_str();
    let class = verdict.replace(' ', "-");
    format!("<span class=\"verdict {class}\">{verdict}</span>")
}

/// `lo .. hi`, when both are there.
fn range((lo, hi): (Option<f64>, Option<f64>)) -> Option<String> {
    Some(format!("{} .. {}", number(Some(lo?)), number(Some(hi?))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claims.csv of the first `report` (the columns up to `note`) reads with the later
    /// columns' defaults; a bad enum cell, a missing original column and a repeated id are
    /// refused naming the line and the column.
    #[test]
    fn an_older_claims_csv_reads_and_bad_cells_are_named() {
        let dir = std::env::temp_dir().join(format!("moe-opt-claims-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("claims.csv");
        let header = "id,paper,place,verdict,checked,failed,inconclusive,by_optimum,by_bound,\
                      by_incumbent,worst_margin,worst_ratio,bound_at_worst,ratio_min,ratio_max,\
                      ratio_p05,ratio_median,bound,measured_min,measured_max,counterexample,note";
        let row = "a,p.txt,Thm. 1,holds,3,0,0,3,0,0,0.5,0.9,0.6,0.9,1,0.9,0.95,>= 0.6,,,,";
        let read = |text: String| {
            std::fs::write(&path, text).unwrap();
            read_claims(&path)
        };
        let rows = read(format!("{header}\n{row}\n")).unwrap();
        let c = &rows[0];
        assert_eq!(
            (c.verdict, c.checked, c.worst_ratio),
            (Verdict::Holds, 3, Some(0.9))
        );
        assert_eq!(
            (c.kind, c.tiers_text(), c.vacuous, c.ratio_low),
            (None, String::new(), 0, None)
        );
        assert_eq!(c.counterexample, None);

        let refused = |text: String| read(text).unwrap_err().to_string();
        let err = refused(format!("{header},kind\n{row},stated\n{row},told\n"));
        assert!(
            err.contains("line 3: kind") && err.contains("\"told\""),
            "{err}"
        );
        let err = refused(format!(
            "{}\n{}\n",
            header.replace(",worst_ratio,", ","),
            row.replace(",0.9,0.6,", ",0.6,")
        ));
        assert!(
            err.contains("line 1") && err.contains("`worst_ratio`"),
            "{err}"
        );
        let err = refused(format!("{header}\n{row}\n{row}\n"));
        assert!(
            err.contains("line 3: id") && err.contains("repeated"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
