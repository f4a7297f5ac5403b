//! libCacheSim's trace formats: a trace's request stream out to an `oracleGeneral` binary or a
//! csv file (`moe-opt export`), so that any of libCacheSim's policies runs on
//! moe-opt's traces, and such a file back into a trace (`moe-opt import cache-trace
//! --libcachesim`), so that moe-opt's exact bounds run on libCacheSim's traces.
//!
//! ## The formats (read in libCacheSim's source, commit aa0fc40 of 2024-10-07; the PyPI package
//! libcachesim 0.3.5 reads moe-opt's files as described, `./dev libcachesim-test`)
//!
//! `oracleGeneral` (libCacheSim/traceReader/customizedReader/oracle/oracleGeneralBin.h, and
//! the writer libCacheSim/bin/traceUtils/traceConv.cpp): no header, 24-byte packed records,
//! little-endian, in this order:
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | `clock_time` | u32 |
//! | 4 | `obj_id` | u64 |
//! | 12 | `obj_size` | u32 |
//! | 16 | `next_access_vtime` | i64 |
//!
//! `next_access_vtime` is the 1-based index in the file of the next request of the same object
//! (traceConv writes n_req minus the backward index: "reference count starts with 1"); no next
//! request is written as -1, and the reader takes -1 or i64::MAX alike. Only relative order
//! matters to libCacheSim's Belady (libCacheSim/cache/eviction/Belady.c keys its priority
//! queue on the value). Records of size 0 are skipped by libCacheSim's reader
//! (`ignore_size_zero_req`): moe-opt never writes one and refuses one on import.
//!
//! csv (libCacheSim/traceReader/generalReader/csv.c, options parsed in
//! libCacheSim/bin/cli_reader_utils.c): moe-opt writes the header
//! `time,obj_id,obj_size,next_access_vtime` and one line per request. libCacheSim's csv reader
//! is told the 1-based columns (`cachesim trace_path trace_type eviction_algo cache_size`):
//! `cachesim FILE csv LRU 4 --trace-type-params
//! "time-col=1,obj-id-col=2,obj-size-col=3,has-header=true,delimiter=,"` (Python:
//! `ReaderInitParam` with `time_field=1, obj_id_field=2, obj_size_field=3, has_header=True`).
//! That reader has no next-access column, so libCacheSim's Belady needs the binary.
//!
//! ## The mapping
//!
//! One request per (token, layer, expert), in the order of moe-opt's request stream
//! ([`Trace::pooled_requests`]: token-major, layers in order, experts in listed order), with
//! `obj_id = layer * E + expert` and `time` = the step, `token * L + layer`. `--layer L`
//! writes one layer's stream ([`Trace::layer_requests`]) instead: `obj_id = expert`, `time` =
//! the token. A libCacheSim cache of C objects of size 1 on the whole export is moe-opt's pool
//! (`replay --scope pool`); on one layer's export it is that layer's cache (`--scope
//! per-layer`). `obj_size` is 1, or the expert's bytes with `--object-size` (then give
//! libCacheSim a capacity of C x bytes).
//!
//! Import reverses it given E, L and K: the records of one `time` are one step, and steps
//! must run 0, 1, 2, ... (a step of every (token, layer), token-major); step s is token s / L
//! at layer s mod L, its obj ids must lie in `layer * E ..= layer * E + E - 1`, and it must
//! hold exactly K distinct experts. A one-layer export imports with L = 1. Every record must
//! have the size of the first (moe-opt's experts are of one size), and its
//! `next_access_vtime` must be the sentinel exactly where the object has no later request and
//! otherwise the index above: a wrong value would make libCacheSim's Belady differ from
//! moe-opt's, so it is refused, not rewritten.
//!
//! The format carries the routing only: the imported trace has one sequence (tokens 0, 1,
//! ...), phase `decode`, no weights nor logits, and is `ranked` only for K = 1 (as a token log
//! without weights, [`super::import`]). Exporting it again (same `--object-size`) gives the
//! same bytes.
//!
//! A foreign libCacheSim trace (arbitrary obj ids and times) imports with `--renumber`: every
//! record is one token of a single layer with K = 1, obj ids become experts 0, 1, ... in order
//! of first appearance (at most [`MAX_EXPERTS`] distinct), times and sizes are not used (the
//! bounds are those of unit-size objects: libCacheSim's `ignore_obj_size`); sizes must still
//! be nonzero and `next_access_vtime` right, as above.
//!
//! Errors name the file and the record (0-based for the binary, `record 17.obj_size`) or the
//! csv line (1-based, `line 19.obj_size`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use formulations::cache::model::{Phase, Requests, Routing, Streams, Token, Trace};
use formulations::cache::validate::{MAX_EXPERTS, MAX_LAYERS};
use formulations::Error;

/// Bytes of one `oracleGeneral` record.
pub const RECORD_BYTES: usize = 24;

/// The csv header moe-opt writes and reads.
pub const CSV_HEADER: &str = "time,obj_id,obj_size,next_access_vtime";

/// No next request: what libCacheSim's traceConv writes (its reader also takes i64::MAX).
pub const NO_NEXT: i64 = -1;

/// Which of libCacheSim's formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The 24-byte binary records of `oracleGeneral`.
    OracleGeneral,
    /// Comma-separated text with a header line.
    Csv,
}

impl Format {
    /// The format of a file to import: `.csv` is csv, anything else `oracleGeneral`.
    pub fn of_path(path: &Path) -> Self {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            Format::Csv
        } else {
            Format::OracleGeneral
        }
    }
}

/// One request of a libCacheSim trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// `clock_time`.
    pub time: u32,
    /// `obj_id`.
    pub obj_id: u64,
    /// `obj_size`.
    pub obj_size: u32,
    /// 1-based index of the next request of `obj_id`, or [`NO_NEXT`].
    pub next_access_vtime: i64,
}

/// `next_access_vtime` of every request of `ids`: the 1-based index of the next request of the
/// same id, or [`NO_NEXT`].
pub fn next_access(ids: &[u64]) -> Vec<i64> {
    let mut next = vec![NO_NEXT; ids.len()];
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for (i, &id) in ids.iter().enumerate().rev() {
        if let Some(&j) = seen.get(&id) {
            next[i] = j as i64 + 1;
        }
        seen.insert(id, i);
    }
    next
}

/// The records of `trace`'s pooled stream, or of one layer's stream with `layer`.
pub fn records(
    trace: &impl Streams,
    layer: Option<usize>,
    object_size: u32,
) -> Result<Vec<Record>, Error> {
    let requests: Requests = match layer {
        Some(l) if l >= trace.shape().2 => {
            return Err(Error::command_line(
                "--layer",
                format!("the trace has layers 0..{}, got {l}", trace.shape().2),
            ))
        }
        Some(l) => trace.layer_requests(l),
        None => trace.pooled_requests(),
    };
    if requests.len() > u32::MAX as usize + 1 {
        return Err(Error::command_line(
            "--layer",
            format!(
                "{} steps do not fit libCacheSim's 32-bit clock_time (export one layer)",
                requests.len()
            ),
        ));
    }
    let mut times = Vec::with_capacity(requests.ids.len());
    for (t, step) in requests.steps().enumerate() {
        times.extend(std::iter::repeat_n(t as u32, step.len()));
    }
    let ids: Vec<u64> = requests.ids.iter().map(|&i| u64::from(i)).collect();
    let next = next_access(&ids);
    Ok(times
        .into_iter()
        .zip(ids)
        .zip(next)
        .map(|((time, obj_id), next_access_vtime)| Record {
            time,
            obj_id,
            obj_size: object_size,
            next_access_vtime,
        })
        .collect())
}

/// The file content of `records` in `format`.
pub fn encode(records: &[Record], format: Format) -> Vec<u8> {
    match format {
        Format::OracleGeneral => {
            let mut out = Vec::with_capacity(records.len() * RECORD_BYTES);
            for r in records {
                out.extend_from_slice(&r.time.to_le_bytes());
                out.extend_from_slice(&r.obj_id.to_le_bytes());
                out.extend_from_slice(&r.obj_size.to_le_bytes());
                out.extend_from_slice(&r.next_access_vtime.to_le_bytes());
            }
            out
        }
        Format::Csv => {
            let mut out = format!("{CSV_HEADER}\n");
            for r in records {
                let _ = writeln!(
                    out,
                    "{},{},{},{}",
                    r.time, r.obj_id, r.obj_size, r.next_access_vtime
                );
            }
            out.into_bytes()
        }
    }
}

/// Where record `i` is, for errors: `record i` (binary) or its csv line.
fn place(format: Format, i: usize) -> String {
    match format {
        Format::OracleGeneral => format!("record {i}"),
        Format::Csv => format!("line {}", i + 2),
    }
}

/// Parses a file's content; checks that it has records, none of size 0, and that every
/// `next_access_vtime` is the one [`next_access`] gives (the sentinel as -1 or i64::MAX).
pub fn decode(path: &Path, bytes: &[u8], format: Format) -> Result<Vec<Record>, Error> {
    let records = match format {
        Format::OracleGeneral => {
            if !bytes.len().is_multiple_of(RECORD_BYTES) {
                return Err(Error::invalid(
                    path,
                    format!("record {}", bytes.len() / RECORD_BYTES),
                    format!(
                        "truncated: {} bytes is not a whole number of {RECORD_BYTES}-byte \
                         oracleGeneral records",
                        bytes.len()
                    ),
                ));
            }
            bytes
                .chunks_exact(RECORD_BYTES)
                .map(|c| Record {
                    time: u32::from_le_bytes(c[0..4].try_into().expect("4 bytes")),
                    obj_id: u64::from_le_bytes(c[4..12].try_into().expect("8 bytes")),
                    obj_size: u32::from_le_bytes(c[12..16].try_into().expect("4 bytes")),
                    next_access_vtime: i64::from_le_bytes(c[16..24].try_into().expect("8 bytes")),
                })
                .collect()
        }
        Format::Csv => parse_csv(path, bytes)?,
    };
    if records.is_empty() {
        return Err(Error::invalid(path, "records", "the file holds no request"));
    }
    let ids: Vec<u64> = records.iter().map(|r| r.obj_id).collect();
    for (i, (r, want)) in records.iter().zip(next_access(&ids)).enumerate() {
        if r.obj_size == 0 {
            return Err(Error::invalid(
                path,
                format!("{}.obj_size", place(format, i)),
                "0 (libCacheSim skips requests of size 0)",
            ));
        }
        let got = r.next_access_vtime;
        let ok = if want == NO_NEXT {
            got == NO_NEXT || got == i64::MAX
        } else {
            got == want
        };
        if !ok {
            let expected = if want == NO_NEXT {
                format!(
                    "-1 or {} (obj_id {} is not requested again)",
                    i64::MAX,
                    r.obj_id
                )
            } else {
                format!(
                    "{want} (the 1-based index of obj_id {}'s next request)",
                    r.obj_id
                )
            };
            return Err(Error::invalid(
                path,
                format!("{}.next_access_vtime", place(format, i)),
                format!("{got}, expected {expected}"),
            ));
        }
    }
    Ok(records)
}

fn parse_csv(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some(CSV_HEADER) {
        return Err(Error::invalid(
            path,
            "line 1",
            format!("the header must be `{CSV_HEADER}`"),
        ));
    }
    let mut records = Vec::new();
    for (i, line) in lines.enumerate() {
        let at = |field: &str| format!("line {}.{field}", i + 2);
        let cells: Vec<&str> = line.trim_end().split(',').collect();
        if cells.len() != 4 {
            return Err(Error::invalid(
                path,
                format!("line {}", i + 2),
                format!("{} columns, expected 4 ({CSV_HEADER})", cells.len()),
            ));
        }
        fn num<T: std::str::FromStr>(
            path: &Path,
            field: String,
            cell: &str,
            what: &str,
        ) -> Result<T, Error> {
            cell.parse()
                .map_err(|_| Error::invalid(path, field, format!("`{cell}` is not {what}")))
        }
        records.push(Record {
            time: num(path, at("time"), cells[0], "a u32")?,
            obj_id: num(path, at("obj_id"), cells[1], "a u64")?,
            obj_size: num(path, at("obj_size"), cells[2], "a u32")?,
            next_access_vtime: num(path, at("next_access_vtime"), cells[3], "an i64")?,
        });
    }
    Ok(records)
}

/// What a libCacheSim file does not say: E, L and K, or `--renumber`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The mapping of an export, with E, L and K.
    Export {
        /// E.
        experts: usize,
        /// L.
        layers: usize,
        /// K.
        top_k: usize,
    },
    /// A foreign trace: one token a record, one layer, K = 1, ids renumbered.
    Renumber,
}

/// What the reader of an exported trace holds between records: the step being read (its
/// experts, marked in `seen` against a repeat), the current token's routings so far, and the
/// tokens done. One value, so that closing a step (at a new time, and after the last record)
/// is one call.
struct Open {
    step: Vec<u32>,
    seen: Vec<bool>,
    current: Vec<Routing>,
    tokens: Vec<Token>,
}

/// The trace of `records` read from `path` (see the module doc for both shapes).
pub fn to_trace(
    path: &Path,
    format: Format,
    records: &[Record],
    shape: Shape,
) -> Result<Trace, Error> {
    let name = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let token = |t: usize, layers: Vec<Routing>| Token {
        seq: 0,
        token: t as u32,
        phase: Phase::Decode,
        layers,
    };
    let routing = |experts: Vec<u32>| Routing {
        experts,
        weights: None,
        logits: None,
    };
    let (experts, layers, top_k, tokens) = match shape {
        Shape::Renumber => {
            if records.len() > u32::MAX as usize {
                return Err(Error::invalid(
                    path,
                    "records",
                    format!(
                        "{} requests, more tokens than a trace numbers",
                        records.len()
                    ),
                ));
            }
            let mut ids: HashMap<u64, u32> = HashMap::new();
            let mut tokens = Vec::with_capacity(records.len());
            for (i, r) in records.iter().enumerate() {
                let next = ids.len();
                let e = *ids.entry(r.obj_id).or_insert(next as u32);
                if ids.len() > MAX_EXPERTS {
                    return Err(Error::invalid(
                        path,
                        format!("{}.obj_id", place(format, i)),
                        format!(
                            "{} distinct objects exceed the limit of {MAX_EXPERTS} experts \
                             (formulations::cache::validate::MAX_EXPERTS)",
                            ids.len()
                        ),
                    ));
                }
                tokens.push(token(i, vec![routing(vec![e])]));
            }
            (ids.len(), 1, 1, tokens)
        }
        Shape::Export {
            experts,
            layers,
            top_k,
        } => {
            let first_size = records[0].obj_size;
            let mut open = Open {
                step: Vec::with_capacity(top_k),
                seen: vec![false; experts],
                current: Vec::with_capacity(layers),
                tokens: Vec::new(),
            };
            let mut step_time = 0u64;
            // Ends step `t`, whose last record is `at`.
            let close = |open: &mut Open, t: u64, at: usize| -> Result<(), Error> {
                if open.step.len() != top_k {
                    return Err(Error::invalid(
                        path,
                        format!("{}.time", place(format, at)),
                        format!(
                            "step {t} (token {}, layer {}) has {} experts, expected top_k = {top_k}",
                            t / layers as u64,
                            t % layers as u64,
                            open.step.len()
                        ),
                    ));
                }
                for &e in &open.step {
                    open.seen[e as usize] = false;
                }
                open.current.push(routing(std::mem::take(&mut open.step)));
                if open.current.len() == layers {
                    let done = token(open.tokens.len(), std::mem::take(&mut open.current));
                    open.tokens.push(done);
                }
                Ok(())
            };
            for (i, r) in records.iter().enumerate() {
                let at = |field: &str| format!("{}.{field}", place(format, i));
                if r.obj_size != first_size {
                    return Err(Error::invalid(
                        path,
                        at("obj_size"),
                        format!(
                            "{} differs from the first record's {first_size} (moe-opt's experts \
                             are of one size)",
                            r.obj_size
                        ),
                    ));
                }
                let t = u64::from(r.time);
                if i > 0 && t == step_time + 1 {
                    close(&mut open, step_time, i - 1)?;
                    step_time = t;
                } else if t != step_time {
                    return Err(Error::invalid(
                        path,
                        at("time"),
                        format!(
                            "{t} after {step_time}: times must be the steps 0, 1, 2, ... in \
                             order (a foreign trace imports with --renumber)"
                        ),
                    ));
                }
                let layer = (t % layers as u64) as usize;
                let base = (layer * experts) as u64;
                if r.obj_id < base || r.obj_id - base >= experts as u64 {
                    return Err(Error::invalid(
                        path,
                        at("obj_id"),
                        format!(
                            "{} is not an expert of layer {layer} (step {t}): ids of layer l are \
                             l x E .. l x E + E - 1 with E = {experts}",
                            r.obj_id
                        ),
                    ));
                }
                let e = (r.obj_id - base) as u32;
                if open.seen[e as usize] {
                    return Err(Error::invalid(
                        path,
                        at("obj_id"),
                        format!("{} is requested twice in step {t}", r.obj_id),
                    ));
                }
                open.seen[e as usize] = true;
                open.step.push(e);
            }
            close(&mut open, step_time, records.len() - 1)?;
            if !open.current.is_empty() {
                return Err(Error::invalid(
                    path,
                    format!("{}.time", place(format, records.len() - 1)),
                    format!(
                        "the last token has {} of its {layers} layers (steps must come in whole \
                         tokens)",
                        open.current.len()
                    ),
                ));
            }
            (experts, layers, top_k, open.tokens)
        }
    };
    let trace = Trace {
        ranked: top_k == 1,
        ..Trace::new(name.clone(), name, experts, top_k, layers, tokens)
    };
    formulations::cache::validate::validate(&trace).map_err(|e| e.in_file(path))?;
    Ok(trace)
}

/// Checks E, L and K against the trace limits before anything is allocated by them.
pub fn check_shape(shape: Shape) -> Result<(), Error> {
    if let Shape::Export {
        experts,
        layers,
        top_k,
    } = shape
    {
        crate::cli::flags::size_at_most(
            "--experts",
            "experts",
            experts as u64,
            MAX_EXPERTS as u64,
            "formulations::cache::validate::MAX_EXPERTS",
        )?;
        crate::cli::flags::size_at_most(
            "--layers",
            "layers",
            layers as u64,
            MAX_LAYERS as u64,
            "formulations::cache::validate::MAX_LAYERS",
        )?;
        if top_k > experts {
            return Err(Error::command_line(
                "--top-k",
                format!("must be at most --experts = {experts}, got {top_k}"),
            ));
        }
    }
    Ok(())
}

/// Reads a libCacheSim file (format by [`Format::of_path`]) into a validated trace.
pub fn import(path: &Path, shape: Shape) -> Result<Trace, Error> {
    check_shape(shape)?;
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let format = Format::of_path(path);
    let records = decode(path, &bytes, format)?;
    to_trace(path, format, &records, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E = 4, L = 2, K = 2, three tokens.
    fn small() -> Trace {
        let routing = |e: [u32; 2]| Routing {
            experts: e.to_vec(),
            weights: None,
            logits: None,
        };
        let token = |t: u32, a: [u32; 2], b: [u32; 2]| Token {
            seq: 0,
            token: t,
            phase: Phase::Decode,
            layers: vec![routing(a), routing(b)],
        };
        Trace {
            ranked: false,
            ..Trace::new(
                "small",
                "small",
                4,
                2,
                2,
                vec![
                    token(0, [1, 3], [0, 2]),
                    token(1, [3, 0], [2, 1]),
                    token(2, [1, 0], [1, 3]),
                ],
            )
        }
    }

    #[test]
    fn pooled_records_by_hand() {
        // Pool ids l*4+e: token 0 -> [1,3],[4,6]; token 1 -> [3,0],[6,5]; token 2 -> [1,0],[5,7].
        // Positions (1-based): 1:1 2:3 3:4 4:6 5:3 6:0 7:6 8:5 9:1 10:0 11:5 12:7.
        let r = records(&small(), None, 1).unwrap();
        let ids: Vec<u64> = r.iter().map(|r| r.obj_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 6, 3, 0, 6, 5, 1, 0, 5, 7]);
        let times: Vec<u32> = r.iter().map(|r| r.time).collect();
        assert_eq!(times, vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        let next: Vec<i64> = r.iter().map(|r| r.next_access_vtime).collect();
        assert_eq!(next, vec![9, 5, -1, 7, -1, 10, -1, 11, -1, -1, -1, -1]);
        // Record 1 in bytes: time 0, id 3, size 1, next 5, little-endian.
        let bytes = encode(&r, Format::OracleGeneral);
        assert_eq!(bytes.len(), 12 * 24);
        assert_eq!(
            &bytes[24..48],
            &[0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]
        );
        // The sentinel -1 is eight 0xff bytes (record 2).
        assert_eq!(&bytes[48 + 16..72], &[0xff; 8]);
        let csv = String::from_utf8(encode(&r, Format::Csv)).unwrap();
        assert!(
            csv.starts_with("time,obj_id,obj_size,next_access_vtime\n0,1,1,9\n0,3,1,5\n1,4,1,-1\n")
        );
    }

    #[test]
    fn one_layer_records_and_object_size() {
        // Layer 1: [0,2], [2,1], [1,3]; times are the tokens.
        let r = records(&small(), Some(1), 4096).unwrap();
        let got: Vec<(u32, u64, u32, i64)> = r
            .iter()
            .map(|r| (r.time, r.obj_id, r.obj_size, r.next_access_vtime))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0, 4096, -1),
                (0, 2, 4096, 3),
                (1, 2, 4096, -1),
                (1, 1, 4096, 5),
                (2, 1, 4096, -1),
                (2, 3, 4096, -1)
            ]
        );
        assert!(records(&small(), Some(2), 1).is_err());
    }

    #[test]
    fn both_formats_round_trip() {
        let trace = small();
        let shape = Shape::Export {
            experts: 4,
            layers: 2,
            top_k: 2,
        };
        for format in [Format::OracleGeneral, Format::Csv] {
            let bytes = encode(&records(&trace, None, 1).unwrap(), format);
            let back = decode(Path::new("t"), &bytes, format).unwrap();
            let imported = to_trace(Path::new("t"), format, &back, shape).unwrap();
            let routings =
                |t: &Trace| -> Vec<Vec<u32>> { t.routings().map(|r| r.experts.clone()).collect() };
            assert_eq!(routings(&imported), routings(&trace));
            assert_eq!(encode(&records(&imported, None, 1).unwrap(), format), bytes);
        }
    }

    #[test]
    fn refusals_name_the_record() {
        let p = Path::new("t.bin");
        let good = encode(&records(&small(), None, 1).unwrap(), Format::OracleGeneral);
        let err = |bytes: &[u8], shape: Shape| -> String {
            decode(p, bytes, Format::OracleGeneral)
                .and_then(|r| to_trace(p, Format::OracleGeneral, &r, shape))
                .unwrap_err()
                .to_string()
        };
        let shape = Shape::Export {
            experts: 4,
            layers: 2,
            top_k: 2,
        };
        let e = err(&good[..good.len() - 3], shape);
        assert!(e.contains("record 11") && e.contains("truncated"), "{e}");
        let mut bad = good.clone();
        bad[2 * 24 + 16..3 * 24].copy_from_slice(&7i64.to_le_bytes());
        let e = err(&bad, shape);
        assert!(
            e.contains("record 2.next_access_vtime: 7, expected -1"),
            "{e}"
        );
        let mut bad = good.clone();
        bad[3 * 24 + 12..3 * 24 + 16].copy_from_slice(&0u32.to_le_bytes());
        assert!(err(&bad, shape).contains("record 3.obj_size: 0"));
        // Read as E = 4, L = 1, the steps' ids of layer 1 (4..8) are out of range.
        let e = err(
            &good,
            Shape::Export {
                experts: 4,
                layers: 1,
                top_k: 2,
            },
        );
        assert!(
            e.contains("record 2.obj_id: 4 is not an expert of layer 0"),
            "{e}"
        );
        let e = err(
            &good,
            Shape::Export {
                experts: 4,
                layers: 2,
                top_k: 1,
            },
        );
        assert!(e.contains("has 2 experts, expected top_k = 1"), "{e}");
        assert!(err(&[], shape).contains("no request"));
    }

    #[test]
    fn a_foreign_trace_renumbers_its_objects() {
        // Objects 900, 5, 900, 77: experts 0, 1, 0, 2, one token each.
        let recs: Vec<Record> = [900u64, 5, 900, 77]
            .iter()
            .zip([3, -1, -1, -1])
            .enumerate()
            .map(|(i, (&obj_id, next))| Record {
                time: 1000 + i as u32,
                obj_id,
                obj_size: 100 + i as u32,
                next_access_vtime: next,
            })
            .collect();
        let p = Path::new("f.oracleGeneral");
        let bytes = encode(&recs, Format::OracleGeneral);
        let back = decode(p, &bytes, Format::OracleGeneral).unwrap();
        let t = to_trace(p, Format::OracleGeneral, &back, Shape::Renumber).unwrap();
        assert_eq!((t.experts, t.layers, t.top_k), (3, 1, 1));
        let ids: Vec<u32> = t.routings().map(|r| r.experts[0]).collect();
        assert_eq!(ids, vec![0, 1, 0, 2]);
    }
}
