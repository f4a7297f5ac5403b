//! Running any method on a Prism instance: the exact MILP of (2), exhaustive search (tiny
//! instances), Prism's Alg. 1 + 2 and the baselines of Section IV-A, each followed by the one
//! evaluator (`formulations::prism::evaluate`: proxy cost (2), coverage, memory).
//!
//! The MILP is warm-started from Prism's placement when that placement is feasible (a MIP start
//! only speeds the search up; status, bound and gap are HiGHS's).
//!
//! Exhaustive search: (2) depends only on which experts each server holds, and a server's
//! achievable holder sets are closed under subsets, so only the inclusion-maximal sets a
//! server's GPUs can hold matter (a superset covers more and costs less). Per GPU every expert
//! subset within its memory is listed, per server their unions (remembering one GPU split),
//! then the maximal ones; the search tries every combination of maximal sets over the servers
//! that covers every expert. Refused ([`Error::TooLarge`]) above [`EXHAUSTIVE_MAX_EXPERTS`]
//! experts or [`EXHAUSTIVE_MAX_COMBINATIONS`] combinations.

use std::collections::BTreeMap;
use std::path::Path;

use formulations::milp::Milp;
use formulations::prism::evaluate::{evaluate, Evaluation};
use formulations::prism::{milp, Instance, Placement, ServerId};
use formulations::{Error, ValidationError};

use super::{algorithms, baselines};
pub use crate::problem::{ExactReport, Reference, RunOptions};
use crate::problem::{Problem, Sense, Solved};

crate::named! {
    /// A way to choose a placement.
    pub enum Method: "method" {
        /// exact MILP of (2), HiGHS
        Milp,
        /// exhaustive search
        Exhaustive,
        /// Alg. 1 + Alg. 2 (Prism)
        Prism,
        /// baseline Uniform (Megatron EP)
        Uniform,
        /// baseline Redundance
        Redundance,
        /// baseline SmartMoE
        Smartmoe,
        /// baseline EPLB (heterogeneous)
        Eplb,
    }
}

impl Method {
    /// The baselines of Section IV-A.
    pub const BASELINES: [Method; 4] = [
        Method::Uniform,
        Method::Redundance,
        Method::Smartmoe,
        Method::Eplb,
    ];
}

/// Largest L E for exhaustive search.
pub const EXHAUSTIVE_MAX_EXPERTS: usize = 12;
/// Largest number of combinations of maximal server sets exhaustive search tries.
pub const EXHAUSTIVE_MAX_COMBINATIONS: u64 = 1 << 22;

/// The exhaustive optimum of (2) and a placement attaining it (module doc); `Ok(None)` when no
/// placement covers every expert.
pub fn exhaustive(instance: &Instance) -> Result<Option<(Placement, f64)>, Error> {
    let experts = instance.expert_count();
    if experts > EXHAUSTIVE_MAX_EXPERTS {
        return Err(Error::TooLarge(format!(
            "exhaustive search: {experts} experts > {EXHAUSTIVE_MAX_EXPERTS}; use --method milp"
        )));
    }
    let bytes: Vec<u64> = (0..experts)
        .map(|i| instance.expert_bytes(instance.expert_ref(i)))
        .collect();
    let all: u32 = (1u32 << experts) - 1;
    // Per server: maximal achievable masks with one GPU split each.
    // BTreeMap: the first split found for a mask (in mask order) is kept, so the GPU split, and
    // with it the simulated latency, is the same in every run.
    let mut per_server: Vec<Vec<(u32, Vec<u32>)>> = Vec::new();
    for server in &instance.servers {
        let mut reach: BTreeMap<u32, Vec<u32>> = BTreeMap::from([(0, Vec::new())]);
        for gpu in &server.gpus {
            let fits: Vec<u32> = (0..=all)
                .filter(|&m| {
                    (0..experts)
                        .filter(|&i| m >> i & 1 == 1)
                        .map(|i| bytes[i])
                        .sum::<u64>()
                        <= gpu.memory_bytes
                })
                .collect();
            let mut next: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for (&u, split) in &reach {
                for &m in &fits {
                    next.entry(u | m).or_insert_with(|| {
                        let mut s = split.clone();
                        s.push(m);
                        s
                    });
                }
            }
            reach = next;
        }
        let masks: Vec<u32> = reach.keys().copied().collect();
        let mut maximal: Vec<(u32, Vec<u32>)> = reach
            .iter()
            .filter(|(&m, _)| !masks.iter().any(|&o| o != m && o & m == m))
            .map(|(&m, s)| (m, s.clone()))
            .collect();
        maximal.sort_by_key(|(m, _)| *m);
        per_server.push(maximal);
    }
    let combinations: u64 = per_server
        .iter()
        .map(|v| v.len() as u64)
        .try_fold(1u64, |a, b| a.checked_mul(b))
        .unwrap_or(u64::MAX);
    if combinations > EXHAUSTIVE_MAX_COMBINATIONS {
        return Err(Error::TooLarge(format!(
            "exhaustive search: {combinations} combinations > {EXHAUSTIVE_MAX_COMBINATIONS}; \
             use --method milp"
        )));
    }
    let cost = |n: usize, mask: u32| -> f64 {
        let f = &instance.servers[n].frequencies;
        (0..experts)
            .filter(|&i| mask >> i & 1 == 0)
            .map(|i| {
                let r = instance.expert_ref(i);
                f[r.layer as usize][r.expert as usize]
            })
            .sum()
    };
    let costs: Vec<Vec<f64>> = per_server
        .iter()
        .enumerate()
        .map(|(n, v)| v.iter().map(|(m, _)| cost(n, *m)).collect())
        .collect();
    let mut best: Option<(f64, Vec<usize>)> = None;
    let mut pick = vec![0usize; per_server.len()];
    'outer: loop {
        let union = pick
            .iter()
            .enumerate()
            .fold(0u32, |u, (n, &k)| u | per_server[n][k].0);
        if union == all {
            let c: f64 = pick.iter().enumerate().map(|(n, &k)| costs[n][k]).sum();
            if best.as_ref().is_none_or(|(b, _)| c < *b) {
                best = Some((c, pick.clone()));
            }
        }
        for n in 0..pick.len() {
            pick[n] += 1;
            if pick[n] < per_server[n].len() {
                continue 'outer;
            }
            pick[n] = 0;
        }
        break;
    }
    Ok(best.map(|(c, pick)| {
        let mut p = Placement::empty_for(instance);
        for (n, &k) in pick.iter().enumerate() {
            for (g, &m) in per_server[n][k].1.iter().enumerate() {
                for i in (0..experts).filter(|&i| m >> i & 1 == 1) {
                    p.insert(ServerId(n as u32), g, instance.expert_ref(i));
                }
            }
        }
        p.normalize();
        (p, c)
    }))
}

/// Prism's placement, or why there is none.
pub fn prism_placement(instance: &Instance) -> Result<(Placement, Option<String>), String> {
    let out = algorithms::prism(instance, algorithms::PrismOptions::default())
        .map_err(|e| e.to_string())?;
    let note = (!out.gpus.dropped.is_empty()).then(|| {
        format!(
            "{} experts of Alg. 2 fit no GPU and were dropped",
            out.gpus.dropped.len()
        )
    });
    Ok((out.gpus.placement, note))
}

/// Prism: activation-aware expert placement on heterogeneous GPU servers (paper 001).
pub struct Prism;

/// One method's result on one instance.
pub type MethodRun = crate::problem::MethodRun<Prism>;

impl Problem for Prism {
    const TAG: &'static str = "prism";
    const ABOUT: &'static str =
        "activation-aware expert placement on heterogeneous GPU servers (paper 001)";
    const SENSE: Sense = Sense::Minimize;
    const OBJECTIVE: &'static str = "expected_remote_invocations";
    type Instance = Instance;
    type Model = Instance;
    type Method = Method;
    type Solution = Placement;
    type Evaluation = Evaluation;
    type Detail = ();

    fn load(path: &Path) -> Result<Instance, Error> {
        formulations::prism::load(path)
    }

    fn model(instance: &Instance) -> Instance {
        instance.clone()
    }

    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive];

    fn default_methods(instance: &Instance) -> Vec<Method> {
        let experts = instance.expert_count();
        <Method as crate::named::Named>::ALL
            .iter()
            .copied()
            .filter(|m| *m != Method::Exhaustive || experts <= EXHAUSTIVE_MAX_EXPERTS)
            .collect()
    }

    /// The MILP of (2) is warm-started from Prism's placement when that placement is feasible.
    fn solve(
        instance: &Instance,
        method: Method,
        options: &RunOptions,
    ) -> Result<Solved<Self>, Error> {
        let or_note = |found: Result<Placement, String>| match found {
            Ok(p) => Solved::found(p),
            Err(e) => Solved::none(e),
        };
        Ok(match method {
            Method::Milp => {
                let start = prism_placement(instance)
                    .ok()
                    .map(|(p, _)| p)
                    .filter(|p| evaluate(instance, p).is_ok_and(|e| e.feasible));
                let solved = milp::solve(instance, &options.solve, start.as_ref())?;
                Solved::exact(solved.placement, &solved.solution)
            }
            Method::Exhaustive => match exhaustive(instance)? {
                Some((p, _)) => Solved::found(p),
                None => Solved::none("no placement covers every expert"),
            },
            Method::Prism => match prism_placement(instance) {
                Ok((p, note)) => Solved {
                    note,
                    ..Solved::found(p)
                },
                Err(e) => Solved::none(e),
            },
            Method::Uniform => Solved::found(baselines::uniform(instance, Some(options.seed))),
            Method::Redundance => Solved::found(baselines::redundance(instance, options.seed)),
            Method::Smartmoe => Solved::found(baselines::smartmoe(instance)),
            Method::Eplb => or_note(baselines::eplb_heterogeneous(instance)),
        })
    }

    fn evaluate(instance: &Instance, placement: &Placement) -> Result<Evaluation, ValidationError> {
        evaluate(instance, placement)
    }

    fn objective(evaluation: &Evaluation) -> f64 {
        evaluation.proxy_cost
    }

    /// The MILP of (2).
    fn milp(instance: &Instance) -> Result<Milp, Error> {
        Ok(formulations::prism::PrismMilp::build(instance).milp)
    }
}

/// Runs one method and evaluates its placement.
pub fn run(method: Method, instance: &Instance, options: &RunOptions) -> Result<MethodRun, Error> {
    crate::problem::run::<Prism>(instance, method, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::algorithms::tests::instance;

    #[test]
    fn names_round_trip() {
        for &m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        assert!("nope".parse::<Method>().unwrap_err().contains("prism"));
    }

    #[test]
    fn exhaustive_by_hand() {
        // Two servers, one 1-byte GPU each, L = 1, E = 2: the placements covering both experts
        // are {0}/{1} (cost s0 f(1) + s1 f(0) = 0.3 + 0.1 = 0.4) and {1}/{0} (0.7 + 0.9 = 1.6).
        let inst = instance(
            &[&[1], &[1]],
            vec![vec![vec![0.7, 0.3]], vec![vec![0.1, 0.9]]],
        );
        let (p, c) = exhaustive(&inst).unwrap().unwrap();
        assert!((c - 0.4).abs() < 1e-12);
        assert_eq!(formulations::prism::proxy_cost(&inst, &p), c);
        // Prism finds it too; the MILP proves it.
        let options = RunOptions::default();
        let prism = run(Method::Prism, &inst, &options).unwrap();
        assert!((prism.objective().unwrap() - 0.4).abs() < 1e-12);
        let milp = run(Method::Milp, &inst, &options).unwrap();
        assert!(milp.is_proved_optimal());
        assert!((milp.objective().unwrap() - 0.4).abs() < 1e-9);
        // One 1-byte GPU in all cannot cover 2 experts.
        let tight = instance(&[&[1]], vec![vec![vec![0.5, 0.5]]]);
        assert!(exhaustive(&tight).unwrap().is_none());
        let run = run(Method::Prism, &tight, &options).unwrap();
        assert!(run.solution.is_none() && run.note.unwrap().contains("Alg. 1"));
    }
}
