//! Seeded SlimCaching instance generators: the presets `tiny`, `small` and `paper`.
//!
//! Every knob lives in [`GeneratorConfig`] (serde, so sweeps over the axes of Figs. 6-10 can
//! vary storage Q, local experts rho, models per user, bandwidth B_u, N, U and the library).
//! [`generate`] is a pure function of (config, seed): all randomness comes from
//! `ChaCha8Rng::seed_from_u64(seed)` split into independent ChaCha streams (one for the shapes,
//! one per model's popularity, one per user's requests and activations, one per node position),
//! so the same pair gives byte-identical JSON. With the paper library, changing N, U, Q, rho or
//! B_u leaves every model's popularity and each user's requests and activations unchanged
//! (user u's draws depend only on the seed, u and the library), which keeps sweeps paired.
//!
//! ## Presets
//!
//! * `tiny`: exhaustive search is feasible: N in {1, 2}, 2 synthetic models (one Top-1 and one
//!   Top-2, order varies with the seed), 1-2 layers of 2-4 experts, 2-3 users requesting 1-2
//!   models, rho = 1, and N x E <= 16 (so at most 2^16 placements); expert sizes 2-6 bytes and Q
//!   a uniform 30-60% of the library's bytes, so a server fits roughly 30-60% of the experts.
//! * `small`: HiGHS proves P1 optimal within seconds: N = 2-3, U = 4-6, 3 synthetic models
//!   (Top-1, Top-2, Top-2), 2-3 layers of 4-6 experts, at most 6 sets per layer (24 tokens),
//!   expert sizes 1-3 bytes, Q 15-30% of the library, rho = 3, servers placed uniformly. (On
//!   seeds 0-29 the MILP is optimal in under 0.5 s for most and about 8 s at worst; a grid
//!   layout, which makes the servers near-symmetric, a Top-4 model, wider size ranges or 8 sets
//!   per layer each left some seeds unproved after 10 s, so the preset avoids them.)
//! * `paper`: Section VI-A as described below; 256 synthetic tokens per (user, model, layer)
//!   give about 60,000 sets in all (2.5 MB of JSON).
//!
//! The wireless model, compute and cloud latency are the paper's in every preset, so latencies
//! stay realistic even where sizes are small integers.
//!
//! ## Network and model shapes
//!
//! The wireless model, links and compute are [`super::network`]'s (Section III-C, eqs.
//! (3)-(4)); the paper library and its seven architectures are [`super::architectures`]'s
//! (Section VI-A). The user positions and uniformly placed servers draw from their own
//! streams of the same seed, so they stay apart from the draws below.
//!
//! Synthetic libraries ([`SyntheticLibrary`], for `tiny` and `small`) draw shapes from ranges,
//! give the models the K values of a list in a seeded rotation (so K = 1 and K = 2 mix), use
//! small integer expert sizes, and borrow D_m and the FLOPs of a random paper architecture so
//! that latencies stay realistic.
//!
//! ## Requests (Sections III-D and VI-A)
//!
//! Section III-D: p_{u,m} "typically follows a Zipf-type popularity distribution". The library
//! models have a global Zipf popularity (exponent `model_popularity_zipf`, 0.8, over
//! a seeded random ranking). Each user draws its number of models uniformly in
//! `models_per_user` (3 to 5) and picks them by popularity without replacement; p_{u,m} is Zipf
//! over the order of drawing with exponent `request_zipf` (1.0): p_j = j^-s / sum_k k^-s.
//!
//! ## Activations p_{u,S} (a synthetic topic model)
//!
//! Per (model, layer) the experts have a Zipf popularity over a seeded random ranking,
//! log pi_i = -s_l ln(rank_i + 1), whose exponent s_l rises linearly from `layer_skew_first` to
//! `layer_skew_last` with depth (deeper MoE layers are more skewed, Section I), and `topics`
//! latent topics with affinities a(i, c) ~ N(0, 1). A user perturbs each log popularity by
//! `user_noise` x N(0, 1) (users differ) and has its own topic mixture theta_u (log-weights
//! `topic_spread` x N(0, 1), normalised). It then emits `tokens_per_layer` synthetic tokens per
//! (requested model, layer): a token draws a topic c ~ theta_u and activates the Top-K of
//!
//! score_i = log pi_{u,i} + gamma a(i, c) + Gumbel noise   (gamma = `topic_affinity`),
//!
//! ties by lower index. For K = 1 this is sampling from softmax(log pi + gamma a_c) (the
//! Gumbel-max trick); for K > 1 the shared topic makes experts with similar affinities
//! co-activate, so K-sets are not independent draws. p_{u,S} is the empirical frequency of each
//! set: count / tokens. With `max_sets_per_layer` only the most frequent sets are kept (ties by
//! the sorted expert list) and p = count / kept tokens. Either way the probabilities are ratios
//! of integers with a common denominator and sum to 1 up to float rounding (far below the
//! validator's 1e-6). Only requested models get distributions.
//!
//! ## Local experts rho_u (Section III-B)
//!
//! "Predetermined based on user preferences (e.g., their most frequently used experts)": user u
//! holds the `local_experts_per_user` experts of its requested models with the largest
//! frequency sum_m p_{u,m} sum_{S containing i} p_{u,S}, ties by (model, layer, index). If its
//! requested models have fewer experts than that, it holds all of them.

use std::collections::BTreeMap;

use formulations::slimcaching::validate::{
    validate, MAX_BYTES, MAX_EXPERTS_PER_LAYER, MAX_LAYERS, MAX_MODELS, MAX_SERVERS, MAX_TOP_K,
    MAX_TOTAL_EXPERTS, MAX_USERS,
};
use formulations::slimcaching::{
    ExpertRef, Instance, LayerActivation, LayerId, ModelId, ModelRequest, MoeModel, User,
};
use formulations::Error;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// ChaCha stream of the shape draws (N, U, synthetic models, storage fraction).
const STREAM_SHAPES: u64 = 1;
/// ChaCha stream of the library's global model popularity.
const STREAM_MODEL_RANKING: u64 = 2;
/// Base of the per-model popularity streams (+ model index).
const STREAM_MODEL_BASE: u64 = 1 << 32;
/// Base of the per-user request / activation streams (+ user index).
const STREAM_USER_BASE: u64 = 2 << 32;

crate::named! {
    /// The generator presets.
    pub enum Preset: "preset" {
        /// exhaustive search is feasible: N * E <= 16
        Tiny,
        /// the MILP proves optimality within seconds
        Small,
        /// Section VI-A: N = 4, U = 20, 18 models, about 4,000 experts
        Paper,
    }
}

pub use super::network::{ComputeConfig, ServerLayout, WirelessConfig};
pub use crate::generate::Between;

use super::architectures::{paper_library, Architecture, PAPER_ARCHITECTURES};
use super::demand::{most_frequent_experts, sets_from_counts};
use super::network::{build_network, check_compute, check_wireless, Network};
use crate::generate::{normal, open01, stream, Knobs, CONFIG_PATH};

/// Server storage Q_n (the same on every server).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Storage {
    /// Q in bytes (the paper: 5 GB = 5e9).
    Bytes(u64),
    /// Q as a fraction of the whole library's expert bytes, drawn uniformly per instance
    /// (synthetic presets, whose library size varies with the seed).
    LibraryFraction(Between<f64>),
}

/// A model library with randomly drawn shapes (the `tiny` and `small` presets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticLibrary {
    /// Number of models M.
    pub models: Between<u32>,
    /// K values handed to the models in a seeded rotation (shuffled, then cycled).
    pub top_k: Vec<u32>,
    /// MoE layers L_m per model.
    pub layers: Between<u32>,
    /// Experts E_m per layer (raised to K_m if smaller).
    pub experts_per_layer: Between<u32>,
    /// Expert size b_m, bytes.
    pub expert_bytes: Between<u64>,
    /// Upper bound on N x (total experts); shapes are redrawn until it holds (at most 1,000
    /// times, then every model gets one layer of max(K_m, min experts) experts).
    #[serde(default)]
    pub max_server_expert_pairs: Option<u64>,
}

/// Which models the instance has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Library {
    /// The first `models` models of the paper's library (18 in Section VI-A; model j is
    /// architecture j mod 7, variant j / 7, see the module doc).
    Paper {
        /// Number of models M.
        models: u32,
    },
    /// Random shapes.
    Synthetic(SyntheticLibrary),
}

/// How users pick models (Section VI-A: "drawn from a Zipf distribution").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestConfig {
    /// Zipf exponent of the library-wide model popularity used to choose each user's models.
    pub model_popularity_zipf: f64,
    /// Zipf exponent of p_{u,m} over a user's models in the order they were chosen.
    pub request_zipf: f64,
}

/// Knobs of the synthetic activation generator (see the module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationConfig {
    /// Synthetic tokens per (user, requested model, layer).
    pub tokens_per_layer: u32,
    /// Keep only this many most frequent sets per (user, model, layer).
    #[serde(default)]
    pub max_sets_per_layer: Option<u32>,
    /// Zipf exponent of expert popularity in the first MoE layer.
    pub layer_skew_first: f64,
    /// Zipf exponent of expert popularity in the last MoE layer.
    pub layer_skew_last: f64,
    /// Standard deviation of a user's perturbation of each log popularity.
    pub user_noise: f64,
    /// Number of latent topics per (model, layer).
    pub topics: u32,
    /// gamma: weight of the topic affinity in the expert scores.
    pub topic_affinity: f64,
    /// Standard deviation of a user's topic log-weights.
    pub topic_spread: f64,
}

/// Every knob of the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Prefix of the instance name (`{name}-seed{seed}`).
    pub name: String,
    /// Number of edge servers N.
    pub servers: Between<u32>,
    /// Number of users U.
    pub users: Between<u32>,
    /// Storage Q of every server.
    pub storage: Storage,
    /// rho: experts each user holds locally.
    pub local_experts_per_user: u32,
    /// Number of models each user requests.
    pub models_per_user: Between<u32>,
    /// The model library.
    pub library: Library,
    /// Model choice and p_{u,m}.
    pub requests: RequestConfig,
    /// p_{u,S}.
    pub activations: ActivationConfig,
    /// Positions, powers, bandwidths, path loss, cloud latency.
    pub wireless: WirelessConfig,
    /// Computing capabilities.
    pub compute: ComputeConfig,
}

impl GeneratorConfig {
    /// The configuration of a preset.
    pub fn preset(p: Preset) -> Self {
        let requests = RequestConfig {
            model_popularity_zipf: 0.8,
            request_zipf: 1.0,
        };
        match p {
            Preset::Tiny => GeneratorConfig {
                name: p.name().into(),
                servers: Between { min: 1, max: 2 },
                users: Between { min: 2, max: 3 },
                storage: Storage::LibraryFraction(Between { min: 0.3, max: 0.6 }),
                local_experts_per_user: 1,
                models_per_user: Between { min: 1, max: 2 },
                library: Library::Synthetic(SyntheticLibrary {
                    models: Between::exactly(2),
                    top_k: vec![1, 2],
                    layers: Between { min: 1, max: 2 },
                    experts_per_layer: Between { min: 2, max: 4 },
                    expert_bytes: Between { min: 2, max: 6 },
                    max_server_expert_pairs: Some(16),
                }),
                requests,
                activations: ActivationConfig {
                    tokens_per_layer: 12,
                    max_sets_per_layer: None,
                    layer_skew_first: 0.5,
                    layer_skew_last: 1.2,
                    user_noise: 0.5,
                    topics: 2,
                    topic_affinity: 1.0,
                    topic_spread: 1.0,
                },
                wireless: WirelessConfig::paper(),
                compute: ComputeConfig::paper(),
            },
            Preset::Small => GeneratorConfig {
                name: p.name().into(),
                servers: Between { min: 2, max: 3 },
                users: Between { min: 4, max: 6 },
                storage: Storage::LibraryFraction(Between {
                    min: 0.15,
                    max: 0.3,
                }),
                local_experts_per_user: 3,
                models_per_user: Between { min: 1, max: 2 },
                library: Library::Synthetic(SyntheticLibrary {
                    models: Between::exactly(3),
                    top_k: vec![1, 2, 2],
                    layers: Between { min: 2, max: 3 },
                    experts_per_layer: Between { min: 4, max: 6 },
                    expert_bytes: Between { min: 1, max: 3 },
                    max_server_expert_pairs: None,
                }),
                requests,
                activations: ActivationConfig {
                    tokens_per_layer: 24,
                    max_sets_per_layer: Some(6),
                    layer_skew_first: 0.6,
                    layer_skew_last: 1.4,
                    user_noise: 0.5,
                    topics: 3,
                    topic_affinity: 1.0,
                    topic_spread: 1.0,
                },
                wireless: WirelessConfig {
                    server_layout: ServerLayout::Uniform,
                    ..WirelessConfig::paper()
                },
                compute: ComputeConfig::paper(),
            },
            Preset::Paper => GeneratorConfig {
                name: p.name().into(),
                servers: Between::exactly(4),
                users: Between::exactly(20),
                storage: Storage::Bytes(5_000_000_000),
                local_experts_per_user: 200,
                models_per_user: Between { min: 3, max: 5 },
                library: Library::Paper { models: 18 },
                requests,
                activations: ActivationConfig {
                    tokens_per_layer: 256,
                    max_sets_per_layer: None,
                    layer_skew_first: 0.6,
                    layer_skew_last: 1.4,
                    user_noise: 0.5,
                    topics: 4,
                    topic_affinity: 1.0,
                    topic_spread: 1.0,
                },
                wireless: WirelessConfig::paper(),
                compute: ComputeConfig::paper(),
            },
        }
    }

    /// Checks the knobs; the error names the offending field.
    pub fn check(&self) -> Result<(), Error> {
        let knobs = Knobs(CONFIG_PATH);
        knobs.range("servers", self.servers, 1)?;
        if self.servers.max as usize > MAX_SERVERS {
            knobs.bad(
                "servers.max",
                format!("at most {MAX_SERVERS} servers are supported"),
            )?;
        }
        knobs.range("users", self.users, 1)?;
        knobs.at_most(
            "users.max",
            "users",
            self.users.max.into(),
            MAX_USERS as u64,
            "formulations::slimcaching::validate::MAX_USERS",
        )?;
        knobs.range("models_per_user", self.models_per_user, 1)?;
        knobs.at_most(
            "models_per_user.max",
            "models",
            self.models_per_user.max.into(),
            MAX_MODELS as u64,
            "formulations::slimcaching::validate::MAX_MODELS",
        )?;
        knobs.at_most(
            "local_experts_per_user",
            "experts",
            self.local_experts_per_user.into(),
            MAX_TOTAL_EXPERTS,
            "formulations::slimcaching::validate::MAX_TOTAL_EXPERTS",
        )?;
        match self.storage {
            Storage::Bytes(0) => knobs.bad("storage.bytes", "must be positive".into())?,
            Storage::Bytes(_) => {}
            Storage::LibraryFraction(r) => {
                knobs.positive("storage.library_fraction.min", r.min)?;
                if r.max.is_nan() || r.max < r.min || r.max.is_infinite() {
                    knobs.bad(
                        "storage.library_fraction.max",
                        format!("must be finite and >= min, got {}", r.max),
                    )?;
                }
            }
        }
        match &self.library {
            Library::Paper { models } => {
                if *models == 0 {
                    knobs.bad("library.paper.models", "must be at least 1".into())?;
                }
                knobs.at_most(
                    "library.paper.models",
                    "models",
                    (*models).into(),
                    MAX_MODELS as u64,
                    "formulations::slimcaching::validate::MAX_MODELS",
                )?;
            }
            Library::Synthetic(s) => {
                knobs.range("library.synthetic.models", s.models, 1)?;
                knobs.range("library.synthetic.layers", s.layers, 1)?;
                knobs.range(
                    "library.synthetic.experts_per_layer",
                    s.experts_per_layer,
                    1,
                )?;
                let v = "formulations::slimcaching::validate";
                knobs.at_most(
                    "library.synthetic.models.max",
                    "models",
                    s.models.max.into(),
                    MAX_MODELS as u64,
                    &format!("{v}::MAX_MODELS"),
                )?;
                knobs.at_most(
                    "library.synthetic.layers.max",
                    "layers",
                    s.layers.max.into(),
                    MAX_LAYERS.into(),
                    &format!("{v}::MAX_LAYERS"),
                )?;
                knobs.at_most(
                    "library.synthetic.experts_per_layer.max",
                    "experts",
                    s.experts_per_layer.max.into(),
                    MAX_EXPERTS_PER_LAYER.into(),
                    &format!("{v}::MAX_EXPERTS_PER_LAYER"),
                )?;
                // Each factor is at most 2^16 by now, so the product fits in 64 bits.
                knobs.at_most(
                    "library.synthetic",
                    "experts in total at the maxima (models x layers x experts_per_layer)",
                    u64::from(s.models.max)
                        * u64::from(s.layers.max)
                        * u64::from(s.experts_per_layer.max),
                    MAX_TOTAL_EXPERTS,
                    &format!("{v}::MAX_TOTAL_EXPERTS"),
                )?;
                if s.expert_bytes.min == 0 || s.expert_bytes.min > s.expert_bytes.max {
                    knobs.bad(
                        "library.synthetic.expert_bytes",
                        format!(
                            "needs 1 <= min <= max, got {}..={}",
                            s.expert_bytes.min, s.expert_bytes.max
                        ),
                    )?;
                }
                knobs.at_most(
                    "library.synthetic.expert_bytes.max",
                    "bytes",
                    s.expert_bytes.max,
                    MAX_BYTES,
                    &format!("{v}::MAX_BYTES"),
                )?;
                if s.top_k.is_empty() {
                    knobs.bad("library.synthetic.top_k", "needs at least one K".into())?;
                }
                if let Some(&k) = s.top_k.iter().find(|&&k| k == 0 || k > MAX_TOP_K) {
                    knobs.bad(
                        "library.synthetic.top_k",
                        format!("K = {k} is outside 1..={MAX_TOP_K}"),
                    )?;
                }
                if let Some(cap) = s.max_server_expert_pairs {
                    let k_max = s.top_k.iter().copied().max().unwrap_or(1);
                    let least = u64::from(self.servers.max)
                        * u64::from(s.models.max)
                        * u64::from(s.layers.min)
                        * u64::from(k_max.max(s.experts_per_layer.min));
                    if least > cap {
                        knobs.bad(
                            "library.synthetic.max_server_expert_pairs",
                            format!("{cap} is below the smallest possible N x E = {least}"),
                        )?;
                    }
                }
            }
        }
        let r = &self.requests;
        knobs.nonneg("requests.model_popularity_zipf", r.model_popularity_zipf)?;
        knobs.nonneg("requests.request_zipf", r.request_zipf)?;
        let a = &self.activations;
        if a.tokens_per_layer == 0 {
            knobs.bad("activations.tokens_per_layer", "must be at least 1".into())?;
        }
        knobs.at_most(
            "activations.tokens_per_layer",
            "tokens",
            a.tokens_per_layer.into(),
            MAX_TOKENS_PER_LAYER,
            "moe_opt::slimcaching::generate::MAX_TOKENS_PER_LAYER",
        )?;
        if a.max_sets_per_layer == Some(0) {
            knobs.bad(
                "activations.max_sets_per_layer",
                "must be at least 1".into(),
            )?;
        }
        if a.topics == 0 {
            knobs.bad("activations.topics", "must be at least 1".into())?;
        }
        knobs.at_most(
            "activations.topics",
            "topics",
            a.topics.into(),
            MAX_TOPICS.into(),
            "moe_opt::slimcaching::generate::MAX_TOPICS",
        )?;
        knobs.nonneg("activations.layer_skew_first", a.layer_skew_first)?;
        knobs.nonneg("activations.layer_skew_last", a.layer_skew_last)?;
        knobs.nonneg("activations.user_noise", a.user_noise)?;
        knobs.nonneg("activations.topic_affinity", a.topic_affinity)?;
        knobs.nonneg("activations.topic_spread", a.topic_spread)?;
        check_wireless(&self.wireless, CONFIG_PATH, "wireless")?;
        check_compute(&self.compute, CONFIG_PATH, "compute")?;
        Ok(())
    }
}

/// Most sampled tokens per user and layer (`activations.tokens_per_layer`): each is a draw,
/// and the distinct sets they give are stored.
pub const MAX_TOKENS_PER_LAYER: u64 = 1 << 20;

/// Most topics (`activations.topics`): each has a popularity vector over a layer's experts.
pub const MAX_TOPICS: u32 = 1024;

/// Standard Gumbel.
fn gumbel(rng: &mut impl RngCore) -> f64 {
    -(-open01(rng).ln()).ln()
}

/// Draws a synthetic library for `servers` servers.
fn synthetic_library(s: &SyntheticLibrary, servers: u32, rng: &mut ChaCha8Rng) -> Vec<MoeModel> {
    let count = s.models.draw(rng) as usize;
    let mut ks = s.top_k.clone();
    ks.shuffle(rng);
    let k_of = |j: usize| ks[j % ks.len()];
    let fits = |models: &[MoeModel]| {
        s.max_server_expert_pairs.is_none_or(|cap| {
            let total: u64 = models
                .iter()
                .map(|m| u64::from(m.layers) * u64::from(m.experts_per_layer))
                .sum();
            u64::from(servers) * total <= cap
        })
    };
    let synthetic = |j: usize, layers: u32, experts: u32, bytes: u64, arch: &Architecture| {
        let k = k_of(j);
        MoeModel {
            name: format!("syn{j}-top{k}"),
            top_k: k,
            layers,
            experts_per_layer: experts.max(k),
            expert_bytes: bytes,
            hidden_bytes: 2 * arch.hidden_size,
            expert_flops: 2.0 * arch.expert_params as f64,
        }
    };
    for _ in 0..1000 {
        let models: Vec<MoeModel> = (0..count)
            .map(|j| {
                let layers = s.layers.draw(rng);
                let experts = s.experts_per_layer.draw(rng);
                let bytes = s.expert_bytes.draw(rng);
                let arch = &PAPER_ARCHITECTURES[rng.random_range(0..PAPER_ARCHITECTURES.len())];
                synthetic(j, layers, experts, bytes, arch)
            })
            .collect();
        if fits(&models) {
            return models;
        }
    }
    (0..count)
        .map(|j| {
            synthetic(
                j,
                1,
                s.experts_per_layer.min,
                s.expert_bytes.min,
                &PAPER_ARCHITECTURES[j % PAPER_ARCHITECTURES.len()],
            )
        })
        .collect()
}

/// Per (model, layer): the base log popularity and the topic affinities a(c, i).
struct LayerPopularity {
    log_popularity: Vec<f64>,
    affinity: Vec<Vec<f64>>,
}

fn model_popularity(
    seed: u64,
    m: usize,
    model: &MoeModel,
    a: &ActivationConfig,
) -> Vec<LayerPopularity> {
    let mut rng = stream(seed, STREAM_MODEL_BASE + m as u64);
    let e = model.experts_per_layer as usize;
    (0..model.layers)
        .map(|l| {
            let depth = if model.layers == 1 {
                0.5
            } else {
                f64::from(l) / f64::from(model.layers - 1)
            };
            let skew = a.layer_skew_first + (a.layer_skew_last - a.layer_skew_first) * depth;
            let mut rank: Vec<usize> = (0..e).collect();
            rank.shuffle(&mut rng);
            let log_popularity = rank
                .iter()
                .map(|&r| -skew * ((r + 1) as f64).ln())
                .collect();
            let affinity = (0..a.topics)
                .map(|_| (0..e).map(|_| normal(&mut rng)).collect())
                .collect();
            LayerPopularity {
                log_popularity,
                affinity,
            }
        })
        .collect()
}

/// Index drawn from non-negative `weights` (not all zero).
fn categorical(rng: &mut impl RngCore, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut x = open01(rng) * total;
    for (i, &w) in weights.iter().enumerate() {
        if x < w {
            return i;
        }
        x -= w;
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Top-K of `scores`, ties by lower index, sorted ascending.
fn top_k(scores: &[f64], k: usize) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..scores.len() as u32).collect();
    let cmp = |a: &u32, b: &u32| {
        scores[*b as usize]
            .total_cmp(&scores[*a as usize])
            .then_with(|| a.cmp(b))
    };
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, cmp);
        idx.truncate(k);
    }
    idx.sort_unstable();
    idx
}

/// One user's requests, activations and local experts.
fn generate_user(
    config: &GeneratorConfig,
    seed: u64,
    u: usize,
    models: &[MoeModel],
    ranking_weight: &[f64],
    popularity: &[Vec<LayerPopularity>],
) -> (Vec<ModelRequest>, Vec<LayerActivation>, Vec<ExpertRef>) {
    let a = &config.activations;
    let mut rng = stream(seed, STREAM_USER_BASE + u as u64);
    let count = (config.models_per_user.draw(&mut rng) as usize).min(models.len());
    let mut weights = ranking_weight.to_vec();
    let mut chosen = Vec::with_capacity(count);
    for _ in 0..count {
        let m = categorical(&mut rng, &weights);
        weights[m] = 0.0;
        chosen.push(m);
    }
    let zipf: Vec<f64> = (1..=count)
        .map(|j| (j as f64).powf(-config.requests.request_zipf))
        .collect();
    let norm: f64 = zipf.iter().sum();
    let mut requests: Vec<ModelRequest> = chosen
        .iter()
        .zip(&zipf)
        .map(|(&m, &w)| ModelRequest {
            model: ModelId(m as u32),
            p: w / norm,
        })
        .collect();
    requests.sort_by_key(|r| r.model);
    let mut activations = Vec::new();
    for r in &requests {
        let m = r.model.index();
        let model = &models[m];
        let theta: Vec<f64> = (0..a.topics)
            .map(|_| (a.topic_spread * normal(&mut rng)).exp())
            .collect();
        for (l, pop) in popularity[m].iter().enumerate() {
            let user_log_pop: Vec<f64> = pop
                .log_popularity
                .iter()
                .map(|&x| x + a.user_noise * normal(&mut rng))
                .collect();
            let mut counts: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
            let mut scores = vec![0.0; user_log_pop.len()];
            for _ in 0..a.tokens_per_layer {
                let c = categorical(&mut rng, &theta);
                for (i, s) in scores.iter_mut().enumerate() {
                    *s = user_log_pop[i] + a.topic_affinity * pop.affinity[c][i] + gumbel(&mut rng);
                }
                *counts
                    .entry(top_k(&scores, model.top_k as usize))
                    .or_insert(0) += 1;
            }
            activations.push(LayerActivation {
                model: r.model,
                layer: LayerId(l as u32),
                sets: sets_from_counts(counts, a.max_sets_per_layer.map(|k| k as usize)),
            });
        }
    }
    let local = most_frequent_experts(
        models,
        &requests,
        &activations,
        config.local_experts_per_user as usize,
    );
    (requests, activations, local)
}

/// Generates an instance, or says which knob is invalid. The result is validated.
pub fn try_generate(config: &GeneratorConfig, seed: u64) -> Result<Instance, Error> {
    config.check()?;
    let mut shapes = stream(seed, STREAM_SHAPES);
    let n = config.servers.draw(&mut shapes);
    let users = config.users.draw(&mut shapes) as usize;
    let models = match &config.library {
        Library::Paper { models } => paper_library(*models),
        Library::Synthetic(s) => synthetic_library(s, n, &mut shapes),
    };
    let storage = match config.storage {
        Storage::Bytes(q) => q,
        Storage::LibraryFraction(r) => {
            let total: u64 = models
                .iter()
                .map(|m| u64::from(m.layers) * u64::from(m.experts_per_layer) * m.expert_bytes)
                .sum();
            let f = r.scale(&mut shapes);
            ((f * total as f64).round() as u64).max(1)
        }
    };
    let network = build_network(
        &config.wireless,
        &config.compute,
        n as usize,
        users,
        storage,
        seed,
    );
    let mut ranking: Vec<usize> = (0..models.len()).collect();
    ranking.shuffle(&mut stream(seed, STREAM_MODEL_RANKING));
    let ranking_weight: Vec<f64> = ranking
        .iter()
        .map(|&r| ((r + 1) as f64).powf(-config.requests.model_popularity_zipf))
        .collect();
    let popularity: Vec<Vec<LayerPopularity>> = models
        .iter()
        .enumerate()
        .map(|(m, model)| model_popularity(seed, m, model, &config.activations))
        .collect();
    let Network {
        servers,
        cloud,
        backhaul,
        uplink,
        downlink,
    } = network;
    let users = uplink
        .into_iter()
        .zip(downlink)
        .enumerate()
        .map(|(u, (uplink, downlink))| {
            let (requests, activations, local_experts) =
                generate_user(config, seed, u, &models, &ranking_weight, &popularity);
            User {
                compute_flops: config.compute.user_flops,
                associated_server: None,
                uplink,
                downlink,
                local_experts,
                requests,
                activations,
            }
        })
        .collect();
    let instance = Instance {
        name: format!("{}-seed{seed}", config.name),
        servers,
        cloud,
        backhaul,
        models,
        users,
    };
    validate(&instance).map_err(|e| e.in_file(format!("<generated {}>", instance.name)))?;
    Ok(instance)
}

/// Generates the instance of `config` and `seed`.
///
/// # Panics
/// If the configuration is invalid (see [`GeneratorConfig::check`]; use [`try_generate`] for
/// configurations read from users). The presets are valid.
pub fn generate(config: &GeneratorConfig, seed: u64) -> Instance {
    try_generate(config, seed).unwrap_or_else(|e| panic!("invalid generator configuration: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slimcaching::architectures::MIB;
    use formulations::slimcaching::{ExpertCatalogue, Link};

    const SEEDS: [u64; 5] = [0, 1, 2, 7, 12345];

    fn experts(instance: &Instance) -> usize {
        ExpertCatalogue::new(&instance.models).len()
    }

    #[test]
    fn preset_names_round_trip() {
        for &p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert_eq!(
            Preset::ALL.iter().map(|p| p.name()).collect::<Vec<_>>(),
            ["tiny", "small", "paper"]
        );
        assert!("huge"
            .parse::<Preset>()
            .unwrap_err()
            .contains("tiny, small, paper"));
    }

    #[test]
    fn every_preset_validates_for_several_seeds() {
        for &p in Preset::ALL {
            let config = GeneratorConfig::preset(p);
            for seed in SEEDS {
                let i = generate(&config, seed);
                assert_eq!(validate(&i), Ok(()), "{p} seed {seed}");
                assert_eq!(i.name, format!("{}-seed{seed}", p.name()));
                assert!(i.users.iter().all(|u| u.associated_server.is_none()));
            }
        }
    }

    #[test]
    fn same_seed_same_json_other_seed_other_json() {
        for &p in Preset::ALL {
            let config = GeneratorConfig::preset(p);
            let a = serde_json::to_string(&generate(&config, 3)).unwrap();
            let b = serde_json::to_string(&generate(&config, 3)).unwrap();
            let c = serde_json::to_string(&generate(&config, 4)).unwrap();
            assert_eq!(a, b, "{p}");
            assert_ne!(a, c, "{p}");
        }
    }

    #[test]
    fn config_round_trips_through_json() {
        for &p in Preset::ALL {
            let config = GeneratorConfig::preset(p);
            let text = serde_json::to_string(&config).unwrap();
            let back: GeneratorConfig = serde_json::from_str(&text).unwrap();
            assert_eq!(back, config);
        }
    }

    #[test]
    fn tiny_is_small_enough_for_exhaustive_search() {
        let config = GeneratorConfig::preset(Preset::Tiny);
        let mut server_counts = std::collections::BTreeSet::new();
        let mut mixed_k = false;
        for seed in 0..40 {
            let i = generate(&config, seed);
            let n = i.servers.len();
            server_counts.insert(n);
            assert!(
                n * experts(&i) <= 16,
                "seed {seed}: N*E = {}",
                n * experts(&i)
            );
            assert_eq!(i.models.len(), 2);
            assert!((2..=3).contains(&i.users.len()));
            for m in &i.models {
                assert!((1..=2).contains(&m.layers));
                assert!((2..=4).contains(&m.experts_per_layer));
                assert!((1..=2).contains(&m.top_k));
            }
            let ks: Vec<u32> = i.models.iter().map(|m| m.top_k).collect();
            mixed_k |= ks.contains(&1) && ks.contains(&2);
            // Q is 30-60% of the library's bytes.
            let total: u64 = i
                .models
                .iter()
                .map(|m| u64::from(m.layers * m.experts_per_layer) * m.expert_bytes)
                .sum();
            let q = i.servers[0].storage_bytes as f64;
            assert!(
                q >= 0.3 * total as f64 - 0.5 && q <= 0.6 * total as f64 + 0.5,
                "seed {seed}: Q = {q} of {total}"
            );
        }
        assert_eq!(server_counts.into_iter().collect::<Vec<_>>(), vec![1, 2]);
        assert!(mixed_k);
    }

    #[test]
    fn small_has_sparse_distributions() {
        let config = GeneratorConfig::preset(Preset::Small);
        for seed in SEEDS {
            let i = generate(&config, seed);
            assert!((2..=3).contains(&i.servers.len()));
            assert!((4..=6).contains(&i.users.len()));
            let mut ks: Vec<u32> = i.models.iter().map(|m| m.top_k).collect();
            ks.sort();
            assert_eq!(ks, vec![1, 2, 2]);
            for u in &i.users {
                for act in &u.activations {
                    assert!(!act.sets.is_empty() && act.sets.len() <= 6);
                }
            }
        }
    }

    #[test]
    fn small_milp_proves_optimality_quickly() {
        use formulations::milp::SolveOptions;
        use formulations::slimcaching::{LatencyModel, SlimCachingMilp};
        // Seeds 0-29 all prove optimality, most within 0.5 s, the slowest in about 8 s.
        let config = GeneratorConfig::preset(Preset::Small);
        for seed in [0, 1, 2, 3] {
            let i = generate(&config, seed);
            let model = LatencyModel::new(&i);
            let milp = SlimCachingMilp::p1(&model);
            let options = SolveOptions {
                time_limit_s: Some(60.0),
                ..SolveOptions::default()
            };
            let s = milp.solve(&model, &options, None).unwrap();
            assert!(
                s.solution.is_optimal(),
                "seed {seed}: {:?}",
                s.solution.status
            );
        }
    }

    #[test]
    fn paper_matches_section_vi_a() {
        let config = GeneratorConfig::preset(Preset::Paper);
        for seed in [0, 1, 2] {
            let i = generate(&config, seed);
            assert_eq!(i.servers.len(), 4);
            assert_eq!(i.users.len(), 20);
            assert_eq!(i.models.len(), 18);
            let e = experts(&i);
            assert!((3500..=4500).contains(&e), "{e} experts");
            // 3 x (ST-b-8 + ST-b-16 + ST-b-32 + LLaMA-MoE) + 2 x (MoE-LLaVA x 3)
            // = 3 x (96 + 192 + 384 + 512) + 2 x (48 + 48 + 64).
            assert_eq!(e, 3872);
            for s in &i.servers {
                assert_eq!(s.storage_bytes, 5_000_000_000);
                assert_eq!(s.compute_flops, 82.58e12);
            }
            assert_eq!(i.cloud.compute_flops, 312e12);
            for m in &i.models {
                assert_eq!(m.expert_bytes % MIB, 0, "{}", m.name);
            }
            let catalogue = ExpertCatalogue::new(&i.models);
            for (u, user) in i.users.iter().enumerate() {
                assert_eq!(user.compute_flops, 50e12);
                assert!((3..=5).contains(&user.requests.len()), "user {u}");
                let pool: usize = user
                    .requests
                    .iter()
                    .map(|r| catalogue.experts_of(r.model).count())
                    .sum();
                assert_eq!(user.local_experts.len(), pool.min(200), "user {u}");
                let requested: Vec<ModelId> = user.requests.iter().map(|r| r.model).collect();
                assert!(user
                    .local_experts
                    .iter()
                    .all(|r| requested.contains(&r.model)));
            }
            // Nearly all users hold exactly 200 (3 models always have >= 144 experts).
            let full = i
                .users
                .iter()
                .filter(|u| u.local_experts.len() == 200)
                .count();
            assert!(full >= 15, "only {full} users hold 200 experts");
        }
    }

    #[test]
    fn paper_network_is_symmetric_with_latency_only_cloud_links() {
        let i = generate(&GeneratorConfig::preset(Preset::Paper), 5);
        let b = &i.backhaul;
        assert!(b.symmetric);
        for n in 0..4 {
            assert_eq!(
                b.edge_to_cloud[n],
                Link {
                    latency_s: 0.01,
                    rate_bps: None
                }
            );
            assert_eq!(b.cloud_to_edge[n], b.edge_to_cloud[n]);
            for m in 0..4 {
                assert_eq!(b.edge_to_edge[n][m], b.edge_to_edge[m][n]);
            }
        }
        // 2 x 2 grid in 1 km: side neighbours 500 m apart, diagonal 707 m.
        let r01 = b.edge_to_edge[0][1].unwrap().rate_bps.unwrap();
        let r03 = b.edge_to_edge[0][3].unwrap().rate_bps.unwrap();
        assert!((r01 - 799.199177e6).abs() < 10.0);
        assert!(r03 < r01);
        // Same distance, 631x the power: every downlink is faster than its uplink.
        for u in &i.users {
            for n in 0..4 {
                assert!(u.downlink[n].rate_bps.unwrap() > u.uplink[n].rate_bps.unwrap());
            }
        }
    }

    #[test]
    fn shared_bandwidth_divides_among_users() {
        let mut config = GeneratorConfig::preset(Preset::Paper);
        config.library = Library::Paper { models: 3 };
        config.local_experts_per_user = 10;
        config.activations.tokens_per_layer = 8;
        let base = generate(&config, 1);
        config.wireless.total_user_bandwidth_hz = Some(20.0 * 5e6);
        let shared = generate(&config, 1);
        // 100 MHz shared by 20 users is 5 MHz each: the same links.
        assert_eq!(base.users[3].uplink, shared.users[3].uplink);
        config.wireless.total_user_bandwidth_hz = Some(10.0 * 5e6);
        let halved = generate(&config, 1);
        assert!(
            halved.users[3].uplink[0].rate_bps.unwrap() < base.users[3].uplink[0].rate_bps.unwrap()
        );
    }

    #[test]
    fn requests_are_zipf_over_drawn_models() {
        let i = generate(&GeneratorConfig::preset(Preset::Paper), 9);
        for u in &i.users {
            let mut ps: Vec<f64> = u.requests.iter().map(|r| r.p).collect();
            ps.sort_by(|a, b| b.total_cmp(a));
            // Exponent 1: p_j = (1/j) / H_n.
            let h: f64 = (1..=ps.len()).map(|j| 1.0 / j as f64).sum();
            for (j, p) in ps.iter().enumerate() {
                assert!((p - 1.0 / ((j + 1) as f64 * h)).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn deeper_layers_are_more_skewed() {
        // Average over users of the top set's probability in the first vs the last layer of
        // LLaMA-MoE (32 layers), with the per-user noise and topics turned off.
        let mut config = GeneratorConfig::preset(Preset::Paper);
        config.activations.user_noise = 0.0;
        config.activations.topic_affinity = 0.0;
        config.activations.tokens_per_layer = 2000;
        config.library = Library::Paper { models: 4 };
        config.models_per_user = Between::exactly(4);
        let i = generate(&config, 2);
        let top_share = |layer: u32| -> f64 {
            i.users
                .iter()
                .map(|u| {
                    let act = u
                        .activations
                        .iter()
                        .find(|a| a.model == ModelId(3) && a.layer == LayerId(layer))
                        .unwrap();
                    act.sets.iter().map(|s| s.p).fold(0.0, f64::max)
                })
                .sum::<f64>()
                / i.users.len() as f64
        };
        assert!(
            top_share(31) > top_share(0) + 0.05,
            "{} vs {}",
            top_share(31),
            top_share(0)
        );
    }

    #[test]
    fn local_experts_are_the_most_frequent() {
        let i = generate(&GeneratorConfig::preset(Preset::Paper), 4);
        for u in &i.users {
            // Independent recomputation of frequencies.
            let mut freq: BTreeMap<ExpertRef, f64> = BTreeMap::new();
            for act in &u.activations {
                let pm = u.requests.iter().find(|r| r.model == act.model).unwrap().p;
                for s in &act.sets {
                    for &e in &s.experts {
                        *freq
                            .entry(ExpertRef {
                                model: act.model,
                                layer: act.layer,
                                expert: e,
                            })
                            .or_insert(0.0) += pm * s.p;
                    }
                }
            }
            let f = |r: &ExpertRef| freq.get(r).copied().unwrap_or(0.0);
            let held_min = u.local_experts.iter().map(f).fold(f64::INFINITY, f64::min);
            let other_max = freq
                .iter()
                .filter(|(r, _)| !u.local_experts.contains(r))
                .map(|(_, &v)| v)
                .fold(0.0, f64::max);
            assert!(held_min >= other_max, "{held_min} < {other_max}");
        }
    }

    #[test]
    fn bad_configs_name_the_field() {
        let mut config = GeneratorConfig::preset(Preset::Tiny);
        config.servers = Between { min: 3, max: 2 };
        let e = try_generate(&config, 0).unwrap_err().to_string();
        assert!(e.contains("servers"), "{e}");
        let mut config = GeneratorConfig::preset(Preset::Small);
        config.activations.tokens_per_layer = 0;
        let e = try_generate(&config, 0).unwrap_err().to_string();
        assert!(e.contains("activations.tokens_per_layer"), "{e}");
        let mut config = GeneratorConfig::preset(Preset::Paper);
        config.wireless.user_bandwidth_hz = -1.0;
        let e = try_generate(&config, 0).unwrap_err().to_string();
        assert!(e.contains("wireless.user_bandwidth_hz"), "{e}");
    }
}
