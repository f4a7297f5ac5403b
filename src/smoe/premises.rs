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
    use crate::tier::boundary::{assert_boundaries, Boundary};
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

    /// Sets the preset's uniform C_load and C_CPU.
    fn costs(i: &mut Instance, load: f64, cpu: f64) {
        let Costs::Uniform { load_s, cpu_s, .. } = &mut i.costs else {
            unreachable!("the preset's costs are uniform")
        };
        (*load_s, *cpu_s) = (load, cpu);
    }

    /// E experts: each token's scores cut to E or padded with 0.001, half of them resident
    /// (as the preset's share 0.5: experts 0..E/2).
    fn experts(i: &mut Instance, e: usize) {
        i.experts = e;
        for row in &mut i.scores {
            row.resize(e, 1e-3);
        }
        i.gpu_cache = (0..e as u32 / 2).collect();
    }

    /// The first token's scores: 1/8 for experts 0-7 (the top k = 8), `s9` for expert 8, 0
    /// for the rest, so that S_(k+1) = `s9`.
    fn gate(i: &mut Instance, s9: f64) {
        let mut row = vec![0.0; 64];
        row[..8].fill(0.125);
        row[8] = s9;
        i.scores[0] = row;
    }

    /// A row of `each_premise_just_inside_and_just_outside`: the Qwen2-57B preset (E = 64, k =
    /// 8, one token, alpha 0.25, 32 experts resident, C_load 6 ms and C_CPU 2 ms) changed to
    /// just inside and to just outside the premise's limit, and the other premises on the same
    /// quantity the change also breaks by construction inside (then the inside tier is
    /// `model`) and outside (beside the premise).
    type Row = Boundary<Instance>;

    #[test]
    fn each_premise_just_inside_and_just_outside() {
        let base = generate(Preset::Qwen2_57b, 0);
        for claim in crate::smoe::claims::table() {
            let c = classify(&premises(), claim.info.id, &base);
            assert_eq!(c.tier, Tier::Regime, "{}: {:?}", claim.info.id, c.broken);
        }
        let boundaries = [
            // Sec. II: fine-grained MoE activates more than 1-2 experts: k = 3, then 2 (which
            // leaves top-k's band, 3-16, too).
            Row::model("fine-grained-moe", |i| i.top_k = 3, |i| i.top_k = 2)
                .outside_is(Tier::Extension, &["top-k"]),
            // Alg. 1's thresholds are multiples of S_(k+1) > 0: the least positive f64, then 0.
            Row::model(
                "positive-gate-scores",
                |i| gate(i, f64::from_bits(1)),
                |i| gate(i, 0.0),
            ),
            // Sec. IV-A's alpha < 1: 1 - 2^-52, then 1 (both beyond Table IV's 0.6).
            Row::model(
                "alpha-threshold",
                |i| i.alpha = 1.0 - f64::EPSILON,
                |i| i.alpha = 1.0,
            )
            .inside_is(Tier::Model, &["alpha-range"])
            .outside_is(Tier::Extension, &["alpha-range"]),
            // A threshold is not negative: alpha = 0, then the least negative f64.
            Row::model(
                "alpha-threshold",
                |i| i.alpha = 0.0,
                |i| i.alpha = -f64::from_bits(1),
            )
            .outside_is(Tier::Extension, &["alpha-range"]),
            // Sec. V-A's one C_load, one C_CPU: uniform costs, then the same costs per expert
            // (which load-primary and load-cpu-ratio, defined on uniform costs, refuse too).
            Row::model(
                "uniform-costs",
                |_| {},
                |i| {
                    i.costs = Costs::PerExpert {
                        load_s: vec![6e-3; 64],
                        cpu_s: vec![2e-3; 64],
                        gpu_s: vec![1e-4; 64],
                    }
                },
            )
            .outside_is(Tier::Extension, &["load-primary", "load-cpu-ratio"]),
            // Sec. V-A's C_load as the primary cost: C_load = C_CPU = 2 ms, then C_load 1e-6
            // below (both below load-cpu-ratio's 1.5).
            Row::model(
                "load-primary",
                |i| costs(i, 2e-3, 2e-3),
                |i| costs(i, 2e-3 * (1.0 - 1e-6), 2e-3),
            )
            .inside_is(Tier::Model, &["load-cpu-ratio"])
            .outside_is(Tier::Extension, &["load-cpu-ratio"]),
            // Table III's models have 64 experts; the band's lower end: E = 32, then 31.
            Row::regime("experts-per-layer", |i| experts(i, 32), |i| experts(i, 31)),
            // Its upper end: E = 128, then 129.
            Row::regime(
                "experts-per-layer",
                |i| experts(i, 128),
                |i| experts(i, 129),
            ),
            // Table III's models have k = 6-8; the band's upper end: k = 16, then 17 (its lower
            // end, 3, is fine-grained-moe's).
            Row::regime("top-k", |i| i.top_k = 16, |i| i.top_k = 17),
            // Sec. VI-B's batches of 3 and 1: 3 tokens, then 4.
            Row::regime(
                "low-batch",
                |i| i.scores = vec![i.scores[0].clone(); 3],
                |i| i.scores = vec![i.scores[0].clone(); 4],
            ),
            // 1 token, then none (the validator refuses an empty batch too).
            Row::regime("low-batch", |_| {}, |i| i.scores.clear()),
            // Table IV's alpha up to 0.6, then 1e-6 above (its lower end, 0, is
            // alpha-threshold's).
            Row::regime(
                "alpha-range",
                |i| i.alpha = 0.6,
                |i| i.alpha = 0.6 * (1.0 + 1e-6),
            ),
            // 1/8 of E = 64 resident: 8 experts, then 7.
            Row::regime(
                "cache-share",
                |i| i.gpu_cache = (0..8).collect(),
                |i| i.gpu_cache = (0..7).collect(),
            ),
            // 0.67 of 64 = 42.88: 42 experts (0.656), then 43 (0.672).
            Row::regime(
                "cache-share",
                |i| i.gpu_cache = (0..42).collect(),
                |i| i.gpu_cache = (0..43).collect(),
            ),
            // Sec. VI-C's S3, C_CPU a third of C_load; the band's lower end: C_load = 1.5 x
            // 2 ms = 3 ms, then 1e-6 below.
            Row::regime(
                "load-cpu-ratio",
                |i| costs(i, 3e-3, 2e-3),
                |i| costs(i, 3e-3 * (1.0 - 1e-6), 2e-3),
            ),
            // Its upper end: C_load = 6 x 2 ms = 12 ms, then 1e-6 above.
            Row::regime(
                "load-cpu-ratio",
                |i| costs(i, 1.2e-2, 2e-3),
                |i| costs(i, 1.2e-2 * (1.0 + 1e-6), 2e-3),
            ),
        ];
        assert_boundaries(&premises(), ALG2, &base, &boundaries, |i| {
            formulations::smoe::validate::validate(i).expect("valid inside")
        });
    }
}
