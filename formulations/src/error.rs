//! The crate's one error type. Every variant names where the problem is: the file, the field
//! path inside it (`users[3].requests[1].p`) and the reason.

use std::path::PathBuf;

/// Errors of reading, validating and solving formulations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid JSON for the expected type.
    #[error("{path}: line {line}, column {column}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What serde reported.
        message: String,
    },
    /// A value breaks the instance's rules.
    #[error("{path}: {field}: {reason}")]
    Invalid {
        /// The file (or `<input>` for data not read from a file).
        path: PathBuf,
        /// Field path inside the instance.
        field: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A bad value of a command-line flag.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag (`--capacity`).
        flag: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The problem is too large for the requested method.
    #[error("{0}")]
    TooLarge(String),
    /// The MILP solver failed (not a limit: those are reported in the solution's status).
    #[error("MILP solver: {0}")]
    Solver(String),
}

impl Error {
    /// An invalid value of `field` in the file at `path` (or a placeholder such as
    /// `<generator config>`), and why.
    pub fn invalid(
        path: impl Into<std::path::PathBuf>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Invalid {
            path: path.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A bad value of the command-line flag `flag` (`--capacity`).
    pub fn command_line(flag: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Flag {
            flag: flag.into(),
            reason: reason.into(),
        }
    }

    /// Names `file` in an error whose path is a placeholder (`<generator config>`, ...): a
    /// check that ran on a value read from `file`; a [`Error::TooLarge`] gets the file in
    /// front.
    pub fn with_file(self, file: &std::path::Path) -> Self {
        match self {
            Error::Invalid {
                path,
                field,
                reason,
            } if path.to_string_lossy().starts_with('<') => Error::Invalid {
                path: file.into(),
                field,
                reason,
            },
            // A method's size refusal names no field: the file goes in front of the reason.
            Error::TooLarge(reason) => {
                let prefix = format!("{}: ", file.display());
                if reason.starts_with(&prefix) {
                    Error::TooLarge(reason)
                } else {
                    Error::TooLarge(prefix + &reason)
                }
            }
            other => other,
        }
    }

    /// [`Error::with_file`] where a value may have come from a file (a configuration given
    /// with `--config`, or the defaults: `None` leaves the error as it is).
    pub fn with_file_if(self, file: Option<&std::path::Path>) -> Self {
        match file {
            Some(f) => self.with_file(f),
            None => self,
        }
    }
}

/// A validation failure before it is tied to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// Field path inside the instance.
    pub field: String,
    /// Why it is rejected.
    pub reason: String,
}

impl ValidationError {
    /// A failure of `field` for `reason`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ValidationError {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Ties the failure to a file.
    pub fn in_file(self, path: impl Into<PathBuf>) -> Error {
        Error::Invalid {
            path: path.into(),
            field: self.field,
            reason: self.reason,
        }
    }
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ValidationError {}

/// The result of one validation check.
pub type Check = Result<(), ValidationError>;

/// The failure of `field` for `reason`.
pub fn fail(field: impl Into<String>, reason: impl Into<String>) -> Check {
    Err(ValidationError::new(field, reason))
}

/// `value` at most `limit`, the documented constant `name` (e.g.
/// `formulations::slimcaching::MAX_EXPERTS_PER_LAYER`): every size that drives an allocation is
/// checked so before allocating, with the same wording everywhere.
pub fn at_most(field: impl Into<String>, what: &str, value: u64, limit: u64, name: &str) -> Check {
    if value <= limit {
        Ok(())
    } else {
        fail(field, exceeds(what, value, limit, name))
    }
}

/// The reason of a size above its limit: `1000000000 experts exceeds the limit of 65536
/// (formulations::slimcaching::MAX_EXPERTS_PER_LAYER)`.
pub fn exceeds(what: &str, value: impl std::fmt::Display, limit: u64, name: &str) -> String {
    format!("{value} {what} exceeds the limit of {limit} ({name})")
}

/// `x` finite and > 0.
pub fn positive(field: &str, x: f64) -> Check {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        fail(field, format!("must be positive and finite, got {x}"))
    }
}

/// `x` finite and >= 0.
pub fn non_negative(field: &str, x: f64) -> Check {
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        fail(field, format!("must be finite and >= 0, got {x}"))
    }
}

/// Reads a JSON file into `T`, mapping failures to [`Error::Io`] / [`Error::Json`].
pub fn read_json<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json(path, &text)
}

/// The bytes read from `path` as text, refused as [`std::fs::read_to_string`] refuses them.
pub fn utf8(path: &std::path::Path, bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|_| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ),
    })
}

/// Parses JSON text read from `path` into `T`; a failure is an [`Error::Json`] naming the file,
/// line and column.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    text: &str,
) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| {
        let mut message = e.to_string();
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        Error::Json {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_names_the_value_the_limit_and_its_constant() {
        assert_eq!(at_most("f", "things", 3, 3, "C"), Ok(()));
        let e = at_most("f", "things", 4, 3, "C").unwrap_err();
        assert_eq!(e.to_string(), "f: 4 things exceeds the limit of 3 (C)");
    }

    #[test]
    fn with_file_puts_the_file_in_front_of_a_size_refusal_once() {
        let e = Error::TooLarge("too many".into()).with_file(std::path::Path::new("a.json"));
        assert_eq!(e.to_string(), "a.json: too many");
        let again = e.with_file(std::path::Path::new("a.json"));
        assert_eq!(again.to_string(), "a.json: too many");
    }
}
