//! Locality statistics of a trace, and the calibration of the generator's locality knobs
//! against them.
//!
//! * Next-token expert overlap: over every layer and every pair of consecutive tokens of the
//!   same sequence, |S_t ∩ S_{t-1}| / K, averaged (1 = the same experts again, K/E expected
//!   under independent uniform routing).
//! * LRU miss rate at C = E/2 (rounded down, at least K): per-layer LRU caches of that
//!   capacity over the original routing, cold start, loads / requests (paper 002 eq. (4)); the
//!   operating point of paper 002 Sec. 4.8.
//!
//! Calibration ([`calibrate`]) searches (rho, omega, beta) of
//! [`super::generate::GeneratorConfig`] (a coarse grid, then a pattern search) for the point
//! whose generated traces (mean over a few seeds) are nearest to target statistics in the
//! squared distance of (overlap, miss rate). Both statistics lie in [0, 1] and are weighted
//! alike.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use formulations::cache::model::Trace;
use formulations::Error;

use super::generate::{generate, GeneratorConfig, Locality};
use super::policies::{replay_trace, PolicySpec, Scope};

/// The locality statistics of one trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// MoE layers.
    pub layers: usize,
    /// Tokens.
    pub tokens: usize,
    /// Mean |S_t ∩ S_{t-1}| / K over consecutive tokens of a sequence and layers.
    pub next_token_overlap: f64,
    /// The capacity the miss rate is measured at: max(floor(E / 2), K).
    pub half_capacity: usize,
    /// Per-layer LRU miss rate at `half_capacity`.
    pub lru_miss_rate_half: f64,
}

/// Measures a trace.
pub fn trace_stats(trace: &Trace) -> TraceStats {
    let (e, k) = (trace.experts, trace.top_k);
    let mut mark = vec![false; e];
    let (mut sum, mut pairs) = (0.0f64, 0u64);
    for w in trace.tokens.windows(2) {
        if w[0].seq != w[1].seq {
            continue;
        }
        for (a, b) in w[0].layers.iter().zip(&w[1].layers) {
            for &x in &a.experts {
                mark[x as usize] = true;
            }
            let common = b.experts.iter().filter(|&&x| mark[x as usize]).count();
            for &x in &a.experts {
                mark[x as usize] = false;
            }
            sum += common as f64 / k as f64;
            pairs += 1;
        }
    }
    let half = (e / 2).max(k);
    let replay = replay_trace(trace, PolicySpec::Lru, half, Scope::PerLayer, None)
        .expect("capacity >= K and LRU needs no scores");
    TraceStats {
        experts: e,
        top_k: k,
        layers: trace.layers,
        tokens: trace.tokens.len(),
        next_token_overlap: if pairs == 0 { 0.0 } else { sum / pairs as f64 },
        half_capacity: half,
        lru_miss_rate_half: replay.total.miss_rate,
    }
}

/// The search of [`calibrate`]: a coarse grid, then a pattern search around its best point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationGrid {
    /// Values of rho.
    pub persistence: Vec<f64>,
    /// Values of omega.
    pub topic_weight: Vec<f64>,
    /// Values of beta.
    pub popularity_skew: Vec<f64>,
    /// Seeds 0..seeds averaged per point.
    pub seeds: u64,
    /// Rounds of the pattern search (each tries +-step on every knob, and halves the steps
    /// when none improves); 0 = grid only.
    pub refine_rounds: usize,
    /// Most MoE layers generated per point (the statistics are means over layers, which the
    /// generator makes identically distributed, so fewer layers only add noise; default 8).
    pub max_layers: usize,
}

impl Default for CalibrationGrid {
    /// rho in {0, 0.25, 0.5, 0.7, 0.85, 0.95}, omega in {0, 0.25, 0.5}, beta in {0, 0.5, 1},
    /// 2 seeds, 12 rounds of refinement, at most 8 layers.
    fn default() -> Self {
        CalibrationGrid {
            persistence: vec![0.0, 0.25, 0.5, 0.7, 0.85, 0.95],
            topic_weight: vec![0.0, 0.25, 0.5],
            popularity_skew: vec![0.0, 0.5, 1.0],
            seeds: 2,
            refine_rounds: 12,
            max_layers: 8,
        }
    }
}

/// One evaluated point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CalibrationPoint {
    /// The knobs.
    pub locality: Locality,
    /// Mean next-token overlap over the seeds.
    pub next_token_overlap: f64,
    /// Mean LRU miss rate at E/2 over the seeds.
    pub lru_miss_rate_half: f64,
    /// Squared distance to the target.
    pub error: f64,
}

/// The result of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// What was matched.
    pub target: TraceStats,
    /// The nearest point found.
    pub best: CalibrationPoint,
    /// Every point evaluated: the grid (rho major, then omega, then beta), then the search.
    pub points: Vec<CalibrationPoint>,
}

fn evaluate(
    target: &TraceStats,
    base: &GeneratorConfig,
    seeds: u64,
    loc: Locality,
) -> Result<CalibrationPoint, Error> {
    let config = base.clone().with_locality(loc);
    let (mut o, mut m) = (0.0, 0.0);
    let seeds = seeds.max(1);
    for seed in 0..seeds {
        let s = trace_stats(&generate(&config, seed)?);
        o += s.next_token_overlap;
        m += s.lru_miss_rate_half;
    }
    o /= seeds as f64;
    m /= seeds as f64;
    Ok(CalibrationPoint {
        locality: loc,
        next_token_overlap: o,
        lru_miss_rate_half: m,
        error: (o - target.next_token_overlap).powi(2) + (m - target.lru_miss_rate_half).powi(2),
    })
}

/// Searches the locality knobs of `base` (its shape: E, K, sequences, tokens; layers capped at
/// `grid.max_layers`) so that generated traces match `target`'s overlap and LRU miss rate:
/// the grid first (ties by grid order), then a pattern search from its best point with
/// initial steps (0.1, 0.1, 0.25) kept inside rho in [0, 0.99], omega in [0, 1], beta >= 0.
/// Deterministic: seeds 0..`grid.seeds`, fixed evaluation order.
pub fn calibrate(
    target: &TraceStats,
    base: &GeneratorConfig,
    grid: &CalibrationGrid,
) -> Result<Calibration, Error> {
    let mut base = base.clone();
    base.layers = base.layers.min(grid.max_layers.max(1));
    base.check()?;
    let mut knobs = Vec::new();
    for &persistence in &grid.persistence {
        for &topic_weight in &grid.topic_weight {
            for &popularity_skew in &grid.popularity_skew {
                knobs.push(Locality {
                    persistence,
                    topic_weight,
                    popularity_skew,
                });
            }
        }
    }
    let mut points: Vec<CalibrationPoint> = knobs
        .par_iter()
        .map(|&loc| evaluate(target, &base, grid.seeds, loc))
        .collect::<Result<_, _>>()?;
    let mut best = *points
        .iter()
        .min_by(|a, b| a.error.total_cmp(&b.error))
        .ok_or_else(|| Error::Invalid {
            path: super::generate::CONFIG_PATH.into(),
            field: "grid".into(),
            reason: "the calibration grid is empty".into(),
        })?;
    let mut steps = [0.1, 0.1, 0.25];
    for _ in 0..grid.refine_rounds {
        let l = best.locality;
        let mut candidates = Vec::new();
        for (i, &step) in steps.iter().enumerate() {
            for sign in [-1.0, 1.0] {
                let mut c = [l.persistence, l.topic_weight, l.popularity_skew];
                c[i] += sign * step;
                c[0] = c[0].clamp(0.0, 0.99);
                c[1] = c[1].clamp(0.0, 1.0);
                c[2] = c[2].max(0.0);
                let loc = Locality {
                    persistence: c[0],
                    topic_weight: c[1],
                    popularity_skew: c[2],
                };
                if loc != l {
                    candidates.push(loc);
                }
            }
        }
        let evaluated: Vec<CalibrationPoint> = candidates
            .par_iter()
            .map(|&loc| evaluate(target, &base, grid.seeds, loc))
            .collect::<Result<_, _>>()?;
        let round_best = evaluated
            .iter()
            .min_by(|a, b| a.error.total_cmp(&b.error))
            .copied();
        points.extend(evaluated);
        match round_best {
            Some(p) if p.error < best.error => best = p,
            _ => steps.iter_mut().for_each(|s| *s /= 2.0),
        }
    }
    Ok(Calibration {
        target: *target,
        best,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use formulations::cache::model::{Phase, Routing, Token};

    fn trace(steps: &[(u32, &[u32])]) -> Trace {
        Trace {
            ranked: false,
            ..Trace::new(
                "t",
                "m",
                4,
                2,
                1,
                steps
                    .iter()
                    .enumerate()
                    .map(|(i, &(seq, e))| Token {
                        seq,
                        token: i as u32,
                        phase: Phase::Decode,
                        layers: vec![Routing {
                            experts: e.to_vec(),
                            weights: None,
                            logits: None,
                        }],
                    })
                    .collect(),
            )
        }
    }

    #[test]
    fn overlap_and_half_capacity_lru_by_hand() {
        // E = 4, K = 2, C = 2. Tokens {0,1}, {1,2}, {1,2} in sequence 0, then {0,3} in
        // sequence 1. Pairs within a sequence: ({0,1},{1,2}) overlap 1/2, ({1,2},{1,2}) 1:
        // mean 0.75 (the pair across sequences is skipped).
        // LRU C = 2: loads 0,1 | 2 (evicts 0) | none | 0,3 = 5 of 8 requests.
        let t = trace(&[(0, &[0, 1]), (0, &[1, 2]), (0, &[1, 2]), (1, &[0, 3])]);
        let s = trace_stats(&t);
        assert!((s.next_token_overlap - 0.75).abs() < 1e-12);
        assert_eq!(s.half_capacity, 2);
        assert!((s.lru_miss_rate_half - 5.0 / 8.0).abs() < 1e-12);
    }
}
