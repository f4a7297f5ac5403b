//! Seeded ZipMoE layer instances: presets for the exact methods (`tiny`, `small`) and
//! device-like presets for the models and device of the paper's evaluation (Sec. 5), plus an
//! importer of real activation counts (../shared/data/README.md).
//!
//! ## How a layer is drawn ([`try_generate`])
//! A batch of `batch_tokens` tokens each selects `top_k` distinct experts of the layer's
//! `layer_experts`, uniformly (seeded ChaCha8); the selected experts are those chosen at least
//! once, with their token counts; p_n = `gpu.base_s + gpu.per_token_s * tokens` (a linear GPU
//! model); each expert's compression state is drawn independently from `states` (cache hit
//! rates per pool: full F, compressed C, SM S, E E; the rest missed).
//!
//! ## Device presets (numbers and where they come from)
//! * SSD read 3.5 GB/s: the Samsung 970 EVO of both testbeds (Sec. 5, "Hardware").
//! * rho = 0.36: ZSTD shrinks BF16 MoE parameters to 68% (Sec. 2.2, Fig. 3); with the 8
//!   sign-mantissa bits incompressible, (8 + 8 rho) / 16 = 0.68 gives rho = 0.36.
//! * c = 2.5 u / K: Sec. 2.3 insight (I), decompressing as many bytes as an SM-chunk is slower
//!   than reading them with 2 threads and faster with >= 3, i.e. 2 u <= K c < 3 u (Fig. 4's
//!   numbers are not in the text); the midpoint is taken.
//! * L = 8 threads: an assumption (the Jetson AGX Orin 64GB of Hardware 1 has 12 CPU cores,
//!   NVIDIA's data sheet; Sec. 2.3 says 6-12 cores are typical and >= 3 threads suffice).
//! * K = 4 shards: an assumption (the paper does not give K).
//! * Tensor shapes from the models' public Hugging Face configs (not in the paper): Qwen1.5-
//!   MoE-A2.7B and DeepSeek-V2-Lite, hidden 2048 and expert intermediate 1408, 3 tensors
//!   (gate, up, down) of 2048 x 1408 BF16, so an SM-chunk is 2048 * 1408 bytes = 2,883,584 B
//!   and u = 0.824 ms; Qwen 60 routed experts top-4, DeepSeek 64 top-6. switch-large-128: d_model
//!   1024, d_ff 4096, 2 tensors (wi, wo), SM-chunk 4,194,304 B, u = 1.198 ms, 128 experts top-1.
//! * GPU model: an assumption: base 85 us (streaming 3 x 5.77 MB of weights at the Orin's
//!   204.8 GB/s, NVIDIA's data sheet) plus 1 us per token.
//! * Batch: 16 tokens, the largest batch size of Fig. 8; cache hit rates F 0.2, C 0.1, S 0.2,
//!   E 0.1, missed 0.4 (an assumption; the planning of App. C decides them in the paper).
//!
//! ## Real counts ([`import`])
//! A layer of a real batch: the summed counts of some prompts at one MoE layer. Without a
//! configuration ([`ImportConfig::default`]): prompt 0, the first layer it routes tokens at,
//! the Orin device of the file's model (as the presets above), the presets' hit rates, seed 0.

use std::path::Path;

use crate::counts::Header;
use crate::generate::{config_error, Knobs, CONFIG_PATH};
use formulations::zipmoe::validate::validate;
use formulations::zipmoe::{CompressionState, Instance, SelectedExpert};
use formulations::{Error, ProblemKind};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use crate::generate::Between;

/// Cache hit rates: the probability that a selected expert is in each state (the rest is
/// missed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateRates {
    /// Full tensors cached (pool F).
    pub full: f64,
    /// E- and SM-chunks cached (pool C).
    pub compressed: f64,
    /// SM-chunks cached (pool S).
    pub sm_cached: f64,
    /// E-chunks cached (pool E).
    pub e_cached: f64,
}

impl StateRates {
    fn check(&self, field: &str) -> Result<(), Error> {
        let all = [self.full, self.compressed, self.sm_cached, self.e_cached];
        let sum: f64 = all.iter().sum();
        if all.iter().any(|r| !(0.0..=1.0).contains(r)) || sum > 1.0 + 1e-12 {
            return Err(config_error(
                field,
                format!("rates must lie in [0, 1] and sum to at most 1, got {all:?}"),
            ));
        }
        Ok(())
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> CompressionState {
        let x: f64 = rng.random();
        let mut acc = 0.0;
        for (rate, state) in [
            (self.full, CompressionState::Full),
            (self.compressed, CompressionState::Compressed),
            (self.sm_cached, CompressionState::SmCached),
            (self.e_cached, CompressionState::ECached),
        ] {
            acc += rate;
            if x < acc {
                return state;
            }
        }
        CompressionState::Missed
    }
}

/// p_n = base_s + per_token_s * tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModel {
    /// Fixed GPU time of an expert, seconds.
    pub base_s: f64,
    /// GPU time per routed token, seconds.
    pub per_token_s: f64,
}

impl GpuModel {
    /// p_n for `tokens` tokens.
    pub fn time(&self, tokens: u32) -> f64 {
        self.base_s + self.per_token_s * f64::from(tokens)
    }
}

/// The device and model constants of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    /// N.
    pub tensors_per_expert: u32,
    /// K.
    pub shards: u32,
    /// L.
    pub threads: u32,
    /// rho.
    pub compression_ratio: f64,
    /// u, seconds.
    pub sm_read_s: f64,
    /// c, seconds.
    pub decompress_s: f64,
    /// p_n as a function of the tokens.
    pub gpu: GpuModel,
}

/// Everything [`try_generate`] draws from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Experts per MoE layer (routed).
    pub layer_experts: u32,
    /// Experts each token selects.
    pub top_k: u32,
    /// Tokens in the batch.
    pub batch_tokens: Between<u32>,
    /// N.
    pub tensors_per_expert: u32,
    /// K.
    pub shards: Between<u32>,
    /// L.
    pub threads: Between<u32>,
    /// rho.
    pub compression_ratio: Between<f64>,
    /// u, seconds.
    pub sm_read_s: Between<f64>,
    /// c = this * u / K (Sec. 2.3 (I) suggests 2..3).
    pub decompress_per_shard_read: Between<f64>,
    /// p_n model.
    pub gpu: GpuModel,
    /// Compression states.
    pub states: StateRates,
}

crate::named! {
    /// The generator presets.
    pub enum Preset: "preset" {
        /// 1-3 experts, N = 1, K <= 2, L <= 2: exhaustive search and the MILP
        Tiny,
        /// 2-5 experts, N = 1, K = 2, L = 2: within the MILP's limits
        Small,
        /// Qwen1.5-MoE-A2.7B on a Jetson AGX Orin, batch 16
        QwenOrin,
        /// DeepSeek-V2-Lite on a Jetson AGX Orin, batch 16
        DeepseekOrin,
        /// switch-large-128 on a Jetson AGX Orin, batch 16
        SwitchOrin,
    }
}

/// SSD read bandwidth of the testbeds, bytes/s (Sec. 5).
pub const SSD_BYTES_PER_S: f64 = 3.5e9;
/// rho from Fig. 3's ZSTD ratio (module doc).
pub const ORIN_RHO: f64 = 0.36;

/// The Orin device constants for a model with `tensors` tensors of `sm_bytes`-byte SM-chunks.
pub fn orin_device(tensors: u32, sm_bytes: f64) -> Device {
    let u = sm_bytes / SSD_BYTES_PER_S;
    let shards = 4;
    Device {
        tensors_per_expert: tensors,
        shards,
        threads: 8,
        compression_ratio: ORIN_RHO,
        sm_read_s: u,
        decompress_s: 2.5 * u / f64::from(shards),
        gpu: GpuModel {
            base_s: 85e-6,
            per_token_s: 1e-6,
        },
    }
}

/// Cache hit rates of the device presets (an assumption, module doc).
pub const DEVICE_RATES: StateRates = StateRates {
    full: 0.2,
    compressed: 0.1,
    sm_cached: 0.2,
    e_cached: 0.1,
};

impl GeneratorConfig {
    /// A preset's configuration.
    pub fn preset(p: Preset) -> Self {
        let synthetic =
            |experts: u32, tokens: Between<u32>, shards: Between<u32>| GeneratorConfig {
                layer_experts: experts,
                top_k: 1,
                batch_tokens: tokens,
                tensors_per_expert: 1,
                shards,
                threads: Between { min: 1, max: 2 },
                compression_ratio: Between { min: 0.3, max: 0.7 },
                sm_read_s: Between { min: 1.0, max: 2.0 },
                decompress_per_shard_read: Between { min: 1.0, max: 3.0 },
                gpu: GpuModel {
                    base_s: 0.5,
                    per_token_s: 0.5,
                },
                states: StateRates {
                    full: 0.1,
                    compressed: 0.15,
                    sm_cached: 0.25,
                    e_cached: 0.2,
                },
            };
        let device = |d: Device, experts: u32, top_k: u32| GeneratorConfig {
            layer_experts: experts,
            top_k,
            batch_tokens: Between::exactly(16),
            tensors_per_expert: d.tensors_per_expert,
            shards: Between::exactly(d.shards),
            threads: Between::exactly(d.threads),
            compression_ratio: Between::exactly(d.compression_ratio),
            sm_read_s: Between::exactly(d.sm_read_s),
            decompress_per_shard_read: Between::exactly(2.5),
            gpu: d.gpu,
            states: DEVICE_RATES,
        };
        match p {
            Preset::Tiny => synthetic(3, Between { min: 1, max: 4 }, Between { min: 1, max: 2 }),
            Preset::Small => {
                let mut c = synthetic(6, Between { min: 2, max: 6 }, Between::exactly(2));
                c.threads = Between::exactly(2);
                c
            }
            Preset::QwenOrin => device(orin_device(3, 2048.0 * 1408.0), 60, 4),
            Preset::DeepseekOrin => device(orin_device(3, 2048.0 * 1408.0), 64, 6),
            Preset::SwitchOrin => device(orin_device(2, 1024.0 * 4096.0), 128, 1),
        }
    }

    /// Checks the configuration; errors name the field.
    pub fn check(&self) -> Result<(), Error> {
        if self.layer_experts == 0 || self.top_k == 0 || self.top_k > self.layer_experts {
            return Err(config_error(
                "top_k",
                format!(
                    "need 1 <= top_k <= layer_experts, got {} and {}",
                    self.top_k, self.layer_experts
                ),
            ));
        }
        let ranges_u32 = [
            ("batch_tokens", self.batch_tokens),
            ("shards", self.shards),
            ("threads", self.threads),
        ];
        for (name, r) in ranges_u32 {
            if r.min == 0 || r.min > r.max {
                return Err(config_error(
                    name,
                    format!("need 1 <= min <= max, got {r:?}"),
                ));
            }
        }
        let ranges_f64 = [
            ("compression_ratio", self.compression_ratio),
            ("sm_read_s", self.sm_read_s),
            ("decompress_per_shard_read", self.decompress_per_shard_read),
        ];
        for (name, r) in ranges_f64 {
            if !(r.min.is_finite() && r.max.is_finite() && r.min > 0.0 && r.min <= r.max) {
                return Err(config_error(
                    name,
                    format!("need 0 < min <= max, finite, got {r:?}"),
                ));
            }
        }
        // The layer's own limits, at the largest draws (formulations::zipmoe::validate).
        use formulations::zipmoe::validate as v;
        let knobs = Knobs(CONFIG_PATH);
        let limits = [
            (
                "layer_experts",
                "experts",
                self.layer_experts.into(),
                v::MAX_EXPERTS as u64,
                "MAX_EXPERTS",
            ),
            (
                "tensors_per_expert",
                "tensors",
                self.tensors_per_expert.into(),
                v::MAX_TENSORS.into(),
                "MAX_TENSORS",
            ),
            (
                "shards.max",
                "shards",
                self.shards.max.into(),
                v::MAX_SHARDS.into(),
                "MAX_SHARDS",
            ),
            (
                "threads.max",
                "threads",
                self.threads.max.into(),
                v::MAX_THREADS.into(),
                "MAX_THREADS",
            ),
        ];
        for (field, what, value, limit, name) in limits {
            knobs.at_most(
                field,
                what,
                value,
                limit,
                &format!("formulations::zipmoe::validate::{name}"),
            )?;
        }
        // Each factor is bounded by now (2^12 x 2^6 x 2^8).
        knobs.at_most(
            "shards.max",
            "shard operations (layer_experts x tensors_per_expert x shards)",
            u64::from(self.layer_experts)
                * u64::from(self.tensors_per_expert)
                * u64::from(self.shards.max),
            v::MAX_SHARD_OPS,
            "formulations::zipmoe::validate::MAX_SHARD_OPS",
        )?;
        knobs.at_most(
            "batch_tokens.max",
            "tokens",
            self.batch_tokens.max.into(),
            MAX_BATCH_TOKENS,
            "moe_opt::zipmoe::generate::MAX_BATCH_TOKENS",
        )?;
        let g = self.gpu;
        if !(g.base_s >= 0.0 && g.per_token_s >= 0.0 && (g.base_s + g.per_token_s).is_finite()) {
            return Err(config_error("gpu", "times must be finite and >= 0"));
        }
        self.states.check("states")
    }
}

/// Most tokens of a batch (`batch_tokens.max`): each draws its top-k experts.
pub const MAX_BATCH_TOKENS: u64 = 1 << 20;

fn draw_f64(rng: &mut ChaCha8Rng, r: Between<f64>) -> f64 {
    if r.min == r.max {
        r.min
    } else {
        rng.random_range(r.min..=r.max)
    }
}

/// Draws one layer; the same config and seed give the same instance.
pub fn try_generate(config: &GeneratorConfig, seed: u64) -> Result<Instance, Error> {
    config.check()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tokens = config.batch_tokens.draw(&mut rng);
    let mut counts = vec![0u32; config.layer_experts as usize];
    for _ in 0..tokens {
        let chosen = rand::seq::index::sample(
            &mut rng,
            config.layer_experts as usize,
            config.top_k as usize,
        );
        for e in chosen {
            counts[e] += 1;
        }
    }
    let shards = config.shards.draw(&mut rng);
    let threads = config.threads.draw(&mut rng);
    let rho = draw_f64(&mut rng, config.compression_ratio);
    let u = draw_f64(&mut rng, config.sm_read_s);
    let c = draw_f64(&mut rng, config.decompress_per_shard_read) * u / f64::from(shards);
    let device = Device {
        tensors_per_expert: config.tensors_per_expert,
        shards,
        threads,
        compression_ratio: rho,
        sm_read_s: u,
        decompress_s: c,
        gpu: config.gpu,
    };
    let instance = build(
        format!("seed-{seed}"),
        &device,
        &counts,
        &config.states,
        &mut rng,
    );
    validate(&instance).map_err(|e| e.in_file("<generated>"))?;
    Ok(instance)
}

/// [`try_generate`] for configurations known to be valid (presets).
pub fn generate(config: &GeneratorConfig, seed: u64) -> Instance {
    try_generate(config, seed).expect("preset configurations are valid")
}

/// The layer of the experts with a positive count (ids = positions in `counts`).
fn build(
    name: String,
    d: &Device,
    counts: &[u32],
    states: &StateRates,
    rng: &mut ChaCha8Rng,
) -> Instance {
    let experts = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(id, &tokens)| SelectedExpert {
            id: id as u32,
            tokens,
            gpu_s: d.gpu.time(tokens),
            state: states.draw(rng),
        })
        .collect();
    Instance {
        problem: ProblemKind::Zipmoe,
        name,
        tensors_per_expert: d.tensors_per_expert,
        shards: d.shards,
        compression_ratio: d.compression_ratio,
        sm_read_s: d.sm_read_s,
        decompress_s: d.decompress_s,
        threads: d.threads,
        experts,
    }
}

/// The activation-count files of ../shared/data/activation-counts (README there) that the
/// papers' scale draws its layers from, with the device preset of each model.
pub const SHARED_COUNTS: [(&str, Preset); 3] = [
    ("qwen.json.gz", Preset::QwenOrin),
    ("deepseek.json.gz", Preset::DeepseekOrin),
    ("switch.json.gz", Preset::SwitchOrin),
];

/// The counts file `SHARED_COUNTS[index]`, read once per process; `None` when the shared data
/// folder is absent or the file does not read (a user's machine: callers fall back).
pub fn shared_counts(index: usize) -> Option<&'static crate::counts::ActivationCounts> {
    use std::sync::OnceLock;
    static FILES: [OnceLock<Option<crate::counts::ActivationCounts>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let (file, _) = SHARED_COUNTS.get(index)?;
    FILES[index]
        .get_or_init(|| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/data/activation-counts")
                .join(file);
            crate::counts::read(&path, &Header::default()).ok()
        })
        .as_ref()
}

/// Most tokens one expert may have at the papers' scale (the `selected-experts` premise:
/// decoding batches of at most 16 tokens).
pub const PAPER_MAX_EXPERT_TOKENS: u64 = 16;

/// A real layer at the papers' scale: model `SHARED_COUNTS[seed % 3]`; with r = seed / 3 drawn
/// by ChaCha8(seed): a MoE layer (one with a routed token) uniformly, then the first prompt
/// from a uniform start (cyclically) whose row at that layer routes a token and gives no
/// expert more than [`PAPER_MAX_EXPERT_TOKENS`] tokens (a prompt has about 20 tokens, and the
/// paper's batches have at most 16); the model's Orin device and [`DEVICE_RATES`] states. When
/// the file is absent, or no prompt qualifies, the model's device preset at `seed` (uniform
/// routing of 16 tokens), named so.
pub fn paper_layer(seed: u64) -> Instance {
    let (_, preset) = SHARED_COUNTS[(seed % 3) as usize];
    let fallback = |why: &str| {
        let mut i = generate(&GeneratorConfig::preset(preset), seed);
        i.name = format!("{} seed {seed} ({why})", preset.name());
        i
    };
    let Some(counts) = shared_counts((seed % 3) as usize) else {
        return fallback("no shared counts file");
    };
    let Some(device) = device_for_model(&counts.model) else {
        return fallback("unknown model");
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let moe_layers: Vec<usize> = (0..counts.layers)
        .filter(|&l| counts.counts.iter().any(|p| p[l].iter().any(|&c| c > 0)))
        .collect();
    if moe_layers.is_empty() {
        return fallback("no MoE layer");
    }
    let layer = moe_layers[rng.random_range(0..moe_layers.len())];
    let start = rng.random_range(0..counts.prompts);
    let prompt = (0..counts.prompts)
        .map(|i| (start + i) % counts.prompts)
        .find(|&p| {
            let row = &counts.counts[p][layer];
            row.iter().any(|&c| c > 0) && row.iter().all(|&c| c <= PAPER_MAX_EXPERT_TOKENS)
        });
    let Some(prompt) = prompt else {
        return fallback("no prompt within the token limit");
    };
    let row: Vec<u32> = counts.counts[prompt][layer]
        .iter()
        .map(|&c| c as u32)
        .collect();
    build(
        format!("{} layer {layer} prompt {prompt}", counts.model),
        &device,
        &row,
        &DEVICE_RATES,
        &mut rng,
    )
}

/// What [`import`] needs besides the counts file. Every field has a default, so an import
/// needs no configuration; a configuration file gives any subset of the fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImportConfig {
    /// Prompts whose counts are summed (a batch); indices into `counts`. Default `[0]`: one
    /// prompt, about 20 tokens (../shared/data/README.md), near the device presets' batch of
    /// 16 tokens.
    pub prompts: Vec<usize>,
    /// MoE layer index. Default (null): the first layer at which the prompts route a token
    /// (DeepSeek-V2-Lite's layer 0 is dense).
    pub layer: Option<usize>,
    /// Device constants. Default (null): the Jetson AGX Orin device of the counts file's
    /// `model` ([`device_for_model`]: Qwen and DeepSeek as the `qwen-orin` and
    /// `deepseek-orin` presets, Switch as `switch-orin`); required for other models.
    pub device: Option<Device>,
    /// Cache hit rates the states are drawn from. Default: the device presets'
    /// ([`DEVICE_RATES`]).
    pub states: StateRates,
    /// Seed of the state draws. Default 0.
    pub seed: u64,
}

impl Default for ImportConfig {
    fn default() -> Self {
        ImportConfig {
            prompts: vec![0],
            layer: None,
            device: None,
            states: DEVICE_RATES,
            seed: 0,
        }
    }
}

/// `--seed` overrides the seed of the state draws.
impl crate::registry::CountsConfig for ImportConfig {
    fn seed_mut(&mut self) -> Option<&mut u64> {
        Some(&mut self.seed)
    }
}

/// The device of a counts file's model (by its `model` field), if it is one of the presets'.
pub fn device_for_model(model: &str) -> Option<Device> {
    let m = model.to_ascii_lowercase();
    if m.contains("qwen") || m.contains("deepseek") {
        Some(orin_device(3, 2048.0 * 1408.0))
    } else if m.contains("switch") {
        Some(orin_device(2, 1024.0 * 4096.0))
    } else {
        None
    }
}

/// One layer of a real batch: the experts the listed prompts route tokens to at the layer,
/// with their summed token counts, p_n from the device's GPU model, states drawn from the hit
/// rates (defaults: [`ImportConfig`]).
pub fn import(path: &Path, header: &Header, config: &ImportConfig) -> Result<Instance, Error> {
    config.states.check("states")?;
    let crate::counts::ActivationCounts { model, counts, .. } = crate::counts::read(path, header)?;
    let bad = |field: String, reason: String| Error::Invalid {
        path: path.to_path_buf(),
        field,
        reason,
    };
    if config.prompts.is_empty() {
        // The configuration's fault (named by the command as its --config file).
        return Err(config_error("prompts", "at least one prompt is required"));
    }
    let device = match config.device {
        Some(d) => d,
        None => device_for_model(&model).ok_or_else(|| {
            bad(
                "device".into(),
                crate::counts::unknown_model(
                    &model,
                    "`device` in the import configuration (presets: Qwen, DeepSeek, Switch)",
                ),
            )
        })?,
    };
    let mut rows = Vec::with_capacity(config.prompts.len());
    for &p in &config.prompts {
        let prompt = counts.get(p).ok_or_else(|| {
            bad(
                format!("counts[{p}]"),
                format!("prompt {p} does not exist ({} prompts)", counts.len()),
            )
        })?;
        rows.push((p, prompt));
    }
    let layer = match config.layer {
        Some(l) => l,
        None => (0..rows.iter().map(|(_, r)| r.len()).min().unwrap_or(0))
            .find(|&l| rows.iter().any(|(_, r)| r[l].iter().any(|&c| c > 0)))
            .ok_or_else(|| {
                bad(
                    "layer".into(),
                    format!(
                        "the prompts {:?} route no token at any layer",
                        config.prompts
                    ),
                )
            })?,
    };
    let mut sum: Vec<u64> = Vec::new();
    for (p, prompt) in rows {
        let row = prompt.get(layer).ok_or_else(|| {
            bad(
                format!("counts[{p}][{layer}]"),
                format!("layer {layer} does not exist ({} layers)", prompt.len()),
            )
        })?;
        if sum.is_empty() {
            sum = vec![0; row.len()];
        }
        if row.len() != sum.len() {
            return Err(bad(
                format!("counts[{p}][{layer}]"),
                "rows of different lengths".into(),
            ));
        }
        for (s, c) in sum.iter_mut().zip(row) {
            *s += c;
        }
    }
    if sum.iter().all(|&c| c == 0) {
        return Err(bad(
            format!("counts[..][{layer}]"),
            "no expert is selected at this layer (a dense layer?)".into(),
        ));
    }
    let sum: Vec<u32> = sum
        .iter()
        .map(|&c| u32::try_from(c))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            bad(
                format!("counts[..][{layer}]"),
                "an expert's summed count exceeds 2^32 - 1".into(),
            )
        })?;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let instance = build(
        format!("{model} layer {layer} prompts {:?}", config.prompts),
        &device,
        &sum,
        &config.states,
        &mut rng,
    );
    validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
