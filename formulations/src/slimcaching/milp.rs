//! Exact MILP of P1 (18), with the routing choice of Section III-C modelled exactly.
//!
//! Variables (objective in milliseconds, [`OBJECTIVE_SCALE`], for the solver's tolerances):
//! * `x_s{n}_e{i}` binary: x_{n,i} of (18c); capacity rows `cap_s{n}` are (18b).
//! * `cloud_e{i}` in \[0, 1\]: 1 iff no edge server caches i, forced by
//!   `cloud_e{i} + sum_n x_{n,i} >= 1` and `cloud_e{i} + x_{n,i} <= 1`.
//! * per routing demand d = (n_u, m, R) of [`LatencyModel::demands`] and expert i in R:
//!   `y_d{d}_e{i}_s{n}` in \[0, 1\], "i is served by the other edge server n", with
//!   `x_{n_u,i} + sum_n y + cloud_i = 1` (an expert on n_u is served there, one held elsewhere
//!   by one holder, the cloud only when nobody holds it) and `y <= x_{n,i}`.
//! * per demand and other server n: `z_d{d}_s{n}` binary, "the token visits n" (`y <= z`),
//!   paying T_{n_u,n,m} + T^CP_E(n); for |R| = 1 it merges with y (no binary needed).
//! * `w_d{d}` >= x_{n_u,i} (n_u computes) and `v_d{d}` >= cloud_i (the cloud is visited).
//!
//! The objective is F(X) = sum_d W_d (G_d(empty) - G_d(X)): the constant sum_d W_d G_d(empty)
//! minus the weighted routing latency. For fixed binary x and z the continuous variables are at
//! an integral optimum (each expert picks its cheapest visited holder; w, v are pushed down to
//! their lower bounds by non-negative costs), so the MILP optimum is max F exactly.
//!
//! [`Scope`] fixes servers, which gives the successive subproblem P2_n of (19): servers before n
//! fixed to the earlier placement, n free, later ones empty.

use super::evaluate::LatencyModel;
use super::model::{ExpertId, Placement, ServerId};
use crate::error::Error;
use crate::milp::{Milp, MilpSolution, Sense, SolveOptions, VarId};

/// The MILP objective is F in seconds times this (milliseconds).
pub const OBJECTIVE_SCALE: f64 = 1e3;

/// What the MILP may decide on a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// x_{n,.} are decision variables.
    Free,
    /// x_{n,.} are fixed to this set of experts.
    Fixed(Vec<ExpertId>),
}

#[derive(Debug, Clone)]
struct DemandVars {
    associated: Option<VarId>,
    cloud_visit: Option<VarId>,
    /// Per other server: the visit binary (None when |R| = 1).
    visit: Vec<Option<VarId>>,
    /// Per expert of R (same order), per server: y (None for n_u).
    serve: Vec<Vec<Option<VarId>>>,
}

/// The P1 / P2_n model of an instance (or a part of it, [`SlimCachingMilp::part`]) and the map
/// from its variables back to a placement.
#[derive(Debug, Clone)]
pub struct SlimCachingMilp {
    /// The model.
    pub milp: Milp,
    /// The experts that have placement variables, in id order (all of them but in a part).
    experts: Vec<ExpertId>,
    /// Experts in the instance's catalogue (a decoded placement's shape).
    catalogue: usize,
    /// x[n][k] is x_{n, experts[k]}.
    x: Vec<Vec<VarId>>,
    /// The cloud variable of experts[k], if some modelled demand needs it.
    cloud: Vec<Option<VarId>>,
    /// The modelled demands (indices into [`LatencyModel::demands`]) and their variables.
    demands: Vec<(usize, DemandVars)>,
}

/// An exact solve: the solver's outcome in F's units (seconds) and the decoded placement.
#[derive(Debug, Clone)]
pub struct ExactSolution {
    /// Status, objective, bound and gap with objective and bound converted to seconds.
    pub solution: MilpSolution,
    /// The incumbent's placement, if one was found.
    pub placement: Option<Placement>,
}

pub use crate::milp::MAX_MILP_VARIABLES;

/// An instance whose P1 has more variables ([`p1_variables`]) than this is of the paper's size:
/// there HiGHS does not finish the root LP in minutes, and moe-opt's methods and checks turn to
/// bounds that do ([`super::lagrangian`]).
pub const PAPER_SIZED_VARIABLES: u64 = 50_000;

/// An upper bound on the variables of P1 for `model`: the placement binaries (servers x
/// experts), a cloud variable per expert, and per demand its associated-server, visit and
/// serve variables (at most 2 + servers x (1 + missing experts)).
pub fn p1_variables(model: &LatencyModel) -> u64 {
    let servers = model.servers() as u64;
    let experts = model.experts() as u64;
    let per_demand: u64 = model
        .demands()
        .iter()
        .map(|d| 2 + servers * (1 + d.missing.len() as u64))
        .sum();
    servers * experts + experts + per_demand
}

impl SlimCachingMilp {
    /// Builds P1 (all servers free) or a restricted model (one [`Scope`] per server).
    pub fn build(model: &LatencyModel, scope: &[Scope]) -> Self {
        assert_eq!(scope.len(), model.servers(), "one scope per server");
        let experts = (0..model.experts()).map(|e| ExpertId(e as u32)).collect();
        Self::assemble(
            model,
            Some(scope),
            (0..model.demands().len()).collect(),
            experts,
        )
    }

    /// The part of P1 over some demands (indices into [`LatencyModel::demands`]) without the
    /// storage rows (18b): placement variables for their experts only, every server free.
    /// F is a sum over demands, so P1 with (18b) dropped splits into such parts, one per
    /// group of demands that share no expert (the Lagrangian bound, [`super::lagrangian`]).
    pub fn part(model: &LatencyModel, demands: Vec<usize>) -> Self {
        let mut experts: Vec<ExpertId> = demands
            .iter()
            .flat_map(|&d| model.demands()[d].missing.iter().copied())
            .collect();
        experts.sort_unstable();
        experts.dedup();
        Self::assemble(model, None, demands, experts)
    }

    /// The model over `demands` and the placement variables of `experts` (sorted; they hold
    /// every expert the demands need); with a scope per server, its storage rows or fixings.
    fn assemble(
        model: &LatencyModel,
        scope: Option<&[Scope]>,
        demand_ids: Vec<usize>,
        experts: Vec<ExpertId>,
    ) -> Self {
        let servers = model.servers();
        let mut milp = Milp::new(
            format!(
                "SlimCaching P1 (18): {servers} servers, {} experts, objective F in ms",
                experts.len()
            ),
            Sense::Maximize,
        );
        milp.set_objective_name("latency_reduction_ms");
        let x: Vec<Vec<VarId>> = (0..servers)
            .map(|n| {
                experts
                    .iter()
                    .map(|e| milp.binary(format!("x_s{n}_e{e}")))
                    .collect()
            })
            .collect();
        let slot = |e: ExpertId| {
            experts
                .binary_search(&e)
                .expect("a modelled demand's expert has placement variables")
        };
        for (n, s) in scope.into_iter().flatten().enumerate() {
            match s {
                Scope::Free => {
                    let terms = experts
                        .iter()
                        .zip(&x[n])
                        .map(|(&e, &v)| (v, model.expert_bytes(e) as f64))
                        .collect();
                    let q = model.capacity(ServerId(n as u32)) as f64;
                    milp.row(format!("cap_s{n}"), terms, f64::NEG_INFINITY, q);
                }
                Scope::Fixed(set) => {
                    for &v in &x[n] {
                        milp.fix(v, 0.0);
                    }
                    for &e in set {
                        milp.fix(x[n][slot(e)], 1.0);
                    }
                }
            }
        }
        let mut cloud = vec![None; experts.len()];
        for &di in &demand_ids {
            for &e in &model.demands()[di].missing {
                let k = slot(e);
                if cloud[k].is_some() {
                    continue;
                }
                let c = milp.continuous(format!("cloud_e{e}"), 0.0, 1.0);
                let mut any: Vec<(VarId, f64)> = vec![(c, 1.0)];
                for (n, xs) in x.iter().enumerate() {
                    any.push((xs[k], 1.0));
                    milp.row(
                        format!("cloud_up_e{e}_s{n}"),
                        vec![(c, 1.0), (xs[k], 1.0)],
                        f64::NEG_INFINITY,
                        1.0,
                    );
                }
                milp.row(format!("cloud_lo_e{e}"), any, 1.0, f64::INFINITY);
                cloud[k] = Some(c);
            }
        }
        let mut demands = Vec::with_capacity(demand_ids.len());
        for di in demand_ids {
            let d = &model.demands()[di];
            let costs = model.costs(d.model, d.server);
            let w = d.weight * OBJECTIVE_SCALE;
            let nu = d.server.index();
            let single = d.missing.len() == 1;
            milp.add_constant(w * model.cloud_latency(d));
            let associated = (costs.associated_compute > 0.0).then(|| {
                let v = milp.continuous(format!("w_d{di}"), 0.0, 1.0);
                milp.add_objective(v, -w * costs.associated_compute);
                for &e in &d.missing {
                    milp.row(
                        format!("use_d{di}_e{e}"),
                        vec![(v, 1.0), (x[nu][slot(e)], -1.0)],
                        0.0,
                        f64::INFINITY,
                    );
                }
                v
            });
            let cloud_visit = (costs.cloud_visit > 0.0).then(|| {
                let v = milp.continuous(format!("v_d{di}"), 0.0, 1.0);
                milp.add_objective(v, -w * costs.cloud_visit);
                for &e in &d.missing {
                    let c = cloud[slot(e)].expect("cloud variable of a demanded expert");
                    milp.row(
                        format!("cloudvisit_d{di}_e{e}"),
                        vec![(v, 1.0), (c, -1.0)],
                        0.0,
                        f64::INFINITY,
                    );
                }
                v
            });
            let visit: Vec<Option<VarId>> = (0..servers)
                .map(|n| {
                    (n != nu && !single).then(|| {
                        let z = milp.binary(format!("z_d{di}_s{n}"));
                        milp.add_objective(z, -w * costs.edge_visit[n]);
                        z
                    })
                })
                .collect();
            let mut serve = Vec::with_capacity(d.missing.len());
            for &e in &d.missing {
                let c = cloud[slot(e)].expect("cloud variable of a demanded expert");
                milp.add_objective(c, -w * costs.cloud_return);
                let mut assign = vec![(x[nu][slot(e)], 1.0), (c, 1.0)];
                let ys: Vec<Option<VarId>> = (0..servers)
                    .map(|n| {
                        (n != nu).then(|| {
                            let y = milp.continuous(format!("y_d{di}_e{e}_s{n}"), 0.0, 1.0);
                            let visit_cost = if single { costs.edge_visit[n] } else { 0.0 };
                            milp.add_objective(y, -w * (costs.edge_return[n] + visit_cost));
                            milp.row(
                                format!("hold_d{di}_e{e}_s{n}"),
                                vec![(y, 1.0), (x[n][slot(e)], -1.0)],
                                f64::NEG_INFINITY,
                                0.0,
                            );
                            if let Some(z) = visit[n] {
                                milp.row(
                                    format!("open_d{di}_e{e}_s{n}"),
                                    vec![(y, 1.0), (z, -1.0)],
                                    f64::NEG_INFINITY,
                                    0.0,
                                );
                            }
                            assign.push((y, 1.0));
                            y
                        })
                    })
                    .collect();
                milp.row(format!("assign_d{di}_e{e}"), assign, 1.0, 1.0);
                serve.push(ys);
            }
            demands.push((
                di,
                DemandVars {
                    associated,
                    cloud_visit,
                    visit,
                    serve,
                },
            ));
        }
        SlimCachingMilp {
            milp,
            experts,
            catalogue: model.experts(),
            x,
            cloud,
            demands,
        }
    }

    /// P1: every server free.
    pub fn p1(model: &LatencyModel) -> Self {
        Self::build(model, &vec![Scope::Free; model.servers()])
    }

    /// P1, or [`Error::TooLarge`] when [`p1_variables`] exceeds `max_variables` (default
    /// [`MAX_MILP_VARIABLES`]; checked before anything of the model is built).
    pub fn checked_p1(model: &LatencyModel, max_variables: u64) -> Result<Self, Error> {
        let vars = p1_variables(model);
        if vars > max_variables {
            return Err(Error::TooLarge(format!(
                "slimcaching MILP: about {vars} variables exceeds the limit of {max_variables} \
                 (default formulations::milp::MAX_MILP_VARIABLES; --max-milp-variables raises \
                 it); use successive-maxconv or greedy"
            )));
        }
        Ok(Self::p1(model))
    }

    /// The placement encoded by a solution's values.
    pub fn decode(&self, values: &[f64]) -> Placement {
        let mut p = Placement::empty(self.x.len(), self.catalogue);
        for (n, e, v) in self.placement_vars() {
            if values[v.0] > 0.5 {
                p.insert(n, e);
            }
        }
        p
    }

    /// The placement variables: (server n, expert e, x_{n,e}).
    pub fn placement_vars(&self) -> impl Iterator<Item = (ServerId, ExpertId, VarId)> + '_ {
        self.x.iter().enumerate().flat_map(move |(n, xs)| {
            self.experts
                .iter()
                .zip(xs)
                .map(move |(&e, &v)| (ServerId(n as u32), e, v))
        })
    }

    /// A full, feasible assignment of every variable for placement `x` (routing by the
    /// evaluator): a MIP start, and a check that the model encodes the evaluator.
    pub fn values_for(&self, model: &LatencyModel, placement: &Placement) -> Vec<f64> {
        let mut v = vec![0.0; self.milp.num_vars()];
        for (n, e, var) in self.placement_vars() {
            if placement.contains(n, e) {
                v[var.0] = 1.0;
            }
        }
        for (&e, c) in self.experts.iter().zip(&self.cloud) {
            if let Some(c) = c {
                let held = (0..self.x.len()).any(|n| placement.contains(ServerId(n as u32), e));
                v[c.0] = if held { 0.0 } else { 1.0 };
            }
        }
        for (di, vars) in &self.demands {
            let d = &model.demands()[*di];
            let route = model.route(d, |n, e| placement.contains(n, e));
            if let (Some(a), false) = (vars.associated, route.at_associated.is_empty()) {
                v[a.0] = 1.0;
            }
            if let (Some(c), false) = (vars.cloud_visit, route.at_cloud.is_empty()) {
                v[c.0] = 1.0;
            }
            for (e, n) in &route.at_edge {
                let k = d
                    .missing
                    .iter()
                    .position(|m| m == e)
                    .expect("routed expert of R");
                if let Some(y) = vars.serve[k][n.index()] {
                    v[y.0] = 1.0;
                }
                if let Some(z) = vars.visit[n.index()] {
                    v[z.0] = 1.0;
                }
            }
        }
        v
    }

    /// Solves; `start` (e.g. a heuristic's placement) is passed as the MIP start.
    pub fn solve(
        &self,
        model: &LatencyModel,
        options: &SolveOptions,
        start: Option<&Placement>,
    ) -> Result<ExactSolution, Error> {
        let start_values = start.map(|p| self.values_for(model, p));
        let mut solution = self.milp.solve(options, start_values.as_deref())?;
        let placement = solution.values.as_deref().map(|v| self.decode(v));
        solution.objective = solution.objective.map(|o| o / OBJECTIVE_SCALE);
        solution.best_bound = solution.best_bound.map(|b| b / OBJECTIVE_SCALE);
        Ok(ExactSolution {
            solution,
            placement,
        })
    }
}
