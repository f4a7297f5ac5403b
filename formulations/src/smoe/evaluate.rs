//! The sets of Table II, the one evaluator of a routing (objective (1)) and of a CPU-vs-PCIe
//! split (objective (4)), and their exact optima that need no solver: the exhaustive
//! per-token optimum of (1) and its closed form (any size), the closed form of (4) for uniform
//! costs and the exhaustive split for per-expert costs. Readings: module doc of [`crate::smoe`].

use itertools::Itertools;
use serde::Serialize;

use super::model::{Costs, Instance};
use crate::error::{Error, ValidationError};

/// Most subsets the exhaustive routing search enumerates per token.
pub const EXHAUSTIVE_MAX_SUBSETS: u64 = 1_000_000;
/// Most experts the exhaustive split enumerates (2^n assignments).
pub const SPLIT_EXHAUSTIVE_MAX: usize = 20;

/// Table II's sets for one token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenSets {
    /// E_a: the top-k experts, best first (ties by lower id).
    pub active: Vec<u32>,
    /// E_a \ E_l: active experts with score >= T, best first.
    pub top_score: Vec<u32>,
    /// E_l: active experts with score < T, best first.
    pub low_score: Vec<u32>,
    /// Inactive experts with score >= R, best first, available or not (E_s is the available
    /// ones).
    pub candidates: Vec<u32>,
    /// S_{k+1}.
    pub s_k1: f64,
    /// T = (1 + alpha) S_{k+1}.
    pub upper: f64,
    /// R = (1 - alpha) S_{k+1}.
    pub lower: f64,
}

/// Table II's sets for every token of the batch, and the available set V = G ∪ C.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerSets {
    /// One per token.
    pub tokens: Vec<TokenSets>,
    /// C: the top-score experts of the whole batch, increasing ids.
    pub batch_top_score: Vec<u32>,
    /// `available[e]`: e in G or in C.
    pub available: Vec<bool>,
}

/// Expert ids by decreasing score, ties by lower id.
pub fn rank(scores: &[f64]) -> Vec<u32> {
    let mut r: Vec<u32> = (0..scores.len() as u32).collect();
    r.sort_by(|&a, &b| {
        scores[b as usize]
            .total_cmp(&scores[a as usize])
            .then(a.cmp(&b))
    });
    r
}

impl TokenSets {
    /// The sets of one token's scores with top-k and alpha.
    pub fn new(scores: &[f64], k: usize, alpha: f64) -> Self {
        let order = rank(scores);
        let s_k1 = scores[order[k] as usize];
        let upper = (1.0 + alpha) * s_k1;
        let lower = (1.0 - alpha) * s_k1;
        let active = order[..k].to_vec();
        let (top_score, low_score) = active.iter().partition(|&&e| scores[e as usize] >= upper);
        let candidates = order[k..]
            .iter()
            .copied()
            .filter(|&e| scores[e as usize] >= lower)
            .collect();
        TokenSets {
            active,
            top_score,
            low_score,
            candidates,
            s_k1,
            upper,
            lower,
        }
    }
}

impl LayerSets {
    /// The sets of an instance with its own alpha.
    pub fn new(instance: &Instance) -> Self {
        Self::with_alpha(instance, instance.alpha)
    }

    /// The sets of an instance with another alpha.
    pub fn with_alpha(instance: &Instance, alpha: f64) -> Self {
        let tokens: Vec<TokenSets> = instance
            .scores
            .iter()
            .map(|s| TokenSets::new(s, instance.top_k, alpha))
            .collect();
        let mut available = vec![false; instance.experts];
        for &g in &instance.gpu_cache {
            available[g as usize] = true;
        }
        let mut batch_top_score: Vec<u32> = tokens
            .iter()
            .flat_map(|t| t.top_score.iter().copied())
            .collect();
        batch_top_score.sort_unstable();
        batch_top_score.dedup();
        for &c in &batch_top_score {
            available[c as usize] = true;
        }
        LayerSets {
            tokens,
            batch_top_score,
            available,
        }
    }

    /// Whether e is in V = G ∪ C.
    pub fn is_available(&self, e: u32) -> bool {
        self.available[e as usize]
    }
}

/// Objective (1) per token: |V ∩ E_a| + min(|E_l \ V|, |E_s|), E_s = the available candidates.
/// By the module doc of [`crate::smoe`] this is the per-token optimum of the routing problem.
pub fn objective1(sets: &LayerSets) -> Vec<usize> {
    sets.tokens
        .iter()
        .map(|t| {
            let hits = t.active.iter().filter(|&&e| sets.is_available(e)).count();
            let low_missing = t
                .low_score
                .iter()
                .filter(|&&e| !sets.is_available(e))
                .count();
            let substitutes = t
                .candidates
                .iter()
                .filter(|&&e| sets.is_available(e))
                .count();
            hits + low_missing.min(substitutes)
        })
        .collect()
}

/// What a routing achieves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutingValue {
    /// |O_t ∩ V| per token: the routing hits of objective (1).
    pub hits: Vec<usize>,
    /// Sum of `hits`.
    pub total_hits: usize,
    /// Sum over tokens of |O_t ∩ G| (GPU-resident experts chosen).
    pub gpu_hits: usize,
    /// Sum over tokens of |O_t \ E_a| (substitutes used).
    pub substituted: usize,
    /// The distinct chosen experts not in G (to load or compute on the CPU), by decreasing
    /// score (an expert's score is its largest over the tokens that chose it), ties by id.
    pub misses: Vec<u32>,
    /// Mean over tokens of sum_{e in O_t} S_t(e) / sum_{e in E_a} S_t(e) (router mass kept;
    /// 1 when nothing is substituted).
    pub mass_kept: f64,
}

/// Evaluates a routing (`routing[t]` = O_t): rejects it naming the token when |O_t| != k, an
/// expert repeats or is out of range, a top-score expert is dropped, or an expert outside
/// E_a ∪ (inactive with score >= R) is chosen. Substitutes need not be available (a routing
/// may pick a candidate that has to be loaded; it just scores no hit).
pub fn evaluate_routing(
    instance: &Instance,
    sets: &LayerSets,
    routing: &[Vec<u32>],
) -> Result<RoutingValue, ValidationError> {
    if routing.len() != instance.tokens() {
        return Err(ValidationError::new(
            "routing",
            format!("{} tokens, expected {}", routing.len(), instance.tokens()),
        ));
    }
    let mut hits = Vec::with_capacity(routing.len());
    let mut gpu_hits = 0;
    let mut substituted = 0;
    let mut miss_score = vec![f64::NEG_INFINITY; instance.experts];
    let mut mass = 0.0;
    for (t, (o, ts)) in routing.iter().zip(&sets.tokens).enumerate() {
        let field = format!("routing[{t}]");
        if o.len() != instance.top_k {
            return Err(ValidationError::new(
                field,
                format!("{} experts, expected k = {}", o.len(), instance.top_k),
            ));
        }
        let scores = &instance.scores[t];
        for (i, &e) in o.iter().enumerate() {
            if e as usize >= instance.experts || o[..i].contains(&e) {
                return Err(ValidationError::new(
                    field,
                    format!("expert {e} is out of range or repeated"),
                ));
            }
            if !ts.active.contains(&e) && !ts.candidates.contains(&e) {
                return Err(ValidationError::new(
                    field,
                    format!(
                        "expert {e} (score {}) is neither active nor a substitute candidate \
                         (score >= R = {})",
                        scores[e as usize], ts.lower
                    ),
                ));
            }
        }
        if let Some(c) = ts.top_score.iter().find(|c| !o.contains(c)) {
            return Err(ValidationError::new(
                field,
                format!("top-score expert {c} must be kept"),
            ));
        }
        hits.push(o.iter().filter(|&&e| sets.is_available(e)).count());
        gpu_hits += o.iter().filter(|&&e| instance.in_gpu(e)).count();
        substituted += o.iter().filter(|e| !ts.active.contains(e)).count();
        for &e in o.iter().filter(|&&e| !instance.in_gpu(e)) {
            let s = &mut miss_score[e as usize];
            *s = s.max(scores[e as usize]);
        }
        let active_mass: f64 = ts.active.iter().map(|&e| scores[e as usize]).sum();
        let chosen: f64 = o.iter().map(|&e| scores[e as usize]).sum();
        mass += if active_mass > 0.0 {
            chosen / active_mass
        } else {
            1.0
        };
    }
    let mut misses: Vec<u32> = (0..instance.experts as u32)
        .filter(|&e| miss_score[e as usize] > f64::NEG_INFINITY)
        .collect();
    misses.sort_by(|&a, &b| {
        miss_score[b as usize]
            .total_cmp(&miss_score[a as usize])
            .then(a.cmp(&b))
    });
    Ok(RoutingValue {
        total_hits: hits.iter().sum(),
        hits,
        gpu_hits,
        substituted,
        misses,
        mass_kept: mass / routing.len() as f64,
    })
}

/// Subsets the exhaustive search would enumerate for the largest token.
pub fn exhaustive_subsets(sets: &LayerSets) -> u64 {
    sets.tokens
        .iter()
        .map(|t| binomial(t.low_score.len() + t.candidates.len(), t.low_score.len()))
        .max()
        .unwrap_or(0)
}

fn binomial(n: usize, k: usize) -> u64 {
    let k = k.min(n - k);
    let mut c: u64 = 1;
    for i in 0..k {
        c = c.saturating_mul((n - i) as u64) / (i as u64 + 1);
    }
    c
}

/// The per-token optimum of (1) by enumerating every O_t = C_t ∪ (|E_l| experts of E_l ∪ S);
/// the first best subset in lexicographic order (by rank) is returned. Refuses tokens with
/// more than [`EXHAUSTIVE_MAX_SUBSETS`] subsets.
pub fn routing_exhaustive(sets: &LayerSets) -> Result<Vec<Vec<u32>>, Error> {
    let n = exhaustive_subsets(sets);
    if n > EXHAUSTIVE_MAX_SUBSETS {
        return Err(Error::TooLarge(format!(
            "exhaustive routing: {n} subsets for one token, at most {EXHAUSTIVE_MAX_SUBSETS}"
        )));
    }
    Ok(sets
        .tokens
        .iter()
        .map(|t| {
            let pool: Vec<u32> = t.low_score.iter().chain(&t.candidates).copied().collect();
            let mut best: Option<(usize, Vec<u32>)> = None;
            for c in pool.iter().copied().combinations(t.low_score.len()) {
                let hits = c.iter().filter(|&&e| sets.is_available(e)).count();
                if best.as_ref().is_none_or(|(h, _)| hits > *h) {
                    best = Some((hits, c));
                }
            }
            let mut o = t.top_score.clone();
            o.extend(best.map(|(_, c)| c).unwrap_or_default());
            o
        })
        .collect())
}

/// A per-token optimum of (1) without enumeration: O_t = C_t, then the available experts of
/// E_l, then the available candidates (each best first), then the unavailable experts of E_l,
/// up to |E_l| after C_t. Its value |V ∩ E_a| + min(|E_l \ V|, |S ∩ V|) is the maximum of
/// (1) (module doc of [`crate::smoe`]: the |E_l| free slots take every available expert of
/// E_l ∪ S up to |E_l|, and no O_t can hold more available experts than that), so the
/// evaluator's value of this routing equals [`objective1`] at any size.
pub fn routing_closed_form(sets: &LayerSets) -> Vec<Vec<u32>> {
    sets.tokens
        .iter()
        .map(|t| {
            let available = |e: &&u32| sets.is_available(**e);
            let free = t
                .low_score
                .iter()
                .filter(available)
                .chain(t.candidates.iter().filter(available))
                .chain(t.low_score.iter().filter(|e| !sets.is_available(**e)))
                .take(t.low_score.len());
            t.top_score.iter().chain(free).copied().collect()
        })
        .collect()
}

/// A CPU-vs-PCIe split of the missed experts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Split {
    /// Experts loaded over PCIe (then computed on the GPU).
    pub load: Vec<u32>,
    /// Experts computed on the CPU.
    pub cpu: Vec<u32>,
    /// T_load, seconds.
    pub load_time_s: f64,
    /// T_CPU, seconds.
    pub cpu_time_s: f64,
    /// Objective (4): max(T_load, T_CPU), seconds.
    pub objective_s: f64,
}

/// Objective (4) of a split.
pub fn objective4(costs: &Costs, load: Vec<u32>, cpu: Vec<u32>) -> Split {
    let load_time_s: f64 = load.iter().map(|&e| costs.load(e)).sum();
    let cpu_time_s: f64 = cpu.iter().map(|&e| costs.cpu(e)).sum();
    Split {
        load,
        cpu,
        load_time_s,
        cpu_time_s,
        objective_s: load_time_s.max(cpu_time_s),
    }
}

/// The optimum of (4) for n experts of uniform costs a = C_load, b = C_CPU: f(m) = max(m a,
/// (n - m) b) decreases while m a < (n - m) b and increases after, so the best m is the floor
/// or the ceiling of the crossing m* = n b / (a + b). Returns (n_load, value); ties go to more
/// loads (the paper loads high-score experts first).
pub fn split_optimum_uniform(n: usize, load_s: f64, cpu_s: f64) -> (usize, f64) {
    let f = |m: usize| (m as f64 * load_s).max((n - m) as f64 * cpu_s);
    let star = n as f64 * cpu_s / (load_s + cpu_s);
    let lo = (star.floor() as usize).min(n);
    let hi = (star.ceil() as usize).min(n);
    if f(hi) <= f(lo) {
        (hi, f(hi))
    } else {
        (lo, f(lo))
    }
}

/// The optimum of (4) for the given experts by trying all 2^n assignments (n <=
/// [`SPLIT_EXHAUSTIVE_MAX`]); the first best mask (bit i = load expert i) wins.
pub fn split_exhaustive(costs: &Costs, experts: &[u32]) -> Result<Split, Error> {
    let n = experts.len();
    if n > SPLIT_EXHAUSTIVE_MAX {
        return Err(Error::TooLarge(format!(
            "exhaustive split: {n} experts, at most {SPLIT_EXHAUSTIVE_MAX}"
        )));
    }
    let mut best = (f64::INFINITY, 0u32);
    for mask in 0..(1u32 << n) {
        let (mut l, mut c) = (0.0, 0.0);
        for (i, &e) in experts.iter().enumerate() {
            if mask >> i & 1 == 1 {
                l += costs.load(e);
            } else {
                c += costs.cpu(e);
            }
        }
        if f64::max(l, c) < best.0 {
            best = (f64::max(l, c), mask);
        }
    }
    let (load, cpu) = experts
        .iter()
        .enumerate()
        .partition::<Vec<_>, _>(|(i, _)| best.1 >> i & 1 == 1);
    Ok(objective4(
        costs,
        load.into_iter().map(|(_, &e)| e).collect(),
        cpu.into_iter().map(|(_, &e)| e).collect(),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Fig. 1-like layer: E = 8, k = 4, alpha = 0.5. Scores (id: score): 0: .30, 1: .20,
    /// 2: .105, 3: .10, 4: .09, 5: .08, 6: .07, 7: .055. S_5 = 0.09 (expert 4), T = 0.135,
    /// R = 0.045. Top-score {0, 1}; low-score {2, 3}; candidates 4, 5, 6, 7 (all >= 0.045).
    /// G = {1, 5, 6}. Committed as `instances/smoe-fig1.json`.
    pub(crate) fn fig1() -> Instance {
        serde_json::from_str(include_str!("../../../instances/smoe-fig1.json")).unwrap()
    }

    #[test]
    fn table2_sets_and_objective1_by_hand() {
        let i = fig1();
        let s = LayerSets::new(&i);
        let t = &s.tokens[0];
        assert_eq!(t.active, vec![0, 1, 2, 3]);
        assert_eq!(t.top_score, vec![0, 1]);
        assert_eq!(t.low_score, vec![2, 3]);
        assert_eq!(t.candidates, vec![4, 5, 6, 7]);
        // V = G ∪ C = {0, 1, 5, 6}: |V ∩ E_a| = 2 (0, 1); |E_l \ V| = 2; E_s = {5, 6}: 2.
        assert_eq!(objective1(&s), vec![4]);
        // The original top-k scores 2 hits; swapping 2, 3 for 5, 6 scores 4.
        let top = evaluate_routing(&i, &s, &[vec![0, 1, 2, 3]]).unwrap();
        assert_eq!(
            (top.total_hits, top.gpu_hits, top.misses.clone()),
            (2, 1, vec![0, 2, 3])
        );
        let sub = evaluate_routing(&i, &s, &[vec![0, 1, 5, 6]]).unwrap();
        assert_eq!(
            (sub.total_hits, sub.substituted, sub.misses.clone()),
            (4, 2, vec![0])
        );
        // Mass kept: (0.3 + 0.2 + 0.08 + 0.07) / (0.3 + 0.2 + 0.105 + 0.1) = 0.65 / 0.705.
        assert!((sub.mass_kept - 0.65 / 0.705).abs() < 1e-12);
        assert_eq!(routing_exhaustive(&s).unwrap()[0].len(), 4);
        let best = evaluate_routing(&i, &s, &routing_exhaustive(&s).unwrap()).unwrap();
        assert_eq!(best.total_hits, 4);
    }

    #[test]
    fn infeasible_routings_name_the_token() {
        let i = fig1();
        let s = LayerSets::new(&i);
        for bad in [vec![1, 2, 3, 5], vec![0, 1, 2], vec![0, 1, 1, 2]] {
            let e = evaluate_routing(&i, &s, &[bad]).unwrap_err();
            assert_eq!(e.field, "routing[0]");
        }
        // alpha = 0.1: R = 0.081, so expert 6 (0.07) is no candidate.
        let mut tight = i.clone();
        tight.alpha = 0.1;
        let s = LayerSets::new(&tight);
        assert!(evaluate_routing(&tight, &s, &[vec![0, 1, 2, 6]]).is_err());
    }

    #[test]
    fn uniform_split_closed_form_matches_brute_force() {
        for n in 0..12 {
            for (a, b) in [(3.0, 1.0), (1.0, 10.0), (2.0, 2.0), (0.7, 1.3)] {
                let brute = (0..=n)
                    .map(|m| (m as f64 * a).max((n - m) as f64 * b))
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(split_optimum_uniform(n, a, b).1, brute, "n {n} a {a} b {b}");
            }
        }
        // n = 4, a = 3, b = 1: m* = 1; max(3, 3) = 3.
        assert_eq!(split_optimum_uniform(4, 3.0, 1.0), (1, 3.0));
    }

    #[test]
    fn exhaustive_split_by_hand() {
        // Loads 4, 1, 2; CPU 2, 3, 3. Best: load {0}? max(4, 6) = 6; load {1, 2}: max(3, 2)
        // = 3; load {0, 1}: max(5, 3) = 5; load {1}: max(1, 5); load {2}: max(2, 5); load all:
        // 7. Optimum 3 with load {1, 2}, CPU {0}.
        let costs = Costs::PerExpert {
            load_s: vec![4.0, 1.0, 2.0],
            cpu_s: vec![2.0, 3.0, 3.0],
            gpu_s: vec![0.0; 3],
        };
        let s = split_exhaustive(&costs, &[0, 1, 2]).unwrap();
        assert_eq!(
            (s.load.clone(), s.cpu.clone(), s.objective_s),
            (vec![1, 2], vec![0], 3.0)
        );
    }
}
