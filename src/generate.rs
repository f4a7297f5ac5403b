//! Pieces shared by the problems' instance generators: the range knobs, the seeded streams and
//! the draws more than one generator makes. Each draw here is the one its generators made
//! before (the same RNG calls in the same order), so the instances of a seed stay the same.

use formulations::Error;
use rand::distr::uniform::SampleUniform;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::named::Named;

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

impl<T: SampleUniform + PartialOrd + Copy> Between<T> {
    /// A uniform draw in `min..=max`: one `random_range` call (also when the bounds are equal).
    pub fn draw(self, rng: &mut impl Rng) -> T {
        rng.random_range(self.min..=self.max)
    }
}

impl Between<f64> {
    /// `min + (max - min) u` with `u = random::<f64>()` in [0, 1).
    pub fn scale(self, rng: &mut impl Rng) -> f64 {
        self.min + (self.max - self.min) * rng.random::<f64>()
    }
}

/// The path named in errors about a generator configuration not read from a file (a
/// `--config` file's errors name the file).
pub const CONFIG_PATH: &str = "<generator config>";

/// The error for `field` of a generator configuration ([`CONFIG_PATH`]).
pub fn config_error(field: &str, reason: impl Into<String>) -> Error {
    Error::invalid(CONFIG_PATH, field, reason)
}

/// A generator configuration's checks: each error names the configuration (`path`) and the
/// field, with the same wording in every generator.
pub struct Knobs(pub &'static str);

impl Knobs {
    /// The error for `field`.
    pub fn bad(&self, field: &str, reason: String) -> Result<(), Error> {
        Err(Error::invalid(self.0, field, reason))
    }

    /// `least <= min <= max`.
    pub fn range(&self, field: &str, r: Between<u32>, least: u32) -> Result<(), Error> {
        if r.min < least || r.min > r.max {
            self.bad(
                field,
                format!("needs {least} <= min <= max, got {}..={}", r.min, r.max),
            )
        } else {
            Ok(())
        }
    }

    /// A size knob at most `limit`, the documented constant `name`
    /// ([`formulations::error::at_most`]'s wording): checked before anything is allocated.
    pub fn at_most(
        &self,
        field: &str,
        what: &str,
        value: u64,
        limit: u64,
        name: &str,
    ) -> Result<(), Error> {
        formulations::error::at_most(field, what, value, limit, name).map_err(|e| e.in_file(self.0))
    }

    /// Finite and > 0.
    pub fn positive(&self, field: &str, x: f64) -> Result<(), Error> {
        if x.is_finite() && x > 0.0 {
            Ok(())
        } else {
            self.bad(field, format!("must be positive and finite, got {x}"))
        }
    }

    /// Finite and >= 0.
    pub fn nonneg(&self, field: &str, x: f64) -> Result<(), Error> {
        if x.is_finite() && x >= 0.0 {
            Ok(())
        } else {
            self.bad(field, format!("must be finite and >= 0, got {x}"))
        }
    }
}

/// The RNG of `stream` under `seed`: independent ChaCha streams of one seed, so that the draws
/// of one part of an instance do not move when another part draws more.
pub fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Uniform in the open interval (0, 1): the top 53 bits of one `u64`, centred in their cell.
pub fn open01(rng: &mut impl RngCore) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal draw (Box-Muller, the cosine of the pair): two [`open01`] draws.
pub fn normal(rng: &mut impl RngCore) -> f64 {
    let (a, b) = (open01(rng), open01(rng));
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// An instance made by `generate` or `import`, and one line on what it holds.
pub struct Made {
    /// The instance file's content: pretty JSON, serialised from the instance's own types so
    /// that an `f32` keeps its shortest form, or a binary trace's bytes.
    pub instance: Vec<u8>,
    /// One line for stderr (sizes), or empty.
    pub summary: String,
}

impl Made {
    /// An instance with a summary line.
    pub fn new<I: Serialize>(instance: &I, summary: String) -> Self {
        let json = serde_json::to_string_pretty(instance).expect("instances serialise") + "\n";
        Made::bytes(json.into_bytes(), summary)
    }

    /// A file's bytes as they are (a binary trace) with a summary line.
    pub fn bytes(instance: Vec<u8>, summary: String) -> Self {
        Made { instance, summary }
    }
}

/// A seeded generator with named presets (of a problem's instances, or of traces): `generate`,
/// `--print-config`, `--list-presets` and sweeps use it.
pub trait Generator {
    /// The generator configuration (what `--print-config` prints and `--config` reads).
    type Config: Serialize + DeserializeOwned;
    /// The presets.
    type Preset: Named;
    /// The preset used when none is named.
    const DEFAULT_PRESET: Self::Preset;
    /// A preset's configuration.
    fn preset_config(preset: Self::Preset) -> Self::Config;
    /// Checks a configuration's values.
    fn check(config: &Self::Config) -> Result<(), Error>;
    /// What it makes (an instance file's content).
    type Generated: Serialize;
    /// The instance at a seed (validated).
    fn generate_instance(config: &Self::Config, seed: u64) -> Result<Self::Generated, Error>;
    /// One line on a generated instance, for stderr (none by default).
    fn summary(_instance: &Self::Generated) -> String {
        String::new()
    }
}

/// Implements [`Generator`] for `$problem` from a configuration type with the inherent
/// `preset(Preset) -> Self` and `check(&self)` every generator here has, its default preset, what
/// it generates and the function that generates it (and, optionally, the one-line summary):
/// `generator!(ZipMoe, GeneratorConfig, Preset::Small, Instance, generate::try_generate);`.
#[macro_export]
macro_rules! generator {
    ($problem:ty, $config:ty, $preset:ident :: $default:ident, $generated:ty, $generate:expr
        $(, summary = $summary:expr)?) => {
        impl $crate::generate::Generator for $problem {
            type Config = $config;
            type Preset = $preset;
            const DEFAULT_PRESET: $preset = $preset::$default;
            type Generated = $generated;

            fn preset_config(preset: $preset) -> $config {
                <$config>::preset(preset)
            }

            fn check(config: &$config) -> Result<(), formulations::Error> {
                config.check()
            }

            fn generate_instance(
                config: &$config,
                seed: u64,
            ) -> Result<$generated, formulations::Error> {
                $generate(config, seed)
            }

            $(fn summary(instance: &$generated) -> String {
                $summary(instance)
            })?
        }
    };
}
