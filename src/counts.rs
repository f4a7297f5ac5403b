//! Reading activation-count files (`moe-activation-counts/v1`, ../shared/data/README.md), which
//! every problem's importer starts from: one reader, one set of checks, one wording of errors.

use std::io::Read;
use std::path::Path;

use formulations::{Error, ValidationError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The `format` string of an activation-count file.
pub const FORMAT: &str = "moe-activation-counts/v1";

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

/// Reads an activation-count file (gzip or plain JSON) and checks it
/// ([`ActivationCounts::check`]). Errors name the file and the field.
pub fn read(path: &Path) -> Result<ActivationCounts, Error> {
    let counts: ActivationCounts = read_json_maybe_gz(path)?;
    counts.check().map_err(|e| e.in_file(path))?;
    Ok(counts)
}

/// Parses a JSON file that may be gzip-compressed (recognised by its magic bytes). Errors name
/// the file, and for bad JSON the line and column.
pub fn read_json_maybe_gz<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .map_err(io)?;
        text
    } else {
        String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?
    };
    formulations::error::parse_json(path, &text)
}
