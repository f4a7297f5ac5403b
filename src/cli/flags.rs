//! Numeric flags checked like instance fields (finite, sign, range) while the command line is
//! parsed, so no command runs on NaN, a negative cost or zero workers; clap's error names the
//! flag and the value, and exits with code 2 (bad input).

use std::str::FromStr;

/// A number read from a flag, before its check.
fn number<T: FromStr>(s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))
}

/// Finite and > 0 (time limits that must allow work, rates, budgets).
pub fn positive(s: &str) -> Result<f64, String> {
    let x: f64 = number(s)?;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("must be finite and > 0, got {x}"))
    }
}

/// Finite and >= 0 (seconds, costs, gaps).
pub fn non_negative(s: &str) -> Result<f64, String> {
    let x: f64 = number(s)?;
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("must be finite and >= 0, got {x}"))
    }
}

/// In [0, 1] (a share, SMoE's alpha, a mass).
pub fn fraction(s: &str) -> Result<f64, String> {
    let x: f64 = number(s)?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("must lie in [0, 1], got {x}"))
    }
}

/// A whole number, at least 1 (sizes, counts, `--jobs`).
pub fn at_least_one<T: FromStr + PartialOrd + From<u8>>(s: &str) -> Result<T, String> {
    let n: T = number(s)?;
    if n >= T::from(1) {
        Ok(n)
    } else {
        Err(format!("must be a whole number, at least 1, got `{s}`"))
    }
}

/// A size flag at most `limit`, the documented constant `name`: checked before the command
/// allocates by it, with the error naming the flag.
pub fn size_at_most(
    flag: &str,
    what: &str,
    value: u64,
    limit: u64,
    name: &str,
) -> Result<(), formulations::Error> {
    formulations::error::at_most(flag, what, value, limit, name)
        .map_err(|e| formulations::Error::command_line(flag, e.reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_takes_its_range_and_refuses_the_rest() {
        assert_eq!(positive("2.5"), Ok(2.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(positive(bad).is_err(), "{bad}");
        }
        assert_eq!(non_negative("0"), Ok(0.0));
        assert!(non_negative("-0.5").is_err() && non_negative("NaN").is_err());
        assert_eq!(fraction("1"), Ok(1.0));
        assert!(fraction("7").is_err() && fraction("-0.1").is_err() && fraction("nan").is_err());
        assert_eq!(at_least_one::<usize>("3"), Ok(3));
        assert!(at_least_one::<usize>("0").is_err() && at_least_one::<u64>("-2").is_err());
        assert_eq!(
            positive("nan").unwrap_err(),
            "must be finite and > 0, got NaN"
        );
        assert!(size_at_most("--n", "things", 5, 5, "LIMIT").is_ok());
        assert_eq!(
            size_at_most("--n", "things", 6, 5, "LIMIT")
                .unwrap_err()
                .to_string(),
            "--n: 6 things exceeds the limit of 5 (LIMIT)"
        );
    }
}
