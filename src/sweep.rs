//! `moe-opt sweep SPEC.toml` and `moe-opt merge`: a grid of generator parameters x seeds, every
//! cell solved by a list of methods, each method rated against the cell's proved optimum.
//!
//! ## The spec
//!
//! ```toml
//! problem = "slimcaching"
//! preset = "small"          # the base generator configuration (or: config = "base.json")
//! seeds = 3                 # seeds 0, 1, 2 (or a list: seeds = [4, 7])
//! methods = ["milp", "successive-maxconv", "greedy", "lfu", "random", "u-shaped"]
//! time_limit_s = 20         # per MILP solve (default 20)
//! record_runtime = false    # true adds wall-clock seconds (the bytes then vary)
//!
//! [[axes]]
//! path = "storage.library_fraction"   # dotted path into the generator configuration
//! values = [0.1, 0.2, 0.3]
//! ```
//!
//! `problem` is `slimcaching`, `prism` or `zipmoe` (a layer's reconstruction schedule); the
//! preset, paths and methods are that problem's. `moe-opt generate PROBLEM --print-config` shows
//! the paths. A value replaces the JSON value at
//! its path; a number at a `{min, max}` range sets both ends (a fixed value). Cells are the
//! Cartesian product of the axes (the first axis varies slowest) times the seeds (fastest); a
//! cell's instance is generated from its seed, so cells that differ only in an axis value share
//! their random draws where the generator allows (paired comparisons). At most [`MAX_SEEDS`]
//! seeds and [`MAX_CELLS`] cells.
//!
//! ## Outputs (folder `--out`)
//!
//! * `sweep.json`: the spec as read, its SHA-256 and the shard; a resumed or merged run must
//!   have the same spec hash.
//! * `results.jsonl`: one line per finished cell (appended at once: an interruption loses
//!   nothing finished; `--resume` skips what is there and redoes a torn last line). At the end
//!   it is rewritten in cell order, so the bytes depend only on the spec and the shard.
//! * `results.csv`: the tidy table, one row per cell and method, columns [`Row`]'s fields in
//!   order with one column per axis (named by its path) after `seed`.
//!
//! ## Objectives
//!
//! | problem | `objective_name` | sense | `secondary_name` |
//! |---|---|---|---|
//! | slimcaching | `latency_reduction_s`: F(X) of (17) | max (ratio <= 1) | `avg_latency_s`: eq. (14) averaged |
//! | prism | `expected_remote_invocations`: proxy cost (2) | min (ratio >= 1) | `sim_mean_latency_s`: simulated mean latency (Sec. IV-C) |
//! | zipmoe | `makespan_s`: the layer's makespan | min (ratio >= 1) | `lower_bound_s`: Lemma B.3's max{I, C/L, P, Z} |
//!
//! `ratio` = objective / reference, the reference being the cell's proved optimum (MILP status
//! optimal or exhaustive search) when a method in the list proves one. Prism and ZipMoE exact
//! methods refused by their size limits (`TooLarge`) leave a row with `solver_status =
//! too_large` and no objective, so every cell has one row per method.
//!
//! No wall-clock time enters the outputs unless `record_runtime = true`. A MILP stopped by its time limit is the one source of
//! variation between machines; its row says so (`solver_status = time_limit`, ratio against a
//! bound).
//!
//! ## Shards
//!
//! `--shard i/n` (0-based) runs the cells whose index is i modulo n, so n machines each run a
//! part; `moe-opt merge DIR... --out DIR` joins their folders, refusing different spec hashes
//! and conflicting cells, and says which cells are still missing.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use formulations::Error;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::problem::RunOptions;
use crate::registry::Registry;
use crate::report::canonical_sha256;
use crate::sweepable::{Row, SweepProblem};

/// A sweep specification (TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The problem whose generator and methods are swept (its tag).
    pub problem: String,
    /// Generator preset of the base configuration (default `small`).
    #[serde(default)]
    pub preset: Option<String>,
    /// Or a generator configuration file (JSON), relative to the spec file.
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// Seeds: a count n (seeds 0..n) or a list.
    pub seeds: Seeds,
    /// Methods run on every cell (command-line names).
    pub methods: Vec<String>,
    /// MILP time limit per solve, seconds.
    #[serde(default = "default_time_limit")]
    pub time_limit_s: f64,
    /// Also record each method's wall-clock seconds (column `runtime_s`; for runtime figures
    /// like paper 000's Figs. 9-10). Off by default: with it the outputs are no longer the same
    /// bytes from run to run.
    #[serde(default)]
    pub record_runtime: bool,
    /// The grid's axes.
    #[serde(default)]
    pub axes: Vec<Axis>,
}

/// Most seeds of a sweep (`seeds = n` or a list): each seed is a cell of every grid point.
pub const MAX_SEEDS: u64 = 100_000;

/// The columns of `results.csv` after `cell, seed` and the axes' paths (docs/sweeps-and-reports.md).
pub const RESULT_COLUMNS: [&str; 13] = [
    "instance_sha256",
    "method",
    "objective",
    "objective_name",
    "ratio",
    "reference_kind",
    "reference",
    "feasible",
    "solver_status",
    "gap",
    "secondary",
    "secondary_name",
    "runtime_s",
];

/// Most cells of a sweep (grid points x seeds): the cells are listed, and checked, before any
/// runs.
pub const MAX_CELLS: u64 = 1_000_000;

fn default_time_limit() -> f64 {
    20.0
}

/// The seeds of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Seeds {
    /// Seeds 0..n.
    Count(u64),
    /// These seeds.
    List(Vec<u64>),
}

/// One axis of the grid: a dotted path into the generator configuration and its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// Dotted path, e.g. `storage.library_fraction`.
    pub path: String,
    /// Values, in order.
    pub values: Vec<Value>,
}

/// One cell of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Position in the grid (axes slowest first, seeds fastest).
    pub index: u64,
    /// Generator seed.
    pub seed: u64,
    /// The value of each axis, in axis order.
    pub axes: Vec<Value>,
}

/// A finished cell: a line of results.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// The cell.
    pub cell: Cell,
    /// One row per method, in the spec's method order.
    pub rows: Vec<Row>,
}

/// Which part of the grid a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This part, 0-based.
    pub index: u64,
    /// Number of parts.
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `i/n` with i < n.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--shard must be i/n with 0 <= i < n, got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The header of an output folder (`sweep.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepHeader {
    /// moe-opt version that wrote it.
    pub moe_opt_version: String,
    /// SHA-256 of the spec (canonical JSON of the parsed spec, base configuration included).
    pub spec_sha256: String,
    /// The spec.
    pub spec: SweepSpec,
    /// The base generator configuration the axes modify.
    pub base_config: Value,
    /// The part of the grid (absent: all of it, e.g. after a merge).
    pub shard: Option<Shard>,
    /// Cells in the whole grid.
    pub cells: u64,
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Parallel workers.
    pub jobs: usize,
    /// Output folder.
    pub out: PathBuf,
    /// Continue from `out/results.jsonl`.
    pub resume: bool,
    /// Only this part of the grid.
    pub shard: Option<Shard>,
}

/// Reads a spec file and its base configuration; errors name the file and field.
pub fn load_spec(path: &Path, registry: &Registry) -> Result<(SweepSpec, Value), Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let spec: SweepSpec = toml::from_str(&text).map_err(|e| Error::Invalid {
        path: path.to_path_buf(),
        field: "spec".into(),
        reason: e.to_string().trim().replace('\n', " "),
    })?;
    let invalid = |field: &str, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field: field.into(),
        reason,
    };
    if spec.methods.is_empty() {
        return Err(invalid("methods", "must name at least one method".into()));
    }
    if !(spec.time_limit_s.is_finite() && spec.time_limit_s > 0.0) {
        return Err(invalid(
            "time_limit_s",
            format!(
                "must be a positive number of seconds, got {}",
                spec.time_limit_s
            ),
        ));
    }
    if matches!(spec.seeds, Seeds::Count(0))
        || matches!(&spec.seeds, Seeds::List(l) if l.is_empty())
    {
        return Err(invalid("seeds", "must give at least one seed".into()));
    }
    let seeds = match &spec.seeds {
        Seeds::Count(n) => *n,
        Seeds::List(l) => l.len() as u64,
    };
    if seeds > MAX_SEEDS {
        return Err(invalid(
            "seeds",
            formulations::error::exceeds("seeds", seeds, MAX_SEEDS, "moe_opt::sweep::MAX_SEEDS"),
        ));
    }
    let mut grid = seeds;
    for (i, axis) in spec.axes.iter().enumerate() {
        if axis.values.is_empty() {
            return Err(invalid(&format!("axes[{i}].values"), "is empty".into()));
        }
        grid = grid
            .checked_mul(axis.values.len() as u64)
            .filter(|&g| g <= MAX_CELLS)
            .ok_or_else(|| {
                invalid(
                    "axes",
                    format!(
                        "the grid through axes[{i}] times the seeds has more cells than the \
                         limit of {MAX_CELLS} (moe_opt::sweep::MAX_CELLS)"
                    ),
                )
            })?;
    }
    if spec.preset.is_some() && spec.config.is_some() {
        return Err(invalid(
            "config",
            "give either preset or config, not both".into(),
        ));
    }
    let base = match &spec.config {
        Some(file) => {
            let file = path.parent().unwrap_or(Path::new(".")).join(file);
            formulations::error::read_json::<Value>(&file)?
        }
        None => problem_of(registry, &spec.problem)
            .map_err(|r| invalid("problem", r))?
            .base_config(spec.preset.as_deref().unwrap_or("small"))
            .map_err(|r| invalid("preset", r))?,
    };
    // Every cell's configuration must be valid: checked before anything runs.
    for cell in cells(&spec) {
        let config = cell_config(&spec, &base, &cell).map_err(|(f, r)| invalid(&f, r))?;
        problem_of(registry, &spec.problem)
            .map_err(|r| invalid("problem", r))?
            .check_config(&config, &spec.methods)
            .map_err(|r| {
                invalid(
                    &format!("cell {} ({})", cell.index, describe(&spec, &cell)),
                    r,
                )
            })?;
    }
    Ok((spec, base))
}

/// Every cell of the grid, in order.
pub fn cells(spec: &SweepSpec) -> Vec<Cell> {
    let seeds: Vec<u64> = match &spec.seeds {
        Seeds::Count(n) => (0..*n).collect(),
        Seeds::List(l) => l.clone(),
    };
    let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
    for axis in &spec.axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                axis.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(v.clone());
                    c
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for combo in combos {
        for &seed in &seeds {
            out.push(Cell {
                index: out.len() as u64,
                seed,
                axes: combo.clone(),
            });
        }
    }
    out
}

fn describe(spec: &SweepSpec, cell: &Cell) -> String {
    let mut parts: Vec<String> = spec
        .axes
        .iter()
        .zip(&cell.axes)
        .map(|(a, v)| format!("{} = {v}", a.path))
        .collect();
    parts.push(format!("seed = {}", cell.seed));
    parts.join(", ")
}

/// The cell's generator configuration: the base with each axis value put at its path.
fn cell_config(spec: &SweepSpec, base: &Value, cell: &Cell) -> Result<Value, (String, String)> {
    let mut config = base.clone();
    for (i, (axis, value)) in spec.axes.iter().zip(&cell.axes).enumerate() {
        let field = format!("axes[{i}].path");
        let mut at = &mut config;
        for key in axis.path.split('.') {
            at = at
                .as_object_mut()
                .and_then(|o| o.get_mut(key))
                .ok_or_else(|| {
                    (
                        field.clone(),
                        format!(
                            "{:?} is not a field of the generator configuration \
                             (see `moe-opt generate {} --print-config`)",
                            axis.path, spec.problem
                        ),
                    )
                })?;
        }
        // A number at a {min, max} range fixes both ends.
        match at {
            Value::Object(o)
                if o.contains_key("min") && o.contains_key("max") && value.is_number() =>
            {
                o.insert("min".into(), value.clone());
                o.insert("max".into(), value.clone());
            }
            _ => *at = value.clone(),
        }
    }
    Ok(config)
}

/// The sweep adapter of the problem tagged `tag`.
fn problem_of(registry: &Registry, tag: &str) -> Result<Box<dyn SweepProblem>, String> {
    registry
        .find(tag)
        .map_err(|_| {
            format!(
                "unknown problem `{tag}`; expected one of: {}",
                registry.tags().join(", ")
            )
        })?
        .sweep()
        .ok_or_else(|| format!("sweeps of {tag} are not supported yet"))
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The header of a spec and a shard.
pub fn header(spec: &SweepSpec, base: &Value, shard: Option<Shard>) -> SweepHeader {
    SweepHeader {
        moe_opt_version: crate::report::VERSION.into(),
        spec_sha256: canonical_sha256(&(spec, base)),
        spec: spec.clone(),
        base_config: base.clone(),
        shard,
        cells: cells(spec).len() as u64,
    }
}

/// Reads results.jsonl; a torn last line (an interrupted append) is dropped.
fn read_results(path: &Path) -> Result<BTreeMap<u64, CellResult>, Error> {
    let mut done = BTreeMap::new();
    if !path.exists() {
        return Ok(done);
    }
    let reader = BufReader::new(File::open(path).map_err(io_err(path))?);
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io_err(path))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<CellResult>(&line) {
            Ok(r) => {
                done.insert(r.cell.index, r);
            }
            Err(e) if e.is_eof() => {}
            Err(e) => {
                return Err(Error::Json {
                    path: path.to_path_buf(),
                    line: i + 1,
                    column: e.column(),
                    message: e.to_string(),
                })
            }
        }
    }
    Ok(done)
}

/// Runs (or resumes) a sweep; returns the finished cells of this shard, in order.
pub fn run(
    spec: &SweepSpec,
    base: &Value,
    options: &SweepOptions,
    registry: &Registry,
) -> Result<Vec<CellResult>, Error> {
    let out = &options.out;
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let head = header(spec, base, options.shard);
    let head_path = out.join("sweep.json");
    if options.resume && head_path.exists() {
        let old: SweepHeader = formulations::error::read_json(&head_path)?;
        if old.spec_sha256 != head.spec_sha256 || old.shard != head.shard {
            return Err(Error::Invalid {
                path: head_path,
                field: "spec_sha256".into(),
                reason: "the folder holds a different spec or shard: resume with the same ones, \
                         or choose another --out"
                    .into(),
            });
        }
    }
    let text = serde_json::to_string_pretty(&head).expect("headers serialise") + "\n";
    std::fs::write(&head_path, text).map_err(io_err(&head_path))?;

    let results_path = out.join("results.jsonl");
    let mut done = if options.resume {
        read_results(&results_path)?
    } else {
        BTreeMap::new()
    };
    // Start the file afresh from what was read (drops a torn last line).
    let mut file = File::create(&results_path).map_err(io_err(&results_path))?;
    for r in done.values() {
        writeln!(
            file,
            "{}",
            serde_json::to_string(r).expect("results serialise")
        )
        .map_err(io_err(&results_path))?;
    }
    drop(file);
    let file = Mutex::new(
        OpenOptions::new()
            .append(true)
            .open(&results_path)
            .map_err(io_err(&results_path))?,
    );

    let todo: Vec<Cell> = cells(spec)
        .into_iter()
        .filter(|c| options.shard.is_none_or(|s| c.index % s.count == s.index))
        .filter(|c| !done.contains_key(&c.index))
        .collect();
    let problem = problem_of(registry, &spec.problem).map_err(|reason| Error::Invalid {
        path: "<sweep spec>".into(),
        field: "problem".into(),
        reason,
    })?;
    let run_options = RunOptions {
        solve: formulations::milp::SolveOptions {
            time_limit_s: Some(spec.time_limit_s),
            ..Default::default()
        },
        seed: 0,
    };
    let bar = crate::progress::Progress::new(todo.len() as u64, "sweep cells");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()
        .map_err(|e| Error::Solver(format!("thread pool: {e}")))?;
    let fresh: Vec<Result<CellResult, Error>> = pool.install(|| {
        todo.par_iter()
            .map(|cell| {
                let config =
                    cell_config(spec, base, cell).map_err(|(field, reason)| Error::Invalid {
                        path: "<spec>".into(),
                        field,
                        reason,
                    })?;
                let run_options = RunOptions {
                    seed: cell.seed,
                    ..run_options.clone()
                };
                let mut rows = problem.run_cell(&config, &spec.methods, &run_options)?;
                for r in &mut rows {
                    r.cell = cell.index;
                    if !spec.record_runtime {
                        r.runtime_s = None;
                    }
                }
                let result = CellResult {
                    cell: cell.clone(),
                    rows,
                };
                let line = serde_json::to_string(&result).expect("results serialise");
                let mut f = file.lock().expect("results lock");
                writeln!(f, "{line}")
                    .and_then(|_| f.flush())
                    .map_err(io_err(&results_path))?;
                drop(f);
                bar.inc();
                Ok(result)
            })
            .collect()
    });
    drop(bar);
    for r in fresh {
        let r = r?;
        done.insert(r.cell.index, r);
    }
    write_outputs(out, spec, &done)?;
    Ok(done.into_values().collect())
}

/// Rewrites results.jsonl in cell order and writes results.csv.
fn write_outputs(
    out: &Path,
    spec: &SweepSpec,
    done: &BTreeMap<u64, CellResult>,
) -> Result<(), Error> {
    let path = out.join("results.jsonl");
    let tmp = out.join("results.jsonl.tmp");
    let mut text = String::new();
    for r in done.values() {
        text.push_str(&serde_json::to_string(r).expect("results serialise"));
        text.push('\n');
    }
    std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io_err(&path))?;

    let path = out.join("results.csv");
    let csv_err = |e: csv::Error| Error::Io {
        path: path.clone(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut w = csv::Writer::from_path(&path).map_err(csv_err)?;
    let mut header: Vec<String> = vec!["cell".into(), "seed".into()];
    header.extend(spec.axes.iter().map(|a| a.path.clone()));
    header.extend(RESULT_COLUMNS.map(String::from));
    w.write_record(&header).map_err(csv_err)?;
    let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
    for result in done.values() {
        for r in &result.rows {
            let mut row = vec![r.cell.to_string(), r.seed.to_string()];
            row.extend(result.cell.axes.iter().map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }));
            row.extend([
                r.instance_sha256.clone(),
                r.method.clone(),
                num(r.objective),
                r.objective_name.clone(),
                num(r.ratio),
                r.reference_kind.clone(),
                num(r.reference),
                r.feasible.map_or(String::new(), |b| b.to_string()),
                r.solver_status.clone().unwrap_or_default(),
                num(r.gap),
                num(r.secondary),
                r.secondary_name.clone(),
                num(r.runtime_s),
            ]);
            w.write_record(&row).map_err(csv_err)?;
        }
    }
    w.flush().map_err(io_err(&path))?;
    Ok(())
}

/// One method's line of a sweep's summary: `sweep`'s closing table and `report`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSummary {
    /// Method name.
    pub method: String,
    /// Cells with a row of the method.
    pub cells: usize,
    /// Rows whose solution is feasible, of the rows that say.
    pub feasible: (usize, usize),
    /// Mean ratio over the rows with one.
    pub mean_ratio: Option<f64>,
    /// The ratio farthest from 1 (the lowest when maximising, the highest when minimising):
    /// the method's worst cell, whichever the problem's sense.
    pub worst_ratio: Option<f64>,
    /// How many rows ended with each solver status (exact methods only).
    pub statuses: BTreeMap<String, usize>,
}

impl MethodSummary {
    /// The statuses as `optimal 10, time_limit 2`, `-` for none.
    pub fn statuses_text(&self) -> String {
        if self.statuses.is_empty() {
            return "-".into();
        }
        (self.statuses.iter())
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The line's cells under [`SUMMARY_HEADERS`]: `text` prints the method and the statuses
    /// for the output (escaped for a page), `num` a ratio.
    pub fn cells(
        &self,
        text: impl Fn(&str) -> String,
        num: impl Fn(Option<f64>) -> String,
    ) -> Vec<String> {
        vec![
            text(&self.method),
            self.cells.to_string(),
            format!("{} of {}", self.feasible.0, self.feasible.1),
            num(self.mean_ratio),
            num(self.worst_ratio),
            text(&self.statuses_text()),
        ]
    }
}

/// The columns of the summary's table, `sweep`'s and `report`'s ([`MethodSummary::cells`]).
pub const SUMMARY_HEADERS: [&str; 6] = [
    "method",
    "cells",
    "feasible",
    "mean ratio",
    "worst ratio",
    "solver statuses",
];

/// The summary per method of a sweep's rows, methods in the order they first appear.
pub fn summarize<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<MethodSummary> {
    let mut out: Vec<(MethodSummary, std::collections::BTreeSet<u64>, Vec<f64>)> = Vec::new();
    for r in rows {
        let k = match out.iter().position(|(m, _, _)| m.method == r.method) {
            Some(k) => k,
            None => {
                out.push((
                    MethodSummary {
                        method: r.method.clone(),
                        cells: 0,
                        feasible: (0, 0),
                        mean_ratio: None,
                        worst_ratio: None,
                        statuses: BTreeMap::new(),
                    },
                    Default::default(),
                    Vec::new(),
                ));
                out.len() - 1
            }
        };
        let (m, cells, ratios) = &mut out[k];
        cells.insert(r.cell);
        if let Some(f) = r.feasible {
            m.feasible.0 += usize::from(f);
            m.feasible.1 += 1;
        }
        ratios.extend(r.ratio.filter(|x| x.is_finite()));
        if let Some(s) = &r.solver_status {
            *m.statuses.entry(s.clone()).or_default() += 1;
        }
    }
    (out.into_iter())
        .map(|(mut m, cells, ratios)| {
            m.cells = cells.len();
            if !ratios.is_empty() {
                m.mean_ratio = Some(ratios.iter().sum::<f64>() / ratios.len() as f64);
                m.worst_ratio = ratios
                    .iter()
                    .copied()
                    .max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()));
            }
            m
        })
        .collect()
}

/// The summary as the command line's table.
pub fn summary_text(summary: &[MethodSummary]) -> String {
    let num = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.4}"));
    let rows: Vec<Vec<String>> = (summary.iter())
        .map(|m| m.cells(str::to_string, num))
        .collect();
    crate::render::table(&SUMMARY_HEADERS, &rows, 1)
}

/// What a merge found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeReport {
    /// Cells in the grid.
    pub cells: u64,
    /// Cells present in the merged folder.
    pub present: u64,
    /// Indices of the cells no input holds.
    pub missing: Vec<u64>,
}

/// Joins the folders of several shards (or partial runs) of one spec into `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<MergeReport, Error> {
    let mut head: Option<(PathBuf, SweepHeader)> = None;
    let mut all: BTreeMap<u64, CellResult> = BTreeMap::new();
    let mut from: BTreeMap<u64, PathBuf> = BTreeMap::new();
    for dir in inputs {
        let path = dir.join("sweep.json");
        let h: SweepHeader = formulations::error::read_json(&path)?;
        if let Some((first, h0)) = &head {
            if h0.spec_sha256 != h.spec_sha256 {
                return Err(Error::Invalid {
                    path,
                    field: "spec_sha256".into(),
                    reason: format!(
                        "{} differs from {}: the folders come from different specs",
                        h.spec_sha256,
                        first.join("sweep.json").display()
                    ),
                });
            }
        } else {
            head = Some((dir.clone(), h));
        }
        for (index, r) in read_results(&dir.join("results.jsonl"))? {
            if let Some(prev) = all.get(&index) {
                if prev != &r {
                    return Err(Error::Invalid {
                        path: dir.join("results.jsonl"),
                        field: format!("cell {index}"),
                        reason: format!(
                            "differs from the same cell in {}",
                            from[&index].join("results.jsonl").display()
                        ),
                    });
                }
            }
            from.insert(index, dir.clone());
            all.insert(index, r);
        }
    }
    let Some((_, mut h)) = head else {
        return Err(Error::Invalid {
            path: out.to_path_buf(),
            field: "inputs".into(),
            reason: "merge needs at least one folder".into(),
        });
    };
    h.shard = None;
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let head_path = out.join("sweep.json");
    let text = serde_json::to_string_pretty(&h).expect("headers serialise") + "\n";
    std::fs::write(&head_path, text).map_err(io_err(&head_path))?;
    write_outputs(out, &h.spec, &all)?;
    let missing = (0..h.cells).filter(|i| !all.contains_key(i)).collect();
    Ok(MergeReport {
        cells: h.cells,
        present: all.len() as u64,
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cell: u64, method: &str, ratio: Option<f64>, status: Option<&str>) -> Row {
        Row {
            cell,
            seed: cell,
            instance_sha256: String::new(),
            method: method.into(),
            objective: ratio,
            objective_name: "makespan_s".into(),
            ratio,
            reference_kind: "optimum".into(),
            reference: Some(1.0),
            feasible: ratio.map(|_| true),
            solver_status: status.map(String::from),
            gap: None,
            secondary: None,
            secondary_name: String::new(),
            runtime_s: None,
        }
    }

    #[test]
    fn the_worst_ratio_is_the_farthest_from_1_whichever_the_sense() {
        let rows = [
            row(0, "milp", Some(1.0), Some("optimal")),
            row(0, "fifo", Some(1.5), None),
            row(1, "milp", None, Some("too_large")),
            row(1, "fifo", Some(1.1), None),
            // A maximisation's ratios: below 1.
            row(0, "greedy", Some(0.7), None),
            row(1, "greedy", Some(0.95), None),
        ];
        let s = summarize(&rows);
        let names: Vec<&str> = s.iter().map(|m| m.method.as_str()).collect();
        assert_eq!(names, ["milp", "fifo", "greedy"]);
        assert_eq!((s[0].cells, s[0].feasible), (2, (1, 1)));
        assert_eq!(s[0].statuses_text(), "optimal 1, too_large 1");
        assert_eq!(s[1].worst_ratio, Some(1.5));
        assert!((s[1].mean_ratio.unwrap() - 1.3).abs() < 1e-12);
        assert_eq!(
            (s[2].worst_ratio, s[2].statuses_text()),
            (Some(0.7), "-".into())
        );
    }
}
