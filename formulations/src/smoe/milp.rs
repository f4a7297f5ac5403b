//! Exact MILPs of SMoE's two per-layer decisions.
//!
//! * [`RoutingMilp`], objective (1) over the batch: per token t and expert e of E_l ∪ S (the
//!   low-score experts and the substitute candidates, module doc of [`crate::smoe`]) a binary
//!   `x_t_e`; `sum_e x_t_e = |E_l|` (with the fixed top-score experts, k in all); maximise
//!   `sum_t (|C_t ∩ V| + sum_{e in V} x_t_e)`, the constant going to the objective constant.
//!   Tokens do not interact (V is fixed by the instance), so this is the sum of the per-token
//!   optima; it is the LP-checkable twin of the exhaustive search.
//! * [`SplitMilp`], objective (4) with per-expert costs: a binary `x_i` per missed expert
//!   (1 = load over PCIe, 0 = compute on the CPU) and `z >= sum_i C_load(i) x_i`, `z >= sum_i
//!   C_CPU(i) (1 - x_i)`; minimise z. Times are in units of the smallest cost involved so
//!   that a non-trivial optimum is at least 1 (see [`crate::milp`] on gaps).

use super::evaluate::{objective4, LayerSets, Split};
use super::model::{Costs, Instance};
use crate::error::Error;
use crate::milp::{Milp, MilpSolution, Sense, SolveOptions, VarId};

/// A token's fixed top-score experts and its (expert, variable) choices.
type TokenChoices = (Vec<u32>, Vec<(u32, VarId)>);

/// A solve's outcome and the decoded routing.
pub type RoutingSolution = (MilpSolution, Option<Vec<Vec<u32>>>);

/// The routing MILP and the map back to a routing.
#[derive(Debug, Clone)]
pub struct RoutingMilp {
    /// The model.
    pub milp: Milp,
    /// Per token: the fixed top-score experts and the (expert, variable) choices.
    choices: Vec<TokenChoices>,
}

impl RoutingMilp {
    /// Builds the model of an instance.
    pub fn build(instance: &Instance, sets: &LayerSets) -> Self {
        let mut milp = Milp::new(format!("smoe_routing_{}", instance.name), Sense::Maximize);
        let mut choices = Vec::new();
        for (t, ts) in sets.tokens.iter().enumerate() {
            let fixed_hits = ts
                .top_score
                .iter()
                .filter(|&&e| sets.is_available(e))
                .count();
            milp.add_constant(fixed_hits as f64);
            let vars: Vec<(u32, VarId)> = ts
                .low_score
                .iter()
                .chain(&ts.candidates)
                .map(|&e| {
                    let v = milp.binary(format!("x_{t}_{e}"));
                    if sets.is_available(e) {
                        milp.add_objective(v, 1.0);
                    }
                    (e, v)
                })
                .collect();
            let n = ts.low_score.len() as f64;
            milp.row(
                format!("k_{t}"),
                vars.iter().map(|&(_, v)| (v, 1.0)).collect(),
                n,
                n,
            );
            choices.push((ts.top_score.clone(), vars));
        }
        RoutingMilp { milp, choices }
    }

    /// Solves; returns the solver's outcome and the decoded routing (if an incumbent exists).
    pub fn solve(&self, options: &SolveOptions) -> Result<RoutingSolution, Error> {
        let solution = self.milp.solve(options, None)?;
        let routing = solution.values.as_ref().map(|v| {
            self.choices
                .iter()
                .map(|(fixed, vars)| {
                    let mut o = fixed.clone();
                    o.extend(
                        vars.iter()
                            .filter(|(_, var)| v[var.0] > 0.5)
                            .map(|&(e, _)| e),
                    );
                    o
                })
                .collect()
        });
        Ok((solution, routing))
    }
}

/// The split MILP of (4) for a list of missed experts.
#[derive(Debug, Clone)]
pub struct SplitMilp {
    /// The model (times in units of `unit_s`).
    pub milp: Milp,
    /// Seconds per model time unit.
    pub unit_s: f64,
    experts: Vec<(u32, VarId)>,
}

/// An exact split: the solver's outcome (objective and bound in seconds) and the split.
#[derive(Debug, Clone)]
pub struct ExactSplit {
    /// Status, objective, bound and gap, objective and bound converted to seconds.
    pub solution: MilpSolution,
    /// The incumbent's split, re-evaluated by [`objective4`].
    pub split: Option<Split>,
}

impl SplitMilp {
    /// Builds the model for the given missed experts.
    pub fn build(costs: &Costs, experts: &[u32]) -> Self {
        let unit_s = experts
            .iter()
            .flat_map(|&e| [costs.load(e), costs.cpu(e)])
            .fold(f64::INFINITY, f64::min);
        let unit_s = if unit_s.is_finite() { unit_s } else { 1.0 };
        let mut milp = Milp::new("smoe_split", Sense::Minimize);
        let z = milp.continuous("z", 0.0, f64::INFINITY);
        milp.add_objective(z, 1.0);
        let vars: Vec<(u32, VarId)> = experts
            .iter()
            .map(|&e| (e, milp.binary(format!("load_{e}"))))
            .collect();
        let mut load_row: Vec<(VarId, f64)> = vars
            .iter()
            .map(|&(e, v)| (v, costs.load(e) / unit_s))
            .collect();
        load_row.push((z, -1.0));
        milp.row("t_load", load_row, f64::NEG_INFINITY, 0.0);
        // sum_i b_i (1 - x_i) <= z  <=>  -sum_i b_i x_i - z <= -sum_i b_i.
        let total_cpu: f64 = experts.iter().map(|&e| costs.cpu(e) / unit_s).sum();
        let mut cpu_row: Vec<(VarId, f64)> = vars
            .iter()
            .map(|&(e, v)| (v, -costs.cpu(e) / unit_s))
            .collect();
        cpu_row.push((z, -1.0));
        milp.row("t_cpu", cpu_row, f64::NEG_INFINITY, -total_cpu);
        SplitMilp {
            milp,
            unit_s,
            experts: vars,
        }
    }

    /// Solves and decodes.
    pub fn solve(&self, costs: &Costs, options: &SolveOptions) -> Result<ExactSplit, Error> {
        let mut solution = self.milp.solve(options, None)?;
        let split = solution.values.as_ref().map(|v| {
            let (load, cpu): (Vec<_>, Vec<_>) =
                self.experts.iter().partition(|(_, var)| v[var.0] > 0.5);
            objective4(
                costs,
                load.into_iter().map(|(e, _)| e).collect(),
                cpu.into_iter().map(|(e, _)| e).collect(),
            )
        });
        solution.objective = solution.objective.map(|o| o * self.unit_s);
        solution.best_bound = solution.best_bound.map(|b| b * self.unit_s);
        Ok(ExactSplit { solution, split })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::milp::MilpStatus;
    use crate::smoe::evaluate::{evaluate_routing, objective1, split_exhaustive};

    #[test]
    fn routing_milp_reaches_objective1_on_the_fig1_layer() {
        let i = crate::smoe::evaluate::tests::fig1();
        let s = LayerSets::new(&i);
        let (sol, routing) = RoutingMilp::build(&i, &s)
            .solve(&SolveOptions::default())
            .unwrap();
        assert_eq!(sol.status, MilpStatus::Optimal);
        // Hand value of (1) on this layer: 4 (evaluate.rs's test).
        assert!((sol.objective.unwrap() - 4.0).abs() < 1e-9);
        let v = evaluate_routing(&i, &s, &routing.unwrap()).unwrap();
        assert_eq!(v.total_hits, objective1(&s).iter().sum::<usize>());
    }

    #[test]
    fn split_milp_matches_the_hand_optimum() {
        // Same numbers as evaluate.rs's exhaustive test: optimum 3 s, load {1, 2}.
        let costs = Costs::PerExpert {
            load_s: vec![4.0, 1.0, 2.0],
            cpu_s: vec![2.0, 3.0, 3.0],
            gpu_s: vec![0.0; 3],
        };
        let exact = SplitMilp::build(&costs, &[0, 1, 2])
            .solve(&costs, &SolveOptions::default())
            .unwrap();
        assert_eq!(exact.solution.status, MilpStatus::Optimal);
        let split = exact.split.unwrap();
        assert_eq!(split.objective_s, 3.0);
        assert!((exact.solution.objective.unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(
            split_exhaustive(&costs, &[0, 1, 2]).unwrap().objective_s,
            3.0
        );
    }
}
