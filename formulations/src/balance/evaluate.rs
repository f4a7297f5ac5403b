//! The one evaluator: checks a plan against the instance and computes each GPU's load.
//!
//! A layer's plan is feasible when it has `num_replicas` slots holding experts in range, every
//! expert has at least one replica, and the options hold: no GPU holds two replicas of one
//! expert (`one_replica_per_gpu`); every group's replicas lie on one node and each node hosts
//! exactly `num_groups / num_nodes` groups (`hierarchical`, EPLB's step 1). An infeasible plan
//! is refused with the layer, slot or GPU and the reason.
//!
//! A replica of expert e carries w_e / c_e (EPLB's even split over its c_e replicas); a GPU's
//! load is the sum over its slots; the layer's objective is the busiest GPU's load, and its
//! balancedness mean / max (1 for a layer without load). Over layers: the sum of the maxima (a
//! step waits on every layer's busiest GPU), and the spread of the balancedness. Replicas
//! moved (with a `current` placement): for every GPU and expert, the replicas of the expert the
//! plan puts on the GPU beyond those it holds now, i.e. the expert weights copied to a GPU.

use serde::Serialize;

use super::model::{replica_counts, Instance, Plan, Shape};
use crate::error::ValidationError;

/// One layer's account.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerLoad {
    /// The busiest GPU's load.
    pub max_load: f64,
    /// Total load / GPUs (the same for every plan).
    pub mean_load: f64,
    /// mean / max (1 when the layer has no load).
    pub balancedness: f64,
    /// Replicas copied to GPUs from `current` (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<usize>,
    /// Each GPU's load.
    pub gpu_loads: Vec<f64>,
    /// Each expert's replicas (EPLB's `logcnt`).
    pub replica_counts: Vec<usize>,
}

/// Quantiles of the balancedness over layers (nearest rank).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
    /// Mean over layers.
    pub mean: f64,
}

impl Spread {
    /// The spread of some values (nearest-rank percentiles; all zero for none).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread {
                min: 0.0,
                p10: 0.0,
                p50: 0.0,
                p90: 0.0,
                max: 0.0,
                mean: 0.0,
            };
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Spread {
            min: v[0],
            p10: rank(0.1),
            p50: rank(0.5),
            p90: rank(0.9),
            max: v[v.len() - 1],
            mean: v.iter().sum::<f64>() / v.len() as f64,
        }
    }
}

/// The evaluator's account of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// Sum over layers of the busiest GPU's load (the objective).
    pub sum_max_load: f64,
    /// Sum over layers of the mean GPU load.
    pub sum_mean_load: f64,
    /// sum_mean_load / sum_max_load: the balancedness of a step through every layer.
    pub balancedness: f64,
    /// The balancedness of the layers.
    pub balancedness_spread: Spread,
    /// Replicas copied to GPUs over all layers (absent without `current`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<usize>,
    /// Each layer's account.
    pub layers: Vec<LayerLoad>,
}

/// Why one layer's plan is infeasible (`[slot]`, `gpu N` or `expert N`, and the reason).
pub fn check_layer(shape: &Shape, phy2log: &[usize]) -> Result<(), (String, String)> {
    if phy2log.len() != shape.slots {
        return Err((
            String::new(),
            format!(
                "has {} slots, num_replicas is {}",
                phy2log.len(),
                shape.slots
            ),
        ));
    }
    if let Some(p) = phy2log.iter().position(|&e| e >= shape.experts) {
        return Err((
            format!("[{p}]"),
            format!("expert {} is not below {}", phy2log[p], shape.experts),
        ));
    }
    let counts = replica_counts(phy2log, shape.experts);
    if let Some(e) = counts.iter().position(|&c| c == 0) {
        return Err((String::new(), format!("expert {e} has no replica")));
    }
    let m = shape.per_gpu();
    if shape.one_per_gpu {
        for (g, gpu) in phy2log.chunks(m).enumerate() {
            for (i, &e) in gpu.iter().enumerate() {
                if gpu[..i].contains(&e) {
                    return Err((
                        String::new(),
                        format!("GPU {g} holds two replicas of expert {e} (one_replica_per_gpu)"),
                    ));
                }
            }
        }
    }
    if shape.hierarchical {
        let mut node_of_group = vec![None; shape.groups];
        for (p, &e) in phy2log.iter().enumerate() {
            let (q, n) = (shape.group_of(e), shape.node_of(shape.gpu_of(p)));
            match node_of_group[q] {
                None => node_of_group[q] = Some(n),
                Some(other) if other != n => {
                    return Err((
                        String::new(),
                        format!(
                            "group {q} has replicas on nodes {other} and {n} (hierarchical: \
                             a group lies on one node)"
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        for n in 0..shape.nodes {
            let hosted = node_of_group.iter().filter(|&&x| x == Some(n)).count();
            if hosted != shape.groups_per_node() {
                return Err((
                    String::new(),
                    format!(
                        "node {n} hosts {hosted} groups, not {} (hierarchical: num_groups / \
                         num_nodes each)",
                        shape.groups_per_node()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Each GPU's load under the even split (the plan must have valid entries).
pub fn gpu_loads(shape: &Shape, w: &[f64], phy2log: &[usize]) -> Vec<f64> {
    let counts = replica_counts(phy2log, shape.experts);
    phy2log
        .chunks(shape.per_gpu())
        .map(|gpu| gpu.iter().map(|&e| w[e] / counts[e] as f64).sum())
        .collect()
}

/// The busiest GPU's load of a plan (the plan must have valid entries).
pub fn max_load(shape: &Shape, w: &[f64], phy2log: &[usize]) -> f64 {
    gpu_loads(shape, w, phy2log).into_iter().fold(0.0, f64::max)
}

/// Replicas the plan copies to GPUs from `current` (module doc).
pub fn moved(shape: &Shape, current: &[usize], phy2log: &[usize]) -> usize {
    let m = shape.per_gpu();
    let mut held = vec![0i64; shape.experts];
    let mut moved = 0;
    for (new, old) in phy2log.chunks(m).zip(current.chunks(m)) {
        for &e in old {
            held[e] += 1;
        }
        for &e in new {
            held[e] -= 1;
        }
        for h in held.iter_mut() {
            if *h < 0 {
                moved += (-*h) as usize;
            }
            *h = 0;
        }
    }
    moved
}

/// One layer's account (`l` names the layer in errors).
pub fn evaluate_layer(
    instance: &Instance,
    l: usize,
    phy2log: &[usize],
) -> Result<LayerLoad, ValidationError> {
    let shape = instance.shape();
    check_layer(&shape, phy2log)
        .map_err(|(at, why)| ValidationError::new(format!("plan[{l}]{at}"), why))?;
    let w = &instance.loads[l];
    let gpu_loads = gpu_loads(&shape, w, phy2log);
    let max = gpu_loads.iter().copied().fold(0.0, f64::max);
    let mean = w.iter().sum::<f64>() / shape.gpus as f64;
    Ok(LayerLoad {
        max_load: max,
        mean_load: mean,
        balancedness: if max > 0.0 { mean / max } else { 1.0 },
        moved: instance
            .current
            .as_ref()
            .map(|c| moved(&shape, &c[l], phy2log)),
        gpu_loads,
        replica_counts: replica_counts(phy2log, shape.experts),
    })
}

/// The one evaluator (module doc).
pub fn evaluate(instance: &Instance, plan: &Plan) -> Result<Evaluation, ValidationError> {
    if plan.phy2log.len() != instance.loads.len() {
        return Err(ValidationError::new(
            "plan",
            format!(
                "has {} layers, the instance {}",
                plan.phy2log.len(),
                instance.loads.len()
            ),
        ));
    }
    let layers = plan
        .phy2log
        .iter()
        .enumerate()
        .map(|(l, row)| evaluate_layer(instance, l, row))
        .collect::<Result<Vec<_>, _>>()?;
    let sum_max_load = layers.iter().map(|l| l.max_load).sum::<f64>();
    let sum_mean_load = layers.iter().map(|l| l.mean_load).sum::<f64>();
    let b: Vec<f64> = layers.iter().map(|l| l.balancedness).collect();
    Ok(Evaluation {
        sum_max_load,
        sum_mean_load,
        balancedness: if sum_max_load > 0.0 {
            sum_mean_load / sum_max_load
        } else {
            1.0
        },
        balancedness_spread: Spread::of(&b),
        moved: instance
            .current
            .as_ref()
            .map(|_| layers.iter().filter_map(|l| l.moved).sum()),
        layers,
    })
}
