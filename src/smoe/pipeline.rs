//! SMoE's decode pipeline (paper 004, Sec. V-B, Fig. 9) as a time model: a time-per-output-
//! token (TPOT) proxy from a trace with logits, a GPU expert cache ([`Policy`], one pool over
//! all layers, ids `l * E + e`) and uniform costs.
//!
//! ## The model, per token and MoE layer l (all times absolute, the layer starts at `t0`)
//! 1. GPU: common parameters (attention, gate) and the shared experts: `gate = t0 + common_s +
//!    shared * gpu_s`. Scores are the softmax of the layer's logits.
//! 2. Routing: Alg. 1 ([`route_batch`], batch of one) against the cache's contents (prefetched
//!    experts count as resident, as "the router \[can\] utilize them directly", Sec. VI-C).
//!    alpha = 0 is the original top-k.
//! 3. The chosen experts not resident are split (Alg. 2, its earliest-finish variant, the
//!    optimum of (4), or all-load / all-CPU baselines).
//! 4. CPU: computes its experts from `gate`: `cpu_end = gate + n_CPU C_CPU` (transferring the
//!    results back is not modelled).
//! 5. PCIe (one serial channel): the layer's loads start at max(gate, end of earlier PCIe
//!    work), so a prefetch still in flight delays them; each arrives C_load after the previous.
//! 6. GPU: computes each resident or loaded expert (gpu_s each) in order of arrival, starting
//!    no earlier than its arrival (a prefetched expert may still be in flight).
//! 7. The layer ends at max(GPU end, CPU end); the next layer starts then.
//! 8. Cache: the hits and loads of the layer are one request to the policy (hits refresh,
//!    loads insert and may evict); CPU-computed experts are not cached.
//! 9. Prefetch (Sec. IV-C): the predicted top-score experts of layer l + 1 of the same token
//!    that are not resident, best first, at most `prefetch` of them, are requested from the
//!    policy (inserted now) and queued on PCIe after this layer's loads. The paper predicts
//!    from the current hidden state through the next layer's gate (Fig. 7; 82% accurate, Fig.
//!    17); a trace has no hidden states, so [`Predictor`] offers two readings around it: the
//!    oracle (the true top-score set, score >= (1 + alpha) S_{k+1}, of the next layer:
//!    perfect accuracy; the default) and the previous token's top-score set of that layer (no
//!    model access). Perfect accuracy is not the fastest TPOT: every prefetch occupies PCIe,
//!    and when PCIe is the bottleneck the oracle's many correct prefetches can delay the
//!    demand loads more than the fewer ones of the previous-token predictor (seen on a
//!    generated DeepSeek trace, `moe-opt tpot --predictor`). The last layer prefetches nothing
//!    (Fig. 9 pipelines two layers of one token).
//!
//! The TPOT proxy is the mean, over decode tokens, of the time from the start of the token's
//! first layer to the end of its last one (prefill and encoder tokens warm the cache but are
//! not timed). Attention outside the MoE layers, sampling and the CPU router's own time are
//! not modelled (Fig. 9 places them on otherwise idle resources).

use formulations::cache::model::{softmax, Phase, Trace};
use formulations::cache::validate::validate as validate_trace;
use formulations::smoe::evaluate::{rank, TokenSets};
use formulations::smoe::{split_optimum_uniform, Costs};
use formulations::Error;
use serde::{Deserialize, Serialize};

use super::router::{route_batch, RouterConfig};
use super::split::{alg2, Alg2Rule};
use crate::cache::policy::{Policy, Request, Scores};

/// Uniform costs of the pipeline, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PipelineCosts {
    /// C_load: one expert over PCIe.
    pub load_s: f64,
    /// C_CPU: one expert on the CPU.
    pub cpu_s: f64,
    /// One expert on the GPU.
    pub gpu_s: f64,
    /// Common parameters of one layer (attention, gate) on the GPU.
    pub common_s: f64,
}

crate::named! {
    /// How the missed experts of a layer are split between PCIe and CPU.
    pub enum SplitChoice: "split" {
        /// Alg. 2 as printed
        Alg2,
        /// Alg. 2 comparing finish times
        EarliestFinish,
        /// the optimum of (4) (closed form)
        Optimal,
        /// load every missed expert
        Load,
        /// every missed expert on the CPU
        Cpu,
    }
}

crate::named! {
    /// Which experts of layer l + 1 the prefetcher predicts (module doc, step 9).
    #[derive(Default)]
    pub enum Predictor: "predictor" {
        /// the next layer's true top-score set
        #[default]
        Oracle,
        /// the next layer's top-score set at the previous token
        PreviousToken,
    }
}

/// Knobs of one pipeline run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PipelineConfig {
    /// Alg. 1's knobs (alpha = 0: original top-k).
    pub router: RouterConfig,
    /// The CPU-vs-PCIe split.
    pub split: SplitChoice,
    /// Most experts prefetched for the next layer (0: no prefetching).
    pub prefetch: usize,
    /// What the prefetcher predicts.
    #[serde(default)]
    pub predictor: Predictor,
    /// Costs.
    pub costs: PipelineCosts,
}

/// What one pipeline run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineStats {
    /// Tokens replayed.
    pub tokens: u64,
    /// Decode tokens timed.
    pub decode_tokens: u64,
    /// The TPOT proxy: mean time per decode token, seconds.
    pub tpot_s: f64,
    /// Chosen experts (tokens x layers x k).
    pub chosen: u64,
    /// Chosen experts resident when routed (the GPU expert cache ratio of Fig. 12).
    pub gpu_hits: u64,
    /// gpu_hits / chosen.
    pub gpu_hit_rate: f64,
    /// Experts loaded on demand.
    pub loads: u64,
    /// Experts computed on the CPU.
    pub cpu_experts: u64,
    /// Experts prefetched.
    pub prefetched: u64,
    /// Prefetched experts chosen at the next layer.
    pub prefetch_used: u64,
    /// Substitutes chosen (experts outside the original top-k).
    pub substituted: u64,
    /// Mean router mass kept (chosen scores over top-k scores).
    pub mass_kept: f64,
    /// Mean share of the original top-k kept.
    pub top_k_kept: f64,
    /// Busy time of the PCIe channel per decode token (loads and prefetches), seconds.
    pub pcie_busy_per_token_s: f64,
    /// Busy time of the CPU per decode token, seconds.
    pub cpu_busy_per_token_s: f64,
}

/// Runs the pipeline over a trace (module doc). The policy must cover `layers * experts` ids
/// and hold at least k of them; the trace must carry logits.
pub fn simulate<P: Policy>(
    trace: &Trace,
    mut policy: P,
    config: &PipelineConfig,
) -> Result<PipelineStats, Error> {
    let invalid = |field: &str, reason: String| Error::Invalid {
        path: "<pipeline>".into(),
        field: field.into(),
        reason,
    };
    validate_trace(trace).map_err(|e| e.in_file(format!("<trace {}>", trace.name)))?;
    if !trace.has_logits() {
        return Err(invalid(
            "trace",
            format!(
                "trace {} has no logits: SMoE's router and prefetcher need scores over all \
                 experts",
                trace.name
            ),
        ));
    }
    if trace.experts <= trace.top_k {
        return Err(invalid(
            "trace.top_k",
            format!(
                "k = {} must be below E = {} (S_(k+1))",
                trace.top_k, trace.experts
            ),
        ));
    }
    let universe = trace.experts * trace.layers;
    if policy.capacity() > universe {
        return Err(Error::command_line(
            "--capacity",
            format!(
                "must be at most {universe} (the experts of all layers: one pool), got {}",
                policy.capacity()
            ),
        ));
    }
    if policy.capacity() < trace.top_k {
        return Err(Error::command_line(
            "--capacity",
            format!(
                "{} is below k = {}: a layer's experts must fit at once",
                policy.capacity(),
                trace.top_k
            ),
        ));
    }
    let c = &config.costs;
    for (flag, x) in [
        ("--load-s", c.load_s),
        ("--cpu-s", c.cpu_s),
        ("--gpu-s", c.gpu_s),
        ("--common-s", c.common_s),
    ] {
        if !(x.is_finite() && x >= 0.0) {
            return Err(Error::command_line(
                flag,
                format!("must be finite and >= 0, got {x}"),
            ));
        }
    }
    let e_n = trace.experts;
    let k = trace.top_k;
    let uniform = Costs::Uniform {
        load_s: c.load_s,
        cpu_s: c.cpu_s,
        gpu_s: c.gpu_s,
    };
    let prefetch = config.prefetch.min(policy.capacity());
    let mut arrival = vec![0.0f64; e_n * trace.layers];
    let mut prefetched_now = vec![false; e_n * trace.layers];
    let mut stats = PipelineStats {
        tokens: 0,
        decode_tokens: 0,
        tpot_s: 0.0,
        chosen: 0,
        gpu_hits: 0,
        gpu_hit_rate: 0.0,
        loads: 0,
        cpu_experts: 0,
        prefetched: 0,
        prefetch_used: 0,
        substituted: 0,
        mass_kept: 0.0,
        top_k_kept: 0.0,
        pcie_busy_per_token_s: 0.0,
        cpu_busy_per_token_s: 0.0,
    };
    let (mut now, mut pcie_free) = (0.0f64, 0.0f64);
    let (mut timed, mut pcie_busy, mut cpu_busy) = (0.0, 0.0, 0.0);
    let mut loaded = Vec::new();
    let mut evicted = Vec::new();
    let mut ids = Vec::with_capacity(k);
    let mut time = 0usize;
    let probs: Vec<Vec<Vec<f64>>> = trace
        .tokens
        .iter()
        .map(|t| {
            t.layers
                .iter()
                .map(|r| softmax(r.logits.as_deref().unwrap_or_default()))
                .collect()
        })
        .collect();
    for (i, (token, token_probs)) in trace.tokens.iter().zip(&probs).enumerate() {
        let previous = (i > 0 && trace.tokens[i - 1].seq == token.seq).then(|| &probs[i - 1]);
        let start = now;
        let (pcie_before, cpu_before) = (pcie_busy, cpu_busy);
        for l in 0..trace.layers {
            let p = &token_probs[l];
            let base = (l * e_n) as u32;
            let gate = now + c.common_s + trace.shared_experts as f64 * c.gpu_s;
            let o = route_batch(
                std::slice::from_ref(p),
                k,
                &|e| policy.contains(base + e),
                &config.router,
            )
            .pop()
            .expect("one token");
            let original = rank(p);
            let original = &original[..k];
            stats.chosen += k as u64;
            stats.substituted += o.iter().filter(|e| !original.contains(e)).count() as u64;
            let top_mass: f64 = original.iter().map(|&e| p[e as usize]).sum();
            let mass: f64 = o.iter().map(|&e| p[e as usize]).sum();
            stats.mass_kept += if top_mass > 0.0 { mass / top_mass } else { 1.0 };
            stats.top_k_kept += o.iter().filter(|e| original.contains(e)).count() as f64 / k as f64;
            let (hits, misses): (Vec<u32>, Vec<u32>) =
                o.iter().partition(|&&e| policy.contains(base + e));
            stats.gpu_hits += hits.len() as u64;
            stats.prefetch_used += hits
                .iter()
                .filter(|&&e| prefetched_now[(base + e) as usize])
                .count() as u64;
            // `o` is best first, so `misses` is too.
            let (load, cpu) = split(&misses, &uniform, config.split);
            stats.loads += load.len() as u64;
            stats.cpu_experts += cpu.len() as u64;
            let cpu_end = gate + cpu.len() as f64 * c.cpu_s;
            cpu_busy += cpu.len() as f64 * c.cpu_s;
            let mut jobs: Vec<f64> = hits.iter().map(|&e| arrival[(base + e) as usize]).collect();
            let mut pcie = pcie_free.max(gate);
            for _ in &load {
                pcie += c.load_s;
                jobs.push(pcie);
            }
            pcie_busy += load.len() as f64 * c.load_s;
            pcie_free = pcie;
            jobs.sort_by(f64::total_cmp);
            let gpu_end = jobs.iter().fold(gate, |g, &a| g.max(a) + c.gpu_s);
            // Cache: hits and loads of the layer, then the prefetch for layer l + 1.
            ids.clear();
            ids.extend(hits.iter().chain(&load).map(|&e| base + e));
            let scores32: Vec<f32> = p.iter().map(|&x| x as f32).collect();
            access(
                &mut policy,
                time,
                &ids,
                base,
                &scores32,
                &mut loaded,
                &mut evicted,
            );
            time += 1;
            for &e in o.iter() {
                prefetched_now[(base + e) as usize] = false;
            }
            let next = match config.predictor {
                Predictor::Oracle => token_probs.get(l + 1),
                Predictor::PreviousToken => previous.and_then(|p| p.get(l + 1)),
            };
            if let (true, Some(next)) = (prefetch > 0, next) {
                let nbase = ((l + 1) * e_n) as u32;
                let predicted: Vec<u32> = TokenSets::new(next, k, config.router.alpha)
                    .top_score
                    .into_iter()
                    .filter(|&e| !policy.contains(nbase + e))
                    .take(prefetch)
                    .map(|e| nbase + e)
                    .collect();
                if !predicted.is_empty() {
                    let s32: Vec<f32> = next.iter().map(|&x| x as f32).collect();
                    access(
                        &mut policy,
                        time,
                        &predicted,
                        nbase,
                        &s32,
                        &mut loaded,
                        &mut evicted,
                    );
                    time += 1;
                    for &id in &predicted {
                        pcie_free += c.load_s;
                        arrival[id as usize] = pcie_free;
                        prefetched_now[id as usize] = true;
                    }
                    pcie_busy += predicted.len() as f64 * c.load_s;
                    stats.prefetched += predicted.len() as u64;
                }
            }
            now = gpu_end.max(cpu_end);
        }
        stats.tokens += 1;
        if token.phase == Phase::Decode {
            stats.decode_tokens += 1;
            timed += now - start;
        } else {
            pcie_busy = pcie_before;
            cpu_busy = cpu_before;
        }
    }
    if stats.decode_tokens == 0 {
        return Err(invalid(
            "trace.tokens",
            format!("trace {} has no decode token to time", trace.name),
        ));
    }
    let d = stats.decode_tokens as f64;
    let routed = (stats.tokens * trace.layers as u64) as f64;
    stats.tpot_s = timed / d;
    stats.gpu_hit_rate = stats.gpu_hits as f64 / stats.chosen as f64;
    stats.mass_kept /= routed;
    stats.top_k_kept /= routed;
    stats.pcie_busy_per_token_s = pcie_busy / d;
    stats.cpu_busy_per_token_s = cpu_busy / d;
    Ok(stats)
}

fn access<P: Policy>(
    policy: &mut P,
    time: usize,
    ids: &[u32],
    first: u32,
    values: &[f32],
    loaded: &mut Vec<u32>,
    evicted: &mut Vec<u32>,
) {
    loaded.clear();
    evicted.clear();
    let request = Request {
        time,
        ids,
        scores: Some(Scores { first, values }),
    };
    policy.access(&request, loaded, evicted);
}

/// The split of `misses` (best first): (loaded, CPU-computed).
fn split(misses: &[u32], costs: &Costs, choice: SplitChoice) -> (Vec<u32>, Vec<u32>) {
    match choice {
        SplitChoice::Alg2 | SplitChoice::EarliestFinish => {
            let rule = if choice == SplitChoice::Alg2 {
                Alg2Rule::Paper
            } else {
                Alg2Rule::EarliestFinish
            };
            let s = alg2(misses, costs, rule);
            (s.load, s.cpu)
        }
        SplitChoice::Optimal => {
            let (m, _) = split_optimum_uniform(misses.len(), costs.load(0), costs.cpu(0));
            (misses[..m].to_vec(), misses[m..].to_vec())
        }
        SplitChoice::Load => (misses.to_vec(), Vec::new()),
        SplitChoice::Cpu => (Vec::new(), misses.to_vec()),
    }
}
