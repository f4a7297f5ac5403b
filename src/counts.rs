//! Reading activation-count files (`moe-activation-counts/v1`, ../shared/data/README.md), which
//! every problem's importer starts from. Each importer keeps its own view of the fields it needs.

use std::io::Read;
use std::path::Path;

use formulations::Error;
use serde::de::DeserializeOwned;

/// Parses a gzip-compressed JSON file; a file that is not gzip is an I/O error naming it.
pub fn read_json_gz<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    read(path, false)
}

/// Parses a JSON file that may be gzip-compressed (recognised by its magic bytes). Errors name
/// the file, and for bad JSON the line and column.
pub fn read_json_maybe_gz<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    read(path, true)
}

fn read<T: DeserializeOwned>(path: &Path, plain_too: bool) -> Result<T, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) || !plain_too {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .map_err(io)?;
        text
    } else {
        String::from_utf8(bytes)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?
    };
    formulations::error::parse_json(path, &text)
}
