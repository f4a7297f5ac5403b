//! Closed sets of named values: every problem's methods, generator presets and policies are
//! enums whose command-line names, descriptions, parsing and printing come from one macro,
//! `named!`, so a list of known names, an error naming them and `--preset help` look the
//! same for every problem.
//!
//! Parsing takes a name with `_` in place of `-` as the same name (`earliest_finish` is
//! `earliest-finish`): values on the command line are hyphenated, but users type both.

/// An enum of named values (see the module doc).
pub trait Named: Copy + Eq + 'static {
    /// What the values are, for errors and help (`method`, `preset`, ...).
    const KIND: &'static str;
    /// Every value, in the order lists and help show them.
    const ALL: &'static [Self];
    /// The name on the command line and in files.
    fn name(self) -> &'static str;
    /// One line on what the value is and where it comes from.
    fn description(self) -> &'static str;

    /// The value named `s` (`_` read as `-`), or an error listing the known names.
    fn parse_name(s: &str) -> Result<Self, String> {
        let wanted = s.replace('_', "-");
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.name() == wanted)
            .ok_or_else(|| {
                format!(
                    "unknown {} `{s}`; expected one of: {}",
                    Self::KIND,
                    Self::names().join(", ")
                )
            })
    }

    /// Every name, in order.
    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|v| v.name()).collect()
    }
}

/// Defines an enum and implements [`Named`], `Display` and `FromStr` for it, with `ALL`, `name`
/// and `description` also inherent (no import needed). Names are the variants in kebab case
/// (strum's `IntoStaticStr`; a variant's own `#[strum(serialize = "...")]` where kebab case does
/// not give it); a description is the variant's one-line doc comment (strum's `EnumMessage`).
/// Files hold the same names (`Serialize`/`Deserialize`, `_` read as `-`), and the enum derives
/// the comparison and hashing traits:
///
/// ```ignore
/// named! {
///     pub enum Method: "method" {
///         /// exact MILP, HiGHS
///         Milp,
///     }
/// }
/// ```
#[macro_export]
macro_rules! named {
    (
        $(#[$meta:meta])*
        $vis:vis enum $t:ident : $kind:literal {
            $($(#[$vmeta:meta])* $v:ident),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[derive(::strum::VariantArray, ::strum::IntoStaticStr, ::strum::EnumMessage)]
        #[strum(serialize_all = "kebab-case")]
        $vis enum $t {
            $($(#[$vmeta])* $v),+
        }

        impl $t {
            /// Every value, in order.
            pub const ALL: &'static [$t] = <$t as ::strum::VariantArray>::VARIANTS;

            /// The name on the command line and in files.
            pub fn name(self) -> &'static str {
                self.into()
            }

            /// What the value is (the variant's doc comment).
            pub fn description(self) -> &'static str {
                ::strum::EnumMessage::get_documentation(&self).unwrap_or_default()
            }
        }

        impl $crate::named::Named for $t {
            const KIND: &'static str = $kind;
            const ALL: &'static [Self] = <$t>::ALL;

            fn name(self) -> &'static str {
                <$t>::name(self)
            }

            fn description(self) -> &'static str {
                <$t>::description(self)
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(<$t>::name(*self))
            }
        }

        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(<$t>::name(*self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                <$t as $crate::named::Named>::parse_name(&name).map_err(::serde::de::Error::custom)
            }
        }

        impl std::str::FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                <$t as $crate::named::Named>::parse_name(s)
            }
        }
    };
}

#[cfg(test)]
mod tests {

    crate::named! {
        enum Fruit: "fruit" {
            /// a pome
            Apple,
            /// a citrus
            BloodOrange,
            /// a Japanese citrus
            #[strum(serialize = "yuzu-fruit")]
            Yuzu,
        }
    }

    #[test]
    fn names_round_trip_underscores_read_as_hyphens_and_errors_list_the_names() {
        for f in Fruit::ALL {
            assert_eq!(f.name().parse::<Fruit>().unwrap(), *f);
            assert_eq!(f.to_string(), f.name());
        }
        assert_eq!("blood_orange".parse::<Fruit>().unwrap(), Fruit::BloodOrange);
        assert_eq!(Fruit::BloodOrange.description(), "a citrus");
        assert_eq!(Fruit::Yuzu.name(), "yuzu-fruit");
        let e = "pear".parse::<Fruit>().unwrap_err();
        assert_eq!(
            e,
            "unknown fruit `pear`; expected one of: apple, blood-orange, yuzu-fruit"
        );
    }
}
