//! Seeded Prism instance generators: the presets `tiny`, `small`, `testbed-mixtral` and
//! `testbed-deepseek`.
//!
//! Every knob lives in [`GeneratorConfig`] (serde: print a preset's configuration, edit it, and
//! generate from the file). [`try_generate`] is a pure function of (config, seed): the shapes
//! come from ChaCha stream 0 of `ChaCha8Rng::seed_from_u64(seed)`, the GPU speed factors from
//! stream 1, the shared popularity of layer l from stream `2^32 + l` and the popularity of task
//! t at layer l from stream `2^33 + t L + l`; the same pair gives byte-identical JSON.
//!
//! ## Activation frequencies (task-skewed, layer-dependent entropy)
//!
//! Server n serves task `n mod tasks` (Section IV-A: each server handled a distinct task). Per
//! layer l the task's popularity is p_t^l ~ Dirichlet(alpha_l, ..., alpha_l) over the E experts,
//! with alpha_l interpolated geometrically from `alpha_first` (layer 0) to `alpha_last` (layer
//! L - 1): small alpha gives skewed, low-entropy rows and large alpha near-uniform ones (the
//! per-layer diversity Algorithm 1 reads through v_{n,l}). A shared component q^l ~
//! Dirichlet(alpha_l) common to all tasks is mixed in with weight `shared_weight`:
//! p = (1 - w) p_t^l + w q^l. Finally f = min(1, c p) with c chosen so that the row sums to K
//! (water-filling; a token activates an expert at most once), the normalisation of
//! `formulations::prism::model`.
//!
//! ## Presets
//!
//! * `tiny`: 2 servers of 1-2 GPUs, L = 1-2 layers of E = 2-4 experts, K = 1-2, every expert 1
//!   unit (byte), each GPU 25-60% of the model's experts (at least 1), at most 32 binaries:
//!   the MILP solves it in milliseconds.
//! * `small`: 3 servers of 1-2 GPUs, L = 4, E = 8, K = 2, each GPU 20-40% of the experts; the
//!   MILP proves it optimal in well under a second (see the tests).
//! * `testbed-mixtral`: Section IV-A's testbed: 3 servers with 1, 1 and 2 A100 GPUs of 40 GB
//!   (read as 40 GiB), Mixtral-8x7B (32 layers x 8 experts, Top-2), GPU memory capped at 70%.
//! * `testbed-deepseek`: the same servers, DeepSeek-V2-Lite (26 MoE layers x 64 routed experts,
//!   Top-6), memory capped at 30%.
//!
//! ## Model facts (public configuration files, bf16 weights = 2 bytes a parameter)
//!
//! * Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): hidden_size 4096,
//!   intermediate_size 14336, num_hidden_layers 32, num_local_experts 8, num_experts_per_tok 2.
//!   An expert is a SwiGLU MLP of 3 x 4096 x 14336 = 176,160,768 parameters = 352,321,536
//!   bytes; the hidden state of a token is 4096 x 2 = 8192 bytes.
//! * DeepSeek-V2-Lite (deepseek-ai/DeepSeek-V2-Lite config.json): hidden_size 2048,
//!   moe_intermediate_size 1408, 27 layers of which the first is dense (first_k_dense_replace
//!   1), n_routed_experts 64, n_shared_experts 2, num_experts_per_tok 6. A routed expert is
//!   3 x 2048 x 1408 = 8,650,752 parameters = 17,301,504 bytes; hidden state 4096 bytes. The
//!   paper's text says "selecting 8 active experts from 64"; the configuration and the
//!   activation counts of ../shared/data (top_k 6) say 6, which the preset uses (set
//!   `model.top_k` to 8 for the paper's reading). The 2 shared experts run on every server
//!   and are not placed.
//!
//! Reading of "memory capped at X%": X% of each GPU's 40 GiB is the budget mem_{n,g} for routed
//! experts (attention, embeddings and shared experts are not charged). Mixtral: 30,064,771,072
//! bytes = 85 experts a GPU, 340 slots for 256 experts; DeepSeek: 12,884,901,888 bytes = 744
//! experts a GPU, 2,976 slots for 1,664 experts.
//!
//! Time model (not measured in the paper; an estimate to make the simulator run): an A100
//! reads an expert's weights once per token batch at about 1.5 TB/s plus a 20 us launch
//! overhead (a = 0.255 ms for Mixtral, 0.032 ms for DeepSeek), and computes 2 FLOPs a
//! parameter a token at an effective 150 TFLOP/s (b = 2.35 us, 0.115 us). Links: 500 Mbit/s
//! (Section IV-A's tc limit) and 1 ms latency (assumed for the Docker network). Workload:
//! Poisson arrivals every 10 s on average at each server (Table II, BigBench), 200 requests a
//! server (Fig. 7), 20 tokens a request (the WikiText/TACO output limit of Section IV-A).

use formulations::prism::validate::simulated_selections;
use formulations::prism::{validate::validate, Gpu, Instance, MoeModel, Network, Server, Workload};
use formulations::{Error, ProblemKind};
use rand::RngCore;
use serde::{Deserialize, Serialize};

/// 1 GiB.
pub const GIB: u64 = 1 << 30;

/// Most MoE layers a configuration may draw (public MoE models have at most about 60).
pub const MAX_LAYERS: u64 = 1024;
/// Most experts per layer a configuration may draw.
pub const MAX_EXPERTS_PER_LAYER: u64 = 1 << 16;
/// Most servers a configuration may draw.
pub const MAX_SERVERS: u64 = 1024;
/// Most GPUs of one server.
pub const MAX_GPUS_PER_SERVER: u64 = 1024;
/// Most activation frequencies drawn, max(servers, tasks) x layers x experts (`f64` each: 128
/// MB at the limit).
pub const MAX_FREQUENCIES: u64 = 1 << 24;

const STREAM_SHAPES: u64 = 0;
const STREAM_SPEED: u64 = 1;
const STREAM_SHARED_BASE: u64 = 1 << 32;
const STREAM_TASK_BASE: u64 = 2 << 32;

crate::named! {
    /// The generator presets.
    pub enum Preset: "preset" {
        /// the MILP solves it in milliseconds
        Tiny,
        /// the MILP proves optimality within seconds
        Small,
        /// Section IV-A's testbed with Mixtral-8x7B
        TestbedMixtral,
        /// Section IV-A's testbed with DeepSeek-V2-Lite
        TestbedDeepseek,
    }
}

pub use crate::generate::Between;

use crate::generate::{normal, open01, stream, Knobs, CONFIG_PATH};

/// The MoE model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Model name.
    pub name: String,
    /// L.
    pub layers: Between<u32>,
    /// E.
    pub experts_per_layer: Between<u32>,
    /// K (its maximum must not exceed E's minimum).
    pub top_k: Between<u32>,
    /// m_e, bytes of every expert.
    pub expert_bytes: u64,
    /// Bytes of one token's hidden state.
    pub hidden_bytes: u64,
}

/// The servers and their GPU counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerShape {
    /// `gpus[n]` GPUs on server n.
    Fixed {
        /// GPUs per server.
        gpus: Vec<u32>,
    },
    /// A random number of servers with a random number of GPUs each.
    Random {
        /// N.
        servers: Between<u32>,
        /// G_n.
        gpus_per_server: Between<u32>,
    },
}

/// mem_{n,g}, the expert budget of every GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryConfig {
    /// `usable_fraction x total_bytes` (rounded down) on every GPU.
    Capped {
        /// Physical memory of a GPU, bytes.
        total_bytes: u64,
        /// The fraction usable for experts (Section IV-A's 70% / 30%).
        usable_fraction: f64,
    },
    /// Each GPU independently: round(x L E) experts' worth (at least 1), x uniform in the
    /// range. If all GPUs together cannot hold every expert, GPUs are raised one expert at a
    /// time, smallest first (lowest index on ties), until they can: coverage stays feasible.
    ModelFraction(Between<f64>),
}

/// The linear compute-time model of every GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeConfig {
    /// a, seconds per expert invocation.
    pub base_s: f64,
    /// b, seconds per token.
    pub per_token_s: f64,
    /// Each GPU's a and b are multiplied by a factor uniform in this range (heterogeneous
    /// hardware); `exactly(1.0)` for identical GPUs.
    pub slowdown: Between<f64>,
}

/// Activation frequencies (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationConfig {
    /// Number of distinct tasks; server n serves task n mod tasks. `None`: one per server.
    #[serde(default)]
    pub tasks: Option<u32>,
    /// Dirichlet concentration at the first layer.
    pub alpha_first: f64,
    /// Dirichlet concentration at the last layer.
    pub alpha_last: f64,
    /// Weight of the popularity shared by all tasks, in [0, 1].
    pub shared_weight: f64,
}

/// Links between every pair of servers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Latency of every link, seconds.
    pub latency_s: f64,
    /// Bandwidth of every link, bit/s.
    pub bandwidth_bps: f64,
}

/// Every knob of the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Prefix of the instance name (`{name}-seed{seed}`).
    pub name: String,
    /// The MoE model.
    pub model: ModelConfig,
    /// Servers and GPUs.
    pub servers: ServerShape,
    /// GPU memory.
    pub memory: MemoryConfig,
    /// GPU time model.
    pub compute: ComputeConfig,
    /// f_n^l(e).
    pub activations: ActivationConfig,
    /// Links (omitted: the instance has no network).
    #[serde(default)]
    pub network: Option<NetworkConfig>,
    /// Workload for the simulator, the same at every server (omitted: none).
    #[serde(default)]
    pub workload: Option<WorkloadConfig>,
}

/// The workload of every server.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Poisson arrival rate at each server, per second.
    pub arrival_rate_per_s: f64,
    /// Tokens a request.
    pub tokens_per_request: u32,
    /// Requests simulated at each server.
    pub requests_per_server: u32,
}

/// Mixtral-8x7B's expert: 3 x 4096 x 14336 bf16 parameters (module doc).
pub const MIXTRAL_EXPERT_BYTES: u64 = 3 * 4096 * 14336 * 2;
/// DeepSeek-V2-Lite's routed expert: 3 x 2048 x 1408 bf16 parameters (module doc).
pub const DEEPSEEK_LITE_EXPERT_BYTES: u64 = 3 * 2048 * 1408 * 2;

fn testbed_network() -> Option<NetworkConfig> {
    Some(NetworkConfig {
        latency_s: 1e-3,
        bandwidth_bps: 500e6,
    })
}

fn testbed_workload() -> Option<WorkloadConfig> {
    Some(WorkloadConfig {
        arrival_rate_per_s: 0.1,
        tokens_per_request: 20,
        requests_per_server: 200,
    })
}

impl GeneratorConfig {
    /// The configuration of a preset.
    pub fn preset(p: Preset) -> Self {
        let activations = ActivationConfig {
            tasks: None,
            alpha_first: 1.0,
            alpha_last: 0.2,
            shared_weight: 0.3,
        };
        let mixtral_compute = ComputeConfig {
            base_s: 2.55e-4,
            per_token_s: 2.35e-6,
            slowdown: Between::exactly(1.0),
        };
        let small_model = |layers, experts, top_k: Between<u32>| ModelConfig {
            name: "synthetic".into(),
            layers,
            experts_per_layer: experts,
            top_k,
            expert_bytes: 1,
            hidden_bytes: 8192,
        };
        // The synthetic presets: 1-2 GPUs a server, each up to 2x slower than the testbed's,
        // the testbed's activations, network and workload.
        let synthetic = |model, servers, memory| GeneratorConfig {
            name: p.name().into(),
            model,
            servers: ServerShape::Random {
                servers: Between::exactly(servers),
                gpus_per_server: Between { min: 1, max: 2 },
            },
            memory: MemoryConfig::ModelFraction(memory),
            compute: ComputeConfig {
                slowdown: Between { min: 1.0, max: 2.0 },
                ..mixtral_compute
            },
            activations,
            network: testbed_network(),
            workload: testbed_workload(),
        };
        match p {
            Preset::Tiny => synthetic(
                small_model(
                    Between { min: 1, max: 2 },
                    Between { min: 2, max: 4 },
                    Between { min: 1, max: 2 },
                ),
                2,
                Between {
                    min: 0.25,
                    max: 0.6,
                },
            ),
            Preset::Small => synthetic(
                small_model(
                    Between::exactly(4),
                    Between::exactly(8),
                    Between::exactly(2),
                ),
                3,
                Between { min: 0.2, max: 0.4 },
            ),
            Preset::TestbedMixtral => GeneratorConfig {
                name: p.name().into(),
                model: ModelConfig {
                    name: "Mixtral-8x7B".into(),
                    layers: Between::exactly(32),
                    experts_per_layer: Between::exactly(8),
                    top_k: Between::exactly(2),
                    expert_bytes: MIXTRAL_EXPERT_BYTES,
                    hidden_bytes: 4096 * 2,
                },
                servers: ServerShape::Fixed {
                    gpus: vec![1, 1, 2],
                },
                memory: MemoryConfig::Capped {
                    total_bytes: 40 * GIB,
                    usable_fraction: 0.7,
                },
                compute: mixtral_compute,
                activations,
                network: testbed_network(),
                workload: testbed_workload(),
            },
            Preset::TestbedDeepseek => GeneratorConfig {
                name: p.name().into(),
                model: ModelConfig {
                    name: "DeepSeek-V2-Lite".into(),
                    layers: Between::exactly(26),
                    experts_per_layer: Between::exactly(64),
                    top_k: Between::exactly(6),
                    expert_bytes: DEEPSEEK_LITE_EXPERT_BYTES,
                    hidden_bytes: 2048 * 2,
                },
                servers: ServerShape::Fixed {
                    gpus: vec![1, 1, 2],
                },
                memory: MemoryConfig::Capped {
                    total_bytes: 40 * GIB,
                    usable_fraction: 0.3,
                },
                compute: ComputeConfig {
                    base_s: 3.2e-5,
                    per_token_s: 1.15e-7,
                    slowdown: Between::exactly(1.0),
                },
                activations,
                network: testbed_network(),
                workload: testbed_workload(),
            },
        }
    }

    /// Checks the knobs; the error names the offending field.
    pub fn check(&self) -> Result<(), Error> {
        let knobs = Knobs(CONFIG_PATH);
        let m = &self.model;
        knobs.range("model.layers", m.layers, 1)?;
        knobs.range("model.experts_per_layer", m.experts_per_layer, 1)?;
        knobs.range("model.top_k", m.top_k, 1)?;
        let layers = u64::from(m.layers.max);
        let experts = u64::from(m.experts_per_layer.max);
        knobs.at_most(
            "model.layers.max",
            "layers",
            layers,
            MAX_LAYERS,
            "moe_opt::prism::generate::MAX_LAYERS",
        )?;
        knobs.at_most(
            "model.experts_per_layer.max",
            "experts",
            experts,
            MAX_EXPERTS_PER_LAYER,
            "moe_opt::prism::generate::MAX_EXPERTS_PER_LAYER",
        )?;
        if m.top_k.max > m.experts_per_layer.min {
            return knobs.bad(
                "model.top_k",
                format!(
                    "max {} exceeds the smallest experts_per_layer {}",
                    m.top_k.max, m.experts_per_layer.min
                ),
            );
        }
        for (field, bytes) in [
            ("model.expert_bytes", m.expert_bytes),
            ("model.hidden_bytes", m.hidden_bytes),
        ] {
            if bytes == 0 {
                return knobs.bad(field, "must be > 0".into());
            }
            knobs.at_most(
                field,
                "bytes",
                bytes,
                formulations::prism::validate::MAX_BYTES,
                "formulations::prism::validate::MAX_BYTES",
            )?;
        }
        match &self.servers {
            ServerShape::Fixed { gpus } => {
                if gpus.is_empty() {
                    return knobs.bad("servers.fixed.gpus", "needs at least one server".into());
                }
                if let Some(n) = gpus.iter().position(|&g| g == 0) {
                    return knobs.bad(&format!("servers.fixed.gpus[{n}]"), "must be >= 1".into());
                }
                for (n, &g) in gpus.iter().enumerate() {
                    knobs.at_most(
                        &format!("servers.fixed.gpus[{n}]"),
                        "GPUs",
                        g.into(),
                        MAX_GPUS_PER_SERVER,
                        "moe_opt::prism::generate::MAX_GPUS_PER_SERVER",
                    )?;
                }
            }
            ServerShape::Random {
                servers,
                gpus_per_server,
            } => {
                knobs.range("servers.random.servers", *servers, 1)?;
                knobs.range("servers.random.gpus_per_server", *gpus_per_server, 1)?;
                knobs.at_most(
                    "servers.random.servers.max",
                    "servers",
                    servers.max.into(),
                    MAX_SERVERS,
                    "moe_opt::prism::generate::MAX_SERVERS",
                )?;
                knobs.at_most(
                    "servers.random.gpus_per_server.max",
                    "GPUs",
                    gpus_per_server.max.into(),
                    MAX_GPUS_PER_SERVER,
                    "moe_opt::prism::generate::MAX_GPUS_PER_SERVER",
                )?;
            }
        }
        match self.memory {
            MemoryConfig::Capped {
                total_bytes,
                usable_fraction,
            } => {
                if total_bytes == 0 {
                    return knobs.bad("memory.capped.total_bytes", "must be > 0".into());
                }
                if !(usable_fraction > 0.0 && usable_fraction <= 1.0) {
                    return knobs.bad(
                        "memory.capped.usable_fraction",
                        format!("must lie in (0, 1], got {usable_fraction}"),
                    );
                }
            }
            MemoryConfig::ModelFraction(r) => {
                // Above 1 a GPU would hold more than the whole model.
                if !(r.min > 0.0 && r.min <= r.max && r.max <= 1.0) {
                    return knobs.bad(
                        "memory.model_fraction",
                        format!("needs 0 < min <= max <= 1, got {}..={}", r.min, r.max),
                    );
                }
            }
        }
        let c = &self.compute;
        for (field, x) in [
            ("compute.base_s", c.base_s),
            ("compute.per_token_s", c.per_token_s),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return knobs.bad(field, format!("must be finite and >= 0, got {x}"));
            }
        }
        if !(c.slowdown.min > 0.0 && c.slowdown.min <= c.slowdown.max && c.slowdown.max.is_finite())
        {
            return knobs.bad(
                "compute.slowdown",
                format!("needs 0 < min <= max, got {:?}", c.slowdown),
            );
        }
        let a = &self.activations;
        if a.tasks == Some(0) {
            return knobs.bad("activations.tasks", "must be >= 1".into());
        }
        // Every server, and every task, has a frequency row per layer and expert.
        let servers = match &self.servers {
            ServerShape::Fixed { gpus } => gpus.len() as u64,
            ServerShape::Random { servers, .. } => servers.max.into(),
        };
        let rows = servers.max(a.tasks.map_or(0, u64::from));
        knobs.at_most(
            "activations.tasks",
            "frequencies (max(servers, tasks) x layers x experts_per_layer)",
            rows.saturating_mul(layers * experts),
            MAX_FREQUENCIES,
            "moe_opt::prism::generate::MAX_FREQUENCIES",
        )?;
        knobs.positive("activations.alpha_first", a.alpha_first)?;
        knobs.positive("activations.alpha_last", a.alpha_last)?;
        if !(0.0..=1.0).contains(&a.shared_weight) {
            return knobs.bad(
                "activations.shared_weight",
                format!("must lie in [0, 1], got {}", a.shared_weight),
            );
        }
        if let Some(n) = &self.network {
            if !(n.latency_s.is_finite() && n.latency_s >= 0.0) {
                return knobs.bad(
                    "network.latency_s",
                    format!("must be finite and >= 0, got {}", n.latency_s),
                );
            }
            knobs.positive("network.bandwidth_bps", n.bandwidth_bps)?;
        }
        if let Some(w) = &self.workload {
            knobs.positive("workload.arrival_rate_per_s", w.arrival_rate_per_s)?;
            if w.tokens_per_request == 0 {
                return knobs.bad("workload.tokens_per_request", "must be >= 1".into());
            }
            // The instance's own limit, at the largest servers, layers and K drawn.
            simulated_selections(w.requests_per_server, servers, layers, m.top_k.max.into())
                .map_err(|e| e.in_file(knobs.0))?;
        }
        Ok(())
    }
}

/// Gamma(shape, 1) by Marsaglia and Tsang (2000); shapes below 1 via Gamma(shape + 1) U^(1/shape).
fn gamma(shape: f64, rng: &mut impl RngCore) -> f64 {
    if shape < 1.0 {
        let u = open01(rng);
        return gamma(shape + 1.0, rng) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        if open01(rng).ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Dirichlet(alpha, ..., alpha) draw over `n` outcomes.
fn dirichlet(alpha: f64, n: usize, rng: &mut impl RngCore) -> Vec<f64> {
    let g: Vec<f64> = (0..n).map(|_| gamma(alpha, rng)).collect();
    let total: f64 = g.iter().sum();
    if total > 0.0 {
        g.iter().map(|x| x / total).collect()
    } else {
        // Every gamma underflowed (tiny alpha): fall back to uniform.
        vec![1.0 / n as f64; n]
    }
}

/// f = min(1, c p) with c such that f sums to `k` (p has at least k positive entries).
pub fn cap_to_k(p: &[f64], k: u32) -> Vec<f64> {
    let mut capped = vec![false; p.len()];
    let mut f = vec![0.0; p.len()];
    loop {
        let free: f64 = (0..p.len()).filter(|&i| !capped[i]).map(|i| p[i]).sum();
        let budget = f64::from(k) - capped.iter().filter(|&&c| c).count() as f64;
        // Nothing uncapped left to scale (exactly K positive entries, all capped): c = 0.
        let c = if free > 0.0 { budget / free } else { 0.0 };
        let mut changed = false;
        for i in 0..p.len() {
            if capped[i] {
                f[i] = 1.0;
            } else {
                f[i] = c * p[i];
                if f[i] > 1.0 {
                    capped[i] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            return f;
        }
    }
}

/// Gives every entry at least `floor` mass and renormalises (so every row has E > K positive
/// entries, as `cap_to_k` needs).
fn with_floor(p: Vec<f64>, floor: f64) -> Vec<f64> {
    let n = p.len() as f64;
    p.into_iter()
        .map(|x| (x + floor) / (1.0 + floor * n))
        .collect()
}

/// Generates an instance, or says which knob is invalid. The result is validated.
pub fn try_generate(config: &GeneratorConfig, seed: u64) -> Result<Instance, Error> {
    config.check()?;
    let mut shapes = stream(seed, STREAM_SHAPES);
    let m = &config.model;
    let layers = m.layers.draw(&mut shapes);
    let experts = m.experts_per_layer.draw(&mut shapes);
    let top_k = m.top_k.draw(&mut shapes);
    let gpus: Vec<u32> = match &config.servers {
        ServerShape::Fixed { gpus } => gpus.clone(),
        ServerShape::Random {
            servers,
            gpus_per_server,
        } => (0..servers.draw(&mut shapes))
            .map(|_| gpus_per_server.draw(&mut shapes))
            .collect(),
    };
    let total_gpus: usize = gpus.iter().map(|&g| g as usize).sum();
    let model_experts = u64::from(layers) * u64::from(experts);
    let memory: Vec<u64> = match config.memory {
        MemoryConfig::Capped {
            total_bytes,
            usable_fraction,
        } => vec![(total_bytes as f64 * usable_fraction).floor() as u64; total_gpus],
        MemoryConfig::ModelFraction(r) => {
            let mut slots: Vec<u64> = (0..total_gpus)
                .map(|_| {
                    let x = r.scale(&mut shapes);
                    ((x * model_experts as f64).round() as u64).max(1)
                })
                .collect();
            while slots.iter().sum::<u64>() < model_experts {
                let i = (0..slots.len()).min_by_key(|&i| slots[i]).unwrap_or(0);
                slots[i] += 1;
            }
            slots.into_iter().map(|s| s * m.expert_bytes).collect()
        }
    };
    let mut speed = stream(seed, STREAM_SPEED);
    let c = &config.compute;
    let mut gpu_specs = memory.into_iter().map(|memory_bytes| {
        let s = c.slowdown.scale(&mut speed);
        Gpu {
            memory_bytes,
            compute_base_s: c.base_s * s,
            compute_per_token_s: c.per_token_s * s,
            io_bps: None,
        }
    });
    let a = &config.activations;
    let tasks = a.tasks.unwrap_or(gpus.len() as u32) as usize;
    let alpha = |l: u32| {
        if layers == 1 {
            a.alpha_first
        } else {
            let t = f64::from(l) / f64::from(layers - 1);
            a.alpha_first * (a.alpha_last / a.alpha_first).powf(t)
        }
    };
    let shared: Vec<Vec<f64>> = (0..layers)
        .map(|l| {
            dirichlet(
                alpha(l),
                experts as usize,
                &mut stream(seed, STREAM_SHARED_BASE + u64::from(l)),
            )
        })
        .collect();
    let task_rows = |t: usize| -> Vec<Vec<f64>> {
        (0..layers)
            .map(|l| {
                let s = STREAM_TASK_BASE + t as u64 * u64::from(layers) + u64::from(l);
                let own = dirichlet(alpha(l), experts as usize, &mut stream(seed, s));
                let mixed: Vec<f64> = own
                    .iter()
                    .zip(&shared[l as usize])
                    .map(|(p, q)| (1.0 - a.shared_weight) * p + a.shared_weight * q)
                    .collect();
                cap_to_k(&with_floor(mixed, 1e-9), top_k)
            })
            .collect()
    };
    let task_frequencies: Vec<Vec<Vec<f64>>> = (0..tasks).map(task_rows).collect();
    let servers: Vec<Server> = gpus
        .iter()
        .enumerate()
        .map(|(n, &g)| Server {
            name: format!("server{n}"),
            gpus: (&mut gpu_specs).take(g as usize).collect(),
            frequencies: task_frequencies[n % tasks].clone(),
        })
        .collect();
    let n = servers.len();
    let network = config.network.map(|net| {
        let off = |x: f64| -> Vec<Vec<f64>> {
            (0..n)
                .map(|i| (0..n).map(|j| if i == j { 0.0 } else { x }).collect())
                .collect()
        };
        Network {
            latency_s: off(net.latency_s),
            bandwidth_bps: off(net.bandwidth_bps),
        }
    });
    let workload = config.workload.map(|w| Workload {
        arrival_rate_per_s: vec![w.arrival_rate_per_s; n],
        tokens_per_request: w.tokens_per_request,
        requests_per_server: w.requests_per_server,
    });
    let instance = Instance {
        problem: ProblemKind::Prism,
        name: format!("{}-seed{seed}", config.name),
        model: MoeModel {
            name: m.name.clone(),
            layers,
            experts_per_layer: experts,
            top_k,
            expert_bytes: vec![m.expert_bytes; layers as usize],
            hidden_bytes: m.hidden_bytes,
        },
        servers,
        network,
        workload,
    };
    validate(&instance).map_err(|e| e.in_file(format!("<generated {}>", instance.name)))?;
    Ok(instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use formulations::milp::{MilpStatus, SolveOptions};
    use formulations::prism::{evaluate, milp};

    #[test]
    fn same_seed_same_bytes_and_seeds_differ() {
        for &p in Preset::ALL {
            let c = GeneratorConfig::preset(p);
            let a = serde_json::to_string(&try_generate(&c, 3).unwrap()).unwrap();
            let b = serde_json::to_string(&try_generate(&c, 3).unwrap()).unwrap();
            assert_eq!(a, b, "{p}");
            let other = serde_json::to_string(&try_generate(&c, 4).unwrap()).unwrap();
            assert_ne!(a, other, "{p}");
        }
    }

    #[test]
    fn presets_match_the_testbed() {
        let mix = try_generate(&GeneratorConfig::preset(Preset::TestbedMixtral), 0).unwrap();
        assert_eq!(
            (
                mix.model.layers,
                mix.model.experts_per_layer,
                mix.model.top_k
            ),
            (32, 8, 2)
        );
        let gpus: Vec<usize> = mix.servers.iter().map(|s| s.gpus.len()).collect();
        assert_eq!(gpus, [1, 1, 2]);
        // 3 x 4096 x 14336 x 2 bytes; 0.7 x 40 GiB = 30,064,771,072 bytes -> 85 experts.
        assert_eq!(mix.model.expert_bytes[0], 352_321_536);
        assert_eq!(mix.servers[0].gpus[0].memory_bytes, 30_064_771_072);
        assert_eq!(
            mix.servers[0].gpus[0].memory_bytes / mix.model.expert_bytes[0],
            85
        );
        let ds = try_generate(&GeneratorConfig::preset(Preset::TestbedDeepseek), 0).unwrap();
        assert_eq!(
            (ds.model.layers, ds.model.experts_per_layer, ds.model.top_k),
            (26, 64, 6)
        );
        // 3 x 2048 x 1408 x 2 bytes; 0.3 x 40 GiB = 12,884,901,888 bytes -> 744 experts.
        assert_eq!(ds.model.expert_bytes[0], 17_301_504);
        assert_eq!(
            ds.servers[2].gpus[1].memory_bytes / ds.model.expert_bytes[0],
            744
        );
        assert_eq!(ds.network.as_ref().unwrap().bandwidth_bps[0][1], 500e6);
    }

    #[test]
    fn tasks_skew_servers_apart_and_later_layers_have_lower_entropy() {
        let inst = try_generate(&GeneratorConfig::preset(Preset::TestbedDeepseek), 1).unwrap();
        let entropy = |row: &[f64]| -> f64 {
            let s: f64 = row.iter().sum();
            -row.iter()
                .map(|f| f / s)
                .filter(|&p| p > 0.0)
                .map(|p| p * p.log2())
                .sum::<f64>()
        };
        let s0 = &inst.servers[0].frequencies;
        // alpha 1.0 -> 0.2 over the layers: the mean entropy of the last 5 layers is below the
        // first 5's (log2 64 = 6 bits is the uniform maximum).
        let first: f64 = s0[..5].iter().map(|r| entropy(r)).sum::<f64>() / 5.0;
        let last: f64 = s0[21..].iter().map(|r| entropy(r)).sum::<f64>() / 5.0;
        assert!(last < first && first < 6.0, "{first} {last}");
        // Different tasks: the rows of servers 0 and 1 differ.
        assert_ne!(inst.servers[0].frequencies, inst.servers[1].frequencies);
    }

    #[test]
    fn cap_to_k_water_fills() {
        // p = (0.7, 0.2, 0.1), K = 2: 2p = (1.4, 0.4, 0.2) caps the first at 1; the remaining
        // budget 1 is split 2:1 -> (1, 2/3, 1/3).
        let f = cap_to_k(&[0.7, 0.2, 0.1], 2);
        assert!((f[0] - 1.0).abs() < 1e-12 && (f[1] - 2.0 / 3.0).abs() < 1e-12);
        assert!((f.iter().sum::<f64>() - 2.0).abs() < 1e-12);
        // Exactly K positive entries: all become 1, the zero stays 0 (not NaN).
        assert_eq!(cap_to_k(&[0.5, 0.0, 0.2], 2), vec![1.0, 0.0, 1.0]);
    }

    #[test]
    fn a_bad_knob_is_named() {
        let mut c = GeneratorConfig::preset(Preset::Small);
        c.model.top_k = Between::exactly(9);
        let e = try_generate(&c, 0).unwrap_err().to_string();
        assert!(e.contains("model.top_k"), "{e}");
        let mut c = GeneratorConfig::preset(Preset::Tiny);
        c.activations.shared_weight = 1.5;
        let e = try_generate(&c, 0).unwrap_err().to_string();
        assert!(e.contains("activations.shared_weight"), "{e}");
        let text = serde_json::to_string_pretty(&GeneratorConfig::preset(Preset::Small)).unwrap();
        let back: GeneratorConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(back, GeneratorConfig::preset(Preset::Small));
    }

    #[test]
    fn tiny_and_small_are_proved_optimal_and_feasible() {
        for (p, seeds) in [(Preset::Tiny, 0..10), (Preset::Small, 0..3)] {
            for seed in seeds {
                let inst = try_generate(&GeneratorConfig::preset(p), seed).unwrap();
                let exact = milp::solve(&inst, &SolveOptions::default(), None).unwrap();
                assert_eq!(exact.solution.status, MilpStatus::Optimal, "{p} {seed}");
                let placement = exact.placement.unwrap();
                let ev = evaluate(&inst, &placement).unwrap();
                assert!(ev.feasible);
                let obj = exact.solution.objective.unwrap();
                assert!((ev.proxy_cost - obj).abs() < 1e-7, "{p} {seed}");
            }
        }
    }
}
