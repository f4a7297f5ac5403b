//! ZipMoE's cache-pool planning instance (paper 003, Sec. 3.4, App. C and D): the data model,
//! its validation, and the planner's own model of a split: the pool sizes, the hit-pattern
//! distribution of Alg. 2 and Sec. 3.4, the makespan estimate of Alg. 3 and the expected
//! makespan that Alg. 4 minimises. The IPF of eq. (24) and the grid search of Alg. 4 are the
//! paper's algorithm and live in `moe_opt::zipmoe::planning`.
//!
//! ## Not a scheduling instance
//!
//! A planning instance describes a workload (rank-based inclusion probabilities) and a memory
//! budget, not one layer's tasks, so it does not carry `problem: zipmoe` (the tag of ZipMoE's
//! scheduling instances). Its first field is `"problem": "zipmoe-pool"`
//! ([`ProblemKind::ZipmoePool`]), which `moe-opt` dispatches on (`plan`); validation rejects
//! another tag, naming the field `problem`.
//!
//! JSON layout (times in seconds, sizes in bytes):
//!
//! ```json
//! { "problem": "zipmoe-pool", "name": "tiny",
//!   "top_k": 2,
//!   "layers": [ { "inclusion_probabilities": [0.9, 0.6, 0.3, 0.2] } ],
//!   "costs": { "decompress_e_chunk_s": 1e-4, "read_e_chunk_s": 5e-5, "read_sm_chunk_s": 8e-4,
//!              "threads": 6, "shards": 4, "tensors_per_expert": 3 },
//!   "memory": { "budget_bytes": 40000000, "full_expert_bytes": 17000000,
//!               "sm_expert_bytes": 8500000, "e_expert_bytes": 2800000 },
//!   "pools": ["full", "compressed", "sign_mantissa", "exponent"],
//!   "grid_step": 0.25,
//!   "ipf": { "tolerance": 1e-10, "max_iterations": 100000 } }
//! ```
//!
//! ## Readings of the paper (each also documented where it is implemented)
//!
//! * **Inclusion probabilities** f_r (Sec. 3.4 "Rank-Based Workload Modeling", App. C): the
//!   probability that the expert of popularity rank r is among a token's k selected experts.
//!   They must lie in [0, 1] and sum to k (constraint C_2 of eq. (15) summed over i, and (iii)
//!   of Chen et al. in App. D), within [`SUM_TOLERANCE`] x k (tight, so that eq. (24) can fit them to its
//!   tolerance: its fitted marginals sum to k exactly). Ranks are listed most popular
//!   first, so the list must be non-increasing (the cache hierarchy maps pools onto ranks in
//!   this order, Sec. 3.4 "Hierarchical Cache Planning").
//! * **Layers**: Alg. 4 plans one list F_N. An instance may carry several MoE layers with the
//!   same number of experts; the memory budget is split evenly over them, every layer gets the
//!   same pool split (Alg. 4 returns one vector of memory ratios) and the objective is the sum
//!   of the layers' expected makespans (one token's pass through all layers). With one layer
//!   this is Alg. 4 exactly.
//! * **Pool sizes** S_p (Alg. 4 line 6, "the maximum number of experts"): with memory ratio
//!   gamma_p, S_p = floor(gamma_p x budget_bytes / (layers x bytes_p)) where bytes_p is one
//!   expert's footprint in pool p: the full tensors (F), SM- plus E-chunks (C), SM-chunks (S),
//!   E-chunks (E). Pools are packed onto ranks in the order F, C, S, E (line 7 and the
//!   hierarchy F < C < S < E of Sec. 3.4); a pool that would run past the last rank is cut at
//!   it (the paper does not say; memory beyond |N| experts cannot hold more experts). The Miss
//!   Pool M gets the remaining ranks.
//! * **Grid** (Alg. 4 line 5): memory ratios are multiples of delta summing to 1 over Lambda,
//!   which needs 1/delta to be an integer; `grid_step` must be within 1e-9 of 1/M for an
//!   integer M >= 2 and the ratios are exactly m_p / M.
//! * **Hit loops** (Alg. 4 lines 16-29): every h_p runs over 0..=min(S_p, k) instead of
//!   0..=S_p: a term with some h_p > k has k_rem < 0 and is skipped by line 22 (the `break`
//!   only leaves the innermost loop, so the outer ones still run to S_p in the paper), so the
//!   sum is the same. Pools outside Lambda have S_p = 0 and h_p = 0.
//! * **Phi_N(k)** (line 13) does not depend on the split; it is computed once per layer.
//! * **Alg. 3** is implemented exactly as written ([`estimate_makespan_s`]); it excludes token
//!   execution (App. C).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

use crate::error::{fail, Check};
use crate::error::{read_json, Error};

/// Allowed |sum_r f_r - k| relative to k.
pub const SUM_TOLERANCE: f64 = 1e-12;
/// Allowed |1/grid_step - M| for the grid's integer M.
pub const GRID_TOLERANCE: f64 = 1e-9;
/// Most grid points Alg. 4 may visit (C(M + |Lambda| - 1, |Lambda| - 1)).
pub const MAX_GRID_POINTS: u64 = 2_000_000;
/// Most experts per layer (the planner's tables are quadratic in it).
pub const MAX_EXPERTS: usize = 4096;

/// A cache pool of Sec. 3.4, in the hierarchy order F < C < S < E.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pool {
    /// F: fully reconstructed BF16 tensors.
    Full,
    /// C: compressed tensors (E-chunks and SM-chunks).
    Compressed,
    /// S: SM-chunks (sign and mantissa bits) only.
    SignMantissa,
    /// E: compressed E-chunks (exponent bits) only.
    Exponent,
}

impl Pool {
    /// The four pools in hierarchy order.
    pub const ALL: [Pool; 4] = [
        Pool::Full,
        Pool::Compressed,
        Pool::SignMantissa,
        Pool::Exponent,
    ];

    /// Position in the hierarchy (F = 0, ..., E = 3).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The paper's letter.
    pub fn letter(self) -> &'static str {
        ["F", "C", "S", "E"][self.index()]
    }
}

/// One MoE layer's workload model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerProfile {
    /// F_N = [f_1, ..., f_|N|]: rank-based inclusion probabilities, most popular rank first
    /// (non-increasing), each in [0, 1], summing to `top_k`.
    pub inclusion_probabilities: Vec<f64>,
}

/// The inputs of Alg. 3 (Sec. 3.3 and App. C), from offline profiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconstructionCosts {
    /// c: decompression delay of one E-chunk on one worker thread, seconds.
    pub decompress_e_chunk_s: f64,
    /// v: reading delay of one compressed E-chunk from SSD, seconds (rho u / K in Sec. 3.3).
    pub read_e_chunk_s: f64,
    /// u: reading delay of one SM-chunk from SSD, seconds.
    pub read_sm_chunk_s: f64,
    /// L: decompression worker threads.
    pub threads: u32,
    /// K: exponent shards (E-chunks) per tensor.
    pub shards: u32,
    /// n: tensors per expert.
    pub tensors_per_expert: u32,
}

/// Memory budget and one expert's footprint in each compression state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryModel {
    /// Memory for all cache pools of all layers, bytes.
    pub budget_bytes: u64,
    /// One expert's full BF16 tensors (pool F), bytes.
    pub full_expert_bytes: u64,
    /// One expert's SM-chunks (pool S; pool C holds these plus the E-chunks), bytes.
    pub sm_expert_bytes: u64,
    /// One expert's compressed E-chunks (pool E), bytes.
    pub e_expert_bytes: u64,
}

impl MemoryModel {
    /// One expert's footprint in `pool`, bytes.
    pub fn expert_bytes(&self, pool: Pool) -> u64 {
        match pool {
            Pool::Full => self.full_expert_bytes,
            Pool::Compressed => self.sm_expert_bytes.saturating_add(self.e_expert_bytes),
            Pool::SignMantissa => self.sm_expert_bytes,
            Pool::Exponent => self.e_expert_bytes,
        }
    }
}

/// Stopping rule of the modified iterative proportional fitting of eq. (24).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpfOptions {
    /// Stop when max_i |f_i^(t) - f_i| is at most this.
    pub tolerance: f64,
    /// Give up (an error) after this many updates.
    pub max_iterations: u32,
}

impl Default for IpfOptions {
    /// Tolerance 1e-10, at most 100,000 iterations.
    fn default() -> Self {
        IpfOptions {
            tolerance: 1e-10,
            max_iterations: 100_000,
        }
    }
}

/// A cache-pool planning instance (App. C, Alg. 4's inputs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolInstance {
    /// Always `"zipmoe-pool"`.
    pub problem: ProblemKind,
    /// Free-form name.
    pub name: String,
    /// k: experts selected per token and layer.
    pub top_k: u32,
    /// The MoE layers' workload models, all with the same number of experts.
    pub layers: Vec<LayerProfile>,
    /// Alg. 3's delays and counts.
    pub costs: ReconstructionCosts,
    /// Budget and footprints.
    pub memory: MemoryModel,
    /// Lambda: the activated cache pools (any order, no duplicates, at least one).
    pub pools: Vec<Pool>,
    /// delta: the grid step of the memory ratios, 1/M for an integer M >= 2.
    pub grid_step: f64,
    /// Stopping rule of eq. (24).
    #[serde(default)]
    pub ipf: IpfOptions,
}

impl PoolInstance {
    /// |N|: experts per layer (0 for an instance without layers).
    pub fn experts(&self) -> usize {
        self.layers
            .first()
            .map_or(0, |l| l.inclusion_probabilities.len())
    }

    /// M = round(1 / delta): grid points per unit of memory ratio.
    pub fn grid_steps(&self) -> u32 {
        (1.0 / self.grid_step).round() as u32
    }

    /// Lambda in hierarchy order.
    pub fn active_pools(&self) -> Vec<Pool> {
        let mut p = self.pools.clone();
        p.sort();
        p.dedup();
        p
    }
}

/// A memory split on the grid: gamma_p = steps\[p\] / M for the pools in hierarchy order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Split {
    /// Grid steps m_p per pool (F, C, S, E); zero outside Lambda; they sum to M.
    pub steps: [u32; 4],
}

impl Split {
    /// gamma_p = m_p / M per pool (F, C, S, E).
    pub fn ratios(&self, grid_steps: u32) -> [f64; 4] {
        self.steps.map(|m| f64::from(m) / f64::from(grid_steps))
    }
}

/// Experts per pool in one layer under a split: S_F, S_C, S_S, S_E and the Miss Pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolSizes {
    /// S_p per pool (F, C, S, E), packed onto ranks in this order.
    pub experts: [usize; 4],
    /// |M|: the ranks no pool covers.
    pub miss: usize,
}

/// One cache-hit pattern h = (h_F, h_C, h_S, h_E) with its probability given that exactly k
/// experts are selected.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HitPattern {
    /// h_p per pool (F, C, S, E).
    pub hits: [usize; 4],
    /// k_rem: selected experts in the Miss Pool.
    pub misses: usize,
    /// Phi_M(k_rem) / Phi_N(k) prod_p Phi_p(h_p) (Sec. 3.4, Alg. 4 line 25).
    pub probability: f64,
}

fn non_negative_time(field: &str, x: f64) -> Check {
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        fail(field, format!("must be finite and >= 0 seconds, got {x}"))
    }
}

fn at_least_one(field: &str, x: u64) -> Check {
    if x >= 1 {
        Ok(())
    } else {
        fail(field, "must be at least 1")
    }
}

/// Checks that `f` are feasible inclusion probabilities of k-subsets (field paths relative to
/// `field`, e.g. `layers[0].inclusion_probabilities`): at least k entries, every f_r finite in
/// [0, 1], summing to k within [`SUM_TOLERANCE`] x k (constraint C_2 of eq. (15) summed over
/// i; (iii) of Chen et al. in App. D). Order is not checked.
pub fn validate_marginals(field: &str, f: &[f64], k: u32) -> Check {
    if f.is_empty() {
        return fail(field, "must list at least one expert");
    }
    if k == 0 || k as usize > f.len() {
        return fail(
            field,
            format!(
                "top_k = {k} must be in 1..={} (the experts listed)",
                f.len()
            ),
        );
    }
    for (r, &x) in f.iter().enumerate() {
        if !(x.is_finite() && (0.0..=1.0).contains(&x)) {
            return fail(
                format!("{field}[{r}]"),
                format!("inclusion probability {x} is outside [0, 1]"),
            );
        }
    }
    let sum: f64 = f.iter().sum();
    let k = f64::from(k);
    if (sum - k).abs() > SUM_TOLERANCE * k {
        return fail(
            field,
            format!(
                "inclusion probabilities sum to {sum}, not top_k = {k} (every token selects \
                 exactly k experts; constraint C_2 of eq. (15); tolerance {SUM_TOLERANCE} k)"
            ),
        );
    }
    Ok(())
}

/// [`validate_marginals`] plus the rank order: the list must be non-increasing (most popular
/// rank first).
pub fn validate_inclusion(field: &str, f: &[f64], k: u32) -> Check {
    validate_marginals(field, f, k)?;
    for r in 1..f.len() {
        if f[r] > f[r - 1] {
            return fail(
                format!("{field}[{r}]"),
                format!(
                    "{} exceeds the previous rank's {}: ranks must be listed most popular first",
                    f[r],
                    f[r - 1]
                ),
            );
        }
    }
    Ok(())
}

/// Checks every rule of the module doc, naming the failing field.
pub fn validate(instance: &PoolInstance) -> Check {
    if instance.problem != ProblemKind::ZipmoePool {
        return fail(
            "problem",
            format!(
                "is {:?}, not \"zipmoe-pool\" (a cache-pool planning instance)",
                instance.problem.name()
            ),
        );
    }
    if instance.layers.is_empty() {
        return fail("layers", "must have at least one layer");
    }
    let experts = instance.experts();
    if experts > MAX_EXPERTS {
        return fail(
            "layers[0].inclusion_probabilities",
            format!("{experts} experts exceed the limit {MAX_EXPERTS}"),
        );
    }
    if instance.top_k == 0 || instance.top_k as usize > experts {
        return fail(
            "top_k",
            format!(
                "must be in 1..={experts} (experts per layer), got {}",
                instance.top_k
            ),
        );
    }
    for (l, layer) in instance.layers.iter().enumerate() {
        let field = format!("layers[{l}].inclusion_probabilities");
        if layer.inclusion_probabilities.len() != experts {
            return fail(
                field,
                format!(
                    "has {} experts but layers[0] has {experts}",
                    layer.inclusion_probabilities.len()
                ),
            );
        }
        validate_inclusion(&field, &layer.inclusion_probabilities, instance.top_k)?;
    }
    let c = &instance.costs;
    non_negative_time("costs.decompress_e_chunk_s", c.decompress_e_chunk_s)?;
    non_negative_time("costs.read_e_chunk_s", c.read_e_chunk_s)?;
    non_negative_time("costs.read_sm_chunk_s", c.read_sm_chunk_s)?;
    at_least_one("costs.threads", c.threads.into())?;
    at_least_one("costs.shards", c.shards.into())?;
    at_least_one("costs.tensors_per_expert", c.tensors_per_expert.into())?;
    let m = &instance.memory;
    at_least_one("memory.full_expert_bytes", m.full_expert_bytes)?;
    at_least_one("memory.sm_expert_bytes", m.sm_expert_bytes)?;
    at_least_one("memory.e_expert_bytes", m.e_expert_bytes)?;
    if instance.pools.is_empty() {
        return fail("pools", "must activate at least one cache pool");
    }
    for (i, p) in instance.pools.iter().enumerate() {
        if instance.pools[..i].contains(p) {
            return fail(format!("pools[{i}]"), format!("{p:?} is listed twice"));
        }
    }
    let d = instance.grid_step;
    if !(d.is_finite() && d > 0.0 && d < 1.0) {
        return fail(
            "grid_step",
            format!("must be in (0, 1) (Alg. 4 line 1), got {d}"),
        );
    }
    let inverse = 1.0 / d;
    if (inverse - inverse.round()).abs() > GRID_TOLERANCE * inverse {
        return fail(
            "grid_step",
            format!(
                "1 / grid_step = {inverse} is not an integer, so no grid of step {d} sums to 1 \
                 (Alg. 4 line 5)"
            ),
        );
    }
    let points = grid_points(instance.grid_steps(), instance.active_pools().len());
    if points > MAX_GRID_POINTS {
        return fail(
            "grid_step",
            format!("the grid has {points} points, more than {MAX_GRID_POINTS}"),
        );
    }
    let t = instance.ipf.tolerance;
    if !(t.is_finite() && t > 0.0) {
        return fail(
            "ipf.tolerance",
            format!("must be positive and finite, got {t}"),
        );
    }
    at_least_one("ipf.max_iterations", instance.ipf.max_iterations.into())?;
    Ok(())
}

/// Reads and validates a planning instance file; errors name the file and the field.
pub fn load(path: &Path) -> Result<PoolInstance, Error> {
    let instance: PoolInstance = read_json(path)?;
    validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}

/// C(M + pools - 1, pools - 1): grid points of step 1/M on the simplex over `pools` pools
/// (saturating).
pub fn grid_points(grid_steps: u32, pools: usize) -> u64 {
    let mut c: u128 = 1;
    for i in 1..pools as u128 {
        c = c * (u128::from(grid_steps) + i) / i;
        if c > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    c as u64
}

/// S_p of every pool in one layer under `split` (Alg. 4 line 6; see the module doc's reading):
/// floor(m_p / M x budget / (layers x bytes_p)), packed F, C, S, E and cut at |N|.
pub fn pool_sizes(instance: &PoolInstance, split: &Split) -> PoolSizes {
    let experts = instance.experts();
    let grid = u128::from(instance.grid_steps().max(1));
    let layers = instance.layers.len().max(1) as u128;
    let budget = u128::from(instance.memory.budget_bytes);
    let mut sizes = [0usize; 4];
    let mut used = 0usize;
    for pool in Pool::ALL {
        let steps = u128::from(split.steps[pool.index()]);
        let bytes = u128::from(instance.memory.expert_bytes(pool).max(1));
        let fit = steps * budget / (grid * layers * bytes);
        let s = fit.min((experts - used) as u128) as usize;
        sizes[pool.index()] = s;
        used += s;
    }
    PoolSizes {
        experts: sizes,
        miss: experts - used,
    }
}

/// Alg. 2 (App. C) as written: the distribution Phi_S(h), h = 0..=|S|, of the number of
/// experts selected from S when expert r is selected independently with probability q_r
/// (a Poisson binomial distribution). Lines 3-4 initialise, lines 5-11 apply the transition
/// Phi(h) <- Phi(h)(1 - q_r) + Phi(h - 1) q_r from the top down, line 10 updates Phi(0).
pub fn poisson_binomial(q: &[f64]) -> Vec<f64> {
    let mut phi = vec![0.0; q.len() + 1]; // line 3
    phi[0] = 1.0; // line 4
    for &qr in q {
        // line 5
        for h in (1..phi.len()).rev() {
            // lines 6-8
            phi[h] = phi[h] * (1.0 - qr) + phi[h - 1] * qr;
        }
        phi[0] *= 1.0 - qr; // line 10
    }
    phi
}

/// Alg. 3 (App. C) as written: the estimated makespan of one sparse layer, seconds, for k
/// selected experts with hit pattern `hits` = (h_F, h_C, h_S, h_E) (hits must sum to at most
/// k). Lines 4-6: SM-chunk reads for experts outside F, C, S and E-chunk reads for experts
/// outside F, C, E make the I/O time; lines 8-9: every non-F expert's n K E-chunks are
/// decompressed, and each E-chunk read is charged to the decompression threads too; line 10:
/// the larger of the two.
pub fn estimate_makespan_s(top_k: usize, hits: [usize; 4], costs: &ReconstructionCosts) -> f64 {
    let [hf, hc, hs, he] = hits.map(|h| h as f64);
    let k = top_k as f64;
    let n = f64::from(costs.tensors_per_expert);
    let shards = f64::from(costs.shards);
    let n_sm = n * (k - (hf + hc + hs)); // line 4
    let n_e = n * shards * (k - (hf + hc + he)); // line 5
    let t_io = n_sm * costs.read_sm_chunk_s + n_e * costs.read_e_chunk_s; // line 6
    let n_d = n * shards * (k - hf); // line 8
    let t_decomp =
        (n_e * costs.read_e_chunk_s + n_d * costs.decompress_e_chunk_s) / f64::from(costs.threads); // line 9
    t_io.max(t_decomp) // line 10
}

/// Phi_N(k) (Alg. 4 line 13): the probability that exactly k experts are selected when every
/// rank r is selected independently with probability q_r, by Alg. 2 over all of N.
pub fn phi_all(q: &[f64], top_k: usize) -> f64 {
    poisson_binomial(q).get(top_k).copied().unwrap_or(0.0)
}

/// Every hit pattern Alg. 4 visits and its probability (lines 8-13 and 16-25, Sec. 3.4's
/// conditional probability): Alg. 2 on each pool's rank interval (F, C, S, E, then the Miss
/// Pool), weight Phi_M(k_rem) / Phi_N(k) prod_p Phi_p(h_p) for every pattern with k_rem =
/// k - sum_p h_p at least 0 (weights may be 0). `q` are the selection probabilities of the
/// ranks; `phi_n_k` is [`phi_all`]. The patterns come in the loop order of lines 16-19.
pub fn hit_patterns(q: &[f64], top_k: usize, sizes: &PoolSizes, phi_n_k: f64) -> Vec<HitPattern> {
    // Lines 8-12: pack the pools onto consecutive rank intervals.
    let mut start = 0;
    let mut phi: Vec<Vec<f64>> = Vec::with_capacity(5);
    for s in sizes.experts.iter().copied().chain([sizes.miss]) {
        phi.push(poisson_binomial(&q[start..start + s]));
        start += s;
    }
    let at = |p: usize, h: usize| phi[p].get(h).copied().unwrap_or(0.0);
    let bound = |p: usize| sizes.experts[p].min(top_k);
    let mut out = Vec::new();
    for hf in 0..=bound(0) {
        for hc in 0..=bound(1) {
            for hs in 0..=bound(2) {
                for he in 0..=bound(3) {
                    let used = hf + hc + hs + he;
                    // Lines 21-24.
                    if used > top_k {
                        break;
                    }
                    let misses = top_k - used;
                    // Line 25's weight.
                    let probability =
                        at(4, misses) / phi_n_k * at(0, hf) * at(1, hc) * at(2, hs) * at(3, he);
                    out.push(HitPattern {
                        hits: [hf, hc, hs, he],
                        misses,
                        probability,
                    });
                }
            }
        }
    }
    out
}

/// The expected makespan of one layer under `sizes` (Alg. 4 lines 15-29): the sum over hit
/// patterns of Alg. 3's estimate times the pattern's probability, seconds.
pub fn expected_layer_makespan_s(
    q: &[f64],
    top_k: usize,
    sizes: &PoolSizes,
    phi_n_k: f64,
    costs: &ReconstructionCosts,
) -> f64 {
    hit_patterns(q, top_k, sizes, phi_n_k)
        .iter()
        .map(|h| h.probability * estimate_makespan_s(top_k, h.hits, costs))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> ReconstructionCosts {
        ReconstructionCosts {
            decompress_e_chunk_s: 3.0,
            read_e_chunk_s: 1.0,
            read_sm_chunk_s: 10.0,
            threads: 4,
            shards: 2,
            tensors_per_expert: 1,
        }
    }

    pub(crate) fn tiny() -> PoolInstance {
        PoolInstance {
            problem: ProblemKind::ZipmoePool,
            name: "tiny".into(),
            top_k: 2,
            layers: vec![LayerProfile {
                inclusion_probabilities: vec![0.9, 0.6, 0.3, 0.2],
            }],
            costs: costs(),
            memory: MemoryModel {
                budget_bytes: 400,
                full_expert_bytes: 200,
                sm_expert_bytes: 100,
                e_expert_bytes: 50,
            },
            pools: vec![Pool::Exponent, Pool::Full],
            grid_step: 0.25,
            ipf: IpfOptions::default(),
        }
    }

    #[test]
    fn alg2_is_the_binomial_for_equal_probabilities() {
        // Three experts at q = 1/2: Binomial(3, 1/2) = 1/8, 3/8, 3/8, 1/8.
        let phi = poisson_binomial(&[0.5, 0.5, 0.5]);
        for (a, b) in phi.iter().zip([0.125, 0.375, 0.375, 0.125]) {
            assert!((a - b).abs() < 1e-15, "{phi:?}");
        }
        // q = (0.2, 0.7): P(0) = 0.8 x 0.3, P(1) = 0.2 x 0.3 + 0.8 x 0.7, P(2) = 0.14.
        let phi = poisson_binomial(&[0.2, 0.7]);
        for (a, b) in phi.iter().zip([0.24, 0.62, 0.14]) {
            assert!((a - b).abs() < 1e-15, "{phi:?}");
        }
        assert_eq!(poisson_binomial(&[]), vec![1.0]);
    }

    #[test]
    fn alg3_by_hand() {
        // k = 3, n = 1, K = 2, u = 10, v = 1, c = 3, L = 4.
        // All misses: n_SM = 3, n_E = 6, T_IO = 30 + 6 = 36; n_D = 6,
        // T_decomp = (6 + 18) / 4 = 6; makespan 36.
        assert_eq!(estimate_makespan_s(3, [0, 0, 0, 0], &costs()), 36.0);
        // h = (1, 0, 1, 1): n_SM = 3 - 2 = 1, n_E = 2 (3 - 2) = 2, T_IO = 10 + 2 = 12;
        // n_D = 2 x 2 = 4, T_decomp = (2 + 12) / 4 = 3.5; makespan 12.
        assert_eq!(estimate_makespan_s(3, [1, 0, 1, 1], &costs()), 12.0);
        // Everything in F: no work.
        assert_eq!(estimate_makespan_s(3, [3, 0, 0, 0], &costs()), 0.0);
        // Decompression-bound: three S hits, one thread, u = 0: n_E = 6, n_D = 6,
        // T_IO = 6, T_decomp = 6 + 18 = 24.
        let one = ReconstructionCosts {
            threads: 1,
            read_sm_chunk_s: 0.0,
            ..costs()
        };
        assert_eq!(estimate_makespan_s(3, [0, 0, 3, 0], &one), 24.0);
    }

    #[test]
    fn pool_sizes_by_hand() {
        let i = tiny();
        // M = 4; F gets 2/4 of 400 B = 200 B = 1 expert of 200 B; E gets 2/4 = 200 B = 4
        // experts of 50 B, cut to the 3 ranks left; no miss pool.
        // Or: E gets 1/4 = 100 B = 2 experts; F 3/4 = 300 B = 1 expert; 1 rank missed.
        for (steps, experts, miss) in [
            ([2, 0, 0, 2], [1, 0, 0, 3], 0),
            ([3, 0, 0, 1], [1, 0, 0, 2], 1),
        ] {
            assert_eq!(
                pool_sizes(&i, &Split { steps }),
                PoolSizes { experts, miss },
                "{steps:?}"
            );
        }
    }

    #[test]
    fn hit_patterns_by_hand() {
        // Two ranks, k = 1, F = rank 1, miss = rank 2, q = (1/2, 1/3).
        // Phi_N(1) = 1/2 x 2/3 + 1/2 x 1/3 = 1/2; Phi_F = (1/2, 1/2); Phi_M = (2/3, 1/3).
        // P(h_F = 0) = Phi_M(1) Phi_F(0) / Phi_N(1) = (1/3)(1/2)/(1/2) = 1/3, P(h_F = 1) = 2/3.
        let q = [0.5, 1.0 / 3.0];
        let sizes = PoolSizes {
            experts: [1, 0, 0, 0],
            miss: 1,
        };
        let pn = phi_all(&q, 1);
        assert!((pn - 0.5).abs() < 1e-15);
        let h = hit_patterns(&q, 1, &sizes, pn);
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].hits, h[0].misses), ([0, 0, 0, 0], 1));
        assert!((h[0].probability - 1.0 / 3.0).abs() < 1e-15);
        assert!((h[1].probability - 2.0 / 3.0).abs() < 1e-15);
        // Expected makespan with k = 1, n = 1, K = 2, u = 10, v = 1, c = 3, L = 4:
        // a miss costs max(10 + 2, (2 + 6) / 4) = 12, an F hit 0: 12 / 3 = 4.
        let e = expected_layer_makespan_s(&q, 1, &sizes, pn, &costs());
        assert!((e - 4.0).abs() < 1e-12, "{e}");
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(validate(&tiny()), Ok(()));
        let mut i = tiny();
        i.layers[0].inclusion_probabilities = vec![1.2, 0.6, 0.1, 0.1];
        let e = validate(&i).unwrap_err();
        assert_eq!(e.field, "layers[0].inclusion_probabilities[0]");
        assert!(e.reason.contains("outside [0, 1]"), "{e}");
        i.layers[0].inclusion_probabilities = vec![0.9, 0.6, 0.3, 0.3];
        let e = validate(&i).unwrap_err();
        assert_eq!(e.field, "layers[0].inclusion_probabilities");
        assert!(e.reason.contains("sum to 2.1"), "{e}");
        i.layers[0].inclusion_probabilities = vec![0.6, 0.9, 0.3, 0.2];
        assert_eq!(
            validate(&i).unwrap_err().field,
            "layers[0].inclusion_probabilities[1]"
        );
        let mut i = tiny();
        i.grid_step = 0.3;
        let e = validate(&i).unwrap_err();
        assert_eq!(e.field, "grid_step");
        assert!(e.reason.contains("not an integer"), "{e}");
        let mut i = tiny();
        i.pools = vec![Pool::Full, Pool::Full];
        assert_eq!(validate(&i).unwrap_err().field, "pools[1]");
        let mut i = tiny();
        i.top_k = 5;
        assert_eq!(validate(&i).unwrap_err().field, "top_k");
        let mut i = tiny();
        i.costs.threads = 0;
        assert_eq!(validate(&i).unwrap_err().field, "costs.threads");
        let mut i = tiny();
        i.layers.push(LayerProfile {
            inclusion_probabilities: vec![1.0, 1.0],
        });
        assert_eq!(
            validate(&i).unwrap_err().field,
            "layers[1].inclusion_probabilities"
        );
    }

    #[test]
    fn json_round_trip_and_problem_tag() {
        let i = tiny();
        let text = serde_json::to_string(&i).unwrap();
        assert!(text.starts_with(r#"{"problem":"zipmoe-pool""#), "{text}");
        let back: PoolInstance = serde_json::from_str(&text).unwrap();
        assert_eq!(back, i);
        let wrong: PoolInstance =
            serde_json::from_str(&text.replace("zipmoe-pool", "zipmoe")).unwrap();
        assert_eq!(validate(&wrong).unwrap_err().field, "problem");
    }

    #[test]
    fn grid_point_counts() {
        // Step 1/4 over 4 pools: C(7, 3) = 35; over one pool: 1.
        assert_eq!(grid_points(4, 4), 35);
        assert_eq!(grid_points(4, 1), 1);
        assert_eq!(grid_points(20, 4), 1771);
    }
}
