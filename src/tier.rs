//! Premises and tiers: where an instance stands with respect to a paper's own model.
//!
//! A claim is judged on what its paper states, inside the paper's model. Each problem declares
//! its paper's model and stated assumptions, and the parameter ranges of the paper's evaluation
//! section, as named [`Premise`]s (predicates on an instance, each citing the paper), and every
//! instance `verify` checks is classified ([`classify`]) into a [`Tier`]:
//!
//! - `regime`: inside the model and its assumptions, and inside the evaluation's ranges;
//! - `model`: inside the model and its assumptions, outside the evaluation's ranges;
//! - `extension`: outside the paper's model or one of its stated assumptions (the record names
//!   which premise it breaks).
//!
//! The tiers nest: a `regime` instance is inside the model too. `verify --tier T` judges each
//! claim on the instances inside T (default `model`: the headline verdict is the paper's own
//! model's) and keeps its worst-case searches and shrinks inside T; the verdicts of the three
//! tiers are reported side by side. Claim-specific premises (Prop. 1's "every model Top-1")
//! are not tiers: a check whose premise fails is inconclusive.

use serde::{Deserialize, Serialize};

/// Where an instance stands with respect to its paper (module doc). Ordered from the inside
/// out, so `tier <= chosen` means "inside the chosen tier".
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Inside the model, its assumptions and the evaluation's parameter ranges.
    Regime,
    /// Inside the model and its assumptions.
    #[default]
    Model,
    /// Outside the paper's model or a stated assumption.
    Extension,
}

impl Tier {
    /// Every tier, from the inside out.
    pub const ALL: [Tier; 3] = [Tier::Regime, Tier::Model, Tier::Extension];

    /// The tier's name on the command line and in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Regime => "regime",
            Tier::Model => "model",
            Tier::Extension => "extension",
        }
    }
}

impl std::str::FromStr for Tier {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Tier::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown tier '{s}' (regime, model or extension)"))
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What breaking a premise costs an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The paper's model or a stated assumption: breaking it makes the instance `extension`.
    Model,
    /// A parameter range of the paper's evaluation: breaking it makes the instance `model`.
    Regime,
}

/// A premise of a paper on instances of type `I`.
pub struct Premise<I> {
    /// Short name, kebab-case (`cloud-slowest`).
    pub name: &'static str,
    /// Model premise or evaluation range.
    pub level: Level,
    /// Where the paper states it (section, equation), and whether moe-opt reads it from the
    /// notation or sets a band around a single value.
    pub place: &'static str,
    /// The paper's sentence, verbatim (`[...]` marks an elision).
    pub quote: &'static str,
    /// The claims (ids) whose proof or statement uses it; empty: every claim on such
    /// instances.
    pub claims: &'static [&'static str],
    /// `Ok` when the instance satisfies it, else why not (numbers included).
    pub holds: fn(&I) -> Result<(), String>,
}

impl<I> Premise<I> {
    /// A premise (the fields' docs say what each is).
    pub fn new(
        name: &'static str,
        level: Level,
        place: &'static str,
        quote: &'static str,
        claims: &'static [&'static str],
        holds: fn(&I) -> Result<(), String>,
    ) -> Self {
        Premise {
            name,
            level,
            place,
            quote,
            claims,
            holds,
        }
    }

    /// Whether it bears on claim `id`.
    pub fn applies_to(&self, id: &str) -> bool {
        self.claims.is_empty() || self.claims.contains(&id)
    }

    /// What `moe-opt claims --premises` lists of it, among the claims `ids`; `None` when it
    /// bears on none of them.
    pub fn info(&self, paper: &'static str, ids: &[&str]) -> Option<PremiseInfo> {
        let claims: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| self.applies_to(id))
            .collect();
        (!claims.is_empty()).then(|| PremiseInfo {
            paper,
            name: self.name,
            level: self.level,
            claims: claims.join(", "),
            place: self.place,
            quote: self.quote,
        })
    }
}

/// A premise as `moe-opt claims --premises` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PremiseInfo {
    /// The paper file.
    pub paper: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Model premise or evaluation range.
    pub level: Level,
    /// The claims it bears on, `, `-separated.
    pub claims: String,
    /// Where the paper states it.
    pub place: &'static str,
    /// The paper's sentence.
    pub quote: &'static str,
}

impl<I> Clone for Premise<I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for Premise<I> {}

/// An instance's tier and the premises it breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classified {
    /// The innermost tier the instance is in.
    pub tier: Tier,
    /// The broken premises, `name: reason`, model premises first.
    pub broken: Vec<String>,
}

/// `Ok` when `lo <= x <= hi`, else why not: the range premises' predicate.
pub fn within<T: PartialOrd + std::fmt::Display>(
    what: &str,
    x: T,
    lo: T,
    hi: T,
) -> Result<(), String> {
    if lo <= x && x <= hi {
        Ok(())
    } else {
        Err(format!("{what} {x}, outside {lo}..={hi}"))
    }
}

/// The tier of `instance` for claim `claim` under the premises that bear on it (module doc).
pub fn classify<I>(premises: &[Premise<I>], claim: &str, instance: &I) -> Classified {
    let mut broken = Vec::new();
    let mut tier = Tier::Regime;
    for level in [Level::Model, Level::Regime] {
        for p in premises
            .iter()
            .filter(|p| p.level == level && p.applies_to(claim))
        {
            if let Err(reason) = (p.holds)(instance) {
                broken.push(format!("{}: {reason}", p.name));
                tier = tier.max(match level {
                    Level::Model => Tier::Extension,
                    Level::Regime => Tier::Model,
                });
            }
        }
    }
    Classified { tier, broken }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn premise(
        name: &'static str,
        level: Level,
        holds: fn(&i32) -> Result<(), String>,
    ) -> Premise<i32> {
        Premise {
            name,
            level,
            place: "-",
            quote: "-",
            claims: &[],
            holds,
        }
    }

    #[test]
    fn a_broken_model_premise_outranks_a_broken_range() {
        let premises = [
            premise("positive", Level::Model, |x| {
                if *x > 0 {
                    Ok(())
                } else {
                    Err(format!("{x} <= 0"))
                }
            }),
            premise("small", Level::Regime, |x| {
                if *x < 10 {
                    Ok(())
                } else {
                    Err(format!("{x} >= 10"))
                }
            }),
        ];
        let tier = |x: i32| classify(&premises, "toy/claim", &x);
        assert_eq!(
            tier(5),
            Classified {
                tier: Tier::Regime,
                broken: vec![]
            }
        );
        assert_eq!(tier(50).tier, Tier::Model);
        assert_eq!(tier(50).broken, vec!["small: 50 >= 10"]);
        // Just inside and just outside each premise.
        assert_eq!(tier(1).tier, Tier::Regime);
        assert_eq!(tier(0).tier, Tier::Extension);
        assert_eq!(tier(9).tier, Tier::Regime);
        assert_eq!(tier(10).tier, Tier::Model);
        assert_eq!(tier(-20).broken, vec!["positive: -20 <= 0"]);
        // A premise of another claim does not bear on this one.
        let other = [Premise {
            claims: &["toy/other"],
            ..premises[0]
        }];
        assert_eq!(classify(&other, "toy/claim", &-5).tier, Tier::Regime);
        assert_eq!(classify(&other, "toy/other", &-5).tier, Tier::Extension);
        assert!(Tier::Regime < Tier::Model && Tier::Model < Tier::Extension);
        assert_eq!("model".parse::<Tier>(), Ok(Tier::Model));
        assert!("inside".parse::<Tier>().is_err());
    }
}
