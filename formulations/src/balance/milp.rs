//! The exact MILP of one layer (and of an instance: the layers' models side by side, the
//! objective the sum of their maxima; layers share nothing).
//!
//! The even split makes a replica's load w_e / c_e nonlinear in the count; the model picks each
//! count with binaries and places copies per count, so every load coefficient is a constant:
//!
//! * `y_e_k` in {0, 1}: expert e has k replicas, for k in [lo_e, hi_e]; sum_k y_e_k = 1 (no
//!   binary where lo_e = hi_e).
//! * `x_e_k_g` integer in [0, min(k, m)] (at most 1 with one replica per GPU): replicas of e on
//!   GPU g when e has k; sum_g x_e_k_g = k y_e_k.
//! * slots: sum_{e,k} x_e_k_g = m on every GPU; load: sum_{e,k} (w_e / k) x_e_k_g <= T; minimise
//!   T, with T >= the combinatorial lower bound ([`super::bounds`]) as its lower bound.
//! * hierarchical: `u_q_n` in {0, 1}, group q on node n, sum_n u_q_n = 1, sum_q u_q_n = K / N,
//!   and x_e_k_g <= min(k, m) u_{q(e), n(g)}.
//!
//! Count ranges from an upper bound U (a plan's busiest GPU): a plan at least as good has every
//! replica at most U, so c_e >= lo_e = max(1, ceil(w_e / U)); and hi_e = min(cap, S - sum_{f !=
//! e} lo_f). Symmetry (when no GPU is distinguished, i.e. without a migration budget): GPUs
//! are identical, so any plan can be relabelled with loads nonincreasing in the GPU index
//! (within each node when hierarchical, where a relabelling must keep the nodes); and nodes
//! are identical, so they can be ordered by the smallest group each hosts, which puts group q
//! on a node n <= q (`u_q_n` = 0 for n > q). Neither cuts every optimum off.
//!
//! Migration: with a current placement and a budget B, continuous d_e_g >= sum_k x_e_k_g -
//! current_e_g, d >= 0, and sum d <= B: the replicas copied to GPUs ([`super::evaluate::moved`])
//! are at most B.
//!
//! Loads are scaled so that a mean GPU carries [`SCALE_TO`] (the gap is relative above 1);
//! [`LayerModel::scale`] converts back.

use super::bounds;
use super::evaluate::gpu_loads;
use super::model::{replica_counts, Instance, Shape};
use crate::error::Error;
use crate::milp::{Milp, Sense, VarId};

/// The mean GPU load in the model's units.
pub const SCALE_TO: f64 = 1000.0;
/// Most integer variables of one layer's model.
pub const MAX_INTEGERS: usize = 400_000;

/// What a layer's model is built with.
#[derive(Debug, Clone, Default)]
pub struct LayerOptions {
    /// A proved lower bound on the optimum (T's lower bound), in load units.
    pub lower: f64,
    /// An upper bound U on the optimum (a plan's busiest GPU), for the count ranges.
    pub upper: Option<f64>,
    /// The current placement and the move budget (no symmetry breaking then).
    pub budget: Option<(Vec<usize>, usize)>,
}

/// One layer's model and the map from its variables to a plan.
#[derive(Debug, Clone)]
pub struct LayerModel {
    /// The model.
    pub milp: Milp,
    /// The busiest GPU's load, in model units.
    pub t: VarId,
    /// Model units per load unit.
    pub scale: f64,
    shape: Shape,
    /// Per expert: (k, y_e_k) for k in its range (`None`: the only count).
    counts: Vec<Vec<(usize, Option<VarId>)>>,
    /// x[e][index of k][g].
    x: Vec<Vec<Vec<VarId>>>,
    /// u[q][n] (hierarchical).
    u: Vec<Vec<VarId>>,
    /// d[e][g] (migration).
    d: Vec<Vec<VarId>>,
    /// The current placement (migration).
    current: Option<Vec<usize>>,
}

/// The count range of every expert under an upper bound (module doc).
pub fn count_ranges(shape: &Shape, w: &[f64], upper: Option<f64>) -> Vec<(usize, usize)> {
    let cap = shape.cap();
    let lo: Vec<usize> = w
        .iter()
        .map(|&x| match upper {
            // The smallest c with x / c <= U, computed as the evaluator divides.
            Some(u) if u > 0.0 => (1..=cap).find(|&c| x / c as f64 <= u).unwrap_or(cap),
            _ => 1,
        })
        .collect();
    let total: usize = lo.iter().sum();
    lo.iter()
        .map(|&l| (l, cap.min(shape.slots.saturating_sub(total - l)).max(l)))
        .collect()
}

impl LayerModel {
    /// Builds layer `l`'s model into `milp` with names prefixed `prefix` (module doc).
    /// [`Error::TooLarge`] beyond [`MAX_INTEGERS`].
    pub fn build(
        shape: &Shape,
        w: &[f64],
        options: &LayerOptions,
        name: String,
        prefix: &str,
    ) -> Result<Self, Error> {
        let mut milp = Milp::new(name, Sense::Minimize);
        let mean = bounds::mean(shape, w);
        let scale = if mean > 0.0 { SCALE_TO / mean } else { 1.0 };
        let model = Self::add(&mut milp, shape, w, options, scale, prefix)?;
        milp.add_objective(model.t, 1.0);
        milp.set_objective_name("max_gpu_load");
        Ok(LayerModel { milp, ..model })
    }

    /// Adds one layer's variables and rows to `milp` (the objective is the caller's).
    fn add(
        milp: &mut Milp,
        shape: &Shape,
        w: &[f64],
        options: &LayerOptions,
        scale: f64,
        prefix: &str,
    ) -> Result<Self, Error> {
        let (g_count, m) = (shape.gpus, shape.per_gpu());
        let ranges = count_ranges(shape, w, options.upper);
        let integers: usize = ranges
            .iter()
            .map(|(l, h)| (h - l + 1) * (g_count + 1))
            .sum();
        if integers > MAX_INTEGERS {
            return Err(Error::TooLarge(format!(
                "balance MILP: {integers} integer variables in a layer exceeds the limit of \
                 {MAX_INTEGERS} (formulations::balance::milp::MAX_INTEGERS)"
            )));
        }
        // Slack above U for rounding: the start's own T must be feasible.
        let upper_t = options
            .upper
            .map_or(f64::INFINITY, |u| u * scale * (1.0 + 1e-9));
        let t = milp.continuous(
            format!("{prefix}T"),
            (options.lower * scale).min(upper_t),
            upper_t,
        );
        let per_gpu_cap = |k: usize| {
            if shape.one_per_gpu {
                1.0
            } else {
                k.min(m) as f64
            }
        };
        let mut counts = Vec::with_capacity(w.len());
        let mut x = Vec::with_capacity(w.len());
        for (e, &(lo, hi)) in ranges.iter().enumerate() {
            let mut ks = Vec::new();
            let mut xs = Vec::new();
            let mut pick = Vec::new();
            for k in lo..=hi {
                let y = (lo < hi).then(|| milp.binary(format!("{prefix}y_{e}_{k}")));
                if let Some(y) = y {
                    pick.push((y, 1.0));
                }
                ks.push((k, y));
                let xk: Vec<VarId> = (0..g_count)
                    .map(|g| milp.integer(format!("{prefix}x_{e}_{k}_{g}"), 0.0, per_gpu_cap(k)))
                    .collect();
                // sum_g x = k y (k when the count is fixed).
                let mut terms: Vec<(VarId, f64)> = xk.iter().map(|&v| (v, 1.0)).collect();
                match y {
                    Some(y) => {
                        terms.push((y, -(k as f64)));
                        milp.row(format!("{prefix}copies_{e}_{k}"), terms, 0.0, 0.0);
                    }
                    None => milp.row(format!("{prefix}copies_{e}_{k}"), terms, k as f64, k as f64),
                }
                xs.push(xk);
            }
            if !pick.is_empty() {
                milp.row(format!("{prefix}count_{e}"), pick, 1.0, 1.0);
            }
            counts.push(ks);
            x.push(xs);
        }
        // Slots and loads per GPU (terms by expert, then count).
        let mut slot_terms: Vec<Vec<(VarId, f64)>> = vec![Vec::new(); g_count];
        let mut load_terms: Vec<Vec<(VarId, f64)>> = vec![Vec::new(); g_count];
        for (e, (ks, xs)) in counts.iter().zip(&x).enumerate() {
            for (&(k, _), xk) in ks.iter().zip(xs) {
                for (g, &v) in xk.iter().enumerate() {
                    slot_terms[g].push((v, 1.0));
                    load_terms[g].push((v, w[e] * scale / k as f64));
                }
            }
        }
        for (g, slots) in slot_terms.into_iter().enumerate() {
            milp.row(format!("{prefix}slots_{g}"), slots, m as f64, m as f64);
            let mut load = load_terms[g].clone();
            load.push((t, -1.0));
            milp.row(format!("{prefix}load_{g}"), load, f64::NEG_INFINITY, 0.0);
        }
        // Hierarchical: groups on nodes.
        let mut u = Vec::new();
        if shape.hierarchical {
            for q in 0..shape.groups {
                let uq: Vec<VarId> = (0..shape.nodes)
                    .map(|n| milp.binary(format!("{prefix}u_{q}_{n}")))
                    .collect();
                milp.row(
                    format!("{prefix}group_{q}"),
                    uq.iter().map(|&v| (v, 1.0)).collect(),
                    1.0,
                    1.0,
                );
                if options.budget.is_none() {
                    for &v in &uq[(q + 1).min(shape.nodes)..] {
                        milp.fix(v, 0.0);
                    }
                }
                u.push(uq);
            }
            let per = shape.groups_per_node() as f64;
            for n in 0..shape.nodes {
                milp.row(
                    format!("{prefix}node_{n}"),
                    u.iter().map(|uq| (uq[n], 1.0)).collect(),
                    per,
                    per,
                );
            }
            for (e, ks) in counts.iter().enumerate() {
                let q = shape.group_of(e);
                for (i, &(k, _)) in ks.iter().enumerate() {
                    for g in 0..g_count {
                        milp.row(
                            format!("{prefix}local_{e}_{k}_{g}"),
                            vec![(x[e][i][g], 1.0), (u[q][shape.node_of(g)], -per_gpu_cap(k))],
                            f64::NEG_INFINITY,
                            0.0,
                        );
                    }
                }
            }
        }
        let mut d = Vec::new();
        match &options.budget {
            None => {
                // Loads nonincreasing in the GPU index within a node (module doc).
                for g in 0..g_count.saturating_sub(1) {
                    if shape.node_of(g) != shape.node_of(g + 1) {
                        continue;
                    }
                    let mut terms = load_terms[g].clone();
                    terms.extend(load_terms[g + 1].iter().map(|&(v, c)| (v, -c)));
                    milp.row(format!("{prefix}order_{g}"), terms, 0.0, f64::INFINITY);
                }
            }
            Some((current, budget)) => {
                let mut all = Vec::new();
                for (e, xs) in x.iter().enumerate() {
                    let mut de = Vec::new();
                    for g in 0..g_count {
                        let now = current[g * m..(g + 1) * m]
                            .iter()
                            .filter(|&&f| f == e)
                            .count() as f64;
                        let v = milp.continuous(format!("{prefix}d_{e}_{g}"), 0.0, m as f64);
                        let mut terms: Vec<(VarId, f64)> =
                            xs.iter().map(|xk| (xk[g], -1.0)).collect();
                        terms.push((v, 1.0));
                        milp.row(format!("{prefix}moved_{e}_{g}"), terms, -now, f64::INFINITY);
                        all.push((v, 1.0));
                        de.push(v);
                    }
                    d.push(de);
                }
                milp.row(
                    format!("{prefix}budget"),
                    all,
                    f64::NEG_INFINITY,
                    *budget as f64,
                );
            }
        }
        Ok(LayerModel {
            milp: Milp::new("", Sense::Minimize),
            t,
            scale,
            shape: *shape,
            counts,
            x,
            u,
            d,
            current: options.budget.as_ref().map(|(c, _)| c.clone()),
        })
    }

    /// The MIP start of a plan's layer (`phy2log`), or `None` if the plan is outside the
    /// model (a count outside its range, or a budget it exceeds). Without a budget the GPUs
    /// (and nodes) are relabelled into the model's symmetry order first.
    pub fn start(&self, w: &[f64], phy2log: &[usize]) -> Option<Vec<f64>> {
        let shape = &self.shape;
        let m = shape.per_gpu();
        let counts = replica_counts(phy2log, shape.experts);
        let gpus: Vec<&[usize]> = phy2log.chunks(m).collect();
        let order: Vec<usize> = if self.d.is_empty() {
            self.symmetric_order(w, phy2log)
        } else {
            (0..shape.gpus).collect()
        };
        let mut v = vec![0.0; self.milp.num_vars()];
        let loads = gpu_loads(shape, w, phy2log);
        let mut t: f64 = 0.0;
        for (new_g, &old_g) in order.iter().enumerate() {
            t = t.max(loads[old_g] * self.scale);
            for &e in gpus[old_g] {
                let i = self.counts[e].iter().position(|&(k, _)| k == counts[e])?;
                v[self.x[e][i][new_g].0] += 1.0;
            }
        }
        for (e, ks) in self.counts.iter().enumerate() {
            for &(k, y) in ks {
                if let Some(y) = y {
                    v[y.0] = if k == counts[e] { 1.0 } else { 0.0 };
                }
            }
        }
        if !self.u.is_empty() {
            for (new_g, &old_g) in order.iter().enumerate() {
                if let Some(&e) = gpus[old_g].first() {
                    v[self.u[shape.group_of(e)][shape.node_of(new_g)].0] = 1.0;
                }
            }
        }
        if let Some(current) = &self.current {
            for (e, de) in self.d.iter().enumerate() {
                for (g, dv) in de.iter().enumerate() {
                    let now = current[g * m..(g + 1) * m]
                        .iter()
                        .filter(|&&f| f == e)
                        .count() as f64;
                    let new = gpus[g].iter().filter(|&&f| f == e).count() as f64;
                    v[dv.0] = (new - now).max(0.0);
                }
            }
        }
        v[self.t.0] = t;
        Some(v)
    }

    /// GPUs in the model's symmetry order: nodes by the smallest group they host, GPUs within a
    /// node by load, heaviest first.
    fn symmetric_order(&self, w: &[f64], phy2log: &[usize]) -> Vec<usize> {
        let shape = &self.shape;
        let loads = gpu_loads(shape, w, phy2log);
        let m = shape.per_gpu();
        let smallest_group = |n: usize| {
            (n * shape.gpus_per_node()..(n + 1) * shape.gpus_per_node())
                .flat_map(|g| phy2log[g * m..(g + 1) * m].iter())
                .map(|&e| shape.group_of(e))
                .min()
                .unwrap_or(usize::MAX)
        };
        let mut nodes: Vec<usize> = (0..shape.nodes).collect();
        if shape.hierarchical {
            nodes.sort_by_key(|&n| smallest_group(n));
        }
        let mut order = Vec::with_capacity(shape.gpus);
        for n in nodes {
            let mut gs: Vec<usize> =
                (n * shape.gpus_per_node()..(n + 1) * shape.gpus_per_node()).collect();
            gs.sort_by(|&a, &b| loads[b].total_cmp(&loads[a]));
            order.extend(gs);
        }
        order
    }

    /// The plan's layer (`phy2log`, GPU by GPU) of a solution's values.
    pub fn decode(&self, values: &[f64]) -> Vec<usize> {
        let shape = &self.shape;
        let mut gpus: Vec<Vec<usize>> = vec![Vec::new(); shape.gpus];
        for (e, xs) in self.x.iter().enumerate() {
            for xk in xs {
                for (g, v) in xk.iter().enumerate() {
                    for _ in 0..values[v.0].round() as usize {
                        gpus[g].push(e);
                    }
                }
            }
        }
        gpus.concat()
    }
}

/// The exact MILP of a whole instance (for `write-lp`): every layer's model side by side with
/// the objective sum_l T_l in load units; count ranges without an upper bound, lower bounds
/// from [`bounds::lower_bound`].
pub fn instance_milp(instance: &Instance) -> Result<Milp, Error> {
    let shape = instance.shape();
    let mut milp = Milp::new(
        format!(
            "balance: {} layers x {} experts, {} slots on {} GPUs ({} nodes, {} groups){}{}; \
             objective: sum over layers of the busiest GPU's load",
            instance.loads.len(),
            shape.experts,
            shape.slots,
            shape.gpus,
            shape.nodes,
            shape.groups,
            if shape.one_per_gpu {
                ", one replica per GPU"
            } else {
                ""
            },
            if shape.hierarchical {
                ", hierarchical"
            } else {
                ""
            },
        ),
        Sense::Minimize,
    );
    for (l, w) in instance.loads.iter().enumerate() {
        let options = LayerOptions {
            lower: bounds::lower_bound(&shape, w, &count_ranges(&shape, w, None)),
            ..LayerOptions::default()
        };
        let model = LayerModel::add(&mut milp, &shape, w, &options, 1.0, &format!("l{l}_"))?;
        milp.add_objective(model.t, 1.0);
    }
    milp.set_objective_name("sum_max_gpu_load");
    Ok(milp)
}
