//! ZipMoE's premises on a cache-pool planning instance (paper 003, App. C-D; see
//! [`crate::tier`]), each with the claims it bears on.
//!
//! Model premises (breaking one makes an instance `extension`): the marginals of (15) (k-subsets,
//! sum f = k, non-increasing by rank) hold on every valid instance. moe-opt's reading of the
//! proof's positive weights (0 < f_i < 1): an expert with f = 0 is in no selected set and one
//! with f = 1 in every one, an exact reduction, so such rows stay inside the model. Alg. 4 alone
//! (`alg4-best-split`) adds `single-layer` (its input is one layer's list), `cost-consistency`
//! (chunk costs of one compression ratio in (0, 1]: v = rho u / K) and `footprint-consistency`
//! (a full expert is twice its SM part, the E part rho times it).
//!
//! Regime premises (Sec. 5; bands are moe-opt's readings): `evaluated-model-shape` (E, k) of
//! Qwen1.5-MoE (60, 4), DeepSeek-V2-Lite (64, 6) or Switch-Large-128 (128, 1), for every claim;
//! for Alg. 4 also the scheduling instance's bands on threads, rho, K c / u and tensors per
//! expert ([`crate::zipmoe::premises`]) and `offloading-budget` (10-20 GB against the models'
//! expert bytes: 0.15-0.70 of them fit).

use formulations::zipmoe::pool::PoolInstance;

use crate::tier::{Level, Premise};
use crate::zipmoe::premises::within;

const ALG4: &str = "zipmoe/alg4-best-split";

/// rho of the chunk costs: v = rho u / K.
fn rho(p: &PoolInstance) -> f64 {
    p.costs.read_e_chunk_s * f64::from(p.costs.shards) / p.costs.read_sm_chunk_s
}

fn footprint_consistency(p: &PoolInstance) -> Result<(), String> {
    let m = &p.memory;
    if m.full_expert_bytes != 2 * m.sm_expert_bytes {
        return Err(format!(
            "a full expert has {} bytes, twice its SM part {}",
            m.full_expert_bytes, m.sm_expert_bytes
        ));
    }
    let ratio = m.e_expert_bytes as f64 / m.sm_expert_bytes as f64;
    if (ratio - rho(p)).abs() > 1.0 / m.sm_expert_bytes as f64 + 1e-9 {
        return Err(format!(
            "E bytes / SM bytes {ratio:.6} against the costs' rho {:.6}",
            rho(p)
        ));
    }
    Ok(())
}

/// Every premise, model premises first (module doc).
pub fn premises() -> Vec<Premise<PoolInstance>> {
    use Level::{Model, Regime};
    let alg4: &'static [&'static str] = &[ALG4];
    vec![
        Premise::new(
            "single-layer",
            Model,
            "Alg. 4 (App. C): one layer's list",
            "The rank-based expert inclusion probability list as",
            alg4,
            |p| within("layers", p.layers.len() as f64, 1.0, 1.0),
        ),
        Premise::new(
            "cost-consistency",
            Model,
            "Sec. 3.1",
            "reading one compressed E-chunk incurs an I/O cost of",
            alg4,
            |p| within("the costs' rho", rho(p), f64::MIN_POSITIVE, 1.0),
        ),
        Premise::new(
            "footprint-consistency",
            Model,
            "Sec. 2-3.1 (sign and mantissa are half a BF16 tensor: moe-opt's reading)",
            "constitute approximately 50% of the full tensor size",
            alg4,
            footprint_consistency,
        ),
        Premise::new(
            "evaluated-model-shape",
            Regime,
            "Sec. 5 (E and k from the models' configs)",
            "SwitchTransformers-Large-128",
            &[],
            |p| match (p.experts(), p.top_k) {
                (60, 4) | (64, 6) | (128, 1) => Ok(()),
                (e, k) => Err(format!("E = {e}, k = {k}: none of the evaluated models")),
            },
        ),
        Premise::new(
            "threads",
            Regime,
            "Sec. 2 (3 to 12 threads: moe-opt's band)",
            "mobile devices typically feature 6–12 CPU cores",
            alg4,
            |p| within("decompression threads", f64::from(p.costs.threads), 3.0, 12.0),
        ),
        Premise::new(
            "compression-ratio",
            Regime,
            "Sec. 2 (rho = 2 s - 1: moe-opt's reading)",
            "LZ4HC reduces model size to 74%, while ZSTD achieves 68%",
            alg4,
            |p| within("rho", rho(p), 0.32, 0.48),
        ),
        Premise::new(
            "decompress-vs-read",
            Regime,
            "Sec. 2 (K c / u in [2, 3]: moe-opt's reading)",
            "multi-threaded decompression incurs lower latency than SSD I/O once",
            alg4,
            |p| {
                let c = &p.costs;
                within("K c / u", f64::from(c.shards) * c.decompress_e_chunk_s / c.read_sm_chunk_s, 2.0, 3.0)
            },
        ),
        Premise::new(
            "tensors-per-expert",
            Regime,
            "Sec. 3.1; the evaluated models' experts have 2 or 3 matrices",
            "For an expert comprising N tensors",
            alg4,
            |p| within("tensors per expert", f64::from(p.costs.tensors_per_expert), 2.0, 3.0),
        ),
        Premise::new(
            "offloading-budget",
            Regime,
            "Sec. 5 (10 and 20 GB against the models' expert bytes: 0.15-0.70 of them, moe-opt's band)",
            "is fixed at 20GB and 10GB on Hardware 1 and Hardware 2",
            alg4,
            |p| {
                let total = (p.layers.len() * p.experts()) as f64 * p.memory.full_expert_bytes as f64;
                within("budget share of the expert bytes", p.memory.budget_bytes as f64 / total, 0.15, 0.70)
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::boundary::{assert_boundaries, Boundary};
    use crate::tier::{classify, Tier};
    use crate::zipmoe::planning::claims::table;
    use crate::zipmoe::planning::generate::{instance, PlanConfig};

    #[test]
    fn the_synthetic_families_are_the_model_at_best() {
        for claim in table() {
            let p = (claim.family)(0);
            let c = classify(&premises(), claim.info.id, &p);
            assert_ne!(c.tier, Tier::Regime, "{}: {:?}", claim.info.id, c.broken);
            assert!(c
                .broken
                .iter()
                .any(|b| b.starts_with("evaluated-model-shape")));
        }
    }

    #[test]
    fn a_second_layer_leaves_alg4s_model_only() {
        let p = (table()
            .into_iter()
            .find(|c| c.info.id == ALG4)
            .expect("alg4's claim")
            .family)(0);
        let two = PoolInstance {
            layers: vec![p.layers[0].clone(), p.layers[0].clone()],
            ..p.clone()
        };
        assert_eq!(classify(&premises(), ALG4, &two).tier, Tier::Extension);
        assert_ne!(
            classify(&premises(), "zipmoe/thmD1-inclusion", &two).tier,
            Tier::Extension
        );
    }

    /// The base, by hand: Qwen1.5-MoE's shape (Sec. 5: E = 60, k = 4), one layer of uniform
    /// inclusion probabilities 4/60, the default geometry (n = 3 tensors of m = 2048 x 1408 =
    /// 2,883,584 elements, L = 6, K = 4, rho = 0.33: K c / u = 3, v K / u = 0.33; footprints
    /// full 17,301,504, SM 8,650,752, E ceil(0.33 x 8,650,752 = 2,854,748.16) = 2,854,749
    /// bytes) and a budget of 0.4 of the layer's 60 x 17,301,504 = 1,038,090,240 expert bytes.
    fn base() -> PoolInstance {
        instance(
            "qwen-by-hand",
            4,
            vec![vec![4.0 / 60.0; 60]],
            &PlanConfig {
                budget_fraction: 0.4,
                ..PlanConfig::default()
            },
        )
        .expect("valid")
    }

    /// Sets (E, k) with uniform inclusion probabilities k / E.
    fn shape(p: &mut PoolInstance, e: usize, k: u32) {
        p.top_k = k;
        p.layers[0].inclusion_probabilities = vec![f64::from(k) / e as f64; e];
    }

    /// Sets the costs' rho (v = rho u / K) and the E part's bytes with it (`e_bytes`, by hand:
    /// the SM part's 8,650,752 bytes times rho, rounded up, so that footprint-consistency
    /// holds).
    fn rho(p: &mut PoolInstance, rho: f64, e_bytes: u64) {
        p.costs.read_e_chunk_s = rho * p.costs.read_sm_chunk_s / f64::from(p.costs.shards);
        p.memory.e_expert_bytes = e_bytes;
    }

    /// A row of `each_premise_just_inside_and_just_outside`: the base changed to just inside
    /// and to just outside the premise's limit, classified for Alg. 4's claim unless the row
    /// says `.claim(..)`, one the premise bears on.
    type Row = Boundary<PoolInstance>;

    #[test]
    fn each_premise_just_inside_and_just_outside() {
        let base = base();
        for claim in table() {
            let c = classify(&premises(), claim.info.id, &base);
            assert_eq!(c.tier, Tier::Regime, "{}: {:?}", claim.info.id, c.broken);
        }
        let boundaries = [
            // Alg. 4's input is one layer's list: 1 layer, then 2 (the budget share halves to
            // 0.2, still inside offloading-budget).
            Row::model(
                "single-layer",
                |_| {},
                |p| p.layers.push(p.layers[0].clone()),
            ),
            // Sec. 3.1's v = rho u / K with rho <= 1: rho = 1 (E bytes = SM bytes), then
            // 1 + 1e-6 (E bytes ceil(1.000001 x 8,650,752 = 8,650,760.65) = 8,650,761); both
            // leave compression-ratio's band. The lower end, rho > 0, is not asserted: the
            // band's relative slack (1e-9 of its upper end 1) admits rho = 0, v = 0.
            Row::model(
                "cost-consistency",
                |p| rho(p, 1.0, 8_650_752),
                |p| rho(p, 1.0 + 1e-6, 8_650_761),
            )
            .inside_is(Tier::Model, &["compression-ratio"])
            .outside_is(Tier::Extension, &["compression-ratio"]),
            // Sec. 2: sign and mantissa are half a tensor: full = 2 x 8,650,752 = 17,301,504
            // bytes, then one byte more.
            Row::model(
                "footprint-consistency",
                |_| {},
                |p| p.memory.full_expert_bytes = 17_301_505,
            ),
            // The E part is rho times the SM part within one byte (+ 1e-9 of it, 0.0087 B):
            // rho x SM = 2,854,748.16, so 2,854,749 (+0.84 B) inside, 2,854,750 (+1.84 B) out.
            Row::model(
                "footprint-consistency",
                |p| p.memory.e_expert_bytes = 2_854_749,
                |p| p.memory.e_expert_bytes = 2_854_750,
            ),
            // Below: 2,854,748 (-0.16 B) inside, 2,854,747 (-1.16 B) outside.
            Row::model(
                "footprint-consistency",
                |p| p.memory.e_expert_bytes = 2_854_748,
                |p| p.memory.e_expert_bytes = 2_854_747,
            ),
            // Sec. 5's Qwen1.5-MoE (60, 4), then (60, 5).
            Row::regime("evaluated-model-shape", |_| {}, |p| shape(p, 60, 5)),
            // DeepSeek-V2-Lite (64, 6), then (64, 7), on a claim of Thm. D.1 (every claim).
            Row::regime(
                "evaluated-model-shape",
                |p| shape(p, 64, 6),
                |p| shape(p, 64, 7),
            )
            .claim("zipmoe/thmD1-inclusion"),
            // Switch-Large-128 (128, 1), then (127, 1) (budget share 0.4 x 60 / 128 = 0.19).
            Row::regime(
                "evaluated-model-shape",
                |p| shape(p, 128, 1),
                |p| shape(p, 127, 1),
            ),
            // Sec. 2: decompression beats the SSD from 3 threads: L = 3, then 2.
            Row::regime("threads", |p| p.costs.threads = 3, |p| p.costs.threads = 2),
            // Sec. 2: devices have 6-12 cores: L = 12, then 13.
            Row::regime(
                "threads",
                |p| p.costs.threads = 12,
                |p| p.costs.threads = 13,
            ),
            // The band's lower end 0.32 = 2 x 0.66 - 1: Sec. 2's Shannon bound, 66 % (ZSTD's
            // 68 % gives 0.36), with E bytes ceil(0.32 x 8,650,752 = 2,768,240.64); then 1e-6
            // below (2,768,237.87, so 2,768,238 bytes).
            Row::regime(
                "compression-ratio",
                |p| rho(p, 0.32, 2_768_241),
                |p| rho(p, 0.32 * (1.0 - 1e-6), 2_768_238),
            ),
            // Sec. 2's LZ4HC, 74 %: rho = 0.48 (4,152,360.96, so 4,152,361), then 1e-6 above
            // (4,152,365.11, so 4,152,365).
            Row::regime(
                "compression-ratio",
                |p| rho(p, 0.48, 4_152_361),
                |p| rho(p, 0.48 * (1.0 + 1e-6), 4_152_365),
            ),
            // Sec. 2 (I): 2 threads do not beat reading the payload, K c / u >= 2: c = 2 u / K
            // from the base's u and K = 4, then 1e-6 less.
            Row::regime(
                "decompress-vs-read",
                |p| {
                    p.costs.decompress_e_chunk_s =
                        2.0 * p.costs.read_sm_chunk_s / f64::from(p.costs.shards)
                },
                |p| {
                    p.costs.decompress_e_chunk_s =
                        2.0 * (1.0 - 1e-6) * p.costs.read_sm_chunk_s / f64::from(p.costs.shards)
                },
            ),
            // 3 threads do, K c / u <= 3: the base's c = 3 u / K, then 1e-6 more.
            Row::regime(
                "decompress-vs-read",
                |_| {},
                |p| {
                    p.costs.decompress_e_chunk_s =
                        3.0 * (1.0 + 1e-6) * p.costs.read_sm_chunk_s / f64::from(p.costs.shards)
                },
            ),
            // Sec. 3.1's N: Switch's 2 matrices, then 1.
            Row::regime(
                "tensors-per-expert",
                |p| p.costs.tensors_per_expert = 2,
                |p| p.costs.tensors_per_expert = 1,
            ),
            // Qwen's and DeepSeek's 3 matrices, then 4.
            Row::regime(
                "tensors-per-expert",
                |_| {},
                |p| p.costs.tensors_per_expert = 4,
            ),
            // Sec. 5's 10-20 GB: 0.15 of 1,038,090,240 B = 155,713,536 B, then one byte less
            // (the band's slack, 1e-9 x 0.70 of the share, is 0.73 B).
            Row::regime(
                "offloading-budget",
                |p| p.memory.budget_bytes = 155_713_536,
                |p| p.memory.budget_bytes = 155_713_535,
            ),
            // 0.70 of it = 726,663,168 B, then one byte more.
            Row::regime(
                "offloading-budget",
                |p| p.memory.budget_bytes = 726_663_168,
                |p| p.memory.budget_bytes = 726_663_169,
            ),
        ];
        assert_boundaries(&premises(), ALG4, &base, &boundaries, |i| {
            formulations::zipmoe::pool::validate(i).expect("valid inside")
        });
    }
}
