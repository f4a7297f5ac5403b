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
//! are not tiers: a check whose premise fails is not applicable ([`crate::claims::Outcome::NotApplicable`]).

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

/// The tier boundaries of a problem's premises, for its tests: one instance just inside and one
/// just outside each premise's limit, table-driven ([`boundary::assert_boundaries`]).
#[cfg(test)]
pub(crate) mod boundary {
    use super::{classify, Premise, Tier};

    /// Where an instance stands: its tier and the names of the premises it breaks besides the
    /// one a row tests.
    pub(crate) type Standing = (Tier, &'static [&'static str]);

    /// One row of a boundary table: a change of a base instance just inside a premise's limit
    /// and one just outside it, and where each leaves the instance, classified for a claim the
    /// premise bears on. The premise itself is never broken inside and always broken outside;
    /// the other names are premises the change cannot help breaking too (the row's comment
    /// says why).
    pub(crate) struct Boundary<I> {
        /// The premise's name.
        premise: &'static str,
        /// The claim the instances are classified for; `None`: the table's.
        claim: Option<&'static str>,
        /// The base instance; `None`: the table's.
        base: Option<fn() -> I>,
        /// The change just inside the limit.
        inside: fn(&mut I),
        /// The change just outside it; `None`: the outside is no valid instance.
        outside: Option<fn(&mut I)>,
        /// Where the inside instance stands.
        inside_is: Standing,
        /// Where the outside one stands (beside the premise itself).
        outside_is: Standing,
    }

    impl<I> Boundary<I> {
        /// A model premise whose boundary breaks nothing else: `regime` inside, `extension`
        /// outside.
        pub(crate) fn model(
            premise: &'static str,
            inside: fn(&mut I),
            outside: fn(&mut I),
        ) -> Self {
            Boundary {
                premise,
                claim: None,
                base: None,
                inside,
                outside: Some(outside),
                inside_is: (Tier::Regime, &[]),
                outside_is: (Tier::Extension, &[]),
            }
        }

        /// A regime premise whose boundary breaks nothing else: `regime` inside, `model`
        /// outside.
        pub(crate) fn regime(
            premise: &'static str,
            inside: fn(&mut I),
            outside: fn(&mut I),
        ) -> Self {
            Self::model(premise, inside, outside).outside_is(Tier::Model, &[])
        }

        /// A limit whose outside is no valid instance: `regime` inside, breaking nothing.
        pub(crate) fn inside_only(premise: &'static str, inside: fn(&mut I)) -> Self {
            Boundary {
                outside: None,
                ..Self::model(premise, inside, |_| {})
            }
        }

        /// Classified for `claim` rather than the table's claim.
        pub(crate) fn claim(self, claim: &'static str) -> Self {
            Boundary {
                claim: Some(claim),
                ..self
            }
        }

        /// Changed from `base()` rather than the table's base.
        pub(crate) fn base(self, base: fn() -> I) -> Self {
            Boundary {
                base: Some(base),
                ..self
            }
        }

        /// Just inside, the instance is in `tier` and breaks the premises `others`.
        pub(crate) fn inside_is(self, tier: Tier, others: &'static [&'static str]) -> Self {
            Boundary {
                inside_is: (tier, others),
                ..self
            }
        }

        /// Just outside, the instance is in `tier` and breaks the premises `others` beside the
        /// row's.
        pub(crate) fn outside_is(self, tier: Tier, others: &'static [&'static str]) -> Self {
            Boundary {
                outside_is: (tier, others),
                ..self
            }
        }
    }

    /// The premises' names in `broken` ("name: reason").
    pub(crate) fn names(broken: &[String]) -> Vec<&str> {
        broken
            .iter()
            .map(|b| b.split(':').next().unwrap_or(b))
            .collect()
    }

    /// Checks every row of a boundary table: each side of a row is the row's base (else
    /// `base`) changed by the row's change, classified for the row's claim (else `claim`);
    /// its tier and the exact set of premises it breaks are the row's; the row's premise is
    /// broken outside and not inside; `validate` accepts every inside instance. Every premise
    /// of `premises` has a row.
    pub(crate) fn assert_boundaries<I: Clone>(
        premises: &[Premise<I>],
        claim: &str,
        base: &I,
        rows: &[Boundary<I>],
        validate: impl Fn(&I),
    ) {
        for p in premises {
            assert!(
                rows.iter().any(|r| r.premise == p.name),
                "{} has no boundary",
                p.name
            );
        }
        for row in rows {
            let claim = row.claim.unwrap_or(claim);
            let sides = [(row.inside, row.inside_is, false)]
                .into_iter()
                .chain(row.outside.map(|o| (o, row.outside_is, true)));
            for (change, (tier, others), outside) in sides {
                let side = if outside { "outside" } else { "inside" };
                assert!(!others.contains(&row.premise), "{} {side}", row.premise);
                let mut i = row.base.map_or_else(|| base.clone(), |b| b());
                change(&mut i);
                if !outside {
                    validate(&i);
                }
                let c = classify(premises, claim, &i);
                let mut expected: Vec<&str> = others.to_vec();
                if outside {
                    expected.push(row.premise);
                }
                let mut got = names(&c.broken);
                got.sort_unstable();
                expected.sort_unstable();
                assert_eq!(c.tier, tier, "{} {side}: {:?}", row.premise, c.broken);
                assert_eq!(got, expected, "{} {side}: {:?}", row.premise, c.broken);
                assert_eq!(
                    c.broken.iter().any(|b| b.starts_with(row.premise)),
                    outside,
                    "{} {side}: {:?}",
                    row.premise,
                    c.broken
                );
            }
        }
    }
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

    /// The toy premises of `a_broken_model_premise_outranks_a_broken_range`: `positive`
    /// (model) and `small` (regime, below 10).
    fn toy() -> [Premise<i32>; 2] {
        [
            premise("positive", Level::Model, |x| {
                if *x > 0 {
                    Ok(())
                } else {
                    Err(format!("{x} <= 0"))
                }
            }),
            premise("small", Level::Regime, |x| within("x", *x, 0, 9)),
        ]
    }

    #[test]
    fn a_boundary_table_checks_both_sides_of_each_premise() {
        use boundary::{assert_boundaries, Boundary};
        let rows = [
            Boundary::model("positive", |x| *x = 1, |x| *x = 0),
            // -1 breaks `small`'s lower end too.
            Boundary::model("positive", |x| *x = 1, |x| *x = -1)
                .outside_is(Tier::Extension, &["small"]),
            // From 9 (the row's base, not the table's 5) to 10.
            Boundary::regime("small", |_| {}, |x| *x += 1).base(|| 9),
            Boundary::inside_only("positive", |x| *x = 1),
        ];
        assert_boundaries(&toy(), "toy/claim", &5, &rows, |x| assert!(*x >= 0));
    }

    #[test]
    #[should_panic(expected = "small outside")]
    fn a_boundary_table_refuses_an_outside_that_breaks_more() {
        use boundary::{assert_boundaries, Boundary};
        // -1 breaks `positive` too.
        let rows = [
            Boundary::model("positive", |x| *x = 1, |x| *x = 0),
            Boundary::regime("small", |x| *x = 9, |x| *x = -1),
        ];
        assert_boundaries(&toy(), "toy/claim", &5, &rows, |_| {});
    }
}
