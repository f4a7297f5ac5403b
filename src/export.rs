//! Tidy CSV tables from the command line's JSON reports (`--csv FILE`), for pandas and
//! spreadsheets. A table is a list of JSON objects (one per row) plus context columns that
//! repeat on every row (the moe-opt version, the instance's name and SHA-256). Column names are
//! the reports' documented JSON field names, nested objects joined with `.` (e.g.
//! `exact.status`), so they are as stable as the JSON and carry its units (`_s`, `_bytes`).
//! Arrays are written as JSON text in one cell; null is an empty cell. Columns appear in the
//! order the fields first appear, which is the reports' declaration order.

use std::path::Path;

use formulations::Error;
use serde_json::Value;

/// A table: context columns (on every row) and rows.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Columns repeated on every row, first.
    pub context: Vec<(String, Value)>,
    /// One JSON object per row.
    pub rows: Vec<Value>,
}

impl Table {
    /// A table of `rows` under `context`.
    pub fn new(context: Vec<(&str, Value)>, rows: Vec<Value>) -> Self {
        Table {
            context: context
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            rows,
        }
    }
}

/// The (column, cell) pairs of a JSON value, nested keys joined with `.`.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Value::Null => out.push((prefix.to_string(), String::new())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn columns_with_prefix(cells: &[Vec<(String, String)>], prefix: &str) -> bool {
    cells
        .iter()
        .any(|flat| flat.iter().any(|(k, _)| k.starts_with(prefix)))
}

/// Writes a table as CSV; errors name the file.
pub fn write_csv(path: &Path, table: &Table) -> Result<(), Error> {
    let mut columns: Vec<String> = table.context.iter().map(|(k, _)| k.clone()).collect();
    let mut cells: Vec<Vec<(String, String)>> = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let mut flat = Vec::new();
        for (k, v) in &table.context {
            flatten(k, v, &mut flat);
        }
        flatten("", row, &mut flat);
        for (k, _) in &flat {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        cells.push(flat);
    }
    // A null object (e.g. `exact` of a heuristic) next to the same object's dotted columns adds
    // only an empty column: drop it.
    columns.retain(|c| {
        let nested = format!("{c}.");
        let empty = cells
            .iter()
            .all(|flat| flat.iter().all(|(k, v)| k != c || v.is_empty()));
        !(empty && columns_with_prefix(&cells, &nested))
    });
    let err = |e: csv::Error| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    w.write_record(&columns).map_err(err)?;
    for flat in cells {
        let record: Vec<&str> = columns
            .iter()
            .map(|c| {
                flat.iter()
                    .find(|(k, _)| k == c)
                    .map_or("", |(_, v)| v.as_str())
            })
            .collect();
        w.write_record(&record).map_err(err)?;
    }
    w.flush().map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_fields_become_dotted_columns_and_missing_ones_stay_empty() {
        let dir = std::env::temp_dir().join(format!("moe-opt-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let table = Table::new(
            vec![("instance_sha256", json!("ab"))],
            vec![
                json!({"method": "milp", "objective_s": 0.5, "exact": {"status": "optimal", "gap": 0.0}}),
                json!({"method": "lfu", "objective_s": null, "exact": null, "sets": [1, 2]}),
            ],
        );
        write_csv(&path, &table).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // Written out by hand from the two rows above.
        // The bare `exact` column (null on the second row) is dropped: its fields have columns.
        let expected = "instance_sha256,method,objective_s,exact.status,exact.gap,sets\n\
                        ab,milp,0.5,optimal,0.0,\n\
                        ab,lfu,,,,\"[1,2]\"\n";
        assert_eq!(text, expected);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
