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
//! Size: T E binaries r, T E continuous l, up to T (E - J) binaries x; T (E + 2) + ... rows.
//! [`MAX_RESIDENCY_VARS`] caps T E. Solve times measured on the project's machine are in the
//! module doc of moe-opt's `cache::bounds` (T = 200, E = 16, C = 8: well under a second with
//! top-J / max-rank freedom, a few seconds with a mass rule).
//!
//! The incumbent is decoded into a [`Schedule`] and re-evaluated by the one evaluator
//! ([`super::offline::evaluate`]): the loads reported are the evaluator's.

use super::offline::{evaluate, CacheInstance, Evaluation, Schedule, ScheduleStep};
use crate::error::Error;
use crate::milp::{Milp, MilpSolution, Sense, SolveOptions, VarId};

/// Most residency variables T x E the models accept.
pub const MAX_RESIDENCY_VARS: usize = 200_000;

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
    /// [`Error::TooLarge`] beyond [`MAX_RESIDENCY_VARS`].
    pub fn build(instance: &CacheInstance, flexible: bool) -> Result<Self, Error> {
        let (t_n, e_n, k) = (instance.steps(), instance.experts(), instance.top_k());
        if t_n * e_n > MAX_RESIDENCY_VARS {
            return Err(Error::TooLarge(format!(
                "offline caching MILP: T x E = {t_n} x {e_n} = {} residency binaries, limit \
                 {MAX_RESIDENCY_VARS}",
                t_n * e_n
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
    fn lp_text_names_the_rows() {
        let i = instance(top1_trace(3, &[0, 1]), 2, Freedom::fixed(1));
        let lp = OfflineMilp::build(&i, false).unwrap().milp.to_lp();
        assert!(lp.contains(" cap_1: r_1_0 + r_1_1 + r_1_2\n   <= 2\n"));
        assert!(lp.contains(" load_1_2: l_1_2 - r_1_2 + r_0_2\n   >= 0\n"));
        assert!(lp.contains(" r_0_0 = 1\n"));
    }
}
