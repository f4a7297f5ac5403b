//! A seeded generator of router logits with temporal locality, and its presets.
//!
//! ## Model
//!
//! Each MoE layer l has a fixed router matrix W_l (E x d, entries N(0, 1/d)) and a fixed
//! per-expert popularity bias b_l (entries N(0, 1)). Each sequence s has a topic vector u_s ~
//! N(0, I_d); each token t a hidden state x_t following a stationary AR(1) drift,
//!
//!   x_0 ~ N(0, I_d),   x_t = rho x_{t-1} + sqrt(1 - rho^2) eps_t,   eps_t ~ N(0, I_d),
//!
//! restarted at each sequence, shared by all layers (each layer projects it through its own
//! W_l). The router input is v_t = sqrt(omega) u_s + sqrt(1 - omega) x_t (unit variance per
//! coordinate) and the logits are
//!
//!   z_{l,t} = scale (W_l v_t) + beta b_l,
//!
//! so each logit has variance scale^2 + beta^2. The selected experts are the top K of z (ties
//! by lower id, paper 002's ranking r), in rank order; `weights` are their softmax(z)
//! probabilities over all E, not renormalised (the model's convention,
//! [`formulations::cache::model`]).
//!
//! Knobs: `persistence` rho (token-to-token drift: the next-token overlap grows with it),
//! `topic_weight` omega (a per-sequence static component: reuse over longer horizons, which
//! lowers LRU's miss rate more than it raises the next-token overlap), `popularity_skew` beta
//! (a static per-layer preference shared by all sequences), `logit_scale` (sharpness of the
//! probabilities; it does not change the top-K sets when beta = 0).
//!
//! ## Determinism
//!
//! All randomness comes from `ChaCha8Rng::seed_from_u64(seed)` split into streams: one per
//! layer's router (W_l, b_l), one per sequence (u_s and its x_t). The routers depend only on
//! (seed, layer, E, d), so traces of the same seed with different lengths or knobs share them,
//! and a sequence's draws depend only on (seed, sequence index, d, length): same config and
//! seed, same bytes. Normal draws use the Box-Muller transform on 53-bit uniforms.
//!
//! ## Presets
//!
//! The models of paper 002 Table 1 (E, K, shared experts; MoE layers from the models' public
//! configurations): `mixtral-8x7b` (8, 2, 0; 32 layers), `phi-3.5-moe` (16, 2, 0; 32),
//! `deepseek-v2-lite` (64, 6, 2; 26 MoE layers of 27, layer 0 dense), `qwen1.5-moe` (60, 4, 4;
//! 24). Presets matching the real token logs of ../shared/data/token-traces/ for calibration:
//! `olmoe` (64, 8; 16 layers, 1 sequence of 299 decode tokens), `kimi` (256, 8; 26 MoE layers,
//! 1 sequence of 300), `switch` (8, 1; 6 encoder MoE layers, 10 sequences of about 21 tokens).
//! The locality knobs of the three calibration presets are the results of
//! [`super::stats::calibrate`] against the real logs (values and figures in docs/problems/caches.md); the
//! Table 1 presets take those of the calibrated preset with the nearest granularity
//! (fine-grained DeepSeek and Qwen: olmoe's; coarse Mixtral and Phi: switch's), a reading the
//! issue leaves open since no token log of those models is available here.

use formulations::cache::model::{ranking, softmax, Phase, Routing, Token, Trace};
use formulations::Error;
use serde::{Deserialize, Serialize};

use crate::generate::{normal, stream, Knobs};

/// The path named in configuration errors.
pub const CONFIG_PATH: &str = "<cache generator config>";

/// Largest hidden dimension d.
pub const MAX_HIDDEN_DIM: usize = 4096;

/// Most tokens of a generated trace, sequences x tokens_per_sequence.
pub const MAX_TOKENS: u64 = 1 << 20;

/// Most logits of a generated trace, tokens x layers x experts (each token stores its logits
/// at every layer: 256 MB of `f32` at the limit; the Kimi preset has 2 million).
pub const MAX_LOGITS: u64 = 1 << 26;

/// Most router weights, layers x experts x hidden_dim (`f64` each: 128 MB at the limit).
pub const MAX_ROUTER_WEIGHTS: u64 = 1 << 24;

/// Base of the per-layer router streams (+ layer).
const STREAM_ROUTER: u64 = 1 << 32;
/// Base of the per-sequence streams (+ sequence).
const STREAM_SEQUENCE: u64 = 2 << 32;

/// Every knob of the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// The model name written into the trace.
    pub model: String,
    /// E, routed experts per layer.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// Shared experts per layer (recorded, never cached).
    pub shared_experts: usize,
    /// MoE layers L.
    pub layers: usize,
    /// Sequences.
    pub sequences: usize,
    /// Tokens per sequence.
    pub tokens_per_sequence: usize,
    /// The phase written on every token.
    pub phase: Phase,
    /// d, dimension of the hidden state.
    pub hidden_dim: usize,
    /// rho in [0, 1): AR(1) coefficient of the hidden state from token to token.
    pub persistence: f64,
    /// omega in [0, 1]: share of the router input's variance from the sequence's topic.
    pub topic_weight: f64,
    /// beta >= 0: scale of the static per-expert popularity bias.
    pub popularity_skew: f64,
    /// > 0: scale of the projected hidden state in the logits.
    pub logit_scale: f64,
}

crate::named! {
    /// The generator presets (see the module doc).
    pub enum Preset: "preset" {
        /// Mixtral-8x7B: 8 experts, top-2, 32 layers
        #[strum(serialize = "mixtral-8x7b")]
        Mixtral8x7b,
        /// Phi-3.5-MoE: 16 experts, top-2, 32 layers
        #[strum(serialize = "phi-3.5-moe")]
        Phi35Moe,
        /// DeepSeek-V2-Lite: 64 + 2 shared experts, top-6, 26 MoE layers
        DeepseekV2Lite,
        /// Qwen1.5-MoE-A2.7B: 60 + 4 shared experts, top-4, 24 layers
        #[strum(serialize = "qwen1.5-moe")]
        Qwen15Moe,
        /// OLMoE-1B-7B: 64 experts, top-8, 16 layers (calibrated on the real log)
        Olmoe,
        /// Kimi-Linear-48B-A3B: 256 experts, top-8, 26 MoE layers (calibrated on the real log)
        Kimi,
        /// switch-base-8 encoder: 8 experts, top-1, 6 MoE layers (calibrated on the real log)
        Switch,
    }
}

/// Locality knobs (rho, omega, beta) found by calibration against a real log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Locality {
    /// rho.
    pub persistence: f64,
    /// omega.
    pub topic_weight: f64,
    /// beta.
    pub popularity_skew: f64,
}

/// Calibrated against olmoe_1b7b_0924_warp_decode by [`super::stats::calibrate`] (default
/// search, 8 layers, seeds 0-1: rho 0.5094, omega 0.0203, beta 0.5 reached overlap 0.4352 and
/// LRU miss rate 0.2057 against the log's 0.4352 and 0.2058), rounded.
pub const OLMOE_LOCALITY: Locality = Locality {
    persistence: 0.51,
    topic_weight: 0.02,
    popularity_skew: 0.5,
};
/// Calibrated against kimi_linear_48b_a3b_warp_decode (rho 0.5781, omega 0.075, beta 0.5:
/// 0.3352 and 0.1329 against 0.3356 and 0.1335), rounded.
pub const KIMI_LOCALITY: Locality = Locality {
    persistence: 0.58,
    topic_weight: 0.075,
    popularity_skew: 0.5,
};
/// Calibrated against switch_base8_encoder_top1 (rho 0.15, omega 0, beta 0.03125: 0.1737 and
/// 0.4754 against 0.1756 and 0.4775), rounded.
pub const SWITCH_LOCALITY: Locality = Locality {
    persistence: 0.15,
    topic_weight: 0.0,
    popularity_skew: 0.03,
};

impl Locality {
    /// Token-to-token drift rho alone (no topic), with the popularity skew 0.5 of the
    /// calibrated fine-grained presets: a one-knob locality for tests and benchmarks.
    pub fn drift(rho: f64) -> Self {
        Locality {
            persistence: rho,
            topic_weight: 0.0,
            popularity_skew: 0.5,
        }
    }
}

/// The three calibrated localities (OLMoE, Kimi, Switch: fine-grained to coarse), which the
/// claim families cycle through.
pub const CALIBRATED: [Locality; 3] = [OLMOE_LOCALITY, KIMI_LOCALITY, SWITCH_LOCALITY];

impl GeneratorConfig {
    /// The preset's configuration.
    pub fn preset(preset: Preset) -> Self {
        let (model, e, k, shared, layers, seqs, tokens, phase, loc) = match preset {
            Preset::Mixtral8x7b => (
                "Mixtral-8x7B",
                8,
                2,
                0,
                32,
                1,
                256,
                Phase::Decode,
                SWITCH_LOCALITY,
            ),
            Preset::Phi35Moe => (
                "Phi-3.5-MoE",
                16,
                2,
                0,
                32,
                1,
                256,
                Phase::Decode,
                SWITCH_LOCALITY,
            ),
            Preset::DeepseekV2Lite => (
                "DeepSeek-V2-Lite",
                64,
                6,
                2,
                26,
                1,
                256,
                Phase::Decode,
                OLMOE_LOCALITY,
            ),
            Preset::Qwen15Moe => (
                "Qwen1.5-MoE-A2.7B",
                60,
                4,
                4,
                24,
                1,
                256,
                Phase::Decode,
                OLMOE_LOCALITY,
            ),
            Preset::Olmoe => (
                "OLMoE-1B-7B-0924",
                64,
                8,
                0,
                16,
                1,
                299,
                Phase::Decode,
                OLMOE_LOCALITY,
            ),
            Preset::Kimi => (
                "Kimi-Linear-48B-A3B",
                256,
                8,
                0,
                26,
                1,
                300,
                Phase::Decode,
                KIMI_LOCALITY,
            ),
            Preset::Switch => (
                "switch-base-8",
                8,
                1,
                0,
                6,
                10,
                21,
                Phase::Encoder,
                SWITCH_LOCALITY,
            ),
        };
        GeneratorConfig {
            model: format!("{model} (generated, preset {})", preset.name()),
            experts: e,
            top_k: k,
            shared_experts: shared,
            layers,
            sequences: seqs,
            tokens_per_sequence: tokens,
            phase,
            hidden_dim: 32,
            persistence: loc.persistence,
            topic_weight: loc.topic_weight,
            popularity_skew: loc.popularity_skew,
            logit_scale: 1.0,
        }
    }

    /// One decode sequence of `tokens` tokens for any (E, K, layers) with the given locality:
    /// the shape of the claim families, tests and benchmarks (d = 32, no shared experts,
    /// logit scale 1, as the presets).
    pub fn synthetic(
        experts: usize,
        top_k: usize,
        layers: usize,
        tokens: usize,
        locality: Locality,
    ) -> Self {
        GeneratorConfig {
            model: format!("synthetic E={experts} K={top_k}"),
            experts,
            top_k,
            shared_experts: 0,
            layers,
            sequences: 1,
            tokens_per_sequence: tokens,
            phase: Phase::Decode,
            hidden_dim: 32,
            persistence: locality.persistence,
            topic_weight: locality.topic_weight,
            popularity_skew: locality.popularity_skew,
            logit_scale: 1.0,
        }
    }

    /// The same configuration with other locality knobs.
    pub fn with_locality(mut self, loc: Locality) -> Self {
        self.persistence = loc.persistence;
        self.topic_weight = loc.topic_weight;
        self.popularity_skew = loc.popularity_skew;
        self
    }

    /// The locality knobs.
    pub fn locality(&self) -> Locality {
        Locality {
            persistence: self.persistence,
            topic_weight: self.topic_weight,
            popularity_skew: self.popularity_skew,
        }
    }

    /// Checks every knob; the error names the field.
    pub fn check(&self) -> Result<(), Error> {
        let knobs = Knobs(CONFIG_PATH);
        let max_e = formulations::cache::validate::MAX_EXPERTS;
        if !(1..=max_e).contains(&self.experts) {
            return knobs.bad(
                "experts",
                format!("must be in 1..={max_e}, got {}", self.experts),
            );
        }
        if !(1..=self.experts).contains(&self.top_k) {
            return knobs.bad(
                "top_k",
                format!(
                    "must be in 1..={} (experts), got {}",
                    self.experts, self.top_k
                ),
            );
        }
        for (field, v) in [
            ("layers", self.layers),
            ("sequences", self.sequences),
            ("tokens_per_sequence", self.tokens_per_sequence),
        ] {
            if v == 0 {
                return knobs.bad(field, "must be at least 1".into());
            }
        }
        if !(1..=MAX_HIDDEN_DIM).contains(&self.hidden_dim) {
            return knobs.bad(
                "hidden_dim",
                format!("must be in 1..={MAX_HIDDEN_DIM}, got {}", self.hidden_dim),
            );
        }
        knobs.at_most(
            "shared_experts",
            "shared experts",
            self.shared_experts as u64,
            max_e as u64,
            "formulations::cache::validate::MAX_EXPERTS",
        )?;
        knobs.at_most(
            "layers",
            "layers",
            self.layers as u64,
            formulations::cache::validate::MAX_LAYERS as u64,
            "formulations::cache::validate::MAX_LAYERS",
        )?;
        // Saturating products: a saturated value is above every limit, as the true one is.
        let tokens = (self.sequences as u64).saturating_mul(self.tokens_per_sequence as u64);
        knobs.at_most(
            "tokens_per_sequence",
            "tokens (sequences x tokens_per_sequence)",
            tokens,
            MAX_TOKENS,
            "moe_opt::cache::generate::MAX_TOKENS",
        )?;
        // Layers and experts are bounded by now (2^10 x 2^16), hidden_dim by 2^12.
        let per_token = (self.layers * self.experts) as u64;
        knobs.at_most(
            "hidden_dim",
            "router weights (layers x experts x hidden_dim)",
            per_token * self.hidden_dim as u64,
            MAX_ROUTER_WEIGHTS,
            "moe_opt::cache::generate::MAX_ROUTER_WEIGHTS",
        )?;
        knobs.at_most(
            "tokens_per_sequence",
            "logits (tokens x layers x experts)",
            tokens * per_token,
            MAX_LOGITS,
            "moe_opt::cache::generate::MAX_LOGITS",
        )?;
        if !(self.persistence.is_finite() && (0.0..1.0).contains(&self.persistence)) {
            return knobs.bad(
                "persistence",
                format!("must be in [0, 1), got {}", self.persistence),
            );
        }
        if !(self.topic_weight.is_finite() && (0.0..=1.0).contains(&self.topic_weight)) {
            return knobs.bad(
                "topic_weight",
                format!("must be in [0, 1], got {}", self.topic_weight),
            );
        }
        if !(self.popularity_skew.is_finite() && self.popularity_skew >= 0.0) {
            return knobs.bad(
                "popularity_skew",
                format!("must be finite and >= 0, got {}", self.popularity_skew),
            );
        }
        if !(self.logit_scale.is_finite() && self.logit_scale > 0.0) {
            return knobs.bad(
                "logit_scale",
                format!("must be finite and > 0, got {}", self.logit_scale),
            );
        }
        Ok(())
    }
}

/// A layer's router: W (E x d, row-major) and the popularity bias b.
struct LayerRouter {
    w: Vec<f64>,
    bias: Vec<f64>,
}

/// Generates a trace; an invalid configuration is an error naming the field.
pub fn generate(config: &GeneratorConfig, seed: u64) -> Result<Trace, Error> {
    config.check()?;
    let (e, d) = (config.experts, config.hidden_dim);
    let routers: Vec<LayerRouter> = (0..config.layers)
        .map(|l| {
            let mut rng = stream(seed, STREAM_ROUTER + l as u64);
            let sd = 1.0 / (d as f64).sqrt();
            let w = (0..e * d).map(|_| normal(&mut rng) * sd).collect();
            let bias = (0..e).map(|_| normal(&mut rng)).collect();
            LayerRouter { w, bias }
        })
        .collect();
    let (rho, omega) = (config.persistence, config.topic_weight);
    let innovation = (1.0 - rho * rho).sqrt();
    let (a_topic, a_state) = (omega.sqrt(), (1.0 - omega).sqrt());
    let mut tokens = Vec::with_capacity(config.sequences * config.tokens_per_sequence);
    let mut v = vec![0.0f64; d];
    for s in 0..config.sequences {
        let mut rng = stream(seed, STREAM_SEQUENCE + s as u64);
        let topic: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
        let mut x: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
        for t in 0..config.tokens_per_sequence {
            if t > 0 {
                for xi in x.iter_mut() {
                    *xi = rho * *xi + innovation * normal(&mut rng);
                }
            }
            for i in 0..d {
                v[i] = a_topic * topic[i] + a_state * x[i];
            }
            let layers = routers
                .iter()
                .map(|r| route(r, &v, config))
                .collect::<Vec<_>>();
            tokens.push(Token {
                seq: s as u32,
                token: t as u32,
                phase: config.phase,
                layers,
            });
        }
    }
    Ok(Trace {
        shared_experts: config.shared_experts,
        ..Trace::new(
            format!("{}-seed{seed}", slug(&config.model)),
            config.model.clone(),
            e,
            config.top_k,
            config.layers,
            tokens,
        )
    })
}

fn route(router: &LayerRouter, v: &[f64], config: &GeneratorConfig) -> Routing {
    let d = v.len();
    let logits: Vec<f32> = (0..config.experts)
        .map(|e| {
            let row = &router.w[e * d..(e + 1) * d];
            let dot: f64 = row.iter().zip(v).map(|(a, b)| a * b).sum();
            (config.logit_scale * dot + config.popularity_skew * router.bias[e]) as f32
        })
        .collect();
    let experts: Vec<u32> = ranking(&logits)[..config.top_k].to_vec();
    let p = softmax(&logits);
    let weights = experts.iter().map(|&x| p[x as usize] as f32).collect();
    Routing {
        experts,
        weights: Some(weights),
        logits: Some(logits),
    }
}

/// A file-name friendly version of a model name.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> GeneratorConfig {
        GeneratorConfig {
            layers: 2,
            sequences: 2,
            tokens_per_sequence: 5,
            ..GeneratorConfig::preset(Preset::Qwen15Moe)
        }
    }

    #[test]
    fn traces_are_valid_and_deterministic() {
        let a = generate(&small(), 3).unwrap();
        formulations::cache::validate::validate(&a).unwrap();
        assert_eq!(a.tokens.len(), 10);
        assert!(a.has_logits() && a.ranked);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&generate(&small(), 3).unwrap()).unwrap()
        );
        assert_ne!(a, generate(&small(), 4).unwrap());
        // The routers depend only on the seed: a longer trace starts with the same tokens.
        let longer = generate(
            &GeneratorConfig {
                tokens_per_sequence: 7,
                ..small()
            },
            3,
        )
        .unwrap();
        assert_eq!(longer.tokens[..5], a.tokens[..5]);
    }

    #[test]
    fn full_persistence_limit_repeats_the_routing() {
        // rho -> 1 without topic or bias: x_t barely moves, so consecutive tokens route alike.
        let config = GeneratorConfig {
            persistence: 0.999_999,
            topic_weight: 0.0,
            popularity_skew: 0.0,
            ..small()
        };
        let t = generate(&config, 1).unwrap();
        assert_eq!(t.tokens[0].layers[0].experts, t.tokens[4].layers[0].experts);
    }

    #[test]
    fn bad_knobs_name_their_field() {
        let field = |c: GeneratorConfig| match generate(&c, 0).unwrap_err() {
            Error::Invalid { field, .. } => field,
            e => panic!("{e}"),
        };
        assert_eq!(
            field(GeneratorConfig {
                persistence: 1.0,
                ..small()
            }),
            "persistence"
        );
        assert_eq!(
            field(GeneratorConfig {
                top_k: 61,
                ..small()
            }),
            "top_k"
        );
        assert_eq!(
            field(GeneratorConfig {
                logit_scale: 0.0,
                ..small()
            }),
            "logit_scale"
        );
        assert!("mixtral-8x7b".parse::<Preset>().is_ok() && "gpt".parse::<Preset>().is_err());
    }
}
