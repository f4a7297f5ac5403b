//! Exact MILPs of offline expert caching over one layer ([`super::offline`]): fixed routing
//! (the optimum Belady/MIN must reach) and flexible routing (the bound no cache-aware router
//! with that freedom can beat).
//!
//! Time-indexed model over steps t = 0..T-1 and experts e = 0..E-1:
//! * `r_t_e` binary: e resident after step t's loads;
//! * `l_t_e` in [0, 1]: e loaded at step t, `l_t_e >= r_t_e - r_{t-1}_e` (r_{-1} = 0: cold
//!   start); at an optimum l = max(0, r_t - r_{t-1}), integral since r is;
//! * `cap_t`: sum_e r_t_e <= C;
//! * fixed routing: r_t_e fixed to 1 for the K experts of step t;
//! * flexible routing: the forced (top-J) experts fixed to 1, a binary `x_t_e` per optional
//!   expert with `x_t_e <= r_t_e`, `sum_e x_t_e = K - J`, and with a mass rule
//!   `sum_e p_t_e x_t_e >= tau m_t - sum of the forced p - 1e-9` (m_t: original top-K mass);
//! * minimise sum l (loads, compulsory ones included).
//!
//! Size ([`MilpSize::of`], counted before anything is built): T E binaries r, T E continuous
//! l, up to T (E - J) binaries x; T (E + 1) rows (cap, load) and, per flexible step, one row
//! per optional expert and one or two more (pick, mass). Nonzeros: E per cap row, 2 or 3 per
//! load row, 2 per use row, one per optional expert in pick and mass.
//!
//! ## The size guard (a memory estimate)
//! [`OfflineMilp::build`] refuses ([`Error::TooLarge`], naming the size and the estimate) a
//! model whose estimated memory exceeds [`MAX_MILP_BYTES`]: [`BYTES_PER_VARIABLE`] per column
//! plus [`BYTES_PER_NONZERO`] per nonzero. Measured: the peak resident memory of `moe-opt solve
//! --method milp-fixed` on one layer of the DeepSeek preset (E = 64, K = 6, C = 32; HiGHS 1.15,
//! one thread, the project's 2-core machine) is 105, 206, 403 and 868 MB at T = 400, 800,
//! 1,600 and 3,200: linear in T E, 4.24 KB per (step, expert) at T = 3,200, which carries 2
//! columns and 4 nonzeros, so 707 bytes per column or nonzero, rounded up to 750. The figure
//! covers every copy a solve holds at its peak (this model with its names, good_lp's
//! expressions, HiGHS's column- and row-wise matrices, presolve and the MIP solver's LP), so
//! it is the process's peak, not HiGHS's arrays alone (about 12 bytes a nonzero each). A
//! long branch-and-bound search grows beyond it: a flexible model of the OLMoE preset (T =
//! 299, J = 2, M = 10) peaked at 408 MB, 4.7 times its estimate, after 19 s. At the limit, 4
//! GiB, a fixed model of E = 64 experts has about 14,900 steps (384 units a step).

//! The incumbent is decoded into a [`Schedule`] and re-evaluated by the one evaluator
//! ([`super::offline::evaluate`]): the loads reported are the evaluator's.

use super::offline::{evaluate, CacheInstance, Evaluation, Schedule, ScheduleStep};
use crate::error::Error;
use crate::milp::{Milp, MilpSolution, Sense, SolveOptions, VarId};

/// Peak memory of a solve per column of the model, bytes (module doc: the size guard).
pub const BYTES_PER_VARIABLE: u64 = 750;

/// Peak memory of a solve per nonzero of the constraint matrix, bytes (module doc).
pub const BYTES_PER_NONZERO: u64 = 750;

/// Most estimated memory of a model [`OfflineMilp::build`] accepts: 4 GiB, so that two solves
/// in parallel (`verify --jobs 2`) take 8 of the project's 23 GB at the estimate, leaving room
/// for a long branch-and-bound search, which grows beyond it (module doc).
pub const MAX_MILP_BYTES: u64 = 4 << 30;

/// The size of an instance's model, counted without building it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MilpSize {
    /// Columns: r, l and the choice binaries x.
    pub variables: u64,
    /// Binary columns: r and x.
    pub binaries: u64,
    /// Rows.
    pub rows: u64,
    /// Nonzeros of the constraint matrix.
    pub nonzeros: u64,
}

impl MilpSize {
    /// The model's size for `instance` (fixed routing unless `flexible`). A huge instance is
    /// counted in O(1): when the residency part alone is over [`MAX_MILP_BYTES`], the
    /// flexible part (which needs every step's ranking) is not counted.
    pub fn of(instance: &CacheInstance, flexible: bool) -> Self {
        let (t, e, k) = (
            instance.steps() as u64,
            instance.experts() as u64,
            instance.top_k(),
        );
        let te = t.saturating_mul(e);
        // cap: E a row; load: 3 a row but 2 at t = 0.
        let mut size = MilpSize {
            variables: te.saturating_mul(2),
            binaries: te,
            rows: te.saturating_add(t),
            nonzeros: te.saturating_mul(4).saturating_sub(e),
        };
        if !flexible || size.bytes() > MAX_MILP_BYTES {
            return size;
        }
        for step in 0..instance.steps() {
            let allowed = instance.allowed(step, true);
            if allowed.forced.len() >= k {
                continue;
            }
            let optional = allowed.optional.len() as u64;
            let rows = 1 + u64::from(allowed.mass.is_some());
            size.variables += optional;
            size.binaries += optional;
            size.rows += optional + rows;
            size.nonzeros += 2 * optional + rows * optional;
        }
        size
    }

    /// The estimated peak memory of a solve, bytes (module doc: the size guard).
    pub fn bytes(&self) -> u64 {
        self.variables
            .saturating_mul(BYTES_PER_VARIABLE)
            .saturating_add(self.nonzeros.saturating_mul(BYTES_PER_NONZERO))
    }
}

/// Variables of one step.
#[derive(Debug, Clone)]
struct StepVars {
    /// Forced experts (fixed to resident).
    forced: Vec<u32>,
    /// Optional experts and their choice variable.
    optional: Vec<(u32, VarId)>,
}

/// The model of one instance and the map from its variables back to a schedule.
#[derive(Debug, Clone)]
pub struct OfflineMilp {
    /// The model.
    pub milp: Milp,
    /// Whether the routing is flexible.
    pub flexible: bool,
    experts: usize,
    r: Vec<VarId>,
    l: Vec<VarId>,
    steps: Vec<StepVars>,
}

/// A solve: the solver's outcome and the incumbent's schedule re-evaluated.
#[derive(Debug, Clone)]
pub struct OfflineSolution {
    /// Status, objective (loads), bound and gap.
    pub solution: MilpSolution,
    /// The incumbent as a schedule, if there is one.
    pub schedule: Option<Schedule>,
    /// The evaluator's measure of that schedule.
    pub evaluation: Option<Evaluation>,
}

impl OfflineMilp {
    /// Builds the fixed-routing (`flexible` false) or flexible-routing model;
    /// [`Error::TooLarge`] when its estimated memory exceeds [`MAX_MILP_BYTES`] (module doc).
    pub fn build(instance: &CacheInstance, flexible: bool) -> Result<Self, Error> {
        let (t_n, e_n, k) = (instance.steps(), instance.experts(), instance.top_k());
        let size = MilpSize::of(instance, flexible);
        if size.bytes() > MAX_MILP_BYTES {
            let gb = |b: u64| b as f64 / f64::from(1u32 << 30);
            return Err(Error::TooLarge(format!(
                "offline caching MILP: T x E = {t_n} x {e_n}: {} variables ({} binaries), {} \
                 rows, {} nonzeros, estimated {:.1} GiB of memory ({BYTES_PER_VARIABLE} bytes \
                 a variable + {BYTES_PER_NONZERO} a nonzero, measured), over the limit of \
                 {:.0} GiB (formulations::cache::milp::MAX_MILP_BYTES); take fewer tokens \
                 (`offline --tokens`) or use Belady, optimal for fixed routing",
                size.variables,
                size.binaries,
                size.rows,
                size.nonzeros,
                gb(size.bytes()),
                gb(MAX_MILP_BYTES)
            )));
        }
        let mut m = Milp::new(
            format!(
                "offline expert caching, {} routing: T = {t_n}, E = {e_n}, K = {k}, C = {}, \
                 layer {}",
                if flexible { "flexible" } else { "fixed" },
                instance.capacity,
                instance.layer
            ),
            Sense::Minimize,
        );
        let mut r = Vec::with_capacity(t_n * e_n);
        let mut l = Vec::with_capacity(t_n * e_n);
        for t in 0..t_n {
            for e in 0..e_n {
                r.push(m.binary(format!("r_{t}_{e}")));
            }
            for e in 0..e_n {
                let v = m.continuous(format!("l_{t}_{e}"), 0.0, 1.0);
                m.add_objective(v, 1.0);
                l.push(v);
            }
        }
        let at = |t: usize, e: usize| t * e_n + e;
        let mut steps = Vec::with_capacity(t_n);
        for t in 0..t_n {
            m.row(
                format!("cap_{t}"),
                (0..e_n).map(|e| (r[at(t, e)], 1.0)).collect(),
                f64::NEG_INFINITY,
                instance.capacity as f64,
            );
            for e in 0..e_n {
                let mut terms = vec![(l[at(t, e)], 1.0), (r[at(t, e)], -1.0)];
                if t > 0 {
                    terms.push((r[at(t - 1, e)], 1.0));
                }
                m.row(format!("load_{t}_{e}"), terms, 0.0, f64::INFINITY);
            }
            let allowed = instance.allowed(t, flexible);
            for &f in &allowed.forced {
                m.fix(r[at(t, f as usize)], 1.0);
            }
            let free = k - allowed.forced.len();
            let mut optional = Vec::new();
            if free > 0 {
                for &e in &allowed.optional {
                    let x = m.binary(format!("x_{t}_{e}"));
                    m.row(
                        format!("use_{t}_{e}"),
                        vec![(x, 1.0), (r[at(t, e as usize)], -1.0)],
                        f64::NEG_INFINITY,
                        0.0,
                    );
                    optional.push((e, x));
                }
                m.row(
                    format!("pick_{t}"),
                    optional.iter().map(|&(_, x)| (x, 1.0)).collect(),
                    free as f64,
                    free as f64,
                );
                if let Some((p, least)) = &allowed.mass {
                    let forced: f64 = allowed.forced.iter().map(|&f| p[f as usize]).sum();
                    m.row(
                        format!("mass_{t}"),
                        optional.iter().map(|&(e, x)| (x, p[e as usize])).collect(),
                        least - forced,
                        f64::INFINITY,
                    );
                }
            }
            steps.push(StepVars {
                forced: allowed.forced,
                optional,
            });
        }
        Ok(OfflineMilp {
            milp: m,
            flexible,
            experts: e_n,
            r,
            l,
            steps,
        })
    }

    /// A full assignment of the model's variables from a schedule (a MIP start).
    pub fn start(&self, schedule: &Schedule) -> Vec<f64> {
        let mut v = vec![0.0; self.milp.num_vars()];
        let e_n = self.experts;
        let mut previous = vec![false; e_n];
        for (t, step) in schedule.steps.iter().enumerate() {
            let mut resident = vec![false; e_n];
            for &e in &step.resident {
                resident[e as usize] = true;
            }
            for e in 0..e_n {
                v[self.r[t * e_n + e].0] = f64::from(u8::from(resident[e]));
                v[self.l[t * e_n + e].0] = f64::from(u8::from(resident[e] && !previous[e]));
            }
            for &(e, x) in &self.steps[t].optional {
                v[x.0] = f64::from(u8::from(step.chosen.contains(&e)));
            }
            previous = resident;
        }
        v
    }

    /// The schedule of a full assignment.
    pub fn decode(&self, values: &[f64]) -> Schedule {
        let e_n = self.experts;
        let steps = self
            .steps
            .iter()
            .enumerate()
            .map(|(t, s)| {
                let mut chosen = s.forced.clone();
                chosen.extend(
                    s.optional
                        .iter()
                        .filter(|&&(_, x)| values[x.0] > 0.5)
                        .map(|&(e, _)| e),
                );
                ScheduleStep {
                    chosen,
                    resident: (0..e_n as u32)
                        .filter(|&e| values[self.r[t * e_n + e as usize].0] > 0.5)
                        .collect(),
                }
            })
            .collect();
        Schedule { steps }
    }

    /// Solves with HiGHS, `start` (a feasible schedule, e.g. Belady's) as the MIP start. An
    /// incumbent the evaluator rejects is an [`Error::Solver`] naming the evaluator's reason.
    pub fn solve(
        &self,
        instance: &CacheInstance,
        options: &SolveOptions,
        start: Option<&Schedule>,
    ) -> Result<OfflineSolution, Error> {
        let start = start.map(|s| self.start(s));
        let solution = self.milp.solve(options, start.as_deref())?;
        let schedule = solution.values.as_deref().map(|v| self.decode(v));
        let evaluation = match &schedule {
            Some(s) => Some(evaluate(instance, s, self.flexible).map_err(|e| {
                Error::Solver(format!("the MILP's incumbent is not a valid schedule: {e}"))
            })?),
            None => None,
        };
        Ok(OfflineSolution {
            solution,
            schedule,
            evaluation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::exhaustive::exhaustive;
    use crate::cache::offline::tests::{instance, top1_trace};
    use crate::cache::offline::Freedom;
    use crate::milp::MilpStatus;

    #[test]
    fn cyclic_stream_fixed_and_flexible_optima_match_the_hand_counts() {
        // As in the exhaustive tests: 0 1 2 0 1 2 with C = 2 needs 4 loads (fixed routing),
        // and 1 load when every token may run its rank-2 expert (J = 0, M = 2).
        let mut i = instance(top1_trace(3, &[0, 1, 2, 0, 1, 2]), 2, Freedom::fixed(1));
        i.freedom = Freedom {
            top_j: 0,
            max_rank: Some(2),
            min_mass: None,
        };
        let opts = SolveOptions::default();
        let fixed = OfflineMilp::build(&i, false).unwrap();
        let s = fixed.solve(&i, &opts, None).unwrap();
        assert_eq!(s.solution.status, MilpStatus::Optimal);
        assert_eq!(s.evaluation.unwrap().loads, 4);
        let flex = OfflineMilp::build(&i, true).unwrap();
        let s = flex.solve(&i, &opts, None).unwrap();
        assert_eq!(s.solution.status, MilpStatus::Optimal);
        assert_eq!(s.evaluation.unwrap().loads, 1);
        assert!((s.solution.objective.unwrap() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn start_from_an_optimal_schedule_is_feasible_with_its_loads() {
        let i = instance(top1_trace(3, &[0, 1, 2, 0, 1, 2]), 2, Freedom::fixed(1));
        let (loads, schedule) = exhaustive(&i, false).unwrap();
        let model = OfflineMilp::build(&i, false).unwrap();
        let v = model.start(&schedule);
        assert!(model.milp.max_violation(&v) < 1e-12);
        assert_eq!(model.milp.objective_at(&v), loads as f64);
        assert_eq!(model.decode(&v), schedule);
    }

    #[test]
    fn the_counted_size_is_the_built_models_and_the_guard_refuses_by_the_estimate() {
        // Fixed and flexible (J = 1, M = 3, with and without a mass rule) on a small ranked
        // instance: the count made without building equals the model's.
        let z = |v: [f32; 4]| v.to_vec();
        let t = crate::cache::offline::tests::trace_from_logits(
            4,
            2,
            &[
                z([4.0, 3.0, 2.0, 1.0]),
                z([1.0, 2.0, 4.0, 3.0]),
                z([2.0, 4.0, 1.0, 3.0]),
            ],
        );
        for min_mass in [None, Some(0.5)] {
            let freedom = Freedom {
                top_j: 1,
                max_rank: Some(3),
                min_mass,
            };
            let i = instance(t.clone(), 2, freedom);
            for flexible in [false, true] {
                let m = OfflineMilp::build(&i, flexible).unwrap().milp;
                let built = MilpSize {
                    variables: m.num_vars() as u64,
                    binaries: m.num_integers() as u64,
                    rows: m.num_rows() as u64,
                    nonzeros: m.num_nonzeros() as u64,
                };
                assert_eq!(MilpSize::of(&i, flexible), built, "{flexible} {min_mass:?}");
            }
        }
        // Fixed, T = 3, E = 4 by hand: 24 columns (12 binaries), 3 + 12 rows, 3 x 4 cap
        // nonzeros + 4 x 2 (t = 0) + 8 x 3 load nonzeros = 44.
        let i = instance(t, 2, Freedom::fixed(2));
        let size = MilpSize::of(&i, false);
        assert_eq!(
            (size.variables, size.binaries, size.rows, size.nonzeros),
            (24, 12, 15, 44)
        );
        // A model estimated over the limit is refused, naming its size and the estimate: T =
        // 128 steps of E = 2^16 experts is 2^24 columns and 2^25 - 2^16 nonzeros, about
        // (2^24 + 2^25) x 750 bytes = 35 GiB > 4 GiB (counted in O(1), nothing built).
        let mut i = instance(top1_trace(4, &[0; 128]), 2, Freedom::fixed(1));
        i.trace.experts = 1 << 16;
        assert!(MilpSize::of(&i, false).bytes() > MAX_MILP_BYTES);
        let e = OfflineMilp::build(&i, false).unwrap_err().to_string();
        assert!(
            e.contains("16777216 variables") && e.contains("GiB of memory") && e.contains("limit"),
            "{e}"
        );
    }

    #[test]
    fn lp_text_names_the_rows() {
        let i = instance(top1_trace(3, &[0, 1]), 2, Freedom::fixed(1));
        let lp = OfflineMilp::build(&i, false).unwrap().milp.to_lp();
        assert!(lp.contains(" cap_1: r_1_0 + r_1_1 + r_1_2\n   <= 2\n"));
        assert!(lp.contains(" load_1_2: l_1_2 - r_1_2 + r_0_2\n   >= 0\n"));
        assert!(lp.contains(" r_0_0 = 1\n"));
    }
}
