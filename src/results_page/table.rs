//! A CSV table read for the page, with every error naming the file, the line and the column:
//! the outputs it reads are the command line's own, but a folder may hold an edited, truncated
//! or foreign file.

use std::path::{Path, PathBuf};

use csv::{DeserializeErrorKind, StringRecord};
use formulations::Error;
use serde::de::DeserializeOwned;

/// A CSV file's header and rows (all rows as long as the header).
#[derive(Debug)]
pub(super) struct Table {
    pub path: PathBuf,
    pub header: Vec<String>,
    rows: Vec<csv::StringRecord>,
}

impl Table {
    /// Reads a whole CSV file; a row of another length, bytes that are not UTF-8 or a file
    /// without a header are refused.
    pub fn read(path: &Path) -> Result<Table, Error> {
        let mut reader = csv::Reader::from_path(path).map_err(|e| csv_error(path, e))?;
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(path, e))?
            .iter()
            .map(String::from)
            .collect();
        if header.iter().all(String::is_empty) {
            return Err(Error::invalid(path, "line 1", "no header (an empty file?)"));
        }
        let rows = reader
            .records()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| csv_error(path, e))?;
        Ok(Table {
            path: path.to_path_buf(),
            header,
            rows,
        })
    }

    /// The header of a CSV file, or None when it has none or is not CSV text (a file in a
    /// folder that may be someone else's).
    pub fn header_of(path: &Path) -> Option<Vec<String>> {
        let mut reader = csv::Reader::from_path(path).ok()?;
        let header = reader.headers().ok()?;
        Some(header.iter().map(String::from).collect())
    }

    /// Rows, without the header.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The index of a column; refused, naming it, when the header lacks it.
    pub fn column(&self, name: &str) -> Result<usize, Error> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            Error::invalid(
                &self.path,
                "line 1",
                format!("no column `{name}` in the header"),
            )
        })
    }

    /// The text of a cell.
    pub fn text(&self, row: usize, column: usize) -> &str {
        self.rows[row].get(column).unwrap_or_default()
    }

    /// Every row as a `T`, its fields named by the header (serde; integers are counts). A cell
    /// that does not parse is refused naming its line and column; a header without a column
    /// `T` needs, naming the column.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<Vec<T>, Error> {
        let header = StringRecord::from(self.header.clone());
        (self.rows.iter().enumerate())
            .map(|(r, row)| {
                row.deserialize(Some(&header))
                    .map_err(|e| self.deserialize_error::<T>(r, &header, e))
            })
            .collect()
    }

    /// The refusal of row `row` as a `T`. A parse error names its field; serde's own (an
    /// unknown enum variant, a missing field) name none, so a bad cell is found as the first
    /// cell whose prefix of the row gives the same error.
    fn deserialize_error<T: DeserializeOwned>(
        &self,
        row: usize,
        header: &StringRecord,
        e: csv::Error,
    ) -> Error {
        let csv::ErrorKind::Deserialize { err, .. } = e.kind() else {
            return Error::invalid(&self.path, self.line(row), e.to_string());
        };
        if let DeserializeErrorKind::Message(m) = err.kind() {
            // serde's wording, "missing field `NAME`".
            if let Some(name) = m.strip_prefix("missing field ") {
                return self.refuse_header(&format!("no column {name} in the header"));
            }
        }
        let prefix =
            |record: &StringRecord, k: usize| -> StringRecord { record.iter().take(k).collect() };
        let same = |k: usize| {
            let (cells, names) = (prefix(&self.rows[row], k), prefix(header, k));
            cells.deserialize::<T>(Some(&names)).err().is_some_and(|e| {
                matches!(e.kind(), csv::ErrorKind::Deserialize { err: other, .. } if other == err)
            })
        };
        let column = (err.field().map(|f| f as usize))
            .or_else(|| (1..=header.len()).find(|&k| same(k)).map(|k| k - 1))
            .filter(|&c| c < self.header.len());
        let Some(column) = column else {
            return Error::invalid(&self.path, self.line(row), err.to_string());
        };
        let cell = self.text(row, column);
        let reason = match err.kind() {
            DeserializeErrorKind::ParseInt(_) if cell.is_empty() => {
                "empty (a count is needed)".to_string()
            }
            DeserializeErrorKind::ParseInt(_) => {
                format!("{cell:?} is not a count (an integer >= 0)")
            }
            DeserializeErrorKind::ParseFloat(_) => format!("{cell:?} is not a number"),
            DeserializeErrorKind::ParseBool(_) => format!("{cell:?} is not true or false"),
            other => format!("{cell:?} is refused: {other}"),
        };
        self.refuse(row, column, &reason)
    }

    /// `line N` of a row (N counts the header as line 1).
    fn line(&self, row: usize) -> String {
        let line = self.rows[row]
            .position()
            .map_or(row as u64 + 2, |p| p.line());
        format!("line {line}")
    }

    /// Where a cell is, for errors: `line N: COLUMN`.
    fn at(&self, row: usize, column: usize) -> String {
        format!("{}: {}", self.line(row), self.header[column])
    }

    /// A cell that must hold text from a list.
    pub fn one_of<'a>(
        &self,
        row: usize,
        column: usize,
        allowed: &[&'a str],
    ) -> Result<&'a str, Error> {
        let cell = self.text(row, column);
        allowed
            .iter()
            .find(|a| **a == cell)
            .copied()
            .ok_or_else(|| {
                Error::invalid(
                    &self.path,
                    self.at(row, column),
                    format!("{cell:?} is not one of {}", allowed.join(", ")),
                )
            })
    }

    /// A number, or None for an empty cell.
    pub fn number(&self, row: usize, column: usize) -> Result<Option<f64>, Error> {
        let cell = self.text(row, column);
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse::<f64>().map(Some).map_err(|_| {
            Error::invalid(
                &self.path,
                self.at(row, column),
                format!("{cell:?} is not a number"),
            )
        })
    }

    /// A count (a non-negative integer), or None for an empty cell.
    pub fn count(&self, row: usize, column: usize) -> Result<Option<u64>, Error> {
        let cell = self.text(row, column);
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse::<u64>().map(Some).map_err(|_| {
            Error::invalid(
                &self.path,
                self.at(row, column),
                format!("{cell:?} is not a count (an integer >= 0)"),
            )
        })
    }

    /// A count that must be there.
    pub fn required_count(&self, row: usize, column: usize) -> Result<u64, Error> {
        self.count(row, column)?.ok_or_else(|| {
            Error::invalid(
                &self.path,
                self.at(row, column),
                "empty (a count is needed)",
            )
        })
    }

    /// `true`, `false` or None for an empty cell.
    pub fn flag(&self, row: usize, column: usize) -> Result<Option<bool>, Error> {
        match self.text(row, column) {
            "" => Ok(None),
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            other => Err(Error::invalid(
                &self.path,
                self.at(row, column),
                format!("{other:?} is not true or false"),
            )),
        }
    }

    /// A refusal of the header for a reason of the caller's.
    pub fn refuse_header(&self, reason: &str) -> Error {
        Error::invalid(&self.path, "line 1", reason)
    }

    /// A refusal of a cell for a reason of the caller's.
    pub fn refuse(&self, row: usize, column: usize, reason: &str) -> Error {
        Error::invalid(&self.path, self.at(row, column), reason)
    }
}

/// A CSV reader's error, naming the line where the reader knows it (a row of another length,
/// bytes that are not UTF-8); an I/O error as the file's.
fn csv_error(path: &Path, e: csv::Error) -> Error {
    let text = e.to_string();
    let line =
        |pos: Option<csv::Position>| pos.map_or("csv".into(), |p| format!("line {}", p.line()));
    match e.into_kind() {
        csv::ErrorKind::Io(source) => Error::Io {
            path: path.to_path_buf(),
            source,
        },
        csv::ErrorKind::Utf8 { pos, err } => {
            Error::invalid(path, line(pos), format!("not UTF-8 text ({err})"))
        }
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => Error::invalid(
            path,
            line(pos),
            format!("{len} fields where the header has {expected_len}"),
        ),
        _ => Error::invalid(path, "csv", &text),
    }
}
