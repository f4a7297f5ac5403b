//! A solver-independent MILP: each problem's `milp.rs` builds one as a pure function of the
//! instance, [`Milp::to_lp`] prints it in CPLEX LP format for any other solver, and
//! [`Milp::solve`] solves it with HiGHS through good_lp.
//!
//! Solving goes through good_lp's modelling layer, then takes the raw HiGHS model
//! (`into_inner`) to set the options, pass a MIP start, and read what good_lp does not expose:
//! the MIP dual bound and gap (see ../shared/SOLVER-NOTES.md). good_lp drops the objective's
//! constant, so the objective is re-evaluated on the returned values and the constant is added
//! to the bound. The absolute MIP gap is set to 0 so that only `mip_rel_gap` can stop the
//! search early; a solve is called [`MilpStatus::Optimal`] only when HiGHS reports optimality
//! and the gap is at most [`PROVED_GAP`]. Models should be scaled so that objectives of
//! interest are at least about 1 (the gap is absolute below 1).
//!
//! Time limits: the limit counts from [`SolveOptions::started`] (the start of the method, so a
//! heuristic's warm start and the model's building count) and covers building, solving and
//! reading the result. Building checks it; HiGHS gets what is left as its `time_limit`. When it
//! runs out before HiGHS starts, or before HiGHS has read the MIP start, the status is
//! `time_limit`, the incumbent is the MIP start (if any) and there is no bound
//! ([`MilpSolution::note`] says so). HiGHS checks its limit in presolve and in the search but
//! not in the setup that follows presolve (clique partition of the objective, propagation):
//! on the SlimCaching `paper` preset (1.5 million nonzeros) that setup took 12-17 s, so for
//! models of more than [`LARGE_NONZEROS`] nonzeros under a limit presolve and symmetry
//! detection are off (and the feasibility jump heuristic, whose effort limit ignores time, when
//! a MIP start is given).

use std::time::Instant;

use good_lp::{variable, Expression, ProblemVariables, SolverModel, Variable};
use serde::Serialize;

use crate::error::Error;

/// Largest gap (see [`MilpSolution::gap`]) still called optimal.
pub const PROVED_GAP: f64 = 1e-9;

/// Nonzeros above which a time-limited solve turns off HiGHS's steps that ignore the limit
/// (module doc).
pub const LARGE_NONZEROS: usize = 500_000;

/// Largest violation (HiGHS's feasibility tolerance) with which a MIP start counts as a
/// feasible incumbent.
const START_TOLERANCE: f64 = 1e-6;

/// A variable of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarId(pub usize);

/// Optimisation direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sense {
    /// Maximise the objective.
    Maximize,
    /// Minimise the objective.
    Minimize,
}

#[derive(Debug, Clone, PartialEq)]
struct VarDef {
    name: String,
    lower: f64,
    upper: f64,
    integer: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    terms: Vec<(VarId, f64)>,
    lower: f64,
    upper: f64,
}

/// A mixed-integer linear program: named variables with bounds and integrality, ranged rows
/// `lower <= sum a_j x_j <= upper`, and a linear objective with a constant.
#[derive(Debug, Clone, PartialEq)]
pub struct Milp {
    name: String,
    objective_name: String,
    sense: Sense,
    constant: f64,
    objective: Vec<(VarId, f64)>,
    vars: Vec<VarDef>,
    rows: Vec<Row>,
}

/// Most variables of an exact model by default (the memory ceiling of the exact methods that
/// estimate their size before building, e.g. SlimCaching's P1): `write-lp` takes about 750
/// bytes a variable (12 GB at the limit) and a solve more. SlimCaching's `paper` preset has
/// 350,000; the imports of the real count files up to 6.6 million (estimated 8.6 million, 5 GB).
pub const MAX_MILP_VARIABLES: u64 = 16_000_000;

fn is_default_ceiling(n: &u64) -> bool {
    *n == MAX_MILP_VARIABLES
}

/// Options of one solve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolveOptions {
    /// Wall-clock limit, seconds (`None`: no limit), counted from `started`: it covers
    /// building the model, solving and reading the result (module doc: time limits).
    pub time_limit_s: Option<f64>,
    /// HiGHS `mip_rel_gap`; 0 asks for a proved optimum.
    pub mip_rel_gap: f64,
    /// HiGHS `threads`; keep 1 and run independent solves in parallel instead.
    pub threads: u32,
    /// When the limit's clock started (`None`: when [`Milp::solve`] is called); see
    /// [`SolveOptions::started_now`].
    #[serde(skip)]
    pub started: Option<Instant>,
    /// The most variables a model may have ([`MAX_MILP_VARIABLES`] by default;
    /// `--max-milp-variables` raises it for a machine with the memory).
    #[serde(skip_serializing_if = "is_default_ceiling")]
    pub max_variables: u64,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            time_limit_s: None,
            mip_rel_gap: 0.0,
            threads: 1,
            started: None,
            max_variables: MAX_MILP_VARIABLES,
        }
    }
}

impl SolveOptions {
    /// These options with the limit's clock started now: a method calls it when it starts, so
    /// that its warm start and its model's building count against the limit.
    pub fn started_now(&self) -> Self {
        SolveOptions {
            started: Some(Instant::now()),
            ..self.clone()
        }
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MilpStatus {
    /// Proved optimal: HiGHS reports optimality and the gap is at most [`PROVED_GAP`].
    Optimal,
    /// Stopped by `mip_rel_gap` with a positive gap.
    GapLimit,
    /// Stopped by the time limit (or another HiGHS limit); see the incumbent and bound.
    TimeLimit,
    /// No feasible solution exists.
    Infeasible,
    /// The objective is unbounded.
    Unbounded,
}

impl MilpStatus {
    /// The status as written in JSON and CSV (`optimal`, `gap_limit`, `time_limit`, ...).
    pub fn name(self) -> &'static str {
        match self {
            MilpStatus::Optimal => "optimal",
            MilpStatus::GapLimit => "gap_limit",
            MilpStatus::TimeLimit => "time_limit",
            MilpStatus::Infeasible => "infeasible",
            MilpStatus::Unbounded => "unbounded",
        }
    }
}

impl std::fmt::Display for MilpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MilpStatus::Optimal => "optimal",
            MilpStatus::GapLimit => "gap limit",
            MilpStatus::TimeLimit => "time limit",
            MilpStatus::Infeasible => "infeasible",
            MilpStatus::Unbounded => "unbounded",
        })
    }
}

/// The outcome of a solve.
#[derive(Debug, Clone, PartialEq)]
pub struct MilpSolution {
    /// How the solve ended.
    pub status: MilpStatus,
    /// Objective of the incumbent (constant included), if one was found.
    pub objective: Option<f64>,
    /// Best bound on the optimum (constant included), if HiGHS has one.
    pub best_bound: Option<f64>,
    /// Gap |bound - objective| / max(1, |objective|), in the model's own units, if both
    /// exist: relative for objectives above 1 and absolute below, so that an optimum of 0
    /// recomputed with a rounding residue of 1e-14 still counts as proved.
    pub gap: Option<f64>,
    /// Wall-clock seconds from the limit's start ([`SolveOptions::started`]) to the result:
    /// building and solving.
    pub solve_time_s: f64,
    /// Variable values of the incumbent, indexed by [`VarId`].
    pub values: Option<Vec<f64>>,
    /// Why the incumbent is the MIP start and there is no bound, when the time limit ran out
    /// before HiGHS had the model or the start.
    pub note: Option<String>,
}

impl MilpSolution {
    /// True when the objective is a proved optimum.
    pub fn is_optimal(&self) -> bool {
        self.status == MilpStatus::Optimal
    }
}

impl Milp {
    /// An empty model.
    pub fn new(name: impl Into<String>, sense: Sense) -> Self {
        Milp {
            name: name.into(),
            objective_name: "obj".into(),
            sense,
            constant: 0.0,
            objective: Vec::new(),
            vars: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Adds a continuous variable in [lower, upper].
    pub fn continuous(&mut self, name: impl Into<String>, lower: f64, upper: f64) -> VarId {
        self.push_var(name.into(), lower, upper, false)
    }

    /// Adds a binary variable.
    pub fn binary(&mut self, name: impl Into<String>) -> VarId {
        self.push_var(name.into(), 0.0, 1.0, true)
    }

    /// Adds an integer variable in [lower, upper].
    pub fn integer(&mut self, name: impl Into<String>, lower: f64, upper: f64) -> VarId {
        self.push_var(name.into(), lower, upper, true)
    }

    fn push_var(&mut self, name: String, lower: f64, upper: f64, integer: bool) -> VarId {
        self.vars.push(VarDef {
            name,
            lower,
            upper,
            integer,
        });
        VarId(self.vars.len() - 1)
    }

    /// Fixes a variable's bounds to `value`.
    pub fn fix(&mut self, v: VarId, value: f64) {
        self.vars[v.0].lower = value;
        self.vars[v.0].upper = value;
    }

    /// Adds the row `lower <= sum terms <= upper` (use infinities for one-sided rows).
    pub fn row(
        &mut self,
        name: impl Into<String>,
        terms: Vec<(VarId, f64)>,
        lower: f64,
        upper: f64,
    ) {
        self.rows.push(Row {
            name: name.into(),
            terms,
            lower,
            upper,
        });
    }

    /// Adds `objective += coefficient * v`.
    pub fn add_objective(&mut self, v: VarId, coefficient: f64) {
        if coefficient != 0.0 {
            self.objective.push((v, coefficient));
        }
    }

    /// Adds a constant to the objective.
    pub fn add_constant(&mut self, c: f64) {
        self.constant += c;
    }

    /// Names the objective (`obj` by default) in the LP file: the name states its unit where
    /// it has one (`latency_reduction_ms`, `makespan_s`).
    pub fn set_objective_name(&mut self, name: impl Into<String>) {
        self.objective_name = name.into();
    }

    /// Multiplies the objective, constant included, by `factor` > 0: the same optimal points,
    /// the objective in another unit (a model solved in scaled units, written in seconds).
    pub fn scale_objective(&mut self, factor: f64) {
        for (_, c) in &mut self.objective {
            *c *= factor;
        }
        self.constant *= factor;
    }

    /// Number of variables.
    pub fn num_vars(&self) -> usize {
        self.vars.len()
    }

    /// Number of integer variables.
    pub fn num_integers(&self) -> usize {
        self.vars.iter().filter(|v| v.integer).count()
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.rows.len()
    }

    /// Number of nonzero coefficients of the rows.
    pub fn num_nonzeros(&self) -> usize {
        self.rows.iter().map(|r| r.terms.len()).sum()
    }

    /// The objective (constant included) at the given values.
    pub fn objective_at(&self, values: &[f64]) -> f64 {
        self.constant
            + self
                .objective
                .iter()
                .map(|&(v, c)| c * values[v.0])
                .sum::<f64>()
    }

    /// Largest violation of any row or bound at the given values (0 when feasible).
    pub fn max_violation(&self, values: &[f64]) -> f64 {
        let rows = self.rows.iter().map(|r| {
            let a: f64 = r.terms.iter().map(|&(v, c)| c * values[v.0]).sum();
            (r.lower - a).max(a - r.upper).max(0.0)
        });
        let bounds = self.vars.iter().zip(values).map(|(d, &x)| {
            let integrality = if d.integer {
                (x - x.round()).abs()
            } else {
                0.0
            };
            (d.lower - x).max(x - d.upper).max(integrality).max(0.0)
        });
        rows.chain(bounds).fold(0.0, f64::max)
    }

    /// The model in CPLEX LP format. The objective constant, which LP readers treat
    /// differently, becomes the coefficient of a variable `obj_constant` fixed to 1. A
    /// variable's repeated terms are written once, summed: HiGHS 1.15's LP reader sums them in
    /// a row but keeps only the last in the objective (`x + 3 x` read as `3 x`).
    pub fn to_lp(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(out, "\\ {}", self.name);
        let _ = writeln!(
            out,
            "\\ {} variables ({} integer), {} rows",
            self.vars.len(),
            self.num_integers(),
            self.rows.len()
        );
        out.push_str(match self.sense {
            Sense::Maximize => "Maximize\n",
            Sense::Minimize => "Minimize\n",
        });
        let mut objective: Vec<(String, f64)> = merged(&self.objective)
            .into_iter()
            .map(|(v, c)| (self.vars[v.0].name.clone(), c))
            .collect();
        if self.constant != 0.0 {
            objective.push(("obj_constant".into(), self.constant));
        }
        write_terms(&mut out, &format!(" {}:", self.objective_name), &objective);
        out.push_str("Subject To\n");
        for r in &self.rows {
            let terms: Vec<(String, f64)> = merged(&r.terms)
                .into_iter()
                .map(|(v, c)| (self.vars[v.0].name.clone(), c))
                .collect();
            let mut emit = |suffix: &str, op: &str, rhs: f64| {
                write_terms(&mut out, &format!(" {}{suffix}:", r.name), &terms);
                let _ = writeln!(out, "   {op} {}", number(rhs));
            };
            if r.lower == r.upper {
                emit("", "=", r.lower);
            } else {
                match (r.lower.is_finite(), r.upper.is_finite()) {
                    (true, true) => {
                        emit("_lo", ">=", r.lower);
                        emit("_up", "<=", r.upper);
                    }
                    (true, false) => emit("", ">=", r.lower),
                    (false, true) => emit("", "<=", r.upper),
                    (false, false) => {}
                }
            }
        }
        out.push_str("Bounds\n");
        for d in &self.vars {
            let binary = d.integer && d.lower == 0.0 && d.upper == 1.0;
            if binary || (d.lower == 0.0 && d.upper == f64::INFINITY) {
                continue;
            }
            if d.lower == d.upper {
                let _ = writeln!(out, " {} = {}", d.name, number(d.lower));
            } else if d.lower == f64::NEG_INFINITY && d.upper == f64::INFINITY {
                let _ = writeln!(out, " {} free", d.name);
            } else {
                let lower = if d.lower.is_finite() {
                    number(d.lower)
                } else {
                    "-inf".into()
                };
                let upper = if d.upper.is_finite() {
                    number(d.upper)
                } else {
                    "+inf".into()
                };
                let _ = writeln!(out, " {lower} <= {} <= {upper}", d.name);
            }
        }
        if self.constant != 0.0 {
            out.push_str(" obj_constant = 1\n");
        }
        let binaries: Vec<&str> = self
            .vars
            .iter()
            .filter(|d| d.integer && d.lower == 0.0 && d.upper == 1.0)
            .map(|d| d.name.as_str())
            .collect();
        let generals: Vec<&str> = self
            .vars
            .iter()
            .filter(|d| d.integer && !(d.lower == 0.0 && d.upper == 1.0))
            .map(|d| d.name.as_str())
            .collect();
        for (title, names) in [("Binaries", binaries), ("Generals", generals)] {
            if !names.is_empty() {
                let _ = writeln!(out, "{title}");
                for chunk in names.chunks(8) {
                    let _ = writeln!(out, " {}", chunk.join(" "));
                }
            }
        }
        out.push_str("End\n");
        out
    }

    /// The model as a HiGHS model built column by column (repeated terms summed), with the
    /// integrality of its variables when `integer`, else its LP relaxation.
    fn highs_model(&self, integer: bool) -> Result<highs::Model, highs::HighsStatus> {
        let mut problem = highs::ColProblem::default();
        let rows: Vec<highs::Row> = self
            .rows
            .iter()
            .map(|r| problem.add_row(r.lower..=r.upper))
            .collect();
        // HiGHS takes the matrix by columns, one entry per (row, column): repeated terms summed.
        let mut columns: Vec<Vec<(usize, f64)>> = vec![Vec::new(); self.vars.len()];
        for (i, r) in self.rows.iter().enumerate() {
            for &(v, c) in &r.terms {
                columns[v.0].push((i, c));
            }
        }
        let mut cost = vec![0.0; self.vars.len()];
        for &(v, c) in &self.objective {
            cost[v.0] += c;
        }
        for ((d, mut entries), c) in self.vars.iter().zip(columns).zip(cost) {
            entries.sort_by_key(|&(i, _)| i);
            let mut merged: Vec<(highs::Row, f64)> = Vec::with_capacity(entries.len());
            for (i, a) in entries {
                match merged.last_mut() {
                    Some((row, sum)) if *row == rows[i] => *sum += a,
                    _ => merged.push((rows[i], a)),
                }
            }
            problem.add_column_with_integrality(
                c,
                d.lower..=d.upper,
                &merged,
                integer && d.integer,
            );
        }
        let sense = match self.sense {
            Sense::Maximize => highs::Sense::Maximise,
            Sense::Minimize => highs::Sense::Minimise,
        };
        problem.try_optimise(sense)
    }

    /// The model in MPS format, written by HiGHS's own writer (`Highs_writeModel`), so the file
    /// is exactly what HiGHS reads: the same columns, ranged rows, integrality and names as
    /// [`Milp::to_lp`], the objective constant as HiGHS's objective offset (the RHS of the
    /// objective row) and the sense in an `OBJSENSE` section. HiGHS writes only to a file: the
    /// text goes through a temporary file, removed afterwards.
    pub fn to_mps(&self) -> Result<String, Error> {
        use std::ffi::CString;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static WRITTEN: AtomicUsize = AtomicUsize::new(0);
        let failed = |what: &str| Error::Solver(format!("writing the MPS file: {what}"));
        let mut model = self
            .highs_model(true)
            .map_err(|e| failed(&format!("HiGHS refused the model ({e:?})")))?;
        let path = std::env::temp_dir().join(format!(
            "moe-opt-{}-{}.mps",
            std::process::id(),
            WRITTEN.fetch_add(1, Ordering::Relaxed)
        ));
        let c_string =
            |name: &str| CString::new(name).map_err(|_| failed("a name holds a NUL byte"));
        let c_path = c_string(&path.to_string_lossy())?;
        let ptr = model.as_mut_ptr();
        let ok = |status: highs_sys::HighsInt| status != highs_sys::STATUS_ERROR;
        // SAFETY: `ptr` is the live HiGHS instance owned by `model`, which outlives every call;
        // indices are in range (one name per column and row built above) and every string is a
        // NUL-terminated CString that lives across its call.
        unsafe {
            if !ok(highs_sys::Highs_changeObjectiveOffset(ptr, self.constant)) {
                return Err(failed("HiGHS refused the objective constant"));
            }
            for (j, d) in self.vars.iter().enumerate() {
                let name = c_string(&d.name)?;
                if !ok(highs_sys::Highs_passColName(
                    ptr,
                    j as highs_sys::HighsInt,
                    name.as_ptr(),
                )) {
                    return Err(failed(&format!("HiGHS refused the column name {}", d.name)));
                }
            }
            for (i, r) in self.rows.iter().enumerate() {
                let name = c_string(&r.name)?;
                if !ok(highs_sys::Highs_passRowName(
                    ptr,
                    i as highs_sys::HighsInt,
                    name.as_ptr(),
                )) {
                    return Err(failed(&format!("HiGHS refused the row name {}", r.name)));
                }
            }
            if !ok(highs_sys::Highs_writeModel(ptr, c_path.as_ptr())) {
                let _ = std::fs::remove_file(&path);
                return Err(failed(&format!("HiGHS could not write {}", path.display())));
            }
        }
        let text = std::fs::read_to_string(&path);
        let _ = std::fs::remove_file(&path);
        text.map_err(|e| failed(&format!("{}: {e}", path.display())))
    }

    /// Solves with HiGHS. `start` is a full assignment used as the MIP start (HiGHS takes a
    /// feasible one as its first incumbent).
    pub fn solve(
        &self,
        options: &SolveOptions,
        start: Option<&[f64]>,
    ) -> Result<MilpSolution, Error> {
        let began = options.started.unwrap_or_else(Instant::now);
        let left = || {
            options
                .time_limit_s
                .map(|limit| limit - began.elapsed().as_secs_f64())
        };
        let out_of_time = || left().is_some_and(|s| s <= 0.0);
        let stopped = |why: &str| self.stopped_early(start, began, why);
        if out_of_time() {
            return Ok(stopped("before the HiGHS model was built"));
        }
        let mut problem = ProblemVariables::new();
        let vars: Vec<Variable> = self
            .vars
            .iter()
            .map(|d| {
                let mut def = variable().min(d.lower).max(d.upper);
                if d.integer {
                    def = def.integer();
                }
                problem.add(def)
            })
            .collect();
        let expr = |terms: &[(VarId, f64)]| -> Expression {
            terms.iter().map(|&(v, c)| c * vars[v.0]).sum()
        };
        let objective = expr(&self.objective);
        let unsolved = match self.sense {
            Sense::Maximize => problem.maximise(objective),
            Sense::Minimize => problem.minimise(objective),
        };
        let mut model = unsolved.using(good_lp::highs);
        for (i, r) in self.rows.iter().enumerate() {
            if i % 4096 == 0 && out_of_time() {
                return Ok(stopped("while the HiGHS model was built"));
            }
            let e = expr(&r.terms);
            if r.lower == r.upper {
                model.add_constraint(e.eq(r.lower));
            } else {
                if r.lower.is_finite() {
                    model.add_constraint(e.clone().geq(r.lower));
                }
                if r.upper.is_finite() {
                    model.add_constraint(e.leq(r.upper));
                }
            }
        }
        let mut raw = model
            .try_into_inner()
            .map_err(|e| Error::Solver(format!("building the HiGHS model: {e}")))?;
        let set = |raw: &mut highs::Model, key: &str, value: f64| {
            raw.try_set_option(key, value)
                .map_err(|e| Error::Solver(format!("setting {key}: {e:?}")))
        };
        if let Some(left) = left() {
            if left <= 0.0 {
                return Ok(stopped("while the model was passed to HiGHS"));
            }
            set(&mut raw, "time_limit", left)?;
            if self.num_nonzeros() > LARGE_NONZEROS {
                // The steps of HiGHS that do not check the limit (module doc).
                raw.try_set_option("presolve", "off")
                    .and_then(|()| raw.try_set_option("mip_detect_symmetry", false))
                    .and_then(|()| {
                        raw.try_set_option("mip_heuristic_run_feasibility_jump", start.is_none())
                    })
                    .map_err(|e| {
                        Error::Solver(format!("setting the large-model options: {e:?}"))
                    })?;
            }
        }
        set(&mut raw, "mip_rel_gap", options.mip_rel_gap)?;
        raw.try_set_option("threads", options.threads.max(1) as i32)
            .map_err(|e| Error::Solver(format!("setting threads: {e:?}")))?;
        if let Some(values) = start {
            raw.try_set_solution(Some(values), None, None, None)
                .map_err(|e| Error::Solver(format!("passing the MIP start: {e:?}")))?;
        }
        let solved = raw
            .try_solve()
            .map_err(|e| Error::Solver(format!("solving: {e:?}")))?;
        use highs::{HighsModelStatus as S, HighsSolutionStatus};
        let values = (solved.primal_solution_status() == HighsSolutionStatus::Feasible)
            .then(|| solved.get_solution().columns().to_vec());
        let limited = matches!(
            solved.status(),
            S::ReachedTimeLimit
                | S::ReachedSolutionLimit
                | S::ReachedInterrupt
                | S::ReachedIterationLimit
                | S::ReachedMemoryLimit
        );
        if limited && values.is_none() && self.feasible_start(start).is_some() {
            // HiGHS stopped before it read the start (e.g. in presolve): the start is still
            // an incumbent, and HiGHS has no bound yet.
            return Ok(stopped("before HiGHS read the MIP start"));
        }
        let objective = values.as_deref().map(|v| self.objective_at(v));
        let integer = self.vars.iter().any(|d| d.integer);
        let best_bound = if integer {
            solved
                .double_info_value(c"mip_dual_bound")
                .ok()
                .filter(|b| b.is_finite())
                .map(|b| b + self.constant)
        } else {
            objective.filter(|_| solved.status() == S::Optimal)
        };
        let gap = match (objective, best_bound) {
            (Some(o), Some(b)) => Some((b - o).abs() / o.abs().max(1.0)),
            _ => None,
        };
        let status = match solved.status() {
            S::Optimal | S::ObjectiveBound | S::ObjectiveTarget if objective.is_some() => {
                if gap.is_some_and(|g| g <= PROVED_GAP) {
                    MilpStatus::Optimal
                } else {
                    MilpStatus::GapLimit
                }
            }
            S::Infeasible | S::UnboundedOrInfeasible => MilpStatus::Infeasible,
            S::Unbounded => MilpStatus::Unbounded,
            _ if limited => MilpStatus::TimeLimit,
            other => return Err(Error::Solver(format!("HiGHS ended with status {other:?}"))),
        };
        Ok(MilpSolution {
            status,
            objective,
            best_bound,
            gap,
            solve_time_s: began.elapsed().as_secs_f64(),
            values,
            note: None,
        })
    }

    /// The start, if it is a feasible assignment of this model.
    fn feasible_start<'a>(&self, start: Option<&'a [f64]>) -> Option<&'a [f64]> {
        start.filter(|v| v.len() == self.vars.len() && self.max_violation(v) <= START_TOLERANCE)
    }

    /// The result of a solve the time limit stopped before HiGHS had a result of its own: the
    /// MIP start (if feasible) as incumbent, no bound.
    fn stopped_early(&self, start: Option<&[f64]>, began: Instant, when: &str) -> MilpSolution {
        let values = self.feasible_start(start).map(<[f64]>::to_vec);
        let incumbent = if values.is_some() {
            "the incumbent is the MIP start"
        } else {
            "no incumbent"
        };
        MilpSolution {
            status: MilpStatus::TimeLimit,
            objective: values.as_deref().map(|v| self.objective_at(v)),
            best_bound: None,
            gap: None,
            solve_time_s: began.elapsed().as_secs_f64(),
            values,
            note: Some(format!(
                "the time limit ran out {when}: {incumbent}, no bound"
            )),
        }
    }
}

/// The LP relaxation of a [`Milp`], kept in HiGHS between solves: [`Relaxation::set_cost`]
/// changes objective coefficients and [`Relaxation::solve`] re-solves from the last basis (a
/// Lagrangian method solves the same LP under many prices).
///
/// Each solve returns a bound on the LP's optimum, hence on the MILP's, proved by weak duality
/// from HiGHS's row duals y: for any y, c x = y (A x) + (c - y A) x, and over the rows' ranges
/// and the variables' bounds each term is at most its largest value (maximising; at least its
/// smallest when minimising). A dual of a row whose range is open on the side its sign would
/// use is set to 0 first. The bound thus holds whatever HiGHS's tolerances, status or
/// iteration limit; only how tight it is depends on the solver. Rounding: the bound is the sum
/// of k = nonzeros + rows + variables + 1 products, each rounded; it is moved outwards by
/// 2 (k + 1) eps times the sum of their magnitudes, which covers the rounding of the products
/// and of their sum (the classical gamma_k bound).
pub struct Relaxation {
    sense: Sense,
    constant: f64,
    cost: Vec<f64>,
    bounds: Vec<(f64, f64)>,
    rows: Vec<Row>,
    model: Option<highs::Model>,
    /// Solved at least once: there is a basis to start from.
    solved: bool,
}

/// Rows above which a [`Relaxation`]'s first solve (without a basis to start from) is by
/// interior point: on the largest part of the SlimCaching Lagrangian bound (a `paper` preset
/// layer with 50 users, 47,381 rows) HiGHS's dual simplex took 38 s, interior point with
/// crossover 8 s.
pub const INTERIOR_POINT_ROWS: usize = 20_000;

/// One solve of a [`Relaxation`].
#[derive(Debug, Clone, PartialEq)]
pub struct RelaxedSolve {
    /// The proved bound on the LP's optimum (an upper bound when maximising), constant
    /// included.
    pub bound: f64,
    /// HiGHS's primal values, indexed by [`VarId`].
    pub values: Vec<f64>,
}

impl Relaxation {
    /// The LP relaxation of `milp`, solved by HiGHS on one thread.
    pub fn new(milp: &Milp) -> Result<Self, Error> {
        let mut model = milp
            .highs_model(false)
            .map_err(|e| Error::Solver(format!("building the LP relaxation: {e:?}")))?;
        model
            .try_set_option("threads", 1)
            .map_err(|e| Error::Solver(format!("setting threads: {e:?}")))?;
        let mut cost = vec![0.0; milp.vars.len()];
        for &(v, c) in &milp.objective {
            cost[v.0] += c;
        }
        Ok(Relaxation {
            sense: milp.sense,
            constant: milp.constant,
            cost,
            bounds: milp.vars.iter().map(|d| (d.lower, d.upper)).collect(),
            rows: milp.rows.clone(),
            model: Some(model),
            solved: false,
        })
    }

    /// Sets the objective coefficient of `v`.
    pub fn set_cost(&mut self, v: VarId, c: f64) -> Result<(), Error> {
        self.cost[v.0] = c;
        let model = self
            .model
            .as_mut()
            .ok_or_else(|| Error::Solver("the LP relaxation was lost by a failed solve".into()))?;
        let column = highs_sys::HighsInt::try_from(v.0)
            .map_err(|_| Error::Solver(format!("column {} out of HiGHS's range", v.0)))?;
        // SAFETY: `model` owns a live HiGHS instance with a column for every variable of the
        // MILP it was built from, and `v` is one of them.
        let status = unsafe { highs_sys::Highs_changeColCost(model.as_mut_ptr(), column, c) };
        if status == highs_sys::STATUS_ERROR {
            return Err(Error::Solver(format!(
                "HiGHS refused the cost of column {}",
                v.0
            )));
        }
        Ok(())
    }

    /// Solves within `time_limit_s` seconds (none: no limit): the first solve of a model of
    /// more than [`INTERIOR_POINT_ROWS`] rows by interior point with crossover, every other
    /// from the last basis by simplex. The bound is proved from the duals (type doc), also when
    /// HiGHS stops at the limit with duals that are not optimal.
    pub fn solve(&mut self, time_limit_s: Option<f64>) -> Result<RelaxedSolve, Error> {
        let lost = || Error::Solver("the LP relaxation was lost by a failed solve".into());
        let mut model = self.model.take().ok_or_else(lost)?;
        let option = |e| Error::Solver(format!("setting an LP option: {e:?}"));
        let interior = !self.solved && self.rows.len() > INTERIOR_POINT_ROWS;
        model
            .try_set_option("solver", if interior { "ipm" } else { "simplex" })
            .map_err(option)?;
        // HiGHS counts its limit over all solves of one model: the time spent so far plus
        // what this solve may take.
        // SAFETY: `model` owns a live HiGHS instance.
        let spent = unsafe { highs_sys::Highs_getRunTime(model.as_mut_ptr()) };
        let limit = time_limit_s.map_or(f64::INFINITY, |t| spent + t.max(0.0));
        model.try_set_option("time_limit", limit).map_err(option)?;
        let solved = model
            .try_solve()
            .map_err(|e| Error::Solver(format!("solving the LP relaxation: {e:?}")))?;
        self.solved = true;
        let solution = solved.get_solution();
        let bound = self.dual_bound(solution.dual_rows());
        let values = solution.columns().to_vec();
        self.model = Some(solved.into());
        Ok(RelaxedSolve { bound, values })
    }

    /// The weak-duality bound of the row duals `y` (HiGHS's sign convention: c = y A + the
    /// reduced costs; type doc).
    fn dual_bound(&self, y: &[f64]) -> f64 {
        let max = self.sense == Sense::Maximize;
        // The bound's side of a * t over t in [lo, hi].
        let extreme = |a: f64, lo: f64, hi: f64| -> f64 {
            match (a == 0.0, (a > 0.0) == max) {
                (true, _) => 0.0,
                (false, true) => a * hi,
                (false, false) => a * lo,
            }
        };
        let mut reduced = self.cost.clone();
        // Per variable, |c| + sum |y a|: what its reduced cost's rounding is relative to.
        let mut scale: Vec<f64> = self.cost.iter().map(|c| c.abs()).collect();
        let mut total = self.constant;
        let mut magnitude = self.constant.abs();
        let mut count = 1usize;
        for (row, &dual) in self.rows.iter().zip(y) {
            let open = if (dual > 0.0) == max {
                row.upper == f64::INFINITY
            } else {
                row.lower == f64::NEG_INFINITY
            };
            if dual == 0.0 || open {
                continue;
            }
            let term = extreme(dual, row.lower, row.upper);
            total += term;
            magnitude += term.abs();
            for &(v, a) in &row.terms {
                reduced[v.0] -= dual * a;
                scale[v.0] += (dual * a).abs();
            }
            count += row.terms.len() + 1;
        }
        count += reduced.len();
        let gamma = 2.0 * (count + 1) as f64 * f64::EPSILON;
        for ((&d, &s), &(lo, hi)) in reduced.iter().zip(&scale).zip(&self.bounds) {
            // Within rounding of 0 the reduced cost's sign is unknown: both ends count.
            let reach = if d.abs() <= gamma * s {
                lo.abs().max(hi.abs())
            } else if (d > 0.0) == max {
                hi.abs()
            } else {
                lo.abs()
            };
            if s > 0.0 {
                if reach.is_infinite() {
                    return if max {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    };
                }
                magnitude += s * reach;
            }
            total += extreme(d, lo, hi);
        }
        let allowance = gamma * magnitude;
        if max {
            total + allowance
        } else {
            total - allowance
        }
    }
}

/// Each variable's terms summed into one, in the order of their first occurrence.
fn merged(terms: &[(VarId, f64)]) -> Vec<(VarId, f64)> {
    let mut at: std::collections::HashMap<VarId, usize> =
        std::collections::HashMap::with_capacity(terms.len());
    let mut out: Vec<(VarId, f64)> = Vec::with_capacity(terms.len());
    for &(v, c) in terms {
        match at.entry(v) {
            std::collections::hash_map::Entry::Occupied(i) => out[*i.get()].1 += c,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(out.len());
                out.push((v, c));
            }
        }
    }
    out
}

fn number(x: f64) -> String {
    format!("{x}")
}

/// Writes `label term term ...`, wrapping lines well under the LP format's 255 characters.
fn write_terms(out: &mut String, label: &str, terms: &[(String, f64)]) {
    let mut line = label.to_string();
    if terms.is_empty() {
        line.push_str(" 0 obj_zero");
    }
    for (i, (name, c)) in terms.iter().enumerate() {
        let sign = if *c < 0.0 {
            "- "
        } else if i == 0 {
            ""
        } else {
            "+ "
        };
        let coefficient = if c.abs() == 1.0 {
            String::new()
        } else {
            format!("{} ", number(c.abs()))
        };
        let piece = format!(" {sign}{coefficient}{name}");
        if line.len() + piece.len() > 200 {
            out.push_str(&line);
            out.push('\n');
            line = "  ".to_string();
        }
        line.push_str(&piece);
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Knapsack: values 10, 13, 7; weights 3, 4, 2; capacity 6. By hand: {0,1} too heavy (7),
    /// {1,2} = 20 (weight 6), {0,2} = 17 (weight 5), {0,1,2} too heavy: optimum 20 plus the
    /// constant 5.
    fn knapsack() -> (Milp, Vec<VarId>) {
        let mut m = Milp::new("knapsack", Sense::Maximize);
        let x: Vec<VarId> = (0..3).map(|i| m.binary(format!("x{i}"))).collect();
        for (v, c) in x.iter().zip([10.0, 13.0, 7.0]) {
            m.add_objective(*v, c);
        }
        m.add_constant(5.0);
        m.row(
            "cap",
            x.iter()
                .zip([3.0, 4.0, 2.0])
                .map(|(v, w)| (*v, w))
                .collect(),
            f64::NEG_INFINITY,
            6.0,
        );
        (m, x)
    }

    #[test]
    fn knapsack_is_solved_to_the_hand_computed_optimum() {
        let (m, x) = knapsack();
        let s = m.solve(&SolveOptions::default(), None).unwrap();
        assert_eq!(s.status, MilpStatus::Optimal);
        assert!((s.objective.unwrap() - 25.0).abs() < 1e-9);
        assert!((s.best_bound.unwrap() - 25.0).abs() < 1e-6);
        let v = s.values.unwrap();
        assert_eq!(
            x.iter().map(|i| v[i.0].round() as i32).collect::<Vec<_>>(),
            vec![0, 1, 1]
        );
        assert_eq!(m.max_violation(&v), 0.0);
    }

    /// HiGHS's optimum of a model file it reads back (`Highs_readModel`, then a MIP solve with
    /// no gap), independent of good_lp and of `Milp::solve`.
    fn highs_reads_and_solves(text: &str, extension: &str) -> f64 {
        use std::ffi::CString;
        use std::sync::atomic::{AtomicUsize, Ordering};
        // One file per call: the tests run in parallel threads of one process.
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "moe-opt-milp-test-{}-{}.{extension}",
            std::process::id(),
            CALLS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text).unwrap();
        let c_path = CString::new(path.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a fresh HiGHS instance, used and destroyed here; C strings outlive the calls.
        let objective = unsafe {
            let h = highs_sys::Highs_create();
            highs_sys::Highs_setBoolOptionValue(h, c"output_flag".as_ptr(), 0);
            highs_sys::Highs_setDoubleOptionValue(h, c"mip_rel_gap".as_ptr(), 0.0);
            assert_eq!(
                highs_sys::Highs_readModel(h, c_path.as_ptr()),
                highs_sys::STATUS_OK
            );
            assert_eq!(highs_sys::Highs_run(h), highs_sys::STATUS_OK);
            assert_eq!(
                highs_sys::Highs_getModelStatus(h),
                highs_sys::MODEL_STATUS_OPTIMAL
            );
            let objective = highs_sys::Highs_getObjectiveValue(h);
            highs_sys::Highs_destroy(h);
            objective
        };
        std::fs::remove_file(&path).unwrap();
        objective
    }

    #[test]
    fn mps_from_highs_writer_reads_back_to_the_hand_computed_optimum() {
        let (m, _) = knapsack();
        let mps = m.to_mps().unwrap();
        // HiGHS's writer: the sense, integer markers, the constant as the objective's RHS.
        assert!(mps.contains("OBJSENSE"), "{mps}");
        assert!(mps.contains("MARKER"), "{mps}");
        assert!((highs_reads_and_solves(&mps, "mps") - 25.0).abs() < 1e-9);
        assert!((highs_reads_and_solves(&m.to_lp(), "lp") - 25.0).abs() < 1e-9);
    }

    #[test]
    fn lp_and_mps_keep_ranged_rows_repeated_terms_and_bounds() {
        // min x + 2y + 3x - 3 (x twice in the objective too), 2 <= x + x + y <= 5, y integer
        // in [1, 4], x continuous in [0.5, 10]: by hand y = 1 and 2x + 1 >= 2 gives x = 0.5,
        // so 4 * 0.5 + 2 - 3 = 1.
        let mut m = Milp::new("ranged", Sense::Minimize);
        let x = m.continuous("x", 0.5, 10.0);
        let y = m.push_var("y".into(), 1.0, 4.0, true);
        m.add_objective(x, 1.0);
        m.add_objective(y, 2.0);
        m.add_objective(x, 3.0);
        m.add_constant(-3.0);
        m.row("r", vec![(x, 1.0), (x, 1.0), (y, 1.0)], 2.0, 5.0);
        let mps = m.to_mps().unwrap();
        assert!(mps.contains("RANGES"), "{mps}");
        assert!((highs_reads_and_solves(&mps, "mps") - 1.0).abs() < 1e-9);
        let lp = m.to_lp();
        assert!(lp.contains(" obj: 4 x + 2 y - 3 obj_constant\n"), "{lp}");
        assert!(lp.contains(" r_lo: 2 x + y\n"), "{lp}");
        assert!((highs_reads_and_solves(&lp, "lp") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn relaxation_bound_is_the_hand_computed_lp_optimum_and_follows_cost_changes() {
        // The knapsack's LP: densities 10/3, 13/4, 7/2; item 2 (weight 2) and item 0 (3) fit,
        // then 1/4 of item 1: 7 + 10 + 13/4 = 20.25, plus the constant 5.
        let (m, x) = knapsack();
        let mut lp = Relaxation::new(&m).unwrap();
        let solved = lp.solve(None).unwrap();
        assert!((solved.bound - 25.25).abs() < 1e-9, "{}", solved.bound);
        assert!((m.objective_at(&solved.values) - 25.25).abs() < 1e-9);
        // Item 1 now worth 20 (density 5): item 1 (4) and item 2 (2): 20 + 7 + 5 = 32.
        lp.set_cost(x[1], 20.0).unwrap();
        let solved = lp.solve(None).unwrap();
        assert!((solved.bound - 32.0).abs() < 1e-9, "{}", solved.bound);
    }

    #[test]
    fn any_duals_give_a_valid_bound() {
        // Zero duals: each variable at its best bound, 10 + 13 + 7 + 5 = 35 >= 25.25; duals of
        // the wrong sign on the one-sided row are dropped (the same 35); the optimal dual
        // 13/4 on the capacity row: 6 * 13/4 + (10 - 39/4)^+ + 0 + (7 - 26/4)^+ + 5 = 25.25.
        let (m, _) = knapsack();
        let lp = Relaxation::new(&m).unwrap();
        assert!((lp.dual_bound(&[0.0]) - 35.0).abs() < 1e-9);
        assert!((lp.dual_bound(&[-1.0]) - 35.0).abs() < 1e-9);
        assert!((lp.dual_bound(&[3.25]) - 25.25).abs() < 1e-9);
        for y in [0.5, 2.0, 3.0, 3.5, 10.0] {
            assert!(lp.dual_bound(&[y]) >= 25.25 - 1e-9, "y = {y}");
        }
    }

    #[test]
    fn relaxation_of_a_minimisation_bounds_from_below() {
        // The ranged model's LP: y >= 1 and 2x + y >= 2 with x >= 0.5, so x = 0.5, y = 1 as
        // in the MILP: 4 * 0.5 + 2 - 3 = 1, a lower bound.
        let mut m = Milp::new("ranged", Sense::Minimize);
        let x = m.continuous("x", 0.5, 10.0);
        let y = m.push_var("y".into(), 1.0, 4.0, true);
        m.add_objective(x, 4.0);
        m.add_objective(y, 2.0);
        m.add_constant(-3.0);
        m.row("r", vec![(x, 2.0), (y, 1.0)], 2.0, 5.0);
        let solved = Relaxation::new(&m).unwrap().solve(None).unwrap();
        assert!((solved.bound - 1.0).abs() < 1e-9, "{}", solved.bound);
    }

    #[test]
    fn infeasible_model_is_reported_as_such() {
        let mut m = Milp::new("infeasible", Sense::Minimize);
        let a = m.binary("a");
        m.row("need_two", vec![(a, 1.0)], 2.0, f64::INFINITY);
        let s = m.solve(&SolveOptions::default(), None).unwrap();
        assert_eq!(s.status, MilpStatus::Infeasible);
        assert!(s.objective.is_none());
    }

    #[test]
    fn lp_text_lists_objective_rows_bounds_and_binaries() {
        let (m, _) = knapsack();
        let lp = m.to_lp();
        assert!(lp.contains("Maximize\n obj: 10 x0 + 13 x1 + 7 x2 + 5 obj_constant\n"));
        assert!(lp.contains(" cap: 3 x0 + 4 x1 + 2 x2\n   <= 6\n"));
        assert!(lp.contains(" obj_constant = 1\n"));
        assert!(lp.contains("Binaries\n x0 x1 x2\n"));
        assert!(lp.ends_with("End\n"));
    }
}
