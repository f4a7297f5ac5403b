//! Which problem an instance file is about. Every instance file of a problem added after
//! SlimCaching starts with `"problem": "<name>"`; SlimCaching files (written before the tag
//! existed) carry none, so a file without the tag reads as SlimCaching.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{parse_json, Error};

/// The problems moe-opt formulates, by the tag their instance files carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Expert caching on cooperating edge servers (paper 000); files carry no tag.
    Slimcaching,
    /// Expert placement on heterogeneous GPU servers (paper 001).
    Prism,
    /// Makespan scheduling of expert reconstruction (paper 003).
    Zipmoe,
    /// ZipMoE's cache-pool planning (paper 003, App. C and D); tag `zipmoe-pool`.
    #[serde(rename = "zipmoe-pool")]
    ZipmoePool,
    /// A token stream of router decisions, replayed through expert caches (papers 002, 004);
    /// tag `cache-trace`.
    #[serde(rename = "cache-trace")]
    CacheTrace,
    /// Offline expert caching over a request sequence, with fixed or flexible routing (the
    /// exact bounds of papers 002 and 004); tag `cache-offline`.
    #[serde(rename = "cache-offline")]
    CacheOffline,
    /// SMoE's per-layer decisions: expert-cache routing and the CPU-vs-PCIe split (paper 004).
    Smoe,
    /// EPLB's expert load balancing solved exactly (replication and placement on GPUs).
    Balance,
}

impl ProblemKind {
    /// The tag as written in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Slimcaching => "slimcaching",
            ProblemKind::Prism => "prism",
            ProblemKind::Zipmoe => "zipmoe",
            ProblemKind::ZipmoePool => "zipmoe-pool",
            ProblemKind::CacheTrace => "cache-trace",
            ProblemKind::CacheOffline => "cache-offline",
            ProblemKind::Smoe => "smoe",
            ProblemKind::Balance => "balance",
        }
    }
}

/// Only the tag of a file.
#[derive(Deserialize)]
struct Tagged {
    #[serde(default)]
    problem: Option<serde_json::Value>,
}

/// The first bytes of a binary token trace (the format of [`crate::cache::binary`]): a file that
/// starts with them is a `cache-trace`. Defined here, where files are told apart, and re-exported
/// by the format's module as its `MAGIC`.
pub const BINARY_TRACE_MAGIC: &[u8; 8] = b"MOETRACE";

/// The `problem` tag of an instance file, `None` when it has none (a SlimCaching file). The
/// tag is read as text, so a problem outside [`ProblemKind`] (one registered by a user) has
/// its files recognised too. A binary trace ([`crate::cache::binary`]) is a `cache-trace`.
/// Errors name the file: unreadable, not JSON, or a tag that is not a string.
///
/// Only the file's first [`HEAD_BYTES`] are read when they open the object with the tag, as
/// every file moe-opt writes does (`problem` is every instance's first field): the problem's
/// `load` then reads the file once. Any other file is read and parsed whole.
pub fn detect_tag(path: &Path) -> Result<Option<String>, Error> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.by_ref()
        .take(HEAD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.starts_with(BINARY_TRACE_MAGIC) {
        return Ok(Some(ProblemKind::CacheTrace.name().into()));
    }
    if let Some(tag) = leading_tag(&bytes) {
        return Ok(Some(tag));
    }
    file.read_to_end(&mut bytes).map_err(io)?;
    let text = crate::error::utf8(path, bytes)?;
    detect_tag_in(path, &text)
}

/// How much of a file [`detect_tag`] reads first.
pub const HEAD_BYTES: u64 = 4096;

/// The tag when `head` opens a JSON object whose first key is `problem` with a string value
/// (white space allowed around the tokens); `None` for anything else, including a head cut
/// inside the string.
fn leading_tag(head: &[u8]) -> Option<String> {
    let mut rest = head;
    for token in [&b"{"[..], b"\"problem\"", b":"] {
        rest = rest.trim_ascii_start().strip_prefix(token)?;
    }
    let mut value = serde_json::Deserializer::from_slice(rest.trim_ascii_start());
    String::deserialize(&mut value).ok()
}

/// [`detect_tag`] on a file's text, already read.
pub fn detect_tag_in(path: &Path, text: &str) -> Result<Option<String>, Error> {
    tag_of(path, parse_json(path, text)?)
}

fn tag_of(path: &Path, tagged: Tagged) -> Result<Option<String>, Error> {
    match tagged.problem {
        None => Ok(None),
        Some(serde_json::Value::String(tag)) => Ok(Some(tag)),
        Some(other) => Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "problem".into(),
            reason: format!("the problem tag must be a string, got {other}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_tag_has_none_and_any_string_tag_is_read() {
        let dir = std::env::temp_dir().join(format!("moe-opt-problem-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain.json");
        std::fs::write(&plain, r#"{"name": "x", "servers": []}"#).unwrap();
        assert_eq!(detect_tag(&plain).unwrap(), None);
        let tagged = dir.join("tagged.json");
        std::fs::write(&tagged, r#"{"problem": "prism", "name": "x"}"#).unwrap();
        assert_eq!(detect_tag(&tagged).unwrap().as_deref(), Some("prism"));
        let unknown = dir.join("unknown.json");
        std::fs::write(&unknown, r#"{"problem": "knapsack"}"#).unwrap();
        assert_eq!(detect_tag(&unknown).unwrap().as_deref(), Some("knapsack"));
        let number = dir.join("number.json");
        std::fs::write(&number, r#"{"problem": 3}"#).unwrap();
        let e = detect_tag(&number).unwrap_err().to_string();
        assert!(e.contains("number.json") && e.contains("problem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_leading_tag_is_read_from_the_head_alone() {
        assert_eq!(
            leading_tag(br#" { "problem" : "a\"b", "x": ["#).as_deref(),
            Some("a\"b")
        );
        // Not first, not a string, or cut inside the string: the whole file decides.
        assert_eq!(leading_tag(br#"{"name": "x", "problem": "prism"}"#), None);
        assert_eq!(leading_tag(br#"{"problem": 3}"#), None);
        assert_eq!(leading_tag(br#"{"problem": "pri"#), None);
        assert_eq!(leading_tag(b""), None);
    }
}
