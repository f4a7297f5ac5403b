//! Offline expert caching over one layer of a trace: the instance (`cache-offline`), its
//! validation, the allowed expert sets per step, and the one evaluator of a schedule.
//!
//! ## The problem
//! Steps t = 0..T-1 are the tokens of the trace at layer `layer`. At every step a set A_t of
//! K experts is chosen and must be resident together; the cache holds at most C experts of
//! the layer and starts empty. A schedule gives, per step, A_t and the resident set R_t (after
//! the step's loads) with A_t ⊆ R_t, |R_t| <= C. Its cost is the number of loads,
//! sum_t |R_t \ R_{t-1}| with R_{-1} = ∅ (compulsory first loads included, as the simulators
//! count them); the miss rate is loads / (T K) (paper 002 eq. (4)).
//!
//! * Fixed routing: A_t is the trace's selection (paper 002 Sec. 4.8's setting for Belady).
//! * Flexible routing ([`Freedom`]): A_t holds the top-J experts of the original ranking and
//!   K - J others among the allowed ones: ranks below max(M, K) (M = `max_rank`, no limit when
//!   absent), and, with `min_mass` = tau, sum of router probabilities of A_t >= tau times that
//!   of the original top-K (the "router mass kept" proxy). This is the freedom Max-Rank (Alg. 1,
//!   eq. (7)) and Cumsum (Alg. 2, M from eq. (8)) exercise with J and M, so the optimum is a
//!   lower bound on the loads of any such router with any eviction policy.
//!
//! ## Readings (paper 002 leaves these open)
//! * M <= K allows nothing beyond the original top-K: Alg. 1 promotes cached experts within
//!   r\[:M\] and then keeps the first K of the new ranking, which for M <= K is the same set.
//! * Ranking beyond K: the trace's `experts` (in rank order) first, then the others by
//!   decreasing logit, ties by lower id (as [`super::model::ranking`]).
//! * Router probabilities: softmax over all E logits ([`super::model::softmax`]); mass is
//!   compared with a tolerance of [`MASS_TOLERANCE`] so that the original top-K (mass ratio 1)
//!   is always allowed when tau = 1.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::{softmax, Trace};
use crate::error::{fail, Check};
use crate::error::{read_json, Error, ValidationError};
use crate::problem::ProblemKind;

/// Absolute tolerance of the router-mass rule, in probability units.
pub const MASS_TOLERANCE: f64 = 1e-9;

/// An offline caching instance: one layer of a trace, a cache capacity and the routing freedom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheInstance {
    /// Always `cache-offline`.
    pub problem: ProblemKind,
    /// Free-form name.
    pub name: String,
    /// C: experts of the layer the cache holds, in K..=E (K: the trace's top_k, E: experts).
    pub capacity: usize,
    /// Which layer of the trace is cached, below `trace.layers`.
    pub layer: usize,
    /// The routing freedom of the flexible problem (ignored by the fixed-routing methods).
    pub freedom: Freedom,
    /// The token stream (its own `problem` is `cache-trace`).
    pub trace: Trace,
}

/// What a cache-aware router may change (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Freedom {
    /// J: the first J experts of the original ranking are always chosen, J in 0..=K.
    pub top_j: usize,
    /// M: the other chosen experts have rank below max(M, K) (1-based M; no limit if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rank: Option<usize>,
    /// tau in [0, 1]: the chosen experts keep at least tau of the original top-K's router
    /// probability mass (no rule if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_mass: Option<f64>,
}

impl Freedom {
    /// The fixed routing expressed as a freedom: J = K.
    pub fn fixed(top_k: usize) -> Self {
        Freedom {
            top_j: top_k,
            max_rank: None,
            min_mass: None,
        }
    }
}

/// The experts a step may choose from.
#[derive(Debug, Clone, PartialEq)]
pub struct Allowed {
    /// Always chosen (the top-J, or the whole selection under fixed routing).
    pub forced: Vec<u32>,
    /// The candidates for the other K - |forced| slots, in rank order.
    pub optional: Vec<u32>,
    /// With a mass rule: the router probability of every expert (E entries) and the least
    /// mass the chosen set must reach (tau times the original top-K's, minus the tolerance).
    pub mass: Option<(Vec<f64>, f64)>,
}

impl Allowed {
    /// Whether `chosen` (K distinct ids) satisfies the step's rules.
    pub fn admits(&self, chosen: &[u32]) -> bool {
        self.forced.iter().all(|f| chosen.contains(f))
            && chosen
                .iter()
                .all(|c| self.forced.contains(c) || self.optional.contains(c))
            && self.mass.as_ref().is_none_or(|(p, least)| {
                chosen.iter().map(|&c| p[c as usize]).sum::<f64>() >= *least
            })
    }
}

impl CacheInstance {
    /// K.
    pub fn top_k(&self) -> usize {
        self.trace.top_k
    }

    /// E.
    pub fn experts(&self) -> usize {
        self.trace.experts
    }

    /// T: steps (tokens).
    pub fn steps(&self) -> usize {
        self.trace.tokens.len()
    }

    /// The original selection of step t, in rank order.
    pub fn original(&self, t: usize) -> &[u32] {
        &self.trace.tokens[t].layers[self.layer].experts
    }

    /// The request stream of the fixed routing.
    pub fn requests(&self) -> super::model::Requests {
        self.trace.layer_requests(self.layer)
    }

    /// The original ranking of step t over all E experts: the selection, then the others by
    /// decreasing logit (ties to the lower id), or in id order when the layer has no logits.
    pub fn ranking(&self, t: usize) -> Vec<u32> {
        let routing = &self.trace.tokens[t].layers[self.layer];
        let mut ranking = routing.experts.clone();
        let mut rest: Vec<u32> = (0..self.experts() as u32)
            .filter(|e| !routing.experts.contains(e))
            .collect();
        if let Some(z) = &routing.logits {
            rest.sort_by(|&a, &b| z[b as usize].total_cmp(&z[a as usize]).then(a.cmp(&b)));
        }
        ranking.extend(rest);
        ranking
    }

    /// The allowed sets of step t: fixed routing when `flexible` is false, else [`Freedom`].
    pub fn allowed(&self, t: usize, flexible: bool) -> Allowed {
        let routing = &self.trace.tokens[t].layers[self.layer];
        let k = self.top_k();
        if !flexible || self.freedom.top_j >= k {
            return Allowed {
                forced: routing.experts.clone(),
                optional: Vec::new(),
                mass: None,
            };
        }
        let j = self.freedom.top_j;
        let m = self.freedom.max_rank.unwrap_or(self.experts()).max(k);
        // Without logits only ranks below K are known; validation allows M > K only with
        // logits or with M absent (then every expert is allowed, the rest in id order).
        let mut ranking = self.ranking(t);
        ranking.truncate(m);
        let mass = self.freedom.min_mass.map(|tau| {
            let p = softmax(
                routing
                    .logits
                    .as_ref()
                    .expect("validated: logits with min_mass"),
            );
            let original: f64 = routing.experts.iter().map(|&e| p[e as usize]).sum();
            (p, tau * original - MASS_TOLERANCE)
        });
        Allowed {
            forced: ranking[..j].to_vec(),
            optional: ranking[j..].to_vec(),
            mass,
        }
    }
}

/// The rules of an instance: `problem` is `cache-offline`; the trace is valid (fields
/// prefixed `trace.`); `layer` < layers; C in K..=E; J <= K and, when 0 < J < K, the trace is
/// ranked; M in 1..=E; tau in [0, 1]; under flexible routing (J < K), logits at every step of
/// the layer when tau is given or M > K (an absent M allows every expert: no ranks needed).
pub fn validate(instance: &CacheInstance) -> Check {
    if instance.problem != ProblemKind::CacheOffline {
        return fail(
            "problem",
            format!(
                "must be \"cache-offline\", got \"{}\"",
                instance.problem.name()
            ),
        );
    }
    super::validate::validate(&instance.trace)
        .map_err(|e| ValidationError::new(format!("trace.{}", e.field), e.reason))?;
    let trace = &instance.trace;
    let (e, k) = (trace.experts, trace.top_k);
    if instance.layer >= trace.layers {
        return fail(
            "layer",
            format!(
                "must be below trace.layers = {}, got {}",
                trace.layers, instance.layer
            ),
        );
    }
    if !(k..=e).contains(&instance.capacity) {
        return fail(
            "capacity",
            format!(
                "must be in {k}..={e} (top_k..=experts: a step's K experts must fit), got {}",
                instance.capacity
            ),
        );
    }
    let f = &instance.freedom;
    if f.top_j > k {
        return fail(
            "freedom.top_j",
            format!("must be at most top_k = {k}, got {}", f.top_j),
        );
    }
    if f.top_j > 0 && f.top_j < k && !trace.ranked {
        return fail(
            "freedom.top_j",
            "must be 0 or top_k when the trace is not ranked (the top-J are unknown)",
        );
    }
    if let Some(m) = f.max_rank {
        if !(1..=e).contains(&m) {
            return fail(
                "freedom.max_rank",
                format!("must be in 1..={e} (experts), got {m}"),
            );
        }
    }
    if let Some(tau) = f.min_mass {
        if !(tau.is_finite() && (0.0..=1.0).contains(&tau)) {
            return fail("freedom.min_mass", format!("must be in [0, 1], got {tau}"));
        }
    }
    let flexible = f.top_j < k;
    let needs_ranks = flexible && f.max_rank.is_some_and(|m| m > k);
    let needs_probs = flexible && f.min_mass.is_some();
    if needs_ranks || needs_probs {
        if let Some(t) = trace
            .tokens
            .iter()
            .position(|tok| tok.layers[instance.layer].logits.is_none())
        {
            return fail(
                format!("trace.tokens[{t}].layers[{}].logits", instance.layer),
                if needs_probs {
                    "required by freedom.min_mass (router probabilities over all experts)"
                } else {
                    "required by freedom.max_rank > top_k (ranks beyond the selection)"
                },
            );
        }
    }
    Ok(())
}

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<CacheInstance, Error> {
    let instance: CacheInstance = read_json(path)?;
    validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}

/// One step of a schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleStep {
    /// The K experts run at this step.
    pub chosen: Vec<u32>,
    /// The resident experts after the step's loads (a superset of `chosen`), increasing.
    pub resident: Vec<u32>,
}

/// A schedule: one entry per step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The steps in order.
    pub steps: Vec<ScheduleStep>,
}

/// What the evaluator measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// Loads (misses), compulsory ones included.
    pub loads: u64,
    /// Requested experts, T K.
    pub requests: u64,
    /// loads / requests (paper 002 eq. (4)).
    pub miss_rate: f64,
    /// Steps whose chosen set differs from the original selection.
    pub rerouted_steps: u64,
    /// Mean over steps of (router mass of the chosen) / (that of the original top-K), when
    /// the layer has logits.
    pub mass_kept_mean: Option<f64>,
}

/// The one evaluator: checks a schedule against the instance (fixed routing when `flexible`
/// is false) and counts its loads. Errors name the step and the rule.
pub fn evaluate(
    instance: &CacheInstance,
    schedule: &Schedule,
    flexible: bool,
) -> Result<Evaluation, ValidationError> {
    let (e, k, c) = (instance.experts(), instance.top_k(), instance.capacity);
    if schedule.steps.len() != instance.steps() {
        return Err(ValidationError::new(
            "steps",
            format!(
                "must have {} entries (tokens), got {}",
                instance.steps(),
                schedule.steps.len()
            ),
        ));
    }
    let mut previous = vec![false; e];
    let mut loads = 0u64;
    let mut rerouted = 0u64;
    let mut mass_sum = 0.0;
    let has_logits = instance
        .trace
        .tokens
        .iter()
        .all(|t| t.layers[instance.layer].logits.is_some());
    for (t, step) in schedule.steps.iter().enumerate() {
        let err = |f: &str, r: String| Err(ValidationError::new(format!("steps[{t}].{f}"), r));
        let mut resident = vec![false; e];
        for &x in &step.resident {
            if x as usize >= e {
                return err("resident", format!("expert {x} is not below experts = {e}"));
            }
            if std::mem::replace(&mut resident[x as usize], true) {
                return err("resident", format!("expert {x} is listed twice"));
            }
        }
        if step.resident.len() > c {
            return err(
                "resident",
                format!("holds {} experts, capacity is {c}", step.resident.len()),
            );
        }
        if step.chosen.len() != k {
            return err(
                "chosen",
                format!("must have top_k = {k} experts, got {}", step.chosen.len()),
            );
        }
        for (i, &x) in step.chosen.iter().enumerate() {
            if x as usize >= e || step.chosen[..i].contains(&x) {
                return err(
                    "chosen",
                    format!("expert {x} is out of range or listed twice"),
                );
            }
            if !resident[x as usize] {
                return err("chosen", format!("expert {x} is run but not resident"));
            }
        }
        let allowed = instance.allowed(t, flexible);
        if !allowed.admits(&step.chosen) {
            return err(
                "chosen",
                format!(
                    "{:?} is not allowed (forced {:?}, optional {:?}{})",
                    step.chosen,
                    allowed.forced,
                    allowed.optional,
                    if allowed.mass.is_some() {
                        ", or too little router mass"
                    } else {
                        ""
                    }
                ),
            );
        }
        let original = instance.original(t);
        if !step.chosen.iter().all(|x| original.contains(x)) {
            rerouted += 1;
        }
        if has_logits {
            let routing = &instance.trace.tokens[t].layers[instance.layer];
            let p = softmax(routing.logits.as_ref().expect("checked"));
            let of = |s: &[u32]| s.iter().map(|&x| p[x as usize]).sum::<f64>();
            mass_sum += of(&step.chosen) / of(original);
        }
        loads += (0..e).filter(|&x| resident[x] && !previous[x]).count() as u64;
        previous = resident;
    }
    let requests = (instance.steps() * k) as u64;
    Ok(Evaluation {
        loads,
        requests,
        miss_rate: loads as f64 / requests as f64,
        rerouted_steps: rerouted,
        mass_kept_mean: has_logits.then(|| mass_sum / instance.steps() as f64),
    })
}

/// The tightest freedom of the form "top-J kept, the rest within rank M, mass kept >= tau"
/// that admits every step of `schedule`'s chosen sets: J the least over steps of the longest
/// prefix of the original ranking chosen, M the largest 1-based rank chosen (at least K; absent
/// when a chosen expert lies outside the original selection of a layer without logits, whose
/// ranks are unknown), tau the least mass kept (absent without logits). The flexible-routing
/// optimum under this freedom bounds from below every router whose choices it admits, the
/// router that produced `schedule` included. `schedule` must have one step per token.
pub fn freedom_used(instance: &CacheInstance, schedule: &Schedule) -> Freedom {
    let k = instance.top_k();
    let has_logits = instance
        .trace
        .tokens
        .iter()
        .all(|t| t.layers[instance.layer].logits.is_some());
    let mut used = Freedom {
        top_j: k,
        max_rank: Some(k),
        min_mass: has_logits.then_some(1.0),
    };
    for (t, step) in schedule.steps.iter().enumerate() {
        let ranking = instance.ranking(t);
        let prefix = ranking
            .iter()
            .take_while(|e| step.chosen.contains(e))
            .count();
        used.top_j = used.top_j.min(prefix.min(k));
        let deepest = step
            .chosen
            .iter()
            .map(|e| {
                ranking
                    .iter()
                    .position(|x| x == e)
                    .map_or(usize::MAX, |r| r + 1)
            })
            .max()
            .unwrap_or(0);
        used.max_rank = match used.max_rank {
            Some(m) if has_logits || deepest <= k => Some(m.max(deepest)),
            _ => None,
        };
        if let (Some(tau), Some(z)) = (
            used.min_mass,
            &instance.trace.tokens[t].layers[instance.layer].logits,
        ) {
            let p = softmax(z);
            let of = |s: &[u32]| s.iter().map(|&x| p[x as usize]).sum::<f64>();
            used.min_mass = Some(tau.min(of(&step.chosen) / of(instance.original(t))));
        }
    }
    used
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cache::model::{Phase, Routing, Token};

    /// A one-layer trace with the given logits per token; the selection is the top K.
    pub(crate) fn trace_from_logits(experts: usize, top_k: usize, logits: &[Vec<f32>]) -> Trace {
        let tokens = logits
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let r = super::super::model::ranking(z);
                Token {
                    seq: 0,
                    token: i as u32,
                    phase: Phase::Decode,
                    layers: vec![Routing {
                        experts: r[..top_k].to_vec(),
                        weights: None,
                        logits: Some(z.clone()),
                    }],
                }
            })
            .collect();
        Trace::new("t", "m", experts, top_k, 1, tokens)
    }

    /// Logits that make expert `e` the top-1 (K = 1) with the rest ranked by id.
    fn top1(e: usize, experts: usize) -> Vec<f32> {
        (0..experts)
            .map(|x| if x == e { 10.0 } else { -(x as f32) })
            .collect()
    }

    /// A one-layer top-1 trace over `experts` experts requesting `requests` in order.
    pub(crate) fn top1_trace(experts: usize, requests: &[usize]) -> Trace {
        let z: Vec<Vec<f32>> = requests.iter().map(|&e| top1(e, experts)).collect();
        trace_from_logits(experts, 1, &z)
    }

    pub(crate) fn instance(trace: Trace, capacity: usize, freedom: Freedom) -> CacheInstance {
        CacheInstance {
            problem: ProblemKind::CacheOffline,
            name: "i".into(),
            capacity,
            layer: 0,
            freedom,
            trace,
        }
    }

    fn small() -> CacheInstance {
        // E = 4, K = 2; token 0 ranks 0 > 1 > 2 > 3, token 1 ranks 2 > 3 > 0 > 1.
        let t = trace_from_logits(4, 2, &[vec![4.0, 3.0, 2.0, 1.0], vec![2.0, 1.0, 4.0, 3.0]]);
        instance(
            t,
            2,
            Freedom {
                top_j: 1,
                max_rank: Some(3),
                min_mass: None,
            },
        )
    }

    #[test]
    fn validation_names_each_field() {
        let i = small();
        validate(&i).unwrap();
        let field = |i: &CacheInstance| validate(i).unwrap_err().field;
        let mut x = i.clone();
        x.problem = ProblemKind::CacheTrace;
        assert_eq!(field(&x), "problem");
        let mut x = i.clone();
        x.capacity = 1;
        assert_eq!(field(&x), "capacity");
        let mut x = i.clone();
        x.capacity = 5;
        assert_eq!(field(&x), "capacity");
        let mut x = i.clone();
        x.layer = 1;
        assert_eq!(field(&x), "layer");
        let mut x = i.clone();
        x.freedom.top_j = 3;
        assert_eq!(field(&x), "freedom.top_j");
        let mut x = i.clone();
        x.freedom.max_rank = Some(0);
        assert_eq!(field(&x), "freedom.max_rank");
        let mut x = i.clone();
        x.freedom.min_mass = Some(1.5);
        assert_eq!(field(&x), "freedom.min_mass");
        let mut x = i.clone();
        x.trace.tokens[1].layers[0].logits = None;
        assert_eq!(field(&x), "trace.tokens[1].layers[0].logits");
        let mut x = i.clone();
        x.trace.ranked = false;
        assert_eq!(field(&x), "freedom.top_j");
        let mut x = i;
        x.trace.tokens[0].layers[0].experts = vec![0, 0];
        assert_eq!(field(&x), "trace.tokens[0].layers[0].experts[1]");
    }

    #[test]
    fn freedom_used_is_the_tightest_admitting_freedom() {
        // Token 0 ranks 0 > 1 > 2 > 3 (logits 3, 2, 1, 0), token 1 ranks 3 > 2 > 1 > 0. Step 0
        // chooses {0, 2}: prefix 1, deepest rank 3; step 1 keeps {3, 2}: prefix 2, rank 2. So
        // J = 1, M = 3; mass kept at step 0 = (e^3 + e^1) / (e^3 + e^2) = 0.82999..., step 1: 1.
        let t = trace_from_logits(4, 2, &[vec![3.0, 2.0, 1.0, 0.0], vec![0.0, 1.0, 2.0, 3.0]]);
        let i = instance(t, 3, Freedom::fixed(2));
        let step = |chosen: Vec<u32>| ScheduleStep {
            resident: vec![0, 2, 3],
            chosen,
        };
        let s = Schedule {
            steps: vec![step(vec![0, 2]), step(vec![3, 2])],
        };
        let used = freedom_used(&i, &s);
        assert_eq!((used.top_j, used.max_rank), (1, Some(3)));
        let e = std::f64::consts::E;
        let tau = (e.powi(3) + e) / (e.powi(3) + e.powi(2));
        assert!((used.min_mass.unwrap() - tau).abs() < 1e-6);
        // The original routing uses no freedom.
        let s = Schedule {
            steps: vec![step(vec![0, 1]), step(vec![3, 2])],
        };
        let used = freedom_used(&i, &s);
        assert_eq!(
            (used.top_j, used.max_rank, used.min_mass),
            (2, Some(2), Some(1.0))
        );
    }

    #[test]
    fn allowed_sets_follow_top_j_and_max_rank() {
        let i = small();
        let a = i.allowed(1, true);
        // Token 1 ranks 2, 3, 0, 1: J = 1 forces 2; M = 3 allows ranks 2..3 = {3, 0}.
        assert_eq!((a.forced, a.optional), (vec![2], vec![3, 0]));
        let f = i.allowed(1, false);
        assert_eq!((f.forced, f.optional), (vec![2, 3], vec![]));
    }

    #[test]
    fn mass_rule_admits_sets_with_enough_probability() {
        // Logits ln 4, ln 3, ln 2, ln 1: probabilities 0.4, 0.3, 0.2, 0.1; top-2 mass 0.7.
        let z: Vec<f32> = [4.0f32, 3.0, 2.0, 1.0].iter().map(|x| x.ln()).collect();
        let mut i = instance(trace_from_logits(4, 2, &[z]), 2, Freedom::fixed(2));
        i.freedom = Freedom {
            top_j: 1,
            max_rank: None,
            min_mass: Some(0.55 / 0.7),
        };
        validate(&i).unwrap();
        let a = i.allowed(0, true);
        // Mass needed 0.55: {0, 2} has 0.6 (allowed), {0, 3} has 0.5 (not), {1, 2} lacks 0.
        assert!(a.admits(&[0, 1]) && a.admits(&[2, 0]));
        assert!(!a.admits(&[0, 3]) && !a.admits(&[1, 2]));
    }

    #[test]
    fn evaluator_counts_loads_and_names_the_failing_step() {
        let i = small();
        let s = |chosen: Vec<u32>, resident: Vec<u32>| ScheduleStep { chosen, resident };
        // Fixed routing: {0, 1} then {2, 3} with C = 2: 4 loads of 4 requests.
        let fixed = Schedule {
            steps: vec![s(vec![0, 1], vec![0, 1]), s(vec![2, 3], vec![2, 3])],
        };
        let ev = evaluate(&i, &fixed, false).unwrap();
        assert_eq!((ev.loads, ev.requests, ev.rerouted_steps), (4, 4, 0));
        // Flexible: token 1 may run {2, 0} (0 has rank 3 <= M = 3): 3 loads.
        let flex = Schedule {
            steps: vec![s(vec![0, 1], vec![0, 1]), s(vec![2, 0], vec![0, 2])],
        };
        let ev = evaluate(&i, &flex, true).unwrap();
        assert_eq!((ev.loads, ev.rerouted_steps), (3, 1));
        assert_eq!(
            evaluate(&i, &flex, false).unwrap_err().field,
            "steps[1].chosen"
        );
        // Expert 1 has rank 4 > M at token 1.
        let bad = Schedule {
            steps: vec![s(vec![0, 1], vec![0, 1]), s(vec![2, 1], vec![1, 2])],
        };
        assert_eq!(
            evaluate(&i, &bad, true).unwrap_err().field,
            "steps[1].chosen"
        );
        let over = Schedule {
            steps: vec![s(vec![0, 1], vec![0, 1, 2]), s(vec![2, 3], vec![2, 3])],
        };
        assert_eq!(
            evaluate(&i, &over, false).unwrap_err().field,
            "steps[0].resident"
        );
    }
}
