//! SMoE's premises (paper 004; see [`crate::tier`]), each with the claims it bears on.
//!
//! Model premises (breaking one makes an instance `extension`): `fine-grained-moe` (the paper's
//! subject: more than 1-2 experts per token, k >= 3), `positive-gate-scores` (every threshold of
//! Alg. 1 is a multiple of S_{k+1}, so S_{k+1} > 0 for every token), `alpha-threshold` (alpha <
//! 1: at 1 every inactive expert is a substitute), and for Alg. 2's claim `uniform-costs` (one
//! C_load, one C_CPU: Sec. V-A) and `load-primary` (C_load >= C_CPU: moe-opt's reading of "the
//! primary cost factor").
//!
//! Regime premises (Sec. VI; the models of Table III, whose E and k the paper does not state,
//! come from their public configs; the bands are moe-opt's): `experts-per-layer` 32-128,
//! `top-k` 3-16, `low-batch` 1-3 tokens, `alpha-range` 0-0.6 (Table IV), `cache-share` 1/8 to
//! 2/3 of the experts resident (Table III's GPU against model sizes), and for Alg. 2
//! `load-cpu-ratio` 1.5-6 (S3's CPU time is a third of the load time).

use formulations::smoe::{Costs, Instance};

use crate::tier::{within, Level, Premise};

const ALG2: &str = "smoe/alg2-uniform-optimal";

fn positive_gate_scores(i: &Instance) -> Result<(), String> {
    for (t, row) in i.scores.iter().enumerate() {
        let mut s = row.clone();
        s.sort_by(|a, b| b.total_cmp(a));
        let s_k1 = s.get(i.top_k).copied().unwrap_or(0.0);
        if s_k1 <= 0.0 {
            return Err(format!("token {t}: S_(k+1) = {s_k1}"));
        }
    }
    Ok(())
}

fn uniform(i: &Instance) -> Result<(f64, f64), String> {
    match i.costs {
        Costs::Uniform { load_s, cpu_s, .. } => Ok((load_s, cpu_s)),
        Costs::PerExpert { .. } => Err("per-expert costs".into()),
    }
}

fn load_primary(i: &Instance) -> Result<(), String> {
    let (load, cpu) = uniform(i)?;
    if load >= cpu {
        Ok(())
    } else {
        Err(format!("C_load {load:.3e} s < C_CPU {cpu:.3e} s"))
    }
}

/// Every premise, model premises first (module doc).
pub fn premises() -> Vec<Premise<Instance>> {
    use Level::{Model, Regime};
    vec![
        Premise::new(
            "fine-grained-moe",
            Model,
            "Sec. II (k >= 3)",
            "Unlike traditional MoE which activates 1–2 experts per token, fine-grained MoE divides experts further and activates more per token under similar computational constraints.",
            &[],
            |i| within("top-k", i.top_k as f64, 3.0, f64::INFINITY),
        ),
        Premise::new(
            "positive-gate-scores",
            Model,
            "Sec. IV-A, the thresholds of Alg. 1",
            "an expert's importance to an input is reflected in its router's gate score",
            &[],
            positive_gate_scores,
        ),
        Premise::new(
            "alpha-threshold",
            Model,
            "Sec. IV-A (alpha < 1)",
            "We introduce a hyperparameter α (expert substitution threshold) that acts as the score threshold",
            &[],
            |i| within("alpha", i.alpha, 0.0, 1.0 - f64::EPSILON),
        ),
        Premise::new(
            "uniform-costs",
            Model,
            "Sec. V-A",
            "C_{CPU} is treated as a constant due to stable CPU times across low-batch sizes",
            &[ALG2],
            |i| uniform(i).map(|_| ()),
        ),
        Premise::new(
            "load-primary",
            Model,
            "Sec. V-A (C_load >= C_CPU: moe-opt's reading)",
            "Thus, C_{load} is the primary cost factor, with C_{CPU} as a constant.",
            &[ALG2],
            load_primary,
        ),
        Premise::new(
            "experts-per-layer",
            Regime,
            "Table III's models (E = 64 in their configs; 32-128: moe-opt's band)",
            "we select models exceeding edge GPU memory capacity",
            &[],
            |i| within("experts", i.experts as f64, 32.0, 128.0),
        ),
        Premise::new(
            "top-k",
            Regime,
            "Table III's models (k = 6-8 in their configs; 3-16: moe-opt's band)",
            "we select models exceeding edge GPU memory capacity",
            &[],
            |i| within("top-k", i.top_k as f64, 3.0, 16.0),
        ),
        Premise::new(
            "low-batch",
            Regime,
            "Sec. VI-B (batches of 1 and 3)",
            "particularly at low batch sizes of 3 and 1, typical for edge deployment",
            &[],
            |i| within("tokens", i.scores.len() as f64, 1.0, 3.0),
        ),
        Premise::new(
            "alpha-range",
            Regime,
            "Table IV (alpha 0 to 0.6)",
            "we set the substitution threshold to 0.35 in S1, 0.3 in S2, and 0.25 in S3.",
            &[],
            |i| within("alpha", i.alpha, 0.0, 0.6),
        ),
        Premise::new(
            "cache-share",
            Regime,
            "Table III (GPU memory 0.33-0.49 of the model; 1/8 to 2/3 of the experts resident: moe-opt's band)",
            "we select models exceeding edge GPU memory capacity",
            &[],
            |i| within("resident share", i.gpu_cache.len() as f64 / i.experts as f64, 0.125, 0.67),
        ),
        Premise::new(
            "load-cpu-ratio",
            Regime,
            "Sec. VI-C (3 in S3; 1.5-6: moe-opt's band)",
            "with CPU time in S3 being only one-third of load time",
            &[ALG2],
            |i| uniform(i).and_then(|(load, cpu)| within("C_load / C_CPU", load / cpu, 1.5, 6.0)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoe::claims::family_tiny;
    use crate::smoe::generate::{generate, Preset};
    use crate::tier::{classify, Tier};

    #[test]
    fn the_qwen_preset_is_the_regime_and_tiny_is_not() {
        let q = classify(&premises(), ALG2, &generate(Preset::Qwen2_57b, 0));
        assert_eq!(q.tier, Tier::Regime, "{:?}", q.broken);
        let t = classify(&premises(), ALG2, &family_tiny(0));
        assert_ne!(t.tier, Tier::Regime, "{:?}", t.broken);
        // Just inside and just outside `load-primary`: C_load = C_CPU, then C_load below it.
        let mut i = generate(Preset::Qwen2_57b, 0);
        let Costs::Uniform { cpu_s, .. } = i.costs else {
            unreachable!("the preset's costs are uniform")
        };
        for (load, tier) in [(cpu_s, Tier::Model), (cpu_s * 0.99, Tier::Extension)] {
            if let Costs::Uniform { load_s, .. } = &mut i.costs {
                *load_s = load;
            }
            assert_eq!(classify(&premises(), ALG2, &i).tier, tier, "{load}");
        }
    }
}
