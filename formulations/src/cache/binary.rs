//! The binary trace format (`moe-opt import cache-trace --format bin`): everything a
//! cache-trace JSON holds, the expert ids as fixed-width integers, so that a trace of millions
//! of requests is read at memory speed. Every command that reads a cache trace recognises it by
//! its first 8 bytes, whatever its name; the `sha256` a report carries for such a trace is the
//! SHA-256 of the file's bytes (a JSON trace's is that of its canonical JSON).
//!
//! ## Version 1 (little-endian throughout)
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `MOETRACE` |
//! | 8 | 2 | `version` (u16): 1 |
//! | 10 | 1 | `flags`: bit 0 `ranked`, the other bits 0 |
//! | 11 | 1 | `weights`: 0 no routing has them, 1 every routing, 2 some routings |
//! | 12 | 1 | `logits`: as `weights` |
//! | 13 | 3 | reserved, 0 |
//! | 16 | 4 | `experts` E (u32) |
//! | 20 | 4 | `top_k` K (u32) |
//! | 24 | 4 | `shared_experts` (u32) |
//! | 28 | 4 | `layers` L (u32) |
//! | 32 | 8 | `tokens` T (u64) |
//! | 40 | 8 | `runs` R (u64) |
//! | 48 | 4 | `name` bytes N (u32) |
//! | 52 | 4 | `model` bytes M (u32) |
//! | 56 | N + M | `name`, then `model` (UTF-8) |
//!
//! Then, in order:
//! * `runs`: R records of 16 bytes, `seq` (u32), `first` (u32), `count` (u32), `phase` (u8: 0
//!   decode, 1 prefill, 2 encoder) and 3 bytes 0: `count` consecutive tokens of sequence `seq`
//!   at positions `first`, `first + 1`, ... (the sequence boundaries). Runs are maximal (none
//!   continues the one before it) and their counts sum to T.
//! * `ids`: T x L x K expert ids, token-major (token, then layer, then rank), u8 when E <= 256,
//!   else u16.
//! * `weights`, when its kind is not 0: with kind 2 first one byte (0 or 1) per routing, T x L
//!   token-major, telling which have weights; then K f32 for each routing that has them.
//! * `logits`: the same with E f32 per routing.
//!
//! Nothing follows. The encoding is canonical (kind 2 only when some routings have the section
//! and some do not, runs maximal), so bin -> JSON -> bin gives the same bytes. A file is held
//! to the rules of a JSON trace ([`super::validate`]); errors name the file, the field
//! (`version`, `runs[3].count`, `tokens[12].layers[0].experts[1]`) and the reason, and every
//! size is checked against the file's length before anything is allocated.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use super::model::{Phase, Requests, Routing, Streams, Token, Trace};
use super::validate::{routing_rules, Scores, Shape, MAX_EXPERTS, MAX_LAYERS};
use crate::error::Error;

/// The first 8 bytes of a binary trace (defined where files are told apart).
pub use crate::problem::BINARY_TRACE_MAGIC as MAGIC;
/// The version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Bytes before `name`.
const HEADER_BYTES: usize = 56;
/// Bytes of one run record.
const RUN_BYTES: usize = 16;

/// Whether `bytes` start like a binary trace.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Consecutive tokens of one sequence and phase at consecutive positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Sequence id.
    pub seq: u32,
    /// Position of the run's first token in its sequence.
    pub first: u32,
    /// Tokens in the run (at least 1).
    pub count: u32,
    /// The pass that produced them.
    pub phase: Phase,
}

/// A binary trace's bytes as read: the file mapped into memory, or a copy.
pub enum Bytes {
    /// The file's pages themselves: nothing copied or zeroed, whatever its size.
    Mapped(memmap2::Mmap),
    /// Read into memory (where the file cannot be mapped).
    Owned(Vec<u8>),
}

impl Bytes {
    /// `file` mapped read-only, its pages faulted in at once (one call, not one fault each).
    pub fn map(file: &std::fs::File) -> std::io::Result<Bytes> {
        // SAFETY: the mapping is read-only. Another process that rewrites or truncates the
        // file while it is mapped changes the bytes under it (or faults on them), as with
        // any mapped file; trace files are written once and then read.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(file)? };
        Ok(Bytes::Mapped(map))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Bytes of a column: a vector of its own, or a range of the bytes of the file it was
/// decoded from ([`Packed::decode_shared`]), so that the file's ids and scores are not copied.
#[derive(Clone)]
pub struct Column {
    buf: Arc<Bytes>,
    range: Range<usize>,
}

impl Column {
    /// `range` of `buf`.
    fn shared(buf: &Arc<Bytes>, range: Range<usize>) -> Self {
        Column {
            buf: Arc::clone(buf),
            range,
        }
    }
}

impl From<Vec<u8>> for Column {
    fn from(v: Vec<u8>) -> Self {
        let range = 0..v.len();
        Column {
            buf: Arc::new(Bytes::Owned(v)),
            range,
        }
    }
}

impl Deref for Column {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Column {}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The expert ids of every routing, token-major, K per routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ids {
    /// E <= 256.
    U8(Column),
    /// E > 256.
    U16(Vec<u16>),
}

impl Ids {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match self {
            Ids::U8(v) => v.len(),
            Ids::U16(v) => v.len(),
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th id.
    pub fn get(&self, i: usize) -> u32 {
        match self {
            Ids::U8(v) => u32::from(v[i]),
            Ids::U16(v) => u32::from(v[i]),
        }
    }

    /// Ids `range` as u32, appended to `out`.
    pub fn extend_into(&self, range: std::ops::Range<usize>, out: &mut Vec<u32>) {
        match self {
            Ids::U8(v) => out.extend(v[range].iter().map(|&x| u32::from(x))),
            Ids::U16(v) => out.extend(v[range].iter().map(|&x| u32::from(x))),
        }
    }
}

/// Per-routing floats (weights or logits), `width` per routing that has them. They stay the
/// file's little-endian bytes (a range of a mapped file: [`Packed::decode_shared`]) and are
/// decoded where read, so that a trace's logits, E floats a routing, take no memory of their
/// own.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Which routings have them (token-major); `None`: every routing.
    pub present: Option<Vec<bool>>,
    /// Their values, routing after routing, 4 little-endian bytes each.
    bytes: Column,
}

impl Section {
    /// Whether routing `r` has them.
    fn has(&self, r: usize) -> bool {
        self.present.as_ref().is_none_or(|p| p[r])
    }

    /// Floats `first..first + count` (counted over the routings that have them), decoded into
    /// `out` (cleared first).
    pub fn read(&self, first: usize, count: usize, out: &mut Vec<f32>) {
        out.clear();
        out.extend(
            self.bytes[4 * first..4 * (first + count)]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
    }

    /// The section of `routings` whose floats `of(r)` gives (`None` where absent), or `None`
    /// when no routing has them.
    fn collect<'a>(routings: usize, of: impl Fn(usize) -> Option<&'a [f32]>) -> Option<Section> {
        let present: Vec<bool> = (0..routings).map(|r| of(r).is_some()).collect();
        if !present.contains(&true) {
            return None;
        }
        let bytes: Vec<u8> = (0..routings)
            .filter_map(&of)
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let every = !present.contains(&false);
        Some(Section {
            present: (!every).then_some(present),
            bytes: Column::from(bytes),
        })
    }

    /// The section's kind byte: 1 every routing, 2 some.
    fn kind(&self) -> u8 {
        if self.present.is_none() {
            1
        } else {
            2
        }
    }
}

/// A trace held column by column: what a binary trace holds, and what the fast replay reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// The trace's `name`.
    pub name: String,
    /// Its `model`.
    pub model: String,
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// Shared experts per layer.
    pub shared_experts: usize,
    /// L.
    pub layers: usize,
    /// Whether experts are listed in rank order.
    pub ranked: bool,
    /// T.
    pub tokens: usize,
    /// The tokens' sequences, positions and phases.
    pub runs: Vec<Run>,
    /// T x L x K expert ids.
    pub ids: Ids,
    /// The routings' weights (K each), where given.
    pub weights: Option<Section>,
    /// The routings' logits (E each), where given.
    pub logits: Option<Section>,
}

impl Packed {
    /// The columns of a validated trace.
    pub fn from_trace(trace: &Trace) -> Packed {
        let mut runs: Vec<Run> = Vec::new();
        for token in &trace.tokens {
            match runs.last_mut() {
                Some(r)
                    if r.seq == token.seq
                        && r.phase == token.phase
                        && r.count < u32::MAX
                        && r.first.checked_add(r.count) == Some(token.token) =>
                {
                    r.count += 1
                }
                _ => runs.push(Run {
                    seq: token.seq,
                    first: token.token,
                    count: 1,
                    phase: token.phase,
                }),
            }
        }
        let routings: Vec<&Routing> = trace.routings().collect();
        let ids = routings.iter().flat_map(|r| r.experts.iter().copied());
        let ids = if trace.experts <= 256 {
            Ids::U8(Column::from(ids.map(|x| x as u8).collect::<Vec<u8>>()))
        } else {
            Ids::U16(ids.map(|x| x as u16).collect())
        };
        Packed {
            name: trace.name.clone(),
            model: trace.model.clone(),
            experts: trace.experts,
            top_k: trace.top_k,
            shared_experts: trace.shared_experts,
            layers: trace.layers,
            ranked: trace.ranked,
            tokens: trace.tokens.len(),
            runs,
            ids,
            weights: Section::collect(routings.len(), |r| routings[r].weights.as_deref()),
            logits: Section::collect(routings.len(), |r| routings[r].logits.as_deref()),
        }
    }

    /// The trace as the JSON model holds it.
    pub fn to_trace(&self) -> Trace {
        let mut weights = Walk::new(&self.weights, self.top_k);
        let mut logits = Walk::new(&self.logits, self.experts);
        let mut tokens = Vec::with_capacity(self.tokens);
        let positions = self
            .runs
            .iter()
            .flat_map(|r| (0..r.count).map(move |i| (r.seq, r.first + i, r.phase)));
        for (t, (seq, position, phase)) in positions.enumerate() {
            let layers = (0..self.layers)
                .map(|l| {
                    let r = t * self.layers + l;
                    let mut experts = Vec::with_capacity(self.top_k);
                    self.ids
                        .extend_into(r * self.top_k..(r + 1) * self.top_k, &mut experts);
                    Routing {
                        experts,
                        weights: weights.next(r).map(<[f32]>::to_vec),
                        logits: logits.next(r).map(<[f32]>::to_vec),
                    }
                })
                .collect();
            tokens.push(Token {
                seq,
                token: position,
                phase,
                layers,
            });
        }
        Trace {
            shared_experts: self.shared_experts,
            ranked: self.ranked,
            ..Trace::new(
                self.name.clone(),
                self.model.clone(),
                self.experts,
                self.top_k,
                self.layers,
                tokens,
            )
        }
    }

    /// Routings: T x L.
    pub fn routings(&self) -> usize {
        self.tokens * self.layers
    }

    /// Whether every routing has logits.
    pub fn has_logits(&self) -> bool {
        self.logits.as_ref().is_some_and(|s| s.present.is_none())
    }

    /// Whether every routing has weights or logits.
    pub fn has_weights(&self) -> bool {
        let has = |s: &Option<Section>, r: usize| s.as_ref().is_some_and(|s| s.has(r));
        (0..self.routings()).all(|r| has(&self.weights, r) || has(&self.logits, r))
    }

    /// The logits of every routing (E each, token-major: routing `r`'s are floats `r E..(r +
    /// 1) E`), when every routing has them.
    pub fn all_logits(&self) -> Option<&Section> {
        self.logits.as_ref().filter(|s| s.present.is_none())
    }

    /// The request stream of one layer, one step per token (as [`Trace::layer_requests`]).
    pub fn layer_requests(&self, layer: usize) -> Requests {
        let k = self.top_k;
        let mut requests = Requests {
            universe: self.experts,
            ids: Vec::with_capacity(self.tokens * k),
            offsets: Vec::with_capacity(self.tokens + 1),
        };
        requests.offsets.push(0);
        for t in 0..self.tokens {
            let r = t * self.layers + layer;
            self.ids.extend_into(r * k..(r + 1) * k, &mut requests.ids);
            requests.offsets.push(requests.ids.len());
        }
        requests
    }

    /// The request stream of one pool of every layer (as [`Trace::pooled_requests`]).
    pub fn pooled_requests(&self) -> Requests {
        let (e, k) = (self.experts as u32, self.top_k);
        let mut requests = Requests {
            universe: self.experts * self.layers,
            ids: Vec::with_capacity(self.ids.len()),
            offsets: Vec::with_capacity(self.routings() + 1),
        };
        requests.offsets.push(0);
        for r in 0..self.routings() {
            let base = (r % self.layers) as u32 * e;
            let start = requests.ids.len();
            self.ids.extend_into(r * k..(r + 1) * k, &mut requests.ids);
            requests.ids[start..].iter_mut().for_each(|x| *x += base);
            requests.offsets.push(requests.ids.len());
        }
        requests
    }

    /// The file's bytes (see the module doc).
    pub fn encode(&self) -> Vec<u8> {
        let kind = |s: &Option<Section>| s.as_ref().map_or(0, Section::kind);
        let mut out = Vec::with_capacity(HEADER_BYTES + self.ids.len() * 2);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend([
            u8::from(self.ranked),
            kind(&self.weights),
            kind(&self.logits),
        ]);
        out.extend([0; 3]);
        for x in [self.experts, self.top_k, self.shared_experts, self.layers] {
            out.extend_from_slice(&(x as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.tokens as u64).to_le_bytes());
        out.extend_from_slice(&(self.runs.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.model.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(self.model.as_bytes());
        for r in &self.runs {
            for x in [r.seq, r.first, r.count] {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out.extend([phase_byte(r.phase), 0, 0, 0]);
        }
        match &self.ids {
            Ids::U8(v) => out.extend_from_slice(v),
            Ids::U16(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
        for section in [&self.weights, &self.logits].into_iter().flatten() {
            if let Some(p) = &section.present {
                out.extend(p.iter().map(|&b| u8::from(b)));
            }
            out.extend_from_slice(&section.bytes);
        }
        out
    }

    /// Reads the bytes of a binary trace read from `path` (named in errors), held to every
    /// rule of a trace.
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Packed, Error> {
        Packed::decode_in(path, bytes, None)
    }

    /// [`Packed::decode`] of a buffer the columns may share: byte-wide ids (E <= 256), weights
    /// and logits stay where they are in `bytes` rather than being copied out.
    pub fn decode_shared(path: &Path, bytes: &Arc<Bytes>) -> Result<Packed, Error> {
        Packed::decode_in(path, bytes, Some(bytes))
    }

    /// [`Packed::decode`] of `bytes`, which are those of `shared` when given.
    fn decode_in(path: &Path, bytes: &[u8], shared: Option<&Arc<Bytes>>) -> Result<Packed, Error> {
        let mut r = Reader {
            path,
            bytes,
            shared,
            at: 0,
        };
        let magic = r.take(MAGIC.len(), "magic")?;
        if magic != MAGIC {
            return Err(r.invalid(
                "magic",
                format!(
                    "a binary trace starts with {:?}, this file with {:?}",
                    String::from_utf8_lossy(MAGIC),
                    String::from_utf8_lossy(magic)
                ),
            ));
        }
        let version = u16::from_le_bytes(r.array("version")?);
        if version != VERSION {
            return Err(r.invalid(
                "version",
                format!("unknown version {version}: this moe-opt reads version {VERSION}"),
            ));
        }
        let [flags, weights_kind, logits_kind] = r.array("flags")?;
        if flags > 1 {
            return Err(r.invalid(
                "flags",
                format!("only bit 0 (ranked) may be set, got {flags:#04x}"),
            ));
        }
        for (field, kind) in [("weights", weights_kind), ("logits", logits_kind)] {
            if kind > 2 {
                return Err(r.invalid(
                    field,
                    format!("must be 0 (none), 1 (every routing) or 2 (some), got {kind}"),
                ));
            }
        }
        if r.array::<3>("reserved")? != [0; 3] {
            return Err(r.invalid("reserved", "bytes 13..16 must be 0"));
        }
        let experts = r.u32("experts")? as usize;
        let top_k = r.u32("top_k")? as usize;
        let shared_experts = r.u32("shared_experts")? as usize;
        let layers = r.u32("layers")? as usize;
        let tokens = r.u64("tokens")?;
        let run_count = r.u64("runs")?;
        let name_bytes = r.u32("name")? as usize;
        let model_bytes = r.u32("model")? as usize;
        if !(1..=MAX_EXPERTS).contains(&experts) {
            return Err(r.invalid(
                "experts",
                format!("must be in 1..={MAX_EXPERTS}, got {experts}"),
            ));
        }
        if !(1..=experts).contains(&top_k) {
            return Err(r.invalid(
                "top_k",
                format!("must be in 1..={experts} (experts), got {top_k}"),
            ));
        }
        if !(1..=MAX_LAYERS).contains(&layers) {
            return Err(r.invalid(
                "layers",
                format!("must be in 1..={MAX_LAYERS}, got {layers}"),
            ));
        }
        if tokens == 0 {
            return Err(r.invalid("tokens", "must be at least 1"));
        }
        let name = r.text(name_bytes, "name")?;
        let model = r.text(model_bytes, "model")?;
        let runs = r.runs(run_count, tokens)?;
        let tokens = tokens as usize;
        let routings = tokens * layers;
        let width = if experts <= 256 { 1 } else { 2 };
        let id_bytes = r.size(&[tokens, layers, top_k, width], "ids")?;
        let ids = if width == 1 {
            Ids::U8(r.column(id_bytes, "ids")?)
        } else {
            Ids::U16(
                r.take(id_bytes, "ids")?
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            )
        };
        let weights = r.section(weights_kind, routings, top_k, "weights")?;
        let logits = r.section(logits_kind, routings, experts, "logits")?;
        if r.at != bytes.len() {
            return Err(r.invalid(
                "logits",
                format!(
                    "the trace ends at byte {}, but the file has {} more bytes",
                    r.at,
                    bytes.len() - r.at
                ),
            ));
        }
        let packed = Packed {
            name,
            model,
            experts,
            top_k,
            shared_experts,
            layers,
            ranked: flags == 1,
            tokens,
            runs,
            ids,
            weights,
            logits,
        };
        packed.check_routings(path)?;
        Ok(packed)
    }

    /// Every routing's rules ([`routing_rules`]), as a JSON trace's.
    fn check_routings(&self, path: &Path) -> Result<(), Error> {
        let first = match &self.ids {
            // Ids alone: a 256-bit set per routing; the rules run on the first bad one only,
            // to name it.
            Ids::U8(ids) if self.weights.is_none() && self.logits.is_none() => {
                let max = ids.iter().fold(0u8, |m, &x| m.max(x));
                if usize::from(max) >= self.experts {
                    0
                } else if self.top_k == 8 && distinct_eights(ids) {
                    self.routings()
                } else {
                    ids.chunks_exact(self.top_k)
                        .position(|ids| !distinct(ids, max))
                        .unwrap_or(self.routings())
                }
            }
            _ => 0,
        };
        let shape = Shape {
            experts: self.experts,
            top_k: self.top_k,
            ranked: self.ranked,
        };
        let mut seen = vec![false; self.experts];
        let mut experts = Vec::with_capacity(self.top_k);
        let mut weights = Walk::new(&self.weights, self.top_k);
        let mut logits = Walk::new(&self.logits, self.experts);
        let k = self.top_k;
        for r in first..self.routings() {
            experts.clear();
            self.ids.extend_into(r * k..(r + 1) * k, &mut experts);
            let scores = Scores {
                weights: weights.next(r),
                logits: logits.next(r),
            };
            routing_rules(&shape, &experts, scores, &mut seen)
                .map_err(|e| e.at(r / self.layers, r % self.layers).in_file(path))?;
        }
        Ok(())
    }
}

impl Streams for Packed {
    fn shape(&self) -> (usize, usize, usize) {
        (self.experts, self.top_k, self.layers)
    }
    fn layer_requests(&self, layer: usize) -> Requests {
        Packed::layer_requests(self, layer)
    }
    fn pooled_requests(&self) -> Requests {
        Packed::pooled_requests(self)
    }
}

/// Whether `ids`, none above `max`, are distinct: as many bits set as ids. The words are
/// locals and the updates branch-free, so the bits accumulate in registers.
fn distinct(ids: &[u8], max: u8) -> bool {
    if max < 64 {
        let set = ids.iter().fold(0u64, |m, &x| m | 1 << x);
        return set.count_ones() as usize == ids.len();
    }
    let mut w = [0u64; 4];
    for &x in ids {
        let bit = 1u64 << (x & 63);
        for (k, word) in w.iter_mut().enumerate() {
            *word |= bit * u64::from(usize::from(x >> 6) == k);
        }
    }
    w.iter().map(|x| x.count_ones() as usize).sum::<usize>() == ids.len()
}

/// Whether each 8 bytes of `ids` are distinct: every pair of a word's bytes lies 1 to 4 bytes
/// apart cyclically, so a word xor'ed with its 4 byte rotations has a zero byte exactly when
/// two are equal. Branch-free word arithmetic: the common K = 8 in about half [`distinct`]'s
/// time.
fn distinct_eights(ids: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    let mut zero = 0u64;
    for w in ids.chunks_exact(8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        for j in 1..=4 {
            let d = w ^ w.rotate_right(8 * j);
            zero |= d.wrapping_sub(LOW) & !d & (LOW << 7);
        }
    }
    zero == 0
}

/// A section's floats routing by routing, in order, each decoded into one buffer.
struct Walk<'a> {
    section: Option<&'a Section>,
    width: usize,
    at: usize,
    floats: Vec<f32>,
}

impl<'a> Walk<'a> {
    fn new(section: &'a Option<Section>, width: usize) -> Self {
        Walk {
            section: section.as_ref(),
            width,
            at: 0,
            floats: Vec::with_capacity(width),
        }
    }

    /// The floats of routing `r` (routings are visited in order), if it has them.
    fn next(&mut self, r: usize) -> Option<&[f32]> {
        let s = self.section.filter(|s| s.has(r))?;
        s.read(self.at, self.width, &mut self.floats);
        self.at += self.width;
        Some(&self.floats)
    }
}

fn phase_byte(phase: Phase) -> u8 {
    match phase {
        Phase::Decode => 0,
        Phase::Prefill => 1,
        Phase::Encoder => 2,
    }
}

/// A cursor over a binary trace's bytes; every read names the field it reads.
struct Reader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    /// The buffer `bytes` are of, when columns may share it.
    shared: Option<&'a Arc<Bytes>>,
    at: usize,
}

impl<'a> Reader<'a> {
    fn invalid(&self, field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Invalid {
            path: self.path.to_path_buf(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The next `n` bytes, or the error of a file that ends inside `field`.
    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], Error> {
        let left = self.bytes.len() - self.at;
        if n > left {
            return Err(self.invalid(
                field,
                format!(
                    "truncated: needs {n} bytes from byte {}, the file has {left} more",
                    self.at
                ),
            ));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    /// The next `n` bytes as a column: a range of the shared buffer, or a copy.
    fn column(&mut self, n: usize, field: &str) -> Result<Column, Error> {
        let bytes = self.take(n, field)?;
        Ok(match self.shared {
            Some(buf) => Column::shared(buf, self.at - n..self.at),
            None => Column::from(bytes.to_vec()),
        })
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N], Error> {
        Ok(self.take(N, field)?.try_into().expect("N bytes taken"))
    }

    fn u32(&mut self, field: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    fn text(&mut self, n: usize, field: &str) -> Result<String, Error> {
        let bytes = self.take(n, field)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|e| self.invalid(field, format!("not UTF-8: {e}")))
    }

    /// The product of `factors` (bytes of `field`), refused when it exceeds what is left of
    /// the file: nothing is allocated for a size the file cannot hold.
    fn size(&self, factors: &[usize], field: &str) -> Result<usize, Error> {
        let left = (self.bytes.len() - self.at) as u128;
        let need = factors.iter().map(|&f| f as u128).product::<u128>();
        if need > left {
            let product: Vec<String> = factors.iter().map(usize::to_string).collect();
            return Err(self.invalid(
                field,
                format!(
                    "truncated or inconsistent counts: {} = {need} bytes from byte {}, the file \
                     has {left} more",
                    product.join(" x "),
                    self.at
                ),
            ));
        }
        Ok(need as usize)
    }

    /// The run records, held to the rules of the module doc and of a trace's sequences
    /// (positions increase within a sequence), their counts summing to `tokens`.
    fn runs(&mut self, count: u64, tokens: u64) -> Result<Vec<Run>, Error> {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let bytes = self.take(self.size(&[count, RUN_BYTES], "runs")?, "runs")?;
        let mut runs: Vec<Run> = Vec::with_capacity(count);
        let mut last: HashMap<u32, u32> = HashMap::new();
        let mut total = 0u64;
        for (i, rec) in bytes.chunks_exact(RUN_BYTES).enumerate() {
            let word = |j: usize| u32::from_le_bytes(rec[4 * j..4 * j + 4].try_into().unwrap());
            let (seq, first, n) = (word(0), word(1), word(2));
            let phase = match rec[12] {
                0 => Phase::Decode,
                1 => Phase::Prefill,
                2 => Phase::Encoder,
                p => {
                    return Err(self.invalid(
                        format!("runs[{i}].phase"),
                        format!("must be 0 (decode), 1 (prefill) or 2 (encoder), got {p}"),
                    ))
                }
            };
            if rec[13..] != [0; 3] {
                return Err(self.invalid(format!("runs[{i}]"), "bytes 13..16 must be 0"));
            }
            let Some(end) = n.checked_sub(1).and_then(|m| first.checked_add(m)) else {
                return Err(self.invalid(
                    format!("runs[{i}].count"),
                    format!(
                        "must be at least 1 and keep positions below 2^32 (first {first}), got {n}"
                    ),
                ));
            };
            if let Some(p) = runs.last() {
                if p.seq == seq && p.phase == phase && p.first.checked_add(p.count) == Some(first) {
                    return Err(self.invalid(
                        format!("runs[{i}]"),
                        "continues the run before it (runs are maximal: merge them)",
                    ));
                }
            }
            if let Some(&prev) = last.get(&seq) {
                if first <= prev {
                    return Err(self.invalid(
                        format!("runs[{i}].first"),
                        format!(
                            "sequence {seq} must be in increasing token order: {first} follows \
                             {prev}"
                        ),
                    ));
                }
            }
            last.insert(seq, end);
            total += u64::from(n);
            runs.push(Run {
                seq,
                first,
                count: n,
                phase,
            });
        }
        if total != tokens {
            return Err(self.invalid(
                "tokens",
                format!("is {tokens}, but the runs hold {total} tokens"),
            ));
        }
        Ok(runs)
    }

    /// A section of `width` floats per routing, of kind `kind` (see the module doc).
    fn section(
        &mut self,
        kind: u8,
        routings: usize,
        width: usize,
        field: &str,
    ) -> Result<Option<Section>, Error> {
        let present = match kind {
            0 => return Ok(None),
            1 => None,
            _ => {
                let bytes = self.take(self.size(&[routings], field)?, field)?;
                if let Some(r) = bytes.iter().position(|&b| b > 1) {
                    return Err(self.invalid(
                        format!("{field}.present[{r}]"),
                        format!("must be 0 or 1, got {}", bytes[r]),
                    ));
                }
                if !bytes.contains(&0) || !bytes.contains(&1) {
                    return Err(self.invalid(
                        field,
                        format!(
                            "kind 2 (some routings) but {} routing has {field}: the kind is {}",
                            if bytes.contains(&1) { "every" } else { "no" },
                            if bytes.contains(&1) { 1 } else { 0 }
                        ),
                    ));
                }
                Some(bytes.iter().map(|&b| b == 1).collect::<Vec<bool>>())
            }
        };
        let with = present
            .as_ref()
            .map_or(routings, |p| p.iter().filter(|&&b| b).count());
        let bytes = self.column(self.size(&[with, width, 4], field)?, field)?;
        Ok(Some(Section { present, bytes }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sequences, 2 layers, E = 4, K = 2; weights on some routings, logits on none.
    fn trace() -> Trace {
        let routing = |experts: Vec<u32>, weights: Option<Vec<f32>>| Routing {
            experts,
            weights,
            logits: None,
        };
        let token = |seq, token, phase, layers| Token {
            seq,
            token,
            phase,
            layers,
        };
        Trace {
            shared_experts: 1,
            ranked: false,
            ..Trace::new(
                "t",
                "m",
                4,
                2,
                2,
                vec![
                    token(
                        7,
                        0,
                        Phase::Prefill,
                        vec![
                            routing(vec![0, 1], Some(vec![0.5, 0.25])),
                            routing(vec![2, 3], None),
                        ],
                    ),
                    token(
                        7,
                        1,
                        Phase::Prefill,
                        vec![routing(vec![1, 0], None), routing(vec![3, 2], None)],
                    ),
                    token(
                        3,
                        5,
                        Phase::Decode,
                        vec![routing(vec![2, 0], None), routing(vec![1, 3], None)],
                    ),
                ],
            )
        }
    }

    #[test]
    fn a_trace_round_trips_through_its_bytes() {
        let t = trace();
        let packed = Packed::from_trace(&t);
        assert_eq!(packed.runs.len(), 2);
        let bytes = packed.encode();
        // Header 56 + "t" + "m" + 2 runs of 16 + 12 ids + 6 presence bytes + 2 weights of 4.
        assert_eq!(bytes.len(), 56 + 2 + 32 + 12 + 6 + 8);
        assert_eq!(&bytes[..8], b"MOETRACE");
        assert_eq!(bytes[11], 2, "weights on some routings");
        let back = Packed::decode(Path::new("x.bin"), &bytes).unwrap();
        assert_eq!(back, packed);
        let shared = Arc::new(Bytes::Owned(bytes.clone()));
        assert_eq!(
            Packed::decode_shared(Path::new("x.bin"), &shared).unwrap(),
            packed
        );
        assert_eq!(back.to_trace(), t);
        assert!(!back.has_weights() && !back.has_logits());
        assert_eq!(back.pooled_requests(), t.pooled_requests());
        assert_eq!(back.layer_requests(1), t.layer_requests(1));
    }

    #[test]
    fn eight_ids_are_distinct_unless_some_pair_is_equal() {
        // Bytes at the borrow's edges (0, 0x7f, 0x80, 0xff) all distinct, then each of the 28
        // pairs made equal in a second word.
        let good = [0u8, 1, 0x80, 0xff, 0x7f, 0xfe, 0x81, 2];
        assert!(distinct_eights(&good));
        for i in 0..8 {
            for j in i + 1..8 {
                let mut bad = good;
                bad[j] = bad[i];
                let ids = [good, bad].concat();
                assert!(!distinct_eights(&ids), "ids {i} and {j} equal");
            }
        }
    }

    #[test]
    fn a_repeated_id_among_eight_is_named() {
        // K = 8 of E = 16, one layer, 4 tokens (token t: t, t + 2, ..., mod 16); token 2's
        // rank 6 (expert 14) set to 8, which its rank 3 lists.
        let ids = |t: u32| (0..8).map(|r| (t + 2 * r) % 16).collect::<Vec<u32>>();
        let mut t = trace();
        t.experts = 16;
        t.top_k = 8;
        t.layers = 1;
        t.tokens = (0..4)
            .map(|i| Token {
                seq: 0,
                token: i,
                phase: Phase::Decode,
                layers: vec![Routing {
                    experts: ids(i),
                    weights: None,
                    logits: None,
                }],
            })
            .collect();
        let mut bytes = Packed::from_trace(&t).encode();
        assert!(Packed::decode(Path::new("x.bin"), &bytes).is_ok());
        // Ids start after the header, "t", "m" and one run: 56 + 2 + 16.
        bytes[56 + 2 + 16 + 2 * 8 + 6] = 8;
        let e = Packed::decode(Path::new("x.bin"), &bytes)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tokens[2].layers[0].experts[6]: expert 8 is listed twice"),
            "{e}"
        );
    }

    #[test]
    fn malformed_bytes_name_the_field() {
        let good = Packed::from_trace(&trace()).encode();
        let err = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            edit(&mut b);
            Packed::decode(Path::new("x.bin"), &b)
                .unwrap_err()
                .to_string()
        };
        let e = err(&|b| b.truncate(70));
        assert!(e.starts_with("x.bin: runs: truncated"), "{e}");
        let e = err(&|b| b[0] = b'X');
        assert!(e.starts_with("x.bin: magic:"), "{e}");
        let e = err(&|b| b[8] = 2);
        assert!(e.contains("version: unknown version 2"), "{e}");
        // The first id of token 2, layer 1 (routing 5) set to E.
        let e = err(&|b| b[90 + 10] = 4);
        assert!(
            e.contains("tokens[2].layers[1].experts[0]: must be below experts = 4"),
            "{e}"
        );
        let e = err(&|b| b[32] = 4);
        assert!(
            e.contains("tokens: is 4, but the runs hold 3 tokens"),
            "{e}"
        );
        let e = err(&|b| b.push(0));
        assert!(e.contains("the file has 1 more bytes"), "{e}");
        // T = 2^40 tokens: refused by size, nothing allocated.
        let e = err(&|b| {
            b[32..40].copy_from_slice(&(1u64 << 40).to_le_bytes());
            b[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        });
        assert!(e.contains("runs: truncated or inconsistent counts"), "{e}");
    }
}
