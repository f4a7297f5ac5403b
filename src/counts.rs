//! Reading activation counts, which every problem's importer starts from: one reader, one set
//! of checks, one wording of errors. The format is picked by the file's extension:
//!
//! * `.npy` (numpy's `np.save`, read by [`crate::npy`]): a 3-D array `[prompt][layer][expert]`,
//!   or a 2-D array `[layer][expert]` (one prompt); integer dtypes, or floats holding whole
//!   numbers.
//! * `.csv`, no header: one line per layer of a prompt, `prompt,layer,count_0,...,count_(E-1)`,
//!   the prompts in order from 0 and each prompt's layers in order from 0 (the two index
//!   columns make a layout mistake, such as a file of EPLB weights, an error rather than other
//!   counts). From numpy: `np.savetxt(f, np.column_stack([np.repeat(np.arange(P), L),
//!   np.tile(np.arange(L), P), c.reshape(P * L, E)]), fmt="%d", delimiter=",")`.
//! * anything else: JSON, gzip-compressed or plain: a `moe-activation-counts/v1` object
//!   (../shared/data/README.md), or a bare matrix, 3-D or 2-D nested arrays as the `.npy` (what
//!   `c.tolist()` writes).
//!
//! The bare formats (a `.npy`, a CSV or a JSON matrix) have no header: [`Header`] gives what
//! they lack (`--top-k`, required; `--model`, optional). Without a model the counts' `model`
//! is [`NO_MODEL`] (a label in the instance's names only), and an importer that needs a known
//! model (for its expert bytes or device preset) says to give `--model` or the value itself
//! ([`unknown_model`]). A v1 file states its own header: a flag given with it must agree.
//!
//! Every count is a whole number in 0..=[`MAX_TOTAL`]; a bare file's value that is not (NaN,
//! negative, fractional, too large), a ragged row or prompt, a dimension of 0, or an array of
//! another rank is refused, naming the file, the element (`[prompt][layer][expert]` as the
//! file indexes it; `line N, column M` in a CSV) and the reason. Nothing is clamped.

use std::io::Read;
use std::path::Path;

use formulations::{Error, ValidationError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` string of an activation-count file.
pub const FORMAT: &str = "moe-activation-counts/v1";

/// The `model` of bare counts read without `--model` (no known model's name starts with it).
pub const NO_MODEL: &str = "unnamed";

/// The most all counts of a file may sum to: every sum a reader forms (a row, a layer over
/// the prompts) then fits in u64 and converts to f64 exactly.
pub const MAX_TOTAL: u64 = 1 << 53;

/// An activation-count file. Unknown fields are refused, as in every other format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationCounts {
    /// Always [`FORMAT`].
    pub format: String,
    /// The model the counts come from.
    pub model: String,
    /// k: experts per token and layer.
    pub top_k: u32,
    /// Routed experts per MoE layer.
    pub experts_per_layer: u32,
    /// Prompts (first index of `counts`).
    pub prompts: usize,
    /// Layers (second index of `counts`).
    pub layers: usize,
    /// Where the counts come from.
    #[serde(default)]
    pub source: String,
    /// What `counts` holds, in words (the shared data's files carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_doc: Option<String>,
    /// counts\[prompt\]\[layer\]\[expert\]: tokens routed to that expert.
    pub counts: Vec<Vec<Vec<u64>>>,
}

impl ActivationCounts {
    /// Checks the header against the shape of `counts`: after it, `prompts`, `layers` and
    /// `experts_per_layer` are the lengths of data that exists (at least one prompt), so no
    /// reader allocates by a header's word alone; and the counts sum to at most [`MAX_TOTAL`].
    pub fn check(&self) -> Result<(), ValidationError> {
        let bad = |field: String, reason: String| Err(ValidationError::new(field, reason));
        if self.format != FORMAT {
            return bad(
                "format".into(),
                format!("is '{}', expected '{FORMAT}'", self.format),
            );
        }
        if self.experts_per_layer == 0 {
            return bad("experts_per_layer".into(), "must be at least 1".into());
        }
        if self.top_k == 0 || self.top_k > self.experts_per_layer {
            return bad(
                "top_k".into(),
                format!(
                    "must be in 1..={} (experts_per_layer), got {}",
                    self.experts_per_layer, self.top_k
                ),
            );
        }
        if self.prompts == 0 {
            return bad("prompts".into(), "must be at least 1".into());
        }
        if self.counts.len() != self.prompts {
            return bad(
                "counts".into(),
                format!(
                    "has {} prompts but `prompts` is {}",
                    self.counts.len(),
                    self.prompts
                ),
            );
        }
        let mut total = 0u64;
        for (p, prompt) in self.counts.iter().enumerate() {
            if prompt.len() != self.layers {
                return bad(
                    format!("counts[{p}]"),
                    format!(
                        "has {} layers but `layers` is {}",
                        prompt.len(),
                        self.layers
                    ),
                );
            }
            for (l, row) in prompt.iter().enumerate() {
                if row.len() != self.experts_per_layer as usize {
                    return bad(
                        format!("counts[{p}][{l}]"),
                        format!(
                            "has {} experts but `experts_per_layer` is {}",
                            row.len(),
                            self.experts_per_layer
                        ),
                    );
                }
                total = row
                    .iter()
                    .try_fold(total, |t, &c| t.checked_add(c))
                    .filter(|&t| t <= MAX_TOTAL)
                    .ok_or_else(|| {
                        ValidationError::new(
                            format!("counts[{p}][{l}]"),
                            format!("the counts so far sum beyond {MAX_TOTAL} (2^53)"),
                        )
                    })?;
            }
        }
        Ok(())
    }
}

/// What a bare count file (`.npy`, CSV, a JSON matrix) does not state, from the command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    /// `--top-k`: k, experts per token and layer (required for a bare file).
    pub top_k: Option<u32>,
    /// `--model`: the model the counts come from (a known model's name sets its expert bytes
    /// and device).
    pub model: Option<String>,
}

/// Reads activation counts in any of their formats (module doc), completes a bare file's
/// header from `header` (or checks a v1 file's against it) and checks the result
/// ([`ActivationCounts::check`]). Errors name the file, the field or element, and the reason.
pub fn read(path: &Path, header: &Header) -> Result<ActivationCounts, Error> {
    let has = |ext: &str| {
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(ext))
    };
    let (top_k, counts) = if has("npy") {
        let top_k = header.top_k(path, "a .npy array")?;
        (top_k, from_npy(path)?)
    } else if has("csv") {
        let top_k = header.top_k(path, "a CSV file")?;
        (top_k, from_csv(path)?)
    } else {
        let text = read_text_maybe_gz(path)?;
        if !text.trim_start().starts_with('[') {
            let counts: ActivationCounts = formulations::error::parse_json(path, &text)?;
            counts.check().map_err(|e| e.in_file(path))?;
            header.agrees(path, &counts)?;
            return Ok(counts);
        }
        let top_k = header.top_k(path, "a bare JSON matrix")?;
        (top_k, from_json_matrix(path, &text)?)
    };
    let experts = counts[0][0].len();
    let experts_per_layer = u32::try_from(experts)
        .map_err(|_| Error::invalid(path, "shape", format!("{experts} experts per layer")))?;
    if top_k > experts_per_layer {
        return Err(Error::command_line(
            "--top-k",
            format!(
                "{top_k} exceeds the {experts} experts per layer of {}",
                path.display()
            ),
        ));
    }
    let counts = ActivationCounts {
        format: FORMAT.into(),
        model: header.model.clone().unwrap_or_else(|| NO_MODEL.into()),
        top_k,
        experts_per_layer,
        prompts: counts.len(),
        layers: counts[0].len(),
        source: String::new(),
        counts_doc: None,
        counts,
    };
    counts.check().map_err(|e| e.in_file(path))?;
    Ok(counts)
}

impl Header {
    /// `--top-k`, which a bare file (`kind`) needs.
    fn top_k(&self, path: &Path, kind: &str) -> Result<u32, Error> {
        self.top_k.ok_or_else(|| {
            Error::invalid(
                path,
                "top_k",
                format!(
                    "{kind} of counts has no header: give k (experts per token) with --top-k K \
                     (`import`, `plan --counts`)"
                ),
            )
        })
    }

    /// A v1 file states its header; a flag given with it must say the same.
    fn agrees(&self, path: &Path, counts: &ActivationCounts) -> Result<(), Error> {
        if let Some(k) = self.top_k.filter(|&k| k != counts.top_k) {
            return Err(Error::invalid(
                path,
                "top_k",
                format!(
                    "is {}, but --top-k says {k} (a {FORMAT} file states its own header: \
                     leave the flag out or make it agree)",
                    counts.top_k
                ),
            ));
        }
        if let Some(m) = self.model.as_ref().filter(|&m| *m != counts.model) {
            return Err(Error::invalid(
                path,
                "model",
                format!(
                    "is '{}', but --model says '{m}' (a {FORMAT} file states its own header: \
                     leave the flag out or make it agree)",
                    counts.model
                ),
            ));
        }
        Ok(())
    }
}

/// Why an importer cannot use the counts' model: `what` (the value it needs, given in the
/// import configuration instead) for a model it does not know, or `--model` as well for a bare
/// file that names none.
pub fn unknown_model(model: &str, what: &str) -> String {
    if model == NO_MODEL {
        format!(
            "the counts name no model (a bare matrix read without --model): give --model NAME \
             of a known model, or {what}"
        )
    } else {
        format!("unknown model '{model}': give {what}")
    }
}

/// A count from a number as a bare file writes it: a whole number in 0..=[`MAX_TOTAL`].
fn whole(x: f64) -> Result<u64, String> {
    if x.is_nan() {
        Err("NaN is not a count (a whole number >= 0)".into())
    } else if x < 0.0 {
        Err(format!("{x} is negative (a count is a whole number >= 0)"))
    } else if x > MAX_TOTAL as f64 {
        Err(too_large(x))
    } else if x.fract() != 0.0 {
        Err(format!("{x} is not a whole number (a count)"))
    } else {
        Ok(x as u64)
    }
}

/// An integer count, at most [`MAX_TOTAL`] (exact: a float would round 2^53 + 1 to 2^53).
fn whole_int(x: u64) -> Result<u64, String> {
    if x > MAX_TOTAL {
        Err(too_large(x))
    } else {
        Ok(x)
    }
}

fn too_large(x: impl std::fmt::LowerExp) -> String {
    format!("{x:e} exceeds the limit of {MAX_TOTAL} (2^53, moe_opt::counts::MAX_TOTAL)")
}

/// The element index as the file writes it: `[layer][expert]` for one prompt.
fn at(one_prompt: bool, p: usize, l: usize, e: usize) -> String {
    if one_prompt {
        format!("[{l}][{e}]")
    } else {
        format!("[{p}][{l}][{e}]")
    }
}

/// A `.npy` array's counts (module doc).
fn from_npy(path: &Path) -> Result<Vec<Vec<Vec<u64>>>, Error> {
    let array = crate::npy::read(path)?;
    let (p, l, e) = match array.shape[..] {
        [l, e] => (1, l, e),
        [p, l, e] => (p, l, e),
        _ => {
            return Err(Error::invalid(
                path,
                "shape",
                format!(
                    "{:?} has {} dimensions; counts are [layer][expert] (one prompt) or \
                     [prompt][layer][expert]",
                    array.shape,
                    array.shape.len()
                ),
            ))
        }
    };
    if p == 0 || l == 0 || e == 0 {
        return Err(Error::invalid(
            path,
            "shape",
            format!(
                "{:?} has a dimension of 0 (counts need a prompt, a layer and an expert)",
                array.shape
            ),
        ));
    }
    let one_prompt = array.shape.len() == 2;
    let mut counts = vec![Vec::with_capacity(l); p];
    for (i, row) in array.values.chunks_exact(e).enumerate() {
        let (q, m) = (i / l, i % l);
        let row = (row.iter().enumerate())
            .map(|(x, &v)| whole(v).map_err(|r| Error::invalid(path, at(one_prompt, q, m, x), r)))
            .collect::<Result<Vec<u64>, _>>()?;
        counts[q].push(row);
    }
    Ok(counts)
}

/// A CSV file's counts (module doc): the index columns say where each line belongs, and must
/// go in order.
fn from_csv(path: &Path) -> Result<Vec<Vec<Vec<u64>>>, Error> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(file);
    let mut counts: Vec<Vec<Vec<u64>>> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let field = e
                .position()
                .map_or_else(|| "csv".into(), |p| format!("line {}", p.line()));
            Error::invalid(path, field, e.to_string())
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let cell = |c: usize| {
            let text = record[c].trim();
            let value = match text.parse::<u64>() {
                Ok(x) => whole_int(x),
                Err(_) => text
                    .parse::<f64>()
                    .map_err(|_| format!("{text:?} is not a number"))
                    .and_then(whole),
            };
            value.map_err(|r| Error::invalid(path, format!("line {line}, column {}", c + 1), r))
        };
        if record.len() < 3 {
            return Err(Error::invalid(
                path,
                format!("line {line}"),
                format!(
                    "has {} fields; a line is prompt,layer,count_0,...,count_(E-1)",
                    record.len()
                ),
            ));
        }
        let (p, l) = (cell(0)?, cell(1)?);
        let layers = counts.first().map(Vec::len);
        let next = counts.len() as u64;
        let here = counts.last().map(|last| (next - 1, last.len() as u64));
        let bad = |reason: String| Err(Error::invalid(path, format!("line {line}"), reason));
        if (p, l) == (next, 0) {
            if let (Some(layers), Some((q, n))) = (layers, here) {
                if n != layers as u64 {
                    return bad(format!(
                        "prompt {p} starts, but prompt {q} has {n} layers and prompt 0 has \
                         {layers}"
                    ));
                }
            }
            counts.push(Vec::new());
        } else if Some((p, l)) != here {
            let expected = match here {
                Some((q, n)) => format!("prompt {q}, layer {n} or prompt {next}, layer 0"),
                None => "prompt 0, layer 0".into(),
            };
            return bad(format!(
                "is prompt {p}, layer {l}; expected {expected} (prompts in order from 0, each \
                 prompt's layers in order from 0)"
            ));
        } else if p > 0 && Some(l as usize) == layers {
            return bad(format!(
                "prompt {p} has more layers than prompt 0 ({})",
                layers.unwrap_or(0)
            ));
        }
        let row = (2..record.len())
            .map(cell)
            .collect::<Result<Vec<u64>, _>>()?;
        if let Some(width) = counts[0].first().map(Vec::len) {
            if row.len() != width {
                return bad(format!(
                    "has {} counts, the first line {width} (experts per layer)",
                    row.len()
                ));
            }
        }
        counts.last_mut().expect("a prompt was pushed").push(row);
    }
    let Some(first) = counts.first() else {
        return Err(Error::invalid(path, "csv", "no lines (no counts)"));
    };
    if let Some((q, prompt)) = counts
        .iter()
        .enumerate()
        .find(|(_, c)| c.len() != first.len())
    {
        return Err(Error::invalid(
            path,
            format!("prompt {q}"),
            format!(
                "has {} layers and prompt 0 has {} (the file ends)",
                prompt.len(),
                first.len()
            ),
        ));
    }
    Ok(counts)
}

/// A bare JSON matrix's counts: 3-D `[prompt][layer][expert]` or 2-D `[layer][expert]`, every
/// prompt with the same layers and every row with the same experts.
fn from_json_matrix(path: &Path, text: &str) -> Result<Vec<Vec<Vec<u64>>>, Error> {
    let value: Value = formulations::error::parse_json(path, text)?;
    // The rank is that of the first elements; every other element must have it too.
    let mut rank = 0;
    let mut first = &value;
    while let Value::Array(items) = first {
        rank += 1;
        match items.first() {
            Some(x) => first = x,
            None => break,
        }
    }
    let one_prompt = rank == 2;
    let prompts: Vec<(usize, &Value)> = match rank {
        2 => vec![(0, &value)],
        3 => nonempty_array(path, &value, "[]")?
            .iter()
            .enumerate()
            .collect(),
        _ => {
            nonempty_array(path, &value, "[]")?;
            return Err(Error::invalid(
                path,
                "shape",
                format!(
                    "nested {rank} deep; counts are [layer][expert] (one prompt) or \
                     [prompt][layer][expert]"
                ),
            ));
        }
    };
    let mut counts = Vec::with_capacity(prompts.len());
    for (p, prompt) in prompts {
        let prompt_at = if one_prompt {
            "[]".into()
        } else {
            format!("[{p}]")
        };
        let rows = nonempty_array(path, prompt, &prompt_at)?;
        let mut layers = Vec::with_capacity(rows.len());
        for (l, row) in rows.iter().enumerate() {
            let row_at = if one_prompt {
                format!("[{l}]")
            } else {
                format!("[{p}][{l}]")
            };
            let cells = nonempty_array(path, row, &row_at)?;
            let row = cells
                .iter()
                .enumerate()
                .map(|(e, x)| {
                    let value = match x {
                        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                            (Some(u), ..) => whole_int(u),
                            (None, Some(i), _) => whole(i as f64),
                            (.., Some(f)) => whole(f),
                            _ => Err(format!("{n} is not a count")),
                        },
                        other => Err(format!("{other} is not a number")),
                    };
                    value.map_err(|r| Error::invalid(path, at(one_prompt, p, l, e), r))
                })
                .collect::<Result<Vec<u64>, _>>()?;
            layers.push(row);
        }
        counts.push(layers);
    }
    let (layers, experts) = (counts[0].len(), counts[0][0].len());
    for (p, prompt) in counts.iter().enumerate() {
        if prompt.len() != layers {
            return Err(Error::invalid(
                path,
                format!("[{p}]"),
                format!("has {} layers, [0] has {layers}", prompt.len()),
            ));
        }
        if let Some((l, row)) = prompt.iter().enumerate().find(|(_, r)| r.len() != experts) {
            let row_at = if one_prompt {
                format!("[{l}]")
            } else {
                format!("[{p}][{l}]")
            };
            return Err(Error::invalid(
                path,
                row_at,
                format!("has {} counts, the first row {experts}", row.len()),
            ));
        }
    }
    Ok(counts)
}

/// The elements of a JSON array at `at` that must hold at least one.
fn nonempty_array<'a>(path: &Path, v: &'a Value, at: &str) -> Result<&'a [Value], Error> {
    match v {
        Value::Array(items) if items.is_empty() => Err(Error::invalid(
            path,
            at,
            "is empty (counts need a prompt, a layer and an expert)",
        )),
        Value::Array(items) => Ok(items),
        other => Err(Error::invalid(path, at, format!("{other} is not an array"))),
    }
}

/// A file's text, gzip-compressed (recognised by its magic bytes) or plain.
pub(crate) fn read_text_maybe_gz(path: &Path) -> Result<String, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .map_err(io)?;
        Ok(text)
    } else {
        String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch file of `bytes` named `name` (the extension picks the format).
    fn file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("moe-opt-counts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A version-1.0 `.npy` of `descr` and `shape` (`np.save`'s layout).
    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        crate::npy::tests::npy(&header, data)
    }

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn k(top_k: u32) -> Header {
        Header {
            top_k: Some(top_k),
            model: None,
        }
    }

    /// `[[[1, 0, 2], [0, 3, 0]], [[4, 0, 0], [1, 1, 2]]]`, K = 1, in each bare format.
    #[test]
    fn every_bare_format_reads_the_same_counts() {
        let expected = vec![
            vec![vec![1, 0, 2], vec![0, 3, 0]],
            vec![vec![4, 0, 0], vec![1, 1, 2]],
        ];
        let ints: Vec<u8> = [1i32, 0, 2, 0, 3, 0, 4, 0, 0, 1, 1, 2]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let files = [
            file("a.npy", &npy("<i4", "(2, 2, 3)", &ints)),
            file(
                "b.npy",
                &npy(
                    "<f8",
                    "(2, 2, 3)",
                    &f8(&[1., 0., 2., 0., 3., 0., 4., 0., 0., 1., 1., 2.]),
                ),
            ),
            file("c.csv", b"0,0,1,0,2\n0,1,0,3,0\n1,0,4,0,0\n1, 1, 1.0,1,2\n"),
            file("d.json", b" [[[1,0,2],[0,3,0]],[[4,0,0],[1,1,2.0]]]"),
        ];
        for path in &files {
            let c = read(path, &k(1)).unwrap();
            assert_eq!(c.counts, expected, "{}", path.display());
            assert_eq!(
                (
                    c.model.as_str(),
                    c.top_k,
                    c.experts_per_layer,
                    c.prompts,
                    c.layers
                ),
                (NO_MODEL, 1, 3, 2, 2)
            );
        }
        // 2-D: one prompt; --model names it.
        let one = Header {
            top_k: Some(2),
            model: Some("m".into()),
        };
        let c = read(&file("e.json", b"[[5, 1], [2, 2]]"), &one).unwrap();
        assert_eq!(
            (c.counts, c.model),
            (vec![vec![vec![5, 1], vec![2, 2]]], "m".into())
        );
        let c = read(&file("f.npy", &npy("|u1", "(1, 2)", &[7, 9])), &one).unwrap();
        assert_eq!(c.counts, vec![vec![vec![7, 9]]]);
    }

    /// The field (element) and reason of `read`'s refusal, past the file's name.
    fn refusal(name: &str, bytes: &[u8], header: &Header) -> String {
        let path = file(name, bytes);
        let e = read(&path, header).unwrap_err().to_string();
        let prefix = format!("{}: ", path.display());
        e.strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{e} does not start with the file"))
            .to_string()
    }

    #[test]
    fn bad_values_shapes_and_flags_are_refused_naming_the_element() {
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            // Values: negative, fractional, NaN, infinite, beyond 2^53 (exact integers too).
            (
                "neg.npy",
                npy(
                    "<i8",
                    "(1, 2)",
                    &[1i64.to_le_bytes(), (-3i64).to_le_bytes()].concat(),
                ),
                "[0][1]: -3 is negative",
            ),
            (
                "frac.npy",
                npy("<f8", "(2, 1, 2)", &f8(&[0., 1., 2., 0.5])),
                "[1][0][1]: 0.5 is not a whole number",
            ),
            (
                "nan.npy",
                npy("<f8", "(1, 2)", &f8(&[f64::NAN, 1.])),
                "[0][0]: NaN is not a count",
            ),
            (
                "inf.npy",
                npy("<f8", "(1, 2)", &f8(&[1., f64::INFINITY])),
                "[0][1]: inf exceeds the limit of 9007199254740992",
            ),
            (
                "big.json",
                b"[[9007199254740993, 0]]".to_vec(),
                "[0][0]: 9.007199254740993e15 exceeds the limit",
            ),
            (
                "neg.json",
                b"[[[1, -1]]]".to_vec(),
                "[0][0][1]: -1 is negative",
            ),
            (
                "str.json",
                b"[[[1, \"2\"]]]".to_vec(),
                "[0][0][1]: \"2\" is not a number",
            ),
            (
                "frac.csv",
                b"0,0,1,2.5\n".to_vec(),
                "line 1, column 4: 2.5 is not a whole number",
            ),
            (
                "word.csv",
                b"0,0,1,x\n".to_vec(),
                "line 1, column 4: \"x\" is not a number",
            ),
            (
                "nan.csv",
                b"0,0,NaN,1\n".to_vec(),
                "line 1, column 3: NaN is not a count",
            ),
            (
                "big.csv",
                b"0,0,1,9007199254740993\n".to_vec(),
                "line 1, column 4: 9.007199254740993e15 exceeds",
            ),
            // The sum over the file: check's field.
            (
                "sum.json",
                b"[[4503599627370496, 4503599627370496], [1, 0]]".to_vec(),
                "counts[0][1]: the counts so far sum beyond",
            ),
            // Ragged rows and prompts, other ranks, 0-sized dimensions.
            (
                "ragged.json",
                b"[[1, 2], [3]]".to_vec(),
                "[1]: has 1 counts, the first row 2",
            ),
            (
                "prompts.json",
                b"[[[1]], [[1], [2]]]".to_vec(),
                "[1]: has 2 layers, [0] has 1",
            ),
            ("rank.json", b"[[[[1]]]]".to_vec(), "shape: nested 4 deep"),
            ("flat.json", b"[1, 2]".to_vec(), "shape: nested 1 deep"),
            (
                "mixed.json",
                b"[[[1]], [2]]".to_vec(),
                "[1][0]: 2 is not an array",
            ),
            ("empty.json", b"[]".to_vec(), "[]: is empty"),
            ("norow.json", b"[[[1]], [[]]]".to_vec(), "[1][0]: is empty"),
            (
                "rank.npy",
                npy("<f8", "(1, 1, 1, 1)", &f8(&[1.])),
                "shape: [1, 1, 1, 1] has 4 dimensions",
            ),
            (
                "vector.npy",
                npy("<f8", "(1,)", &f8(&[1.])),
                "shape: [1] has 1 dimensions",
            ),
            (
                "zero.npy",
                npy("<f8", "(2, 0)", &[]),
                "shape: [2, 0] has a dimension of 0",
            ),
            (
                "ragged.csv",
                b"0,0,1,2\n0,1,3\n".to_vec(),
                "line 2: has 1 counts, the first line 2",
            ),
            ("short.csv", b"0,0\n".to_vec(), "line 1: has 2 fields"),
            ("empty.csv", b"".to_vec(), "csv: no lines"),
            (
                "order.csv",
                b"0,0,1\n0,2,1\n".to_vec(),
                "line 2: is prompt 0, layer 2; expected prompt 0, layer 1 or prompt 1, layer 0",
            ),
            (
                "start.csv",
                b"1,0,1\n".to_vec(),
                "line 1: is prompt 1, layer 0; expected prompt 0, layer 0",
            ),
            (
                "fewer.csv",
                b"0,0,1\n0,1,1\n1,0,1\n2,0,1\n".to_vec(),
                "line 4: prompt 2 starts, but prompt 1 has 1 layers and prompt 0 has 2",
            ),
            (
                "more.csv",
                b"0,0,1\n1,0,1\n1,1,1\n".to_vec(),
                "line 3: prompt 1 has more layers than prompt 0 (1)",
            ),
            (
                "end.csv",
                b"0,0,1\n0,1,1\n1,0,1\n".to_vec(),
                "prompt 1: has 1 layers and prompt 0 has 2",
            ),
        ];
        for (name, bytes, expected) in &cases {
            let got = refusal(name, bytes, &k(1));
            assert!(got.starts_with(expected), "{name}: {got}");
        }
        // --top-k: required for a bare file, at most E.
        let none = Header::default();
        for name in ["a.npy", "a.csv", "a.json"] {
            let got = refusal(name, b"[[1]]", &none);
            assert!(
                got.starts_with("top_k: ") && got.contains("--top-k K"),
                "{got}"
            );
        }
        let path = file("two.json", b"[[1, 1]]");
        let e = read(&path, &k(3)).unwrap_err().to_string();
        assert!(
            e.starts_with("--top-k: 3 exceeds the 2 experts per layer of ")
                && e.ends_with("two.json"),
            "{e}"
        );
    }

    #[test]
    fn a_v1_file_and_its_flags_must_agree() {
        let v1 = br#"{"format": "moe-activation-counts/v1", "model": "m", "top_k": 1,
            "experts_per_layer": 2, "prompts": 1, "layers": 1, "counts": [[[1, 0]]]}"#;
        let agree = Header {
            top_k: Some(1),
            model: Some("m".into()),
        };
        let path = file("v1-agree.json", v1);
        assert_eq!(
            read(&path, &agree).unwrap(),
            read(&path, &Header::default()).unwrap()
        );
        let got = refusal("v1-k.json", v1, &k(2));
        assert!(got.starts_with("top_k: is 1, but --top-k says 2"), "{got}");
        let other = Header {
            top_k: None,
            model: Some("n".into()),
        };
        let got = refusal("v1-m.json", v1, &other);
        assert!(
            got.starts_with("model: is 'm', but --model says 'n'"),
            "{got}"
        );
    }
}
