//! What every report of every problem carries: the moe-opt version and the instance's hash, so
//! a result can be tied to the exact input it came from. Field names are documented and stable, with units in the names (`_s` seconds, `_bytes`
//! bytes); the reference and a method's run are [`crate::problem`]'s.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// This build's version, as written in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// SHA-256 (hex) of a value's canonical JSON (serde_json's compact serialisation of the parsed
/// value), so whitespace and key order in the file it was read from do not matter.
pub fn canonical_sha256<T: Serialize>(value: &T) -> String {
    let canonical = serde_json::to_vec(value).expect("instances always serialise");
    bytes_sha256(&canonical)
}

/// SHA-256 (hex) of bytes: a binary trace's hash is that of its file.
pub fn bytes_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
