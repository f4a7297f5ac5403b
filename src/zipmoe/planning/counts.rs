//! Activation counts (`moe-activation-counts/v1`, ../shared/data/README.md) and the rank-based
//! inclusion probabilities f_r the planner needs (Sec. 3.4 "Rank-Based Workload Modeling",
//! App. C's F_N), plus a seeded generator of synthetic count files of the same format.
//!
//! ## From counts to f_r (moe-opt's reading)
//!
//! Sec. 3.4: "we aggregate historical expert activation counts [...] to derive a rank-based
//! marginal inclusion probability list (f_r)", independent "of the particular expert IDs
//! occupying those ranks at runtime", because "the specific identities of frequently activated
//! experts often fluctuate across different prompts". App. C: f_r is an inclusion probability,
//! i.e. the probability that the expert at rank r is among a token's k selected experts.
//!
//! The file has per-prompt counts c_{p,l,e} (tokens of prompt p routed to expert e at layer l).
//! With T_p = sum_e c_{p,l,e} / k tokens in prompt p, and c_{p,l,(r)} the r-th largest count of
//! the row:
//!
//! * [`RankScope::PerPrompt`] (default): ranks are taken within each prompt (the runtime
//!   frequency list of Sec. 3.4 tracks the current request), f_r = sum_p c_{p,l,(r)} / sum_p T_p;
//! * [`RankScope::Global`]: one ranking of the experts by their total count over all prompts,
//!   f_r = (r-th largest sum_p c_{p,l,e}) / sum_p T_p.
//!
//! Either way f_r is the fraction of tokens whose selection contains the rank-r expert: it lies
//! in [0, 1] because an expert is selected at most once per token (c <= T_p), the list is
//! non-increasing, and it sums to k exactly (each token selects k experts). One token per step
//! (batch size 1, the on-device setting of Sec. 5) is assumed: with larger batches a layer's
//! selection is a union of several tokens' k-sets and no longer has exactly k experts.
//!
//! Caveat of the per-prompt reading: a rank's count is known only at the end of the prompt, and
//! a prompt of T tokens activates at most T k distinct experts, so ranks beyond that have f = 0
//! (switch-large-128, Top-1 with about 20 tokens a prompt: f_r = 0 for r > 20, and a 20-expert
//! F pool then hits every token). The global reading is the pessimistic counterpart.
//!
//! Rows are checked like the SlimCaching importer does: the row sum must be a multiple of k and
//! no count may exceed T_p; a failure names `counts[p][l]`. Layers whose counts are zero for
//! every prompt are not MoE layers (DeepSeek-V2-Lite layer 0 is dense) and are dropped; a zero
//! row of one prompt contributes no token.

use formulations::ValidationError;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use crate::counts::{read, ActivationCounts, Header, FORMAT};

/// How experts are ranked (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankScope {
    /// Ranks within each prompt (the default reading).
    #[default]
    PerPrompt,
    /// One ranking over all prompts.
    Global,
}

/// The rank-based inclusion probabilities of every MoE layer of the file (module doc), as
/// (file layer index, f) for the layers with at least one token, in file order. Errors name
/// the field (`format`, `counts[p][l]`, ...).
pub fn inclusion_probabilities(
    c: &ActivationCounts,
    scope: RankScope,
) -> Result<Vec<(usize, Vec<f64>)>, ValidationError> {
    c.check()?;
    let k = u64::from(c.top_k);
    let experts = c.experts_per_layer as usize;
    let mut out = Vec::new();
    for l in 0..c.layers {
        let mut acc = vec![0u64; experts];
        let mut tokens = 0u64;
        for (p, prompt) in c.counts.iter().enumerate() {
            let row = &prompt[l];
            let sum: u64 = row.iter().sum();
            if sum == 0 {
                continue;
            }
            let field = || format!("counts[{p}][{l}]");
            if !sum.is_multiple_of(k) {
                return Err(ValidationError::new(
                    field(),
                    format!("counts sum to {sum}, not a multiple of top_k {k}"),
                ));
            }
            let t = sum / k;
            if let Some((e, &x)) = row.iter().enumerate().find(|(_, &x)| x > t) {
                return Err(ValidationError::new(
                    field(),
                    format!("expert {e} has {x} activations but the row has only {t} tokens"),
                ));
            }
            tokens += t;
            match scope {
                RankScope::PerPrompt => {
                    let mut sorted = row.clone();
                    sorted.sort_unstable_by(|a, b| b.cmp(a));
                    for (a, x) in acc.iter_mut().zip(sorted) {
                        *a += x;
                    }
                }
                RankScope::Global => {
                    for (a, &x) in acc.iter_mut().zip(row) {
                        *a += x;
                    }
                }
            }
        }
        if tokens == 0 {
            continue;
        }
        acc.sort_unstable_by(|a, b| b.cmp(a));
        out.push((l, acc.iter().map(|&a| a as f64 / tokens as f64).collect()));
    }
    if out.is_empty() {
        return Err(ValidationError::new(
            "counts",
            "no layer has any activation (no MoE layer)",
        ));
    }
    Ok(out)
}

/// A synthetic workload in the counts format: per prompt and layer, experts get a random
/// identity order and Zipf popularity (rank r weighs r^-zipf_exponent); each token selects k
/// distinct experts by successive sampling without replacement, proportional to popularity.
/// This is deliberately not the conditional Poisson model of App. D, so that the planner's
/// model is not the generator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticCounts {
    /// Routed experts per layer.
    pub experts: u32,
    /// k.
    pub top_k: u32,
    /// MoE layers.
    pub layers: u32,
    /// Prompts.
    pub prompts: u32,
    /// Tokens per prompt.
    pub tokens_per_prompt: u32,
    /// Zipf exponent of the per-prompt popularity (0 = uniform).
    pub zipf_exponent: f64,
}

impl Default for SyntheticCounts {
    /// DeepSeek-V2-Lite's routing shape (64 experts, Top-6), one layer, 200 prompts of 20
    /// tokens (the shipped traces have about 19-20 tokens a prompt), Zipf exponent 1.
    fn default() -> Self {
        SyntheticCounts {
            experts: 64,
            top_k: 6,
            layers: 1,
            prompts: 200,
            tokens_per_prompt: 20,
            zipf_exponent: 1.0,
        }
    }
}

/// Most counts of a synthetic file, prompts x layers x experts (`u64` each: 128 MB at the
/// limit; the real files have about 1.5 million).
pub const MAX_SYNTHETIC_COUNTS: u64 = 1 << 24;

/// Most tokens of a synthetic prompt: each draws top_k experts by a scan of all experts.
pub const MAX_SYNTHETIC_TOKENS_PER_PROMPT: u64 = 1 << 16;

impl SyntheticCounts {
    /// Checks the configuration; errors name the field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        if self.experts == 0 {
            return Err(ValidationError::new("experts", "must be at least 1"));
        }
        if self.top_k == 0 || self.top_k > self.experts {
            return Err(ValidationError::new(
                "top_k",
                format!("must be in 1..={}", self.experts),
            ));
        }
        for (field, x) in [
            ("layers", self.layers),
            ("prompts", self.prompts),
            ("tokens_per_prompt", self.tokens_per_prompt),
        ] {
            if x == 0 {
                return Err(ValidationError::new(field, "must be at least 1"));
            }
        }
        use formulations::error::at_most;
        at_most(
            "experts",
            "experts",
            self.experts.into(),
            formulations::zipmoe::pool::MAX_EXPERTS as u64,
            "formulations::zipmoe::pool::MAX_EXPERTS",
        )?;
        at_most(
            "tokens_per_prompt",
            "tokens",
            self.tokens_per_prompt.into(),
            MAX_SYNTHETIC_TOKENS_PER_PROMPT,
            "moe_opt::zipmoe::planning::counts::MAX_SYNTHETIC_TOKENS_PER_PROMPT",
        )?;
        // Saturating: a saturated product is above the limit, as the true one is.
        at_most(
            "prompts",
            "counts (prompts x layers x experts)",
            u64::from(self.prompts)
                .saturating_mul(self.layers.into())
                .saturating_mul(self.experts.into()),
            MAX_SYNTHETIC_COUNTS,
            "moe_opt::zipmoe::planning::counts::MAX_SYNTHETIC_COUNTS",
        )?;
        if !(self.zipf_exponent.is_finite() && self.zipf_exponent >= 0.0) {
            return Err(ValidationError::new(
                "zipf_exponent",
                format!("must be finite and >= 0, got {}", self.zipf_exponent),
            ));
        }
        Ok(())
    }

    /// The counts for `seed` (same seed, same counts).
    pub fn generate(&self, seed: u64) -> Result<ActivationCounts, ValidationError> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let e = self.experts as usize;
        let k = self.top_k as usize;
        let popularity: Vec<f64> = (1..=e)
            .map(|r| (r as f64).powf(-self.zipf_exponent))
            .collect();
        let mut counts = Vec::with_capacity(self.prompts as usize);
        for _ in 0..self.prompts {
            let mut layers = Vec::with_capacity(self.layers as usize);
            for _ in 0..self.layers {
                let mut identity: Vec<usize> = (0..e).collect();
                identity.shuffle(&mut rng);
                let mut row = vec![0u64; e];
                for _ in 0..self.tokens_per_prompt {
                    let mut weight = popularity.clone();
                    let mut left: f64 = weight.iter().sum();
                    for _ in 0..k {
                        let mut x = rng.random::<f64>() * left;
                        let mut pick = e - 1;
                        for (r, &w) in weight.iter().enumerate() {
                            if w > 0.0 && x < w {
                                pick = r;
                                break;
                            }
                            x -= w;
                        }
                        // Guard against rounding landing past the last positive weight.
                        while weight[pick] == 0.0 {
                            pick -= 1;
                        }
                        left -= weight[pick];
                        weight[pick] = 0.0;
                        row[identity[pick]] += 1;
                    }
                }
                layers.push(row);
            }
            counts.push(layers);
        }
        Ok(ActivationCounts {
            format: FORMAT.into(),
            model: format!(
                "synthetic-zipf{}-{}x{}",
                self.zipf_exponent, self.experts, self.top_k
            ),
            top_k: self.top_k,
            experts_per_layer: self.experts,
            prompts: self.prompts as usize,
            layers: self.layers as usize,
            source: format!("moe-opt synthetic counts, seed {seed}"),
            counts_doc: None,
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(counts: Vec<Vec<Vec<u64>>>, k: u32) -> ActivationCounts {
        ActivationCounts {
            format: FORMAT.into(),
            model: "toy".into(),
            top_k: k,
            experts_per_layer: counts[0][0].len() as u32,
            prompts: counts.len(),
            layers: counts[0].len(),
            source: String::new(),
            counts_doc: None,
            counts,
        }
    }

    #[test]
    fn per_prompt_and_global_ranks_by_hand() {
        // k = 1, two prompts: prompt 0 has 3 tokens on experts (2, 1, 0), prompt 1 has 1 token
        // on expert 2 ... in counts: p0 = [2, 1, 0], p1 = [0, 0, 1]; layer 1 is all zero.
        // Per prompt: rank-1 counts 2 + 1 = 3, rank-2 1 + 0, rank-3 0; 4 tokens:
        // f = (3/4, 1/4, 0). Global: totals (2, 1, 1): f = (2/4, 1/4, 1/4).
        let c = file(
            vec![
                vec![vec![2, 1, 0], vec![0; 3]],
                vec![vec![0, 0, 1], vec![0; 3]],
            ],
            1,
        );
        let per = inclusion_probabilities(&c, RankScope::PerPrompt).unwrap();
        assert_eq!(per, vec![(0, vec![0.75, 0.25, 0.0])]);
        let global = inclusion_probabilities(&c, RankScope::Global).unwrap();
        assert_eq!(global, vec![(0, vec![0.5, 0.25, 0.25])]);
    }

    #[test]
    fn bad_rows_name_the_field() {
        // k = 2 but the row sums to 3.
        let c = file(vec![vec![vec![2, 1, 0]]], 2);
        let e = inclusion_probabilities(&c, RankScope::PerPrompt).unwrap_err();
        assert_eq!(e.field, "counts[0][0]");
        // 2 tokens (sum 4, k = 2) but expert 0 counted 3 times.
        let c = file(vec![vec![vec![3, 1, 0]]], 2);
        let e = inclusion_probabilities(&c, RankScope::PerPrompt).unwrap_err();
        assert!(e.reason.contains("only 2 tokens"), "{e}");
        let mut c = file(vec![vec![vec![1, 1, 0]]], 2);
        c.format = "other".into();
        assert_eq!(
            inclusion_probabilities(&c, RankScope::Global)
                .unwrap_err()
                .field,
            "format"
        );
    }

    #[test]
    fn synthetic_counts_are_feasible_and_reproducible() {
        let config = SyntheticCounts {
            experts: 8,
            top_k: 3,
            layers: 2,
            prompts: 5,
            tokens_per_prompt: 7,
            zipf_exponent: 1.2,
        };
        let a = config.generate(3).unwrap();
        assert_eq!(a, config.generate(3).unwrap());
        assert_ne!(a, config.generate(4).unwrap());
        for prompt in &a.counts {
            for row in prompt {
                // 7 tokens x 3 experts, each expert at most once a token.
                assert_eq!(row.iter().sum::<u64>(), 21);
                assert!(row.iter().all(|&x| x <= 7));
            }
        }
        let f = inclusion_probabilities(&a, RankScope::PerPrompt).unwrap();
        assert_eq!(f.len(), 2);
        for (_, f) in f {
            assert!((f.iter().sum::<f64>() - 3.0).abs() < 1e-12);
        }
    }
}
