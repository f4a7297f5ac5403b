//! Seeded SMoE layer instances (seeded ChaCha8: same preset and seed, same bytes).
//!
//! Scores: per token, logits z_e = sigma N(0, 1) with sigma uniform in the preset's range,
//! scores = softmax(z) (router probabilities). G: a uniformly random subset of the preset's
//! share of E. Costs: uniform, or per expert (each cost times a factor uniform in [0.5, 2]).
//!
//! Presets:
//! * `tiny`: E in 6..=10, k in 2..=4, 1..=3 tokens, alpha uniform in [0, 0.6] (Table IV's
//!   range), G of 20-60% of E, uniform costs C_load in [1, 4] ms, C_CPU in [0.5, 3] ms, GPU
//!   0.05 ms, sigma in [0.3, 1.5]: small enough for the exhaustive optima.
//! * `tiny-per-expert`: `tiny` with per-expert costs.
//! * `qwen2-57b`: Qwen2-57B-A14B's routed layer (64 experts, top-8; the model's public
//!   Hugging Face config, not the paper), one token, alpha = 0.25 (the paper's S3 setting,
//!   Sec. VI-B), G of 50% of E; costs are assumptions: C_load = 6 ms and C_CPU = 2 ms (S3's
//!   "CPU time ... only one-third of load time", Sec. VI-C), GPU 0.1 ms; sigma in [0.8, 1.5].
//!
//! The papers' scale ([`paper_layer`], `verify --scale paper`): the three settings of Table
//! III (deepseek-moe-16b and XVERSE-MoE-A4.2B, 64 routed experts top-6; Qwen2-57B-A14B, 64
//! top-8), batches of 1 and 3 tokens, alpha on Table IV's grid, the GPU's share of the model's
//! bytes as the resident share (0.39, 0.33, 0.45), the qwen2-57b preset's costs and scores.

use formulations::smoe::validate::validate;
use formulations::smoe::{Costs, Instance};
use formulations::{Error, ProblemKind};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

crate::named! {
    /// The named presets (module doc).
    pub enum Preset: "preset" {
        /// small layers with uniform costs
        Tiny,
        /// small layers with per-expert costs
        TinyPerExpert,
        /// a Qwen2-57B-A14B-like layer
        Qwen2_57b,
    }
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Per token softmax scores of sigma N(0, 1) logits over `experts`, and a uniformly random
/// resident set of round(share E) experts (increasing ids).
fn draw_layer(
    rng: &mut ChaCha8Rng,
    experts: usize,
    tokens: usize,
    sigma: f64,
    share: f64,
) -> (Vec<Vec<f64>>, Vec<u32>) {
    let scores = (0..tokens)
        .map(|_| {
            let z: Vec<f64> = (0..experts).map(|_| sigma * normal(rng)).collect();
            let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ex: Vec<f64> = z.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = ex.iter().sum();
            ex.into_iter().map(|x| x / sum).collect()
        })
        .collect();
    let cached = ((share * experts as f64).round() as usize).min(experts);
    let mut gpu_cache: Vec<u32> = sample(rng, experts, cached)
        .into_iter()
        .map(|e| e as u32)
        .collect();
    gpu_cache.sort_unstable();
    (scores, gpu_cache)
}

/// The paper's settings (Table III) at the papers' scale: name, routed experts, top-k (the
/// models' public Hugging Face configs, not the paper) and the GPU's share of the model's
/// bytes (Table III), read as the share of experts resident.
pub const PAPER_SETTINGS: [(&str, usize, usize, f64); 3] = [
    ("S1 deepseek-moe-16b", 64, 6, 12.0 / 31.0),
    ("S2 XVERSE-MoE-A4.2B", 64, 6, 16.0 / 49.0),
    ("S3 Qwen2-57B-A14B", 64, 8, 48.0 / 107.0),
];

/// A decoding step's layer at the papers' scale: seed % 6 picks the setting of Table III
/// ([`PAPER_SETTINGS`], seed % 3) and the batch (1 token for seed % 6 < 3, else 3: Sec. VI-B's
/// batch sizes); ChaCha8(seed) draws alpha from Table IV's grid 0, 0.05, ..., 0.6, sigma in
/// [0.8, 1.5], the scores and the resident set as the presets do; uniform costs C_load = 6 ms,
/// C_CPU = 2 ms (S3's ratio, Sec. VI-C, for every setting), GPU 0.1 ms.
pub fn paper_layer(seed: u64) -> Instance {
    let (name, experts, top_k, share) = PAPER_SETTINGS[(seed % 3) as usize];
    let tokens = if seed % 6 < 3 { 1 } else { 3 };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let alpha = f64::from(rng.random_range(0..=12u32)) / 20.0;
    let sigma = rng.random_range(0.8..=1.5);
    let (scores, gpu_cache) = draw_layer(&mut rng, experts, tokens, sigma, share);
    Instance {
        problem: ProblemKind::Smoe,
        name: format!("{name} batch {tokens} alpha {alpha:.2} seed {seed}"),
        experts,
        top_k,
        alpha,
        scores,
        gpu_cache,
        costs: Costs::Uniform {
            load_s: 6e-3,
            cpu_s: 2e-3,
            gpu_s: 1e-4,
        },
    }
}

/// A layer of the preset at `seed`; validated.
pub fn try_generate(preset: Preset, seed: u64) -> Result<Instance, Error> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (experts, top_k, tokens, alpha, share, sigma) = match preset {
        Preset::Tiny | Preset::TinyPerExpert => (
            rng.random_range(6..=10usize),
            rng.random_range(2..=4usize),
            rng.random_range(1..=3usize),
            rng.random_range(0.0..=0.6),
            rng.random_range(0.2..=0.6),
            rng.random_range(0.3..=1.5),
        ),
        Preset::Qwen2_57b => (64, 8, 1, 0.25, 0.5, rng.random_range(0.8..=1.5)),
    };
    let (scores, gpu_cache) = draw_layer(&mut rng, experts, tokens, sigma, share);
    let (load, cpu, gpu) = match preset {
        Preset::Qwen2_57b => (6e-3, 2e-3, 1e-4),
        _ => (
            rng.random_range(1e-3..=4e-3),
            rng.random_range(0.5e-3..=3e-3),
            5e-5,
        ),
    };
    let costs = match preset {
        Preset::TinyPerExpert => {
            let mut per = |x: f64| -> Vec<f64> {
                (0..experts)
                    .map(|_| x * rng.random_range(0.5..=2.0))
                    .collect()
            };
            Costs::PerExpert {
                load_s: per(load),
                cpu_s: per(cpu),
                gpu_s: per(gpu),
            }
        }
        _ => Costs::Uniform {
            load_s: load,
            cpu_s: cpu,
            gpu_s: gpu,
        },
    };
    let instance = Instance {
        problem: ProblemKind::Smoe,
        name: format!("{}-seed{seed}", preset.name()),
        experts,
        top_k,
        alpha,
        scores,
        gpu_cache,
        costs,
    };
    validate(&instance).map_err(|e| e.in_file(format!("<preset {}>", preset.name())))?;
    Ok(instance)
}

/// [`try_generate`] for presets known to be valid.
pub fn generate(preset: Preset, seed: u64) -> Instance {
    try_generate(preset, seed).expect("presets generate valid instances")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_reproducible() {
        for &p in Preset::ALL {
            for seed in 0..20 {
                let a = generate(p, seed);
                assert_eq!(a, generate(p, seed));
                assert!(validate(&a).is_ok());
            }
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
        }
        assert!("nope".parse::<Preset>().is_err());
    }
}
