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
    use crate::tier::{classify, Tier};
    use crate::zipmoe::planning::claims::registry;

    #[test]
    fn the_synthetic_families_are_the_model_at_best() {
        for claim in registry() {
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
        let p = (registry()
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
}
