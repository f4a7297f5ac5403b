//! What the command line calls for cache traces: generate, import (token logs and activation
//! counts), replay (one policy or all, per-layer caches or a pool) and calibrate. Every
//! function returns a `Serialize` report (stable field names, units in the names, the moe-opt
//! version and the trace's canonical SHA-256) with a `text()` rendering for humans.

use std::fmt::Write;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use formulations::cache::binary::{self, Bytes, Packed};
use formulations::cache::model::Trace;
use formulations::Error;
use serde::Serialize;

use super::fast::replay_packed;
use super::generate::{generate as generate_trace, GeneratorConfig, Locality, Preset};
use super::import::{self, FrequencyWarmStart, ImportOptions, TraceFile, TraceFormat};
use super::libcachesim::{self, Shape};
use super::mrc::{mrc, Mrc};
use super::policies::{PolicySpec, Scope, TraceReplay};
use super::policy::CacheStats;
use super::stats::{
    calibrate as calibrate_knobs, trace_stats, CalibrationGrid, CalibrationPoint, TraceStats,
};
use crate::render::table;
use crate::report::{bytes_sha256, canonical_sha256, VERSION};

/// Identity and shape of a trace (every report on a trace carries one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInfo {
    /// The trace's `name`.
    pub name: String,
    /// The trace's `model`.
    pub model: String,
    /// SHA-256 of the trace's canonical JSON, or of the file's bytes for a binary trace.
    pub sha256: String,
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// Shared experts per layer.
    pub shared_experts: usize,
    /// MoE layers.
    pub layers: usize,
    /// Tokens.
    pub tokens: usize,
    /// Whether experts are in rank order.
    pub ranked: bool,
    /// Whether every routing has logits (needed by smoe-window and the cache-aware routers).
    pub has_logits: bool,
    /// Whether every routing has weights or logits.
    pub has_weights: bool,
}

impl TraceInfo {
    /// Describes a trace.
    pub fn new(trace: &Trace) -> Self {
        TraceInfo {
            name: trace.name.clone(),
            model: trace.model.clone(),
            sha256: canonical_sha256(trace),
            experts: trace.experts,
            top_k: trace.top_k,
            shared_experts: trace.shared_experts,
            layers: trace.layers,
            tokens: trace.tokens.len(),
            ranked: trace.ranked,
            has_logits: trace.has_logits(),
            has_weights: trace.has_weights(),
        }
    }

    /// Describes a trace held in columns whose hash is `sha256` (a binary trace's: that of
    /// its bytes).
    pub fn of_packed(packed: &Packed, sha256: String) -> Self {
        TraceInfo {
            name: packed.name.clone(),
            model: packed.model.clone(),
            sha256,
            experts: packed.experts,
            top_k: packed.top_k,
            shared_experts: packed.shared_experts,
            layers: packed.layers,
            tokens: packed.tokens,
            ranked: packed.ranked,
            has_logits: packed.has_logits(),
            has_weights: packed.has_weights(),
        }
    }

    /// The hash of a file's bytes in place of the canonical one, where it has one (a binary
    /// trace, [`TraceFile::into_trace`]).
    pub fn stamp(&mut self, sha256: Option<String>) {
        if let Some(sha) = sha256 {
            self.sha256 = sha;
        }
    }

    /// The CSV context columns every table on the trace starts with.
    pub fn context<'a>(&self) -> Vec<(&'a str, serde_json::Value)> {
        vec![
            ("moe_opt_version", VERSION.into()),
            ("trace_name", self.name.clone().into()),
            ("trace_sha256", self.sha256.clone().into()),
        ]
    }

    /// The two lines a report's text opens with: the trace's shape, then its hash.
    pub(crate) fn text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "trace {} ({}): E = {}{}, K = {}, {} layers, {} tokens, {}{}",
            self.name,
            self.model,
            self.experts,
            if self.shared_experts > 0 {
                format!(" + {} shared", self.shared_experts)
            } else {
                String::new()
            },
            self.top_k,
            self.layers,
            self.tokens,
            if self.ranked { "ranked" } else { "rank lost" },
            if self.has_logits {
                ", logits"
            } else if self.has_weights {
                ", weights"
            } else {
                ", no weights"
            }
        );
        let _ = writeln!(out, "sha256 {}", self.sha256);
    }
}

fn stats_text(s: &TraceStats, out: &mut String) {
    let _ = writeln!(
        out,
        "next-token expert overlap {:.4}; LRU miss rate at C = {} (E/2): {:.4}",
        s.next_token_overlap, s.half_capacity, s.lru_miss_rate_half
    );
}

/// The report of `generate`.
#[derive(Debug, Clone, Serialize)]
pub struct GenerateReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The preset, if one was used.
    pub preset: Option<Preset>,
    /// The seed.
    pub seed: u64,
    /// The full configuration used.
    pub config: GeneratorConfig,
    /// The generated trace's identity.
    pub trace: TraceInfo,
    /// Its locality statistics.
    pub stats: TraceStats,
}

impl GenerateReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "generated {} seed {} (rho {}, omega {}, beta {})",
            self.preset
                .map_or("config".to_string(), |p| format!("preset {p}")),
            self.seed,
            self.config.persistence,
            self.config.topic_weight,
            self.config.popularity_skew
        );
        self.trace.text(&mut out);
        stats_text(&self.stats, &mut out);
        out
    }
}

/// A generated trace and its report.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The trace (the CLI writes it to a file).
    pub trace: Trace,
    /// The report.
    pub report: GenerateReport,
}

/// Generates from a preset; `tokens`, `layers` and `sequences` override the preset's
/// tokens per sequence, MoE layers and sequences.
pub fn generate(
    preset: Preset,
    seed: u64,
    tokens: Option<usize>,
    layers: Option<usize>,
    sequences: Option<usize>,
) -> Result<Generated, Error> {
    let mut config = GeneratorConfig::preset(preset);
    if let Some(t) = tokens {
        config.tokens_per_sequence = t;
    }
    if let Some(l) = layers {
        config.layers = l;
    }
    if let Some(s) = sequences {
        config.sequences = s;
    }
    generate_from(&config, Some(preset), seed)
}

/// Generates from a full configuration.
pub fn generate_from(
    config: &GeneratorConfig,
    preset: Option<Preset>,
    seed: u64,
) -> Result<Generated, Error> {
    let trace = generate_trace(config, seed)?;
    let report = GenerateReport {
        moe_opt_version: VERSION,
        preset,
        seed,
        config: config.clone(),
        trace: TraceInfo::new(&trace),
        stats: trace_stats(&trace),
    };
    Ok(Generated { trace, report })
}

/// The report of importing a token log.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The file read.
    pub source: String,
    /// The imported trace.
    pub trace: TraceInfo,
    /// Its locality statistics.
    pub stats: TraceStats,
    /// What the trace can drive, in words (weight-free policies only without logits).
    pub usable_for: String,
}

impl ImportReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = format!("imported {}\n", self.source);
        self.trace.text(&mut out);
        stats_text(&self.stats, &mut out);
        let _ = writeln!(out, "{}", self.usable_for);
        out
    }
}

/// An imported trace and its report.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The trace.
    pub trace: Trace,
    /// The report.
    pub report: ImportReport,
}

fn usable_for(trace: &Trace) -> String {
    if trace.has_logits() {
        "usable with every policy and router".into()
    } else {
        "no logits: replays under weight-free policies only (lru, lfu, fifo, zipmoe-freq, \
         belady); smoe-window and the cache-aware routers need logits (generated traces)"
            .into()
    }
}

/// Imports a token log (JSON Lines, gzip or plain).
pub fn import_token_log(path: &Path, options: &ImportOptions) -> Result<Imported, Error> {
    imported(path, import::import_token_log(path, options)?)
}

/// Imports a libCacheSim trace (oracleGeneral or csv).
pub fn import_libcachesim(path: &Path, shape: Shape) -> Result<Imported, Error> {
    imported(path, libcachesim::import(path, shape)?)
}

/// Reads a cache-trace file, JSON or binary, to be written again (`import cache-trace
/// --trace`).
pub fn import_trace(path: &Path) -> Result<Imported, Error> {
    let trace = match import::read_trace(path, &ImportOptions::default())? {
        TraceFile::Json(trace) => trace,
        TraceFile::Binary { packed, .. } => packed.to_trace(),
    };
    imported(path, trace)
}

impl Imported {
    /// The file to write in `format`, and the report's text for stderr, whose hash is the
    /// written file's (a binary trace's bytes, a JSON trace's canonical JSON).
    pub fn write(mut self, format: TraceFormat) -> (Vec<u8>, String) {
        let bytes = match format {
            TraceFormat::Json => {
                { serde_json::to_string_pretty(&self.trace).expect("traces serialise") + "\n" }
                    .into_bytes()
            }
            TraceFormat::Bin => {
                let bytes = Packed::from_trace(&self.trace).encode();
                self.report.trace.sha256 = bytes_sha256(&bytes);
                bytes
            }
        };
        (bytes, self.report.text().trim_end().to_string())
    }
}

fn imported(path: &Path, trace: Trace) -> Result<Imported, Error> {
    let report = ImportReport {
        moe_opt_version: VERSION,
        source: path.display().to_string(),
        trace: TraceInfo::new(&trace),
        stats: trace_stats(&trace),
        usable_for: usable_for(&trace),
    };
    Ok(Imported { trace, report })
}

/// The report of importing an activation-count file.
#[derive(Debug, Clone, Serialize)]
pub struct CountsReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The file read.
    pub source: String,
    /// SHA-256 of the warm start's canonical JSON.
    pub sha256: String,
    /// The per-layer totals (the LFU warm start).
    pub warm_start: FrequencyWarmStart,
    /// Per MoE layer: share of all activations taken by the E/2 most activated experts.
    pub top_half_share: Vec<f64>,
    /// Why it cannot be replayed.
    pub note: String,
}

impl CountsReport {
    /// For humans.
    pub fn text(&self) -> String {
        let w = &self.warm_start;
        let mut out = format!(
            "activation counts {} ({}): E = {}, K = {}, {} MoE layers{}\n",
            self.source,
            w.model,
            w.experts,
            w.top_k,
            w.counts.len(),
            if w.dropped_layers.is_empty() {
                String::new()
            } else {
                format!(" (dense file layers dropped: {:?})", w.dropped_layers)
            }
        );
        let _ = writeln!(out, "sha256 {}", self.sha256);
        let mean =
            self.top_half_share.iter().sum::<f64>() / self.top_half_share.len().max(1) as f64;
        let _ = writeln!(
            out,
            "the E/2 most activated experts take {:.1}% of activations (mean over layers)",
            100.0 * mean
        );
        let _ = writeln!(out, "{}", self.note);
        out
    }
}

/// Imports an activation-count file as a frequency warm start.
pub fn import_counts(path: &Path) -> Result<CountsReport, Error> {
    let warm_start = import::import_counts(path)?;
    let top_half_share = warm_start
        .counts
        .iter()
        .map(|row| {
            let mut r = row.clone();
            r.sort_unstable_by(|a, b| b.cmp(a));
            let total: u64 = r.iter().sum();
            let top: u64 = r[..r.len() / 2].iter().sum();
            if total == 0 {
                0.0
            } else {
                top as f64 / total as f64
            }
        })
        .collect();
    Ok(CountsReport {
        moe_opt_version: VERSION,
        source: path.display().to_string(),
        sha256: canonical_sha256(&warm_start),
        warm_start,
        top_half_share,
        note: "no token order: usable as an LFU warm start, not for replay".into(),
    })
}

/// A policy left out of `all`.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The policy.
    pub policy: PolicySpec,
    /// Why.
    pub reason: String,
}

/// The report of `replay`.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace replayed.
    pub trace: TraceInfo,
    /// Per-layer caches or a pool.
    pub scope: Scope,
    /// C (per layer, or of the pool).
    pub capacity: usize,
    /// Model of the LFU warm start, if any.
    pub warm_start: Option<String>,
    /// One replay per policy, in the order asked.
    pub results: Vec<TraceReplay>,
    /// Policies of `all` that could not run on this trace.
    pub skipped: Vec<Skipped>,
}

impl ReplayReport {
    /// For humans: per policy the total miss rate, loads and lifetime, then the per-layer
    /// miss rates.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.trace.text(&mut out);
        let _ = writeln!(
            out,
            "{}, C = {}{}",
            self.scope.caches(),
            self.capacity,
            self.warm_start
                .as_ref()
                .map_or(String::new(), |m| format!(", LFU warm start from {m}"))
        );
        let totals: Vec<Vec<String>> = self
            .results
            .iter()
            .map(|r| {
                vec![
                    r.policy.to_string(),
                    format!("{:.4}", r.total.miss_rate),
                    r.total.loads.to_string(),
                    r.total.requests.to_string(),
                    lifetime(&r.total),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "policy",
                "miss rate",
                "loads",
                "requests",
                "lifetime (steps)",
            ],
            &totals,
            1,
        ));
        // Layers as rows, policies as columns: a model has tens of layers, a replay few policies.
        if let Some(first) = self.results.first() {
            let names: Vec<String> = self.results.iter().map(|r| r.policy.to_string()).collect();
            let headers: Vec<&str> = std::iter::once("layer")
                .chain(names.iter().map(String::as_str))
                .collect();
            let rows: Vec<Vec<String>> = (0..first.layers.len())
                .map(|i| {
                    std::iter::once(first.layers[i].layer.to_string())
                        .chain(
                            self.results
                                .iter()
                                .map(|r| format!("{:.3}", r.layers[i].miss_rate)),
                        )
                        .collect()
                })
                .collect();
            out.push_str("per-layer miss rate:\n");
            out.push_str(&table(&headers, &rows, 1));
        }
        for s in &self.skipped {
            let _ = writeln!(out, "skipped {}: {}", s.policy, s.reason);
        }
        out
    }
}

/// A cache's mean residency and its standard deviation, in steps.
pub(crate) fn lifetime(s: &CacheStats) -> String {
    format!("{:.1} ± {:.1}", s.lifetime_mean_steps, s.lifetime_std_steps)
}

/// Which policies to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyChoice {
    /// These, each of which must be able to run on the trace.
    These(Vec<PolicySpec>),
    /// Every policy of [`PolicySpec::all`] that can run on the trace (the others are listed
    /// as skipped).
    All,
}

/// Replays a trace under its original routing.
pub fn replay(
    trace: &Trace,
    capacity: usize,
    policies: &PolicyChoice,
    scope: Scope,
    warm_start: Option<&FrequencyWarmStart>,
) -> Result<ReplayReport, Error> {
    let packed = Packed::from_trace(trace);
    replay_columns(
        &packed,
        TraceInfo::new(trace),
        capacity,
        policies,
        scope,
        warm_start,
    )
}

/// Replays a trace held in columns, described by `info` ([`super::fast`]).
pub fn replay_columns(
    packed: &Packed,
    info: TraceInfo,
    capacity: usize,
    policies: &PolicyChoice,
    scope: Scope,
    warm_start: Option<&FrequencyWarmStart>,
) -> Result<ReplayReport, Error> {
    let mut skipped = Vec::new();
    let list = match policies {
        PolicyChoice::These(p) => p.clone(),
        PolicyChoice::All => PolicySpec::all()
            .into_iter()
            .filter(|p| {
                let ok = !p.needs_scores() || info.has_logits;
                if !ok {
                    skipped.push(Skipped {
                        policy: *p,
                        reason: "needs router scores over all experts; the trace has no logits"
                            .into(),
                    });
                }
                ok
            })
            .collect(),
    };
    let results = list
        .iter()
        .map(|&p| replay_packed(packed, p, capacity, scope, warm_start))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReplayReport {
        moe_opt_version: VERSION,
        trace: info,
        scope,
        capacity,
        warm_start: warm_start.map(|w| w.model.clone()),
        results,
        skipped,
    })
}

/// Replays a file: a binary trace, a token log, or a cache-trace JSON; an activation-count
/// file is refused (no token order). `warm_start` is an optional activation-count file for
/// LFU. A binary trace is replayed as read, without building the JSON model's tokens.
pub fn replay_file(
    path: &Path,
    options: &ImportOptions,
    capacity: usize,
    policies: &PolicyChoice,
    scope: Scope,
    warm_start: Option<&Path>,
) -> Result<ReplayReport, Error> {
    if let Some(bytes) = read_binary(path)? {
        return replay_binary(path, bytes, capacity, policies, scope, warm_start);
    }
    let (packed, info) = match import::read_trace(path, options)? {
        TraceFile::Json(trace) => (Packed::from_trace(&trace), TraceInfo::new(&trace)),
        TraceFile::Binary { packed, sha256 } => {
            let info = TraceInfo::of_packed(&packed, sha256);
            (packed, info)
        }
    };
    let warm = warm_start.map(import::import_counts).transpose()?;
    replay_columns(&packed, info, capacity, policies, scope, warm.as_ref())
        .map_err(|e| e.with_file(path))
}

/// The bytes of the file at `path` when it starts like a binary trace, mapped (read where
/// the file cannot be mapped); `None` when it does not or cannot be read that far
/// ([`import::read_trace`] then reads it and names the error).
fn read_binary(path: &Path) -> Result<Option<Bytes>, Error> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(None);
    };
    let mut head = [0; binary::MAGIC.len()];
    if file.read_exact(&mut head).is_err() || !binary::is_binary(&head) {
        return Ok(None);
    }
    if let Ok(bytes) = Bytes::map(&file) {
        return Ok(Some(bytes));
    }
    let size = file.metadata().map_or(0, |m| m.len() as usize);
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(&head);
    file.read_to_end(&mut bytes).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Some(Bytes::Owned(bytes)))
}

/// [`replay_file`] of a binary trace's `bytes`: their SHA-256 is computed on a second thread
/// while the trace is decoded and replayed, so on a machine of two cores the hash costs no
/// wall time, and the ids are replayed where they lie ([`Packed::decode_shared`]); the
/// report is the same.
fn replay_binary(
    path: &Path,
    bytes: Bytes,
    capacity: usize,
    policies: &PolicyChoice,
    scope: Scope,
    warm_start: Option<&Path>,
) -> Result<ReplayReport, Error> {
    let (mut report, sha256) = on_columns(path, bytes, |packed| {
        let warm = warm_start.map(import::import_counts).transpose()?;
        let info = TraceInfo::of_packed(packed, String::new());
        replay_columns(packed, info, capacity, policies, scope, warm.as_ref())
    })?;
    report.trace.sha256 = sha256;
    Ok(report)
}

/// `f` on a mapped binary trace's columns, and the SHA-256 of its bytes, hashed on a second
/// thread meanwhile (`replay`, `mrc`).
fn on_columns<T: Send>(
    path: &Path,
    bytes: Bytes,
    f: impl FnOnce(&Packed) -> Result<T, Error>,
) -> Result<(T, String), Error> {
    let bytes = Arc::new(bytes);
    std::thread::scope(|s| {
        let sha256 = s.spawn(|| bytes_sha256(&bytes));
        let packed = Packed::decode_shared(path, &bytes)?;
        let out = f(&packed).map_err(|e| e.with_file(path))?;
        let sha256 = sha256
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((out, sha256))
    })
}

/// The libCacheSim records of the trace in `path` (`moe-opt export`): a binary trace's id
/// column as mapped (no tokens built), any other trace through the JSON model.
pub fn export_records(
    path: &Path,
    options: &ImportOptions,
    layer: Option<usize>,
    object_size: u32,
) -> Result<Vec<libcachesim::Record>, Error> {
    if let Some(bytes) = read_binary(path)? {
        let packed = Packed::decode_shared(path, &Arc::new(bytes))?;
        return libcachesim::records(&packed, layer, object_size);
    }
    let (trace, _) = import::read_trace(path, options)?.into_trace();
    libcachesim::records(&trace, layer, object_size)
}

/// The report of `mrc`.
#[derive(Debug, Clone, Serialize)]
pub struct MrcReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace walked.
    pub trace: TraceInfo,
    /// The curves.
    #[serde(flatten)]
    pub mrc: Mrc,
}

/// Most capacities the text shows; `--json` and `--csv` hold them all.
const MRC_TEXT_ROWS: usize = 32;

impl MrcReport {
    /// For humans: the miss rate and loads of each policy at each capacity (every n-th one
    /// when there are many, and the last).
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.trace.text(&mut out);
        let caps = &self.mrc.capacities;
        let every = caps.len().div_ceil(MRC_TEXT_ROWS).max(1);
        let _ = writeln!(
            out,
            "{}, {} requests, C = {}..={} in one pass{}",
            self.mrc.scope.caches(),
            self.mrc.requests,
            caps.first().unwrap_or(&0),
            caps.last().unwrap_or(&0),
            if every > 1 {
                format!(" (one capacity in {every} shown, and the last; --json and --csv hold all)")
            } else {
                String::new()
            }
        );
        let names: Vec<String> = (self.mrc.curves.iter())
            .flat_map(|c| {
                [
                    format!("{} miss rate", c.policy),
                    format!("{} loads", c.policy),
                ]
            })
            .collect();
        let headers: Vec<&str> = std::iter::once("C")
            .chain(names.iter().map(String::as_str))
            .collect();
        let shown = (0..caps.len()).filter(|i| i % every == 0 || i + 1 == caps.len());
        let rows: Vec<Vec<String>> =
            shown
                .map(|i| {
                    std::iter::once(caps[i].to_string())
                        .chain(self.mrc.curves.iter().flat_map(|c| {
                            [format!("{:.4}", c.miss_rate[i]), c.loads[i].to_string()]
                        }))
                        .collect()
                })
                .collect();
        out.push_str(&table(&headers, &rows, 1));
        out
    }
}

/// The miss-ratio curves of a file: a binary trace, a token log, or a cache-trace JSON. A
/// binary trace is walked from its id column as mapped, as [`replay_file`] does, without
/// building the JSON model's tokens; the report is the same.
pub fn mrc_file(
    path: &Path,
    options: &ImportOptions,
    policies: &[PolicySpec],
    scope: Scope,
) -> Result<MrcReport, Error> {
    if let Some(bytes) = read_binary(path)? {
        let ((mrc, info), sha256) = on_columns(path, bytes, |packed| {
            Ok((
                mrc(packed, policies, scope)?,
                TraceInfo::of_packed(packed, String::new()),
            ))
        })?;
        let mut trace = info;
        trace.sha256 = sha256;
        return Ok(MrcReport {
            moe_opt_version: VERSION,
            trace,
            mrc,
        });
    }
    let (trace, sha256) = import::read_trace(path, options)?.into_trace();
    let mrc = mrc(&trace, policies, scope).map_err(|e| e.with_file(path))?;
    let mut info = TraceInfo::new(&trace);
    info.stamp(sha256);
    Ok(MrcReport {
        moe_opt_version: VERSION,
        trace: info,
        mrc,
    })
}

/// The report of `calibrate`.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The real trace matched.
    pub trace: TraceInfo,
    /// Its statistics (the target).
    pub target: TraceStats,
    /// The preset whose shape was generated.
    pub preset: Preset,
    /// The best knobs found.
    pub best: Locality,
    /// The best point's statistics.
    pub achieved: CalibrationPoint,
    /// The grid searched.
    pub grid: CalibrationGrid,
}

impl CalibrationReport {
    /// For humans.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.trace.text(&mut out);
        let _ = writeln!(
            out,
            "target: overlap {:.4}, LRU miss rate at C = {}: {:.4}",
            self.target.next_token_overlap,
            self.target.half_capacity,
            self.target.lru_miss_rate_half
        );
        let _ = writeln!(
            out,
            "preset {}: best rho = {}, omega = {}, beta = {} -> overlap {:.4}, miss rate {:.4} \
             (squared error {:.2e}, mean over {} seeds)",
            self.preset,
            self.best.persistence,
            self.best.topic_weight,
            self.best.popularity_skew,
            self.achieved.next_token_overlap,
            self.achieved.lru_miss_rate_half,
            self.achieved.error,
            self.grid.seeds
        );
        out
    }
}

/// Calibrates a preset's locality knobs against a real trace (the preset's shape, with the
/// real trace's number of sequences and tokens per sequence when it has one length).
pub fn calibrate(
    trace: &Trace,
    preset: Preset,
    grid: &CalibrationGrid,
) -> Result<CalibrationReport, Error> {
    let target = trace_stats(trace);
    let mut base = GeneratorConfig::preset(preset);
    if base.experts != trace.experts || base.top_k != trace.top_k {
        return Err(Error::Invalid {
            path: super::generate::CONFIG_PATH.into(),
            field: "preset".into(),
            reason: format!(
                "preset {preset} has (E, K) = ({}, {}) but the trace has ({}, {})",
                base.experts, base.top_k, trace.experts, trace.top_k
            ),
        });
    }
    base.layers = trace.layers;
    let result = calibrate_knobs(&target, &base, grid)?;
    Ok(CalibrationReport {
        moe_opt_version: VERSION,
        trace: TraceInfo::new(trace),
        target,
        preset,
        best: result.best.locality,
        achieved: result.best,
        grid: grid.clone(),
    })
}
