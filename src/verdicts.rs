//! The verdict page docs/verdicts.md, rendered from committed `verify` runs (each run's
//! claims.csv) with the very cells of `verify`'s text table ([`ClaimRow::verdict_cell`],
//! [`ClaimRow::worst_text`]): the page says what the runs say, and cannot drift from them.
//! `tests/verdicts.rs` checks the committed page against the committed runs, and reruns every
//! paper at both scales on demand (its module doc gives the command).

use std::path::Path;

use crate::claims::{Scale, Verdict};
use crate::verify::claims_csv::ClaimRow;

/// One committed run: a paper's claims at one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The paper file (`--paper`).
    pub paper: String,
    /// `--scale`.
    pub scale: Scale,
    /// Its claims.csv, in table order.
    pub rows: Vec<ClaimRow>,
}

/// The rows of a `verify` run's claims.csv, read as the report page reads them (the same
/// defaults for columns an older run lacks, the same refusals naming line and column).
pub fn read_claims(path: &Path) -> Result<Vec<ClaimRow>, formulations::Error> {
    crate::results_page::read_claims(path)
}

/// The command that makes a run (seed 0 and the scale's defaults).
pub fn command(paper: &str, scale: Scale) -> String {
    match scale {
        Scale::Small => format!("moe-opt verify --paper {paper}"),
        Scale::Paper => format!("moe-opt verify --paper {paper} --scale paper"),
    }
}

/// A markdown cell: no `|` or line break of its own.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The family at the papers' scale by its name (the words before the first colon).
fn family_name(row: &ClaimRow) -> String {
    row.family
        .split(':')
        .next()
        .unwrap_or(&row.family)
        .trim()
        .to_string()
}

/// One run's table, and below it the note of every claim whose verdict is not a plain
/// `holds`, `witnessed` or `measured` (the counterexample's, or why nothing was concluded).
fn table(run: &Run) -> String {
    let paper_scale = run.scale == Scale::Paper;
    let mut head = vec!["claim", "kind"];
    if paper_scale {
        head.push("family");
    }
    head.extend([
        "verdict",
        "checked / vacuous / not applicable / inconclusive",
        "worst ratio (bound) or measured",
        "regime / model / extension",
    ]);
    let mut text = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in &run.rows {
        let mut cells = vec![format!("`{}`", r.id), r.kind_text()];
        if paper_scale {
            cells.push(cell(&family_name(r)));
        }
        cells.extend([
            cell(&r.verdict_cell()),
            format!(
                "{} / {} / {} / {}",
                r.checked, r.vacuous, r.not_applicable, r.inconclusive
            ),
            cell(&r.worst_text()),
            r.tiers_text(),
        ]);
        text.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let notes: Vec<String> = run
        .rows
        .iter()
        .filter(|r| {
            !matches!(
                r.verdict,
                Verdict::Holds | Verdict::Witnessed | Verdict::Measured
            ) && !r.note.is_empty()
        })
        .map(|r| format!("- `{}`: {}\n", r.id, r.note.replace('\n', " ")))
        .collect();
    if !notes.is_empty() {
        text.push('\n');
        text.extend(notes);
    }
    text
}

/// docs/verdicts.md from the committed runs (small scale first, then the papers' scale, each
/// in paper order); `how` says by which command the page and the runs were made.
pub fn page(runs: &[Run], how: &str) -> String {
    let mut text = String::from(
        "# Verdicts of the papers' claims\n\n\
         <!-- Generated: do not edit. -->\n",
    );
    text.push_str(how);
    text.push_str(
        "\n\nEach table is one `verify` run's claims.csv, in the cells of `verify`'s own text \
         table. The verdict is over the instances inside the paper's model (`--tier model`); \
         the last column gives each tier's. `checked` counts the evidence (passes, fails, \
         measurements); apart from it, `vacuous` instances hold only because the claimed \
         bound is trivial there (a bound of 0, an optimum of 0), `not applicable` ones are \
         outside the claim's own premise, and `inconclusive` ones (boundary cases among \
         them) decide nothing. Where OPT is only bracketed (a bound on one side, a feasible \
         value on the other) a ratio is the interval it lies in. At the papers' scale the \
         brackets after a verdict say what certified the decided instances: a proved optimum, \
         a bound on OPT, a feasible solution's value.\n",
    );
    for (scale, heading) in [
        (
            Scale::Small,
            "At the claims' own sizes (`verify --paper P`: seed 0, 200 instances per claim, \
             three worst-case searches of 1,000 neighbours each)",
        ),
        (
            Scale::Paper,
            "At the papers' own scale (`verify --paper P --scale paper`: seed 0, 20 \
             instances per claim, no search)",
        ),
    ] {
        text.push_str(&format!("\n## {heading}\n"));
        for run in runs.iter().filter(|r| r.scale == scale) {
            text.push_str(&format!(
                "\n### `{}`\n\n`{}`\n\n",
                run.paper,
                command(&run.paper, scale)
            ));
            text.push_str(&table(run));
        }
    }
    text
}
