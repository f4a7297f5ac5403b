//! SMoE: per-layer decisions of the expert scheduler with substitution (paper 004).
//!
//! One instance is one MoE layer of one decoding step: the gate scores of a batch of tokens
//! over the layer's E routed experts, top-k, the substitution threshold alpha, the experts
//! resident in the GPU cache (G, prefetched ones included), and the per-expert costs. Two
//! decisions are made on it, one after the other:
//!
//! 1. routing (Sec. IV-B, Alg. 1): per token, the k experts to run, low-score active experts
//!    possibly replaced by GPU-resident substitutes; objective (1) counts the routing hits;
//! 2. the CPU-vs-PCIe split (Sec. V-A, Alg. 2): the chosen experts that are not resident are
//!    either loaded over PCIe or computed on the CPU; objective (4) is the larger of the two
//!    times.
//!
//! * [`model`]: the instance (serde JSON) and its costs;
//! * [`validate`]: the rules an instance must satisfy, with the failing field named;
//! * [`evaluate`]: the sets of Table II, the one evaluator of objective (1) for a routing, the
//!   evaluator of objective (4) for a split, the exhaustive per-token optimum of (1) and the
//!   closed-form optimum of (4) for uniform costs;
//! * [`milp`]: the exact MILPs of (1) (all tokens of the batch) and of (4) with per-expert
//!   costs.
//!
//! ## Readings of the paper (where it is ambiguous)
//! * **The sets of Table II.** E_a is the top-k by score (ties by lower id), S_{k+1} the
//!   (k+1)-th highest score, T = (1 + alpha) S_{k+1}, R = (1 - alpha) S_{k+1}. The top-score
//!   experts are the active ones with score >= T, the low-score experts E_l the active ones
//!   with score < T (Alg. 1 writes `> T` for the first and `L <= s < T` for the second, which
//!   leaves an active expert of score exactly T in neither set and puts the (k+1)-th expert,
//!   an inactive one of score L, among the low-score ones; the constraints after (2) are
//!   strict, `S_{k+1} < s < T`). Partitioning E_a by rank resolves both boundary cases.
//!   Substitute candidates: the inactive experts with score >= R (Alg. 1's `R <= s`; the
//!   constraint after (2) has `<`: only ties differ) that are *available*.
//! * **Available experts.** Alg. 1 admits a substitute "in GPU or C", C being the batch's
//!   top-score set (Sec. VI-B: "replace the low-score experts of a certain token with the
//!   top-score experts of other tokens in the same batch"), which are computed anyway. So the
//!   available set is V = G ∪ C with C the top-score experts of *every* token of the batch
//!   (the text's reading; Alg. 1's loop builds C token by token, so a token would only see the
//!   earlier tokens' top-score experts: see `BatchScope` in moe_opt::smoe::router). For a
//!   batch of one token C holds only the token's own top-score experts, which are active, so
//!   V acts as G and everything below is exactly the paper's (1).
//! * **Objective (1) as an optimisation problem.** For one token the decision is the output
//!   set O of k experts with C_t ⊆ O ⊆ E_a ∪ S (top-score experts kept, the rest from the
//!   low-score experts and the candidates); the value is |O ∩ V|, the chosen experts needing
//!   no load. Its maximum is |V ∩ E_a| + min(|E_l \ V|, |S ∩ V|), which is (1) with E_s = S ∩ V
//!   (proof: the |E_l| free slots take every available expert of E_l ∪ S up to |E_l|). The
//!   evaluator counts |O ∩ V| for any routing; [`evaluate::objective1`] is the paper's formula.
//! * **Eq. (2)** is not an identity: min(|E_l \ (G \ E_p)|, |E_l \ E_p|, |E_s|) is at least
//!   min(|E_l \ G|, |E_s|), so (2) only bounds (1) from above. Prefetched experts are simply
//!   part of G here.
//! * **Objective (4).** n_load C_load and n_CPU C_CPU (the paper's `C_cost` is C_CPU). With
//!   per-expert costs T_load and T_CPU are sums over the experts assigned to each. GPU time is
//!   left out of (4) as the paper does ("approximate the total time by C_load alone"); the
//!   pipeline model of moe_opt::smoe::pipeline adds it back.
//!
//! ## References
//! ../shared/papers/004_ecd17ad30b7583cf.txt: G. Zhu, M. Li, H. Dai, X. Liu, W. Wang, K. Li,
//! J. Xiao, L. Chen, W. Wang, "Enabling MoE on the Edge via Importance-Driven Expert
//! Scheduling".

pub mod evaluate;
pub mod milp;
pub mod model;
pub mod validate;

pub use evaluate::{
    evaluate_routing, objective1, objective4, routing_closed_form, routing_exhaustive,
    split_exhaustive, split_optimum_uniform, LayerSets, RoutingValue, Split, TokenSets,
};
pub use milp::{ExactSplit, RoutingMilp, SplitMilp};
pub use model::{Costs, Instance};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
