//! Importers of real routing data (../shared/data/README.md): token-level router logs (JSON
//! Lines) become a [`Trace`]; activation-count files (`moe-activation-counts/v1`, no token
//! order) become a [`FrequencyWarmStart`] for frequency-based policies and are refused for
//! replay.
//!
//! ## Token logs
//!
//! One JSON object a line (gzip or plain, recognised by the magic bytes): `{seq, token, layer,
//! experts, weights, phase}`, one line per (sequence, token, MoE layer). `seq` is a number or a
//! string; sequences get ids 0, 1, ... in order of first appearance and keep that order in the
//! trace; the tokens of a sequence are sorted by `token`. Every (seq, token) must have one line
//! per layer `0..L` with L = 1 + the largest `layer`; K is the length of the first `experts`
//! list and every line must have K distinct experts.
//!
//! E is not in the file. It comes from [`ImportOptions::experts`] or, failing that, from the
//! table of known files ([`KNOWN_LOGS`], matched on the file name); otherwise the import is an
//! error asking for it.
//!
//! Rank order: where every line of the file has `weights`, the experts are re-ordered by
//! decreasing weight (ties keep the listed order) and the trace is `ranked`. Without weights
//! the listed order is not trusted as a rank (the three shipped logs list experts sorted by id),
//! so `ranked = false` unless K = 1 or [`ImportOptions::listed_order_is_rank`] is set. A file
//! with weights on some lines only keeps them where given but is not `ranked`.
//!
//! Without weights or logits only weight-free policies (LRU, LFU, FIFO, ZipMoE's counts,
//! Belady) can replay the trace; SMoE's score window and the cache-aware routers need logits
//! (see [`super::commands::replay`], which says so).
//!
//! Errors name the file, the line (1-based) and the field: `line 12.experts[3]`.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use formulations::cache::binary::{self, Packed};
use formulations::cache::model::{Phase, Routing, Token, Trace};
use formulations::cache::validate::MAX_LAYERS;
use formulations::Error;
use serde::{Deserialize, Serialize};

use crate::counts::read_text_maybe_gz;

/// A known token log: file-name prefix, model, E, shared experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownLog {
    /// Prefix of the file name.
    pub file_prefix: &'static str,
    /// The model (../shared/data/README.md).
    pub model: &'static str,
    /// E, routed experts per MoE layer.
    pub experts: usize,
    /// Shared experts per layer: not in the logs nor their README, so 0 throughout (shared
    /// experts are never cached, so no replay depends on it).
    pub shared_experts: usize,
}

/// The token logs of ../shared/data/token-traces/ (README.md there).
pub const KNOWN_LOGS: [KnownLog; 3] = [
    KnownLog {
        file_prefix: "olmoe_1b7b_0924",
        model: "OLMoE-1B-7B-0924",
        experts: 64,
        shared_experts: 0,
    },
    KnownLog {
        file_prefix: "kimi_linear_48b_a3b",
        model: "Kimi-Linear-48B-A3B",
        experts: 256,
        shared_experts: 0,
    },
    KnownLog {
        file_prefix: "switch_base8",
        model: "switch-base-8",
        experts: 8,
        shared_experts: 0,
    },
];

/// What a token log does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportOptions {
    /// E; required unless the file is in [`KNOWN_LOGS`] (overrides the table).
    #[serde(default)]
    pub experts: Option<usize>,
    /// The model name; default the table's or the file stem.
    #[serde(default)]
    pub model: Option<String>,
    /// Shared experts per layer; default the table's or 0.
    #[serde(default)]
    pub shared_experts: Option<usize>,
    /// Trust the listed order of `experts` as the router's rank order where there are no
    /// weights (off by default: the shipped logs sort by id).
    #[serde(default)]
    pub listed_order_is_rank: bool,
}

/// A sequence id as written in a log: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(untagged)]
enum SeqId {
    Number(u64),
    Text(String),
}

/// One line of a token log; unknown fields are refused, as in every other format.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    seq: SeqId,
    token: u32,
    layer: usize,
    experts: Vec<u32>,
    #[serde(default)]
    weights: Option<Vec<f32>>,
    phase: Phase,
}

/// Reads a token log file (JSON Lines, gzip or plain) into a validated trace.
pub fn import_token_log(path: &Path, options: &ImportOptions) -> Result<Trace, Error> {
    let text = read_text_maybe_gz(path)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let known = KNOWN_LOGS
        .iter()
        .find(|k| file_name.starts_with(k.file_prefix));
    let stem = file_name
        .trim_end_matches(".gz")
        .trim_end_matches(".jsonl")
        .to_string();
    let experts = options
        .experts
        .or(known.map(|k| k.experts))
        .ok_or_else(|| {
            Error::invalid(
                path,
                "experts",
                "a token log does not state E (experts per layer): give it in the import options",
            )
        })?;
    let trace = parse_token_log(
        path,
        &text,
        LogMeta {
            name: stem.clone(),
            model: options
                .model
                .clone()
                .or(known.map(|k| k.model.to_string()))
                .unwrap_or(stem),
            experts,
            shared_experts: options
                .shared_experts
                .or(known.map(|k| k.shared_experts))
                .unwrap_or(0),
            listed_order_is_rank: options.listed_order_is_rank,
        },
    )?;
    Ok(trace)
}

/// What the importer adds to the lines of a log.
#[derive(Debug, Clone)]
pub struct LogMeta {
    /// The trace's name.
    pub name: String,
    /// The model.
    pub model: String,
    /// E.
    pub experts: usize,
    /// Shared experts per layer.
    pub shared_experts: usize,
    /// See [`ImportOptions::listed_order_is_rank`].
    pub listed_order_is_rank: bool,
}

/// Parses the text of a token log read from `path` (named in errors).
pub fn parse_token_log(path: &Path, text: &str, meta: LogMeta) -> Result<Trace, Error> {
    let mut seq_ids: HashMap<SeqId, u32> = HashMap::new();
    // (seq, token) -> (line of first record, phase, (layer, line, routing) as read): memory in
    // proportion to the file, whatever the `layer` numbers say.
    type Slot = (usize, Phase, Vec<(usize, usize, Routing)>);
    let mut tokens: HashMap<(u32, u32), Slot> = HashMap::new();
    let mut top_k = None;
    let mut layers = 0usize;
    let mut all_weighted = true;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(line).map_err(|e| {
            let mut message = e.to_string();
            if let Some(at) = message.rfind(" at line ") {
                message.truncate(at);
            }
            Error::Json {
                path: path.to_path_buf(),
                line: n,
                column: e.column(),
                message,
            }
        })?;
        let k = *top_k.get_or_insert(record.experts.len());
        if record.experts.len() != k || k == 0 {
            return Err(Error::invalid(
                path,
                format!("line {n}.experts"),
                format!(
                    "must list K = {k} experts (the first line's count, at least 1), got {}",
                    record.experts.len()
                ),
            ));
        }
        for (j, &e) in record.experts.iter().enumerate() {
            if e as usize >= meta.experts {
                return Err(Error::invalid(
                    path,
                    format!("line {n}.experts[{j}]"),
                    format!("must be below E = {}, got {e}", meta.experts),
                ));
            }
        }
        if let Some(w) = &record.weights {
            if w.len() != k {
                return Err(Error::invalid(
                    path,
                    format!("line {n}.weights"),
                    format!("must have {k} entries (one per expert), got {}", w.len()),
                ));
            }
        } else {
            all_weighted = false;
        }
        if record.layer >= MAX_LAYERS {
            return Err(Error::invalid(
                path,
                format!("line {n}.layer"),
                format!(
                    "layer {} is at or above the limit of {MAX_LAYERS} layers \
                     (formulations::cache::validate::MAX_LAYERS)",
                    record.layer
                ),
            ));
        }
        layers = layers.max(record.layer + 1);
        let next = seq_ids.len() as u32;
        let seq = *seq_ids.entry(record.seq.clone()).or_insert(next);
        let slot = tokens
            .entry((seq, record.token))
            .or_insert_with(|| (n, record.phase, Vec::new()));
        if slot.1 != record.phase {
            return Err(Error::invalid(
                path,
                format!("line {n}.phase"),
                "differs from the other layers of the same token",
            ));
        }
        slot.2.push((
            record.layer,
            n,
            Routing {
                experts: record.experts,
                weights: record.weights,
                logits: None,
            },
        ));
    }
    let Some(top_k) = top_k else {
        return Err(Error::invalid(path, "lines", "the log has no record"));
    };
    let ranked = top_k == 1 || all_weighted || meta.listed_order_is_rank;
    let mut keys: Vec<(u32, u32)> = tokens.keys().copied().collect();
    keys.sort_unstable();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let (line, phase, mut routings) = tokens.remove(&key).expect("key from the map");
        // A stable sort: of two lines of one layer the later is the duplicate.
        routings.sort_by_key(|&(l, _, _)| l);
        let mut layers_out = Vec::with_capacity(routings.len());
        let mut routings = routings.into_iter();
        let twice = |at: usize, n: usize| {
            Error::invalid(
                path,
                format!("line {n}.layer"),
                format!(
                    "layer {at} of sequence {}, token {} appears twice",
                    key.0, key.1
                ),
            )
        };
        for l in 0..layers {
            let Some((at, n, mut r)) = routings.next().filter(|&(at, _, _)| at <= l) else {
                return Err(Error::invalid(
                    path,
                    format!("line {line}.layer"),
                    format!(
                        "sequence {}, token {} has no record for layer {l} (the log has {layers} layers)",
                        key.0, key.1
                    ),
                ));
            };
            if at < l {
                return Err(twice(at, n));
            }
            if all_weighted {
                rank_by_weight(&mut r);
            }
            layers_out.push(r);
        }
        // Every layer is below `layers`: a line left over repeats the last one.
        if let Some((at, n, _)) = routings.next() {
            return Err(twice(at, n));
        }
        out.push(Token {
            seq: key.0,
            token: key.1,
            phase,
            layers: layers_out,
        });
    }
    let trace = Trace {
        shared_experts: meta.shared_experts,
        ranked,
        ..Trace::new(meta.name, meta.model, meta.experts, top_k, layers, out)
    };
    formulations::cache::validate::validate(&trace).map_err(|e| e.in_file(path))?;
    Ok(trace)
}

/// Re-orders experts (and weights) by decreasing weight, ties keeping the listed order.
fn rank_by_weight(r: &mut Routing) {
    let Some(w) = &r.weights else { return };
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    r.experts = order.iter().map(|&i| r.experts[i]).collect();
    r.weights = Some(order.iter().map(|&i| w[i]).collect());
}

/// Per-expert activation totals of a count file, per MoE layer: the warm start of LFU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrequencyWarmStart {
    /// The file's model.
    pub model: String,
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// `counts[l][e]`: tokens routed to expert e at MoE layer l, summed over prompts.
    pub counts: Vec<Vec<u64>>,
    /// File layers dropped because every prompt's count is zero there (dense layers, e.g.
    /// DeepSeek-V2-Lite's layer 0); MoE layer l is the l-th kept file layer.
    pub dropped_layers: Vec<usize>,
}

impl FrequencyWarmStart {
    /// The counts of one cache of a replay, one per id: layer `Some(l)`'s, or the pool's
    /// (`None`: every layer's, in layer order, as pool ids are numbered).
    pub fn cache_counts(&self, layer: Option<usize>) -> Vec<u64> {
        match layer {
            Some(layer) => self.counts[layer].clone(),
            None => self.counts.concat(),
        }
    }
}

/// Whether a (possibly gzip) JSON file is an activation-count file (`format` =
/// `moe-activation-counts/v1`). Unreadable or non-JSON files are not.
pub fn is_counts_file(path: &Path) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        format: Option<String>,
    }
    let Ok(text) = read_text_maybe_gz(path) else {
        return false;
    };
    serde_json::from_str::<Probe>(&text)
        .ok()
        .and_then(|p| p.format)
        .is_some_and(|f| f == crate::counts::FORMAT)
}

/// Reads an activation-count file into per-layer totals. Errors name the file and field.
pub fn import_counts(path: &Path) -> Result<FrequencyWarmStart, Error> {
    let file = crate::counts::read(path, &crate::counts::Header::default())?;
    let mut totals = vec![vec![0u64; file.experts_per_layer as usize]; file.layers];
    for prompt in &file.counts {
        for (l, row) in prompt.iter().enumerate() {
            for (t, &c) in totals[l].iter_mut().zip(row) {
                *t += c;
            }
        }
    }
    let dropped_layers: Vec<usize> = (0..file.layers)
        .filter(|&l| totals[l].iter().all(|&c| c == 0))
        .collect();
    let counts = totals
        .into_iter()
        .enumerate()
        .filter(|(l, _)| !dropped_layers.contains(l))
        .map(|(_, row)| row)
        .collect();
    Ok(FrequencyWarmStart {
        model: file.model,
        experts: file.experts_per_layer as usize,
        top_k: file.top_k as usize,
        counts,
        dropped_layers,
    })
}

/// The message for a replay asked of a count file.
pub fn counts_not_replayable(path: &Path) -> Error {
    Error::invalid(
        path,
        "format",
        "an activation-count file (moe-activation-counts/v1) has per-prompt totals and no token \
         order, so it cannot be replayed through a cache; replay a token log (JSON Lines) or a \
         cache-trace file, and use the counts as a frequency warm start for lfu",
    )
}

/// The format `import cache-trace` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// The cache-trace JSON.
    #[default]
    Json,
    /// The binary trace ([`formulations::cache::binary`]).
    Bin,
}

/// A trace file as a command reads it.
#[derive(Debug, Clone)]
pub enum TraceFile {
    /// A token log or a cache-trace JSON.
    Json(Trace),
    /// A binary trace ([`formulations::cache::binary`]) and the SHA-256 of its bytes.
    Binary {
        /// Its columns.
        packed: Packed,
        /// SHA-256 of the file (what its reports carry).
        sha256: String,
    },
}

impl TraceFile {
    /// The trace, and the hash its reports carry when it is not that of the trace's canonical
    /// JSON (a binary trace's).
    pub fn into_trace(self) -> (Trace, Option<String>) {
        match self {
            TraceFile::Json(trace) => (trace, None),
            TraceFile::Binary { packed, sha256 } => (packed.to_trace(), Some(sha256)),
        }
    }
}

/// The first bytes of the file at `path` (fewer when it is shorter; none when unreadable).
fn head(path: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(binary::MAGIC.len());
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(binary::MAGIC.len() as u64).read_to_end(&mut head);
    }
    head
}

/// Reads a trace for replay: a binary trace (by its magic bytes, whatever its name), a token
/// log (`.jsonl`, `.jsonl.gz`) or a `cache-trace` JSON file; refuses an activation-count file
/// with [`counts_not_replayable`].
pub fn read_trace(path: &Path, options: &ImportOptions) -> Result<TraceFile, Error> {
    let head = head(path);
    if binary::is_binary(&head) {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let packed = Packed::decode(path, &bytes)?;
        return Ok(TraceFile::Binary {
            packed,
            sha256: crate::report::bytes_sha256(&bytes),
        });
    }
    load_json(path, options)
        .map(TraceFile::Json)
        .map_err(|e| match e {
            // Neither binary nor text (nor gzip): a damaged binary trace, most likely.
            Error::Io { source, .. }
                if source.kind() == std::io::ErrorKind::InvalidData
                    && !head.starts_with(&[0x1f, 0x8b]) =>
            {
                Error::invalid(
                    path,
                    "magic",
                    format!(
                        "neither a binary trace (which starts with {:?}) nor UTF-8 text (a JSON \
                         trace or a token log)",
                        String::from_utf8_lossy(binary::MAGIC)
                    ),
                )
            }
            other => other,
        })
}

/// [`read_trace`] of a file that is not binary.
fn load_json(path: &Path, options: &ImportOptions) -> Result<Trace, Error> {
    let name = path.to_string_lossy();
    if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
        return import_token_log(path, options);
    }
    if is_counts_file(path) {
        return Err(counts_not_replayable(path));
    }
    let text = read_text_maybe_gz(path)?;
    // Another problem's file is named as such, not as a trace with the wrong fields.
    let tag = formulations::problem::detect_tag_in(path, &text)?;
    if tag.as_deref() != Some("cache-trace") {
        let kind = tag.map_or("SlimCaching (a file without a problem tag)".into(), |t| t);
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "problem".into(),
            reason: format!(
                "a {kind} instance, not a token stream: this command takes a cache-trace \
                 (moe-opt generate cache-trace, import cache-trace) or a token log (.jsonl)"
            ),
        });
    }
    let trace: Trace = formulations::error::parse_json(path, &text)?;
    formulations::cache::validate::validate(&trace).map_err(|e| e.in_file(path))?;
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(e: usize) -> LogMeta {
        LogMeta {
            name: "t".into(),
            model: "m".into(),
            experts: e,
            shared_experts: 0,
            listed_order_is_rank: false,
        }
    }

    #[test]
    fn lines_group_into_tokens_by_sequence_and_order() {
        // Sequence "b" appears first, so it is sequence 0; its tokens come out sorted (0, 1).
        let text = r#"{"seq":"b","token":1,"layer":0,"experts":[1,2],"weights":null,"phase":"decode"}
{"seq":"b","token":0,"layer":0,"experts":[0,3],"weights":null,"phase":"decode"}
{"seq":"a","token":5,"layer":0,"experts":[2,3],"weights":null,"phase":"prefill"}"#;
        let t = parse_token_log(Path::new("x.jsonl"), text, meta(4)).unwrap();
        assert_eq!((t.top_k, t.layers, t.ranked), (2, 1, false));
        let order: Vec<(u32, u32)> = t.tokens.iter().map(|x| (x.seq, x.token)).collect();
        assert_eq!(order, vec![(0, 0), (0, 1), (1, 5)]);
        assert_eq!(t.tokens[1].layers[0].experts, vec![1, 2]);
        assert_eq!(t.tokens[2].phase, Phase::Prefill);
    }

    #[test]
    fn weights_restore_the_rank_order() {
        let text = r#"{"seq":0,"token":0,"layer":0,"experts":[0,1,2],"weights":[0.1,0.5,0.2],"phase":"decode"}"#;
        let t = parse_token_log(Path::new("x.jsonl"), text, meta(4)).unwrap();
        assert!(t.ranked);
        assert_eq!(t.tokens[0].layers[0].experts, vec![1, 2, 0]);
        assert_eq!(t.tokens[0].layers[0].weights, Some(vec![0.5, 0.2, 0.1]));
    }

    #[test]
    fn bad_lines_are_named() {
        let err = |text: &str| {
            parse_token_log(Path::new("x.jsonl"), text, meta(4))
                .unwrap_err()
                .to_string()
        };
        let e =
            err(r#"{"seq":0,"token":0,"layer":0,"experts":[0,9],"weights":null,"phase":"decode"}"#);
        assert!(e.contains("line 1.experts[1]"), "{e}");
        let e = err(
            "{\"seq\":0,\"token\":0,\"layer\":0,\"experts\":[0],\"weights\":null,\"phase\":\"decode\"}\n\
             {\"seq\":0,\"token\":0,\"layer\":1,\"experts\":[0,1],\"weights\":null,\"phase\":\"decode\"}",
        );
        assert!(e.contains("line 2.experts"), "{e}");
        let e = err(
            "{\"seq\":0,\"token\":0,\"layer\":0,\"experts\":[0],\"weights\":null,\"phase\":\"decode\"}\n\
             {\"seq\":0,\"token\":1,\"layer\":1,\"experts\":[1],\"weights\":null,\"phase\":\"decode\"}",
        );
        assert!(e.contains("has no record for layer"), "{e}");
        let e =
            err(r#"{"seq":0,"token":0,"layer":0,"experts":[1,1],"weights":null,"phase":"decode"}"#);
        assert!(e.contains("listed twice"), "{e}");
        let e = err("{\"seq\":0,");
        assert!(e.contains("x.jsonl: line 1"), "{e}");
        let line = |layer: u64| {
            format!(
                "{{\"seq\":0,\"token\":0,\"layer\":{layer},\"experts\":[0],\"weights\":null,\"phase\":\"decode\"}}\n"
            )
        };
        let e = err(&format!("{}{}", line(0), line(0)));
        assert!(
            e.contains("line 2.layer") && e.contains("appears twice"),
            "{e}"
        );
        let e = err(&format!("{}{}{}", line(1), line(0), line(1)));
        assert!(
            e.contains("line 3.layer") && e.contains("appears twice"),
            "{e}"
        );
        for huge in [1_000_000_000, u64::MAX] {
            let e = err(&line(huge));
            assert!(
                e.contains("line 1.layer") && e.contains("limit of 1024 layers"),
                "{e}"
            );
        }
    }
}
