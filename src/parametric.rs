//! Parametric families: for a claimed bound that fails inside the paper's model, instances
//! indexed by one number X on which the claim's own check measures a quantity with a closed
//! form in X, and whose limit shows how far the bound fails (`moe-opt generate PROBLEM
//! --family NAME --param X`). Each family's construction and closed form are proved in the
//! doc of the module that builds it; its test compares the check's measurement with the
//! closed form at every listed X, and the paper's notebook plots both.

use formulations::Error;
use serde::Serialize;

use crate::claims::Check;
use crate::generate::Made;
use crate::verify::ClaimGroup;

/// One family (module doc).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ParametricFamily {
    /// Its name on the command line.
    pub name: &'static str,
    /// The registered claim whose bound it breaks.
    pub claim: &'static str,
    /// The instance at X, in a few words.
    pub about: &'static str,
    /// What X is, and the values it may take.
    pub param: &'static str,
    /// What the claim's check measures (`ratio`, or `value/bound`: fields of its JSON), and
    /// its closed form in X.
    pub measure: &'static str,
    /// The closed form, in words (`2/X -> 0`).
    pub closed_form: &'static str,
    /// The limit of the measure as X grows.
    pub limit: f64,
    /// The bound the claim states for the measure (the line it must stay on one side of).
    pub claimed: f64,
    /// The X values the tests and the notebook use.
    pub params: &'static [f64],
    /// The closed form of the measure at X (proved in the module doc, computed from X alone).
    #[serde(skip)]
    pub expected: fn(f64) -> f64,
    /// The instance at X; an error naming `--param` when X is outside the family.
    #[serde(skip)]
    pub build: fn(f64) -> Result<Made, Error>,
}

impl ParametricFamily {
    /// The instance at `x`, its summary naming the family, X and the closed form's value.
    pub fn make(&self, x: f64) -> Result<Made, Error> {
        let mut made = (self.build)(x)?;
        let at = format!(
            "family {} at X = {x}: {} = {:.6} (closed form {}; {} claims {})",
            self.name,
            self.measure,
            (self.expected)(x),
            self.closed_form,
            self.claim,
            self.claimed
        );
        made.summary = if made.summary.is_empty() {
            at
        } else {
            format!("{}; {at}", made.summary)
        };
        Ok(made)
    }

    /// The family as `moe-opt problems --json` lists it: its fields and `expected`, the
    /// closed form at each of its `params` (`[X, measure]` pairs).
    pub fn listing(&self) -> serde_json::Value {
        let mut json = serde_json::to_value(self).expect("families serialise");
        json["expected"] = self
            .params
            .iter()
            .map(|&x| serde_json::json!([x, (self.expected)(x)]))
            .collect();
        json
    }

    /// The family's measure read from a check of its claim: a field of the check's JSON, or
    /// the quotient of two (`value/bound`).
    pub fn measured(&self, check: &Check) -> Option<f64> {
        let json = serde_json::to_value(check).ok()?;
        let field = |name: &str| json.get(name).and_then(|v| v.as_f64());
        match self.measure.split_once('/') {
            Some((a, b)) => Some(field(a)? / field(b)?),
            None => field(self.measure),
        }
    }
}

/// The error of an X outside a family.
pub fn bad_param(family: &str, reason: impl Into<String>) -> Error {
    Error::command_line("--param", format!("family {family}: {}", reason.into()))
}

/// X as an integer in `least..=most`, or the error saying so (`most` keeps the instance's
/// size within what its file and checks can hold).
pub fn integer_param(family: &str, x: f64, least: u64, most: u64) -> Result<u64, Error> {
    if x.is_finite() && x.fract() == 0.0 && x >= least as f64 && x <= most as f64 {
        Ok(x as u64)
    } else {
        Err(bad_param(
            family,
            format!("X must be an integer from {least} to {most}, got {x}"),
        ))
    }
}

/// The family's claim, found among `claims` (its problem's), checked on its instance at `x` as
/// `verify --claim ID --instance FILE` checks it (the instance written to `dir`), with the
/// instance's tier: what its test and the notebook compare with the closed form.
pub fn check_at(
    family: &ParametricFamily,
    x: f64,
    dir: &std::path::Path,
    claims: &[Box<dyn ClaimGroup>],
) -> Result<(Check, crate::tier::Classified), Error> {
    let made = family.make(x)?;
    let path = dir.join(format!("{}-{x}.json", family.name));
    std::fs::write(&path, &made.instance).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let group = claims
        .iter()
        .find_map(|g| g.select(&|i| i.id == family.claim))
        .ok_or_else(|| bad_param(family.name, format!("no claim {}", family.claim)))?;
    group.recheck(0, &path, &crate::claims::CheckOptions::default())
}

/// The checks of `family` at each of its `params` (instances in a temporary folder), each
/// asserted to fail inside the model (tier not `extension`) with the closed form as its measure
/// (relative 1e-9), nearer the limit than the X before: what every family's test asserts
/// before its own numbers.
#[cfg(test)]
pub(crate) fn checked_as_proved(
    family: &ParametricFamily,
    claims: &[Box<dyn ClaimGroup>],
) -> Vec<(f64, Check, crate::tier::Classified)> {
    let dir = std::env::temp_dir().join(format!(
        "moe-opt-family-{}-{}",
        family.name,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut last = f64::INFINITY;
    let mut checks = Vec::new();
    for &x in family.params {
        let (check, classified) = check_at(family, x, &dir, claims).unwrap();
        assert_eq!(
            check.outcome,
            crate::claims::Outcome::Fail,
            "X = {x}: {}",
            check.note
        );
        assert_ne!(
            classified.tier,
            crate::tier::Tier::Extension,
            "X = {x}: {:?}",
            classified.broken
        );
        let measured = family.measured(&check).unwrap();
        let expected = (family.expected)(x);
        assert!(
            (measured - expected).abs() <= 1e-9 * expected.abs(),
            "X = {x}: {measured} against {expected}"
        );
        assert!((measured - family.limit).abs() < (last - family.limit).abs());
        last = measured;
        checks.push((x, check, classified));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    checks
}
