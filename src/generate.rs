//! Pieces shared by the problems' instance generators.

use serde::{Deserialize, Serialize};

/// An inclusive range `min..=max` a value is drawn from uniformly (equal bounds fix it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Between<T> {
    /// Smallest value.
    pub min: T,
    /// Largest value.
    pub max: T,
}

impl<T: Copy> Between<T> {
    /// The range holding only `v`.
    pub fn exactly(v: T) -> Self {
        Between { min: v, max: v }
    }
}
