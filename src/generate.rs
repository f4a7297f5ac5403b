//! Pieces shared by the problems' instance generators.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
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

/// The RNG of `stream` under `seed`: independent ChaCha streams of one seed, so that the draws
/// of one part of an instance do not move when another part draws more.
pub fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}
