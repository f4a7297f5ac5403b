//! A small, strict reader of numpy's `.npy` files (format versions 1.0, 2.0 and 3.0, as
//! numpy's `lib.format` documents them): the magic string, the version, the header's length,
//! the header, a Python dict literal with exactly the keys `descr`, `fortran_order` and
//! `shape`, then the data. Only what `np.save` writes for a plain numeric array is read:
//! little-endian (or single-byte) floats `f8`/`f4`, signed `i8`/`i4`/`i2`/`i1` and unsigned
//! `u8`/`u4`/`u2`/`u1`, in C order. Everything else (big-endian data, Fortran order, object or
//! structured dtypes, pickles) is refused, naming the file, the field (`magic`, `version`,
//! `header`, `descr`, `fortran_order`, `shape`, `data`) and the reason.
//!
//! Sizes are checked before anything is allocated: the file's length (at most what the limits
//! allow), the header's length against [`MAX_HEADER_BYTES`], the shape's product against
//! [`MAX_VALUES`] (with overflow checked), and the data's length against the shape's, which must
//! match exactly (no truncation, no trailing bytes). Integers are converted to f64 only when exact (|x| <= 2^53).

use std::path::Path;

use formulations::Error;

/// The most values an array may hold (2^26, 512 MB as f64); above it the file is refused
/// before its data is read.
pub const MAX_VALUES: usize = 1 << 26;

/// The longest header read (numpy writes 118 bytes or so for a 2-D array; its own reader
/// refuses more than 10,000 by default).
pub const MAX_HEADER_BYTES: usize = 65_536;

const MAGIC: &[u8] = b"\x93NUMPY";

/// An array read from a `.npy` file: its shape and its values in C order, as f64.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// The dimensions, outermost first.
    pub shape: Vec<usize>,
    /// The values, the last index varying fastest.
    pub values: Vec<f64>,
}

/// The element types read (the `descr` without its byte-order character).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dtype {
    F8,
    F4,
    I8,
    I4,
    I2,
    I1,
    U8,
    U4,
    U2,
    U1,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F8 | Dtype::I8 | Dtype::U8 => 8,
            Dtype::F4 | Dtype::I4 | Dtype::U4 => 4,
            Dtype::I2 | Dtype::U2 => 2,
            Dtype::I1 | Dtype::U1 => 1,
        }
    }

    /// From a `descr` string: `<` (little-endian) for multi-byte types, `|` (or `<`) for
    /// single bytes.
    fn parse(descr: &str) -> Result<Dtype, String> {
        let supported = "expected one of <f8, <f4, <i8, <i4, <i2, |i1, <u8, <u4, <u2, |u1";
        let (order, code) = descr.split_at(descr.len().min(1));
        let dtype = match code {
            "f8" => Dtype::F8,
            "f4" => Dtype::F4,
            "i8" => Dtype::I8,
            "i4" => Dtype::I4,
            "i2" => Dtype::I2,
            "i1" => Dtype::I1,
            "u8" => Dtype::U8,
            "u4" => Dtype::U4,
            "u2" => Dtype::U2,
            "u1" => Dtype::U1,
            _ => return Err(format!("dtype '{descr}' is not read; {supported}")),
        };
        match order {
            "<" => Ok(dtype),
            "|" if dtype.size() == 1 => Ok(dtype),
            ">" if dtype.size() > 1 => Err(format!(
                "'{descr}' is big-endian; save it little-endian (arr.astype('<{code}'))"
            )),
            _ => Err(format!("dtype '{descr}' is not read; {supported}")),
        }
    }

    /// The value of one element's bytes, exact in f64 or an error.
    fn value(self, b: &[u8]) -> Result<f64, String> {
        let exact = |x: f64, shown: String| {
            if x.abs() <= (1u64 << 53) as f64 {
                Ok(x)
            } else {
                Err(format!("{shown} is not exact as a float (|x| > 2^53)"))
            }
        };
        let a8 = || <[u8; 8]>::try_from(b).expect("8 bytes");
        let a4 = || <[u8; 4]>::try_from(b).expect("4 bytes");
        let a2 = || <[u8; 2]>::try_from(b).expect("2 bytes");
        match self {
            Dtype::F8 => Ok(f64::from_le_bytes(a8())),
            Dtype::F4 => Ok(f32::from_le_bytes(a4()) as f64),
            Dtype::I8 => {
                let x = i64::from_le_bytes(a8());
                exact(x as f64, x.to_string())
            }
            Dtype::U8 => {
                let x = u64::from_le_bytes(a8());
                exact(x as f64, x.to_string())
            }
            Dtype::I4 => Ok(i32::from_le_bytes(a4()) as f64),
            Dtype::U4 => Ok(u32::from_le_bytes(a4()) as f64),
            Dtype::I2 => Ok(i16::from_le_bytes(a2()) as f64),
            Dtype::U2 => Ok(u16::from_le_bytes(a2()) as f64),
            Dtype::I1 => Ok(b[0] as i8 as f64),
            Dtype::U1 => Ok(b[0] as f64),
        }
    }
}

/// The longest file read: the largest header and [`MAX_VALUES`] values of 8 bytes.
const MAX_FILE_BYTES: u64 = 12 + MAX_HEADER_BYTES as u64 + 8 * MAX_VALUES as u64;

/// Reads a `.npy` file (module doc); a file longer than any array within the limits could be
/// is refused by its length before it is read.
pub fn read(path: &Path) -> Result<NpyArray, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "data".into(),
            reason: format!(
                "{len} bytes is longer than any array within the limit of {MAX_VALUES} values \
                 (moe_opt::npy::MAX_VALUES)"
            ),
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    parse(&bytes).map_err(|(field, reason)| Error::Invalid {
        path: path.to_path_buf(),
        field: field.into(),
        reason,
    })
}

/// Reads a `.npy` file holding a 2-D array: its rows.
pub fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>, Error> {
    let array = read(path)?;
    match array.shape[..] {
        [_, cols] => Ok(array
            .values
            .chunks(cols.max(1))
            .map(<[f64]>::to_vec)
            .collect()),
        _ => Err(Error::Invalid {
            path: path.to_path_buf(),
            field: "shape".into(),
            reason: format!(
                "{:?} has {} dimensions; a matrix (rows, columns) is expected",
                array.shape,
                array.shape.len()
            ),
        }),
    }
}

/// The array in `bytes`, or the field and the reason it is refused.
fn parse(bytes: &[u8]) -> Result<NpyArray, (&'static str, String)> {
    if !bytes.starts_with(MAGIC) {
        return Err((
            "magic",
            "not a .npy file (no \\x93NUMPY at the start)".into(),
        ));
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[a, b]) => (a, b),
        _ => return Err(("version", "the file ends before the version".into())),
    };
    let (length_bytes, utf8) = match (major, minor) {
        (1, 0) => (2, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        _ => {
            return Err((
                "version",
                format!("{major}.{minor} is not read (1.0, 2.0 or 3.0)"),
            ))
        }
    };
    let start = 8 + length_bytes;
    let header_len = match bytes.get(8..start) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]) as usize,
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) as usize,
        _ => return Err(("header", "the file ends before the header's length".into())),
    };
    if header_len > MAX_HEADER_BYTES {
        return Err((
            "header",
            format!(
                "{header_len} bytes exceeds the limit of {MAX_HEADER_BYTES} \
                 (moe_opt::npy::MAX_HEADER_BYTES)"
            ),
        ));
    }
    let header = bytes.get(start..start + header_len).ok_or((
        "header",
        format!("the file ends inside the {header_len}-byte header"),
    ))?;
    if !utf8 && !header.is_ascii() {
        return Err(("header", format!("not ASCII (version {major}.0)")));
    }
    let header = std::str::from_utf8(header).map_err(|_| ("header", "not UTF-8".to_string()))?;
    let (dtype, fortran, shape) = parse_header(header)?;
    if fortran {
        return Err((
            "fortran_order",
            "True: Fortran-order arrays are not read; save np.ascontiguousarray(arr)".into(),
        ));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_VALUES)
        .ok_or((
            "shape",
            format!(
                "{shape:?} holds more than {MAX_VALUES} values, the limit \
                 (moe_opt::npy::MAX_VALUES)"
            ),
        ))?;
    let data = &bytes[start + header_len..];
    let expected = count * dtype.size();
    if data.len() != expected {
        return Err((
            "data",
            format!(
                "{} bytes after the header; shape {shape:?} of {}-byte values needs {expected}",
                data.len(),
                dtype.size()
            ),
        ));
    }
    let values = data
        .chunks_exact(dtype.size())
        .enumerate()
        .map(|(i, b)| {
            dtype
                .value(b)
                .map_err(|e| ("data", format!("value {i}: {e}")))
        })
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(NpyArray { shape, values })
}

/// The header dict: `{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }`, keys in
/// any order, each exactly once, nothing else.
fn parse_header(header: &str) -> Result<(Dtype, bool, Vec<usize>), (&'static str, String)> {
    let bad = |reason: String| ("header", reason);
    let body = header
        .trim_end()
        .strip_prefix('{')
        .and_then(|h| h.strip_suffix('}'))
        .ok_or_else(|| bad(format!("not a dict literal: {header:?}")))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    let mut rest = body.trim_start();
    while !rest.is_empty() {
        let (key, after) =
            quoted(rest).ok_or_else(|| bad(format!("expected a quoted key at {rest:?}")))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| bad(format!("expected ':' after '{key}'")))?
            .trim_start();
        let after = match key {
            "descr" => {
                let (value, after) =
                    quoted(after).ok_or(("descr", "not a quoted string".into()))?;
                let dtype = Dtype::parse(value).map_err(|e| ("descr", e))?;
                set(&mut descr, dtype, "descr")?;
                after
            }
            "fortran_order" => {
                let (value, after) = if let Some(a) = after.strip_prefix("False") {
                    (false, a)
                } else if let Some(a) = after.strip_prefix("True") {
                    (true, a)
                } else {
                    return Err(("fortran_order", "must be True or False".into()));
                };
                set(&mut fortran, value, "fortran_order")?;
                after
            }
            "shape" => {
                let (value, after) = tuple(after)?;
                set(&mut shape, value, "shape")?;
                after
            }
            other => return Err(bad(format!("unknown key '{other}'"))),
        };
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(a) => a.trim_start(),
            None if after.is_empty() => after,
            None => return Err(bad(format!("expected ',' or '}}' at {after:?}"))),
        };
    }
    Ok((
        descr.ok_or(("descr", "missing".to_string()))?,
        fortran.ok_or(("fortran_order", "missing".to_string()))?,
        shape.ok_or(("shape", "missing".to_string()))?,
    ))
}

fn set<T>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), (&'static str, String)> {
    if slot.replace(value).is_some() {
        return Err((key, "given twice".into()));
    }
    Ok(())
}

/// A string in single or double quotes at the start of `s` (no escapes: keys and dtypes have
/// none), and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let q = s.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let end = s[1..].find(q)?;
    Some((&s[1..1 + end], &s[2 + end..]))
}

/// A tuple of non-negative integers: `()`, `(5,)`, `(2, 3)`.
fn tuple(s: &str) -> Result<(Vec<usize>, &str), (&'static str, String)> {
    let bad = |reason: String| ("shape", reason);
    let inner = s
        .strip_prefix('(')
        .ok_or_else(|| bad("not a tuple".into()))?;
    let end = inner
        .find(')')
        .ok_or_else(|| bad("the tuple has no ')'".into()))?;
    let dims = inner[..end]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.parse::<usize>()
                .map_err(|_| bad(format!("'{d}' is not a dimension (a non-negative integer)")))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    Ok((dims, &inner[end + 1..]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A version-1.0 file as `np.save` lays it out: magic, version, u16 header length, the
    /// header padded with spaces to a multiple of 64 bytes and ending in '\n', then the data
    /// (also `counts`' tests).
    pub(crate) fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut h = header.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend((h.len() as u16).to_le_bytes());
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn a_file_too_long_for_any_array_is_refused_before_it_is_read() {
        let path =
            std::env::temp_dir().join(format!("moe-opt-npy-long-{}.npy", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        // Sparse: 1 GB of length, no data written.
        file.set_len(1 << 30).unwrap();
        let e = read(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(e.contains(": data: 1073741824 bytes is longer"), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
    }

    fn field(bytes: &[u8]) -> (&'static str, String) {
        parse(bytes).unwrap_err()
    }

    #[test]
    fn reads_little_endian_floats_and_integers_in_c_order() {
        // [[1.5, -2], [0.25, 8]] as <f8: the bytes of each value written by hand.
        let mut data = Vec::new();
        for x in [1.5f64, -2.0, 0.25, 8.0] {
            data.extend(x.to_le_bytes());
        }
        let a = parse(&npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
            &data,
        ))
        .unwrap();
        assert_eq!(a.shape, vec![2, 2]);
        assert_eq!(a.values, vec![1.5, -2.0, 0.25, 8.0]);
        // <i4 [[1, -1, 258]]: 01 00 00 00, ff ff ff ff, 02 01 00 00.
        let data = [1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 2, 1, 0, 0];
        let a = parse(&npy(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), }",
            &data,
        ))
        .unwrap();
        assert_eq!(a.values, vec![1.0, -1.0, 258.0]);
        // |u1, <u2, <f4 and <u8, keys in another order.
        let a = parse(&npy(
            "{'shape': (3,), 'fortran_order': False, 'descr': '|u1'}",
            &[0, 7, 255],
        ))
        .unwrap();
        assert_eq!(a.values, vec![0.0, 7.0, 255.0]);
        let a = parse(&npy(
            "{'descr': '<u2', 'fortran_order': False, 'shape': (1,)}",
            &[0x34, 0x12],
        ))
        .unwrap();
        assert_eq!(a.values, vec![4660.0]);
        let a = parse(&npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
            &0.5f32.to_le_bytes(),
        ))
        .unwrap();
        assert_eq!(a.values, vec![0.5]);
        let a = parse(&npy(
            "{'descr': '<u8', 'fortran_order': False, 'shape': (1,)}",
            &(1u64 << 53).to_le_bytes(),
        ))
        .unwrap();
        assert_eq!(a.values, vec![9007199254740992.0]);
        // An empty matrix and a version-2.0 header (u32 length).
        let a = parse(&npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4), }",
            &[],
        ))
        .unwrap();
        assert_eq!((a.shape, a.values.len()), (vec![0, 4], 0));
        let mut v2 = npy(
            "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }",
            &[0xfe, 3],
        );
        v2[6] = 2;
        let len = u16::from_le_bytes([v2[8], v2[9]]) as u32;
        v2.splice(8..10, len.to_le_bytes());
        assert_eq!(parse(&v2).unwrap().values, vec![-2.0, 3.0]);
    }

    #[test]
    fn refusals_name_the_field_and_the_reason() {
        let f8 = |shape: &str, data: &[u8]| {
            npy(
                &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"),
                data,
            )
        };
        assert_eq!(field(b"PK\x03\x04").0, "magic");
        assert_eq!(field(b"\x93NUMPY").0, "version");
        let mut v9 = f8("(1,)", &[0; 8]);
        v9[6] = 9;
        assert!(field(&v9).1.contains("9.0 is not read"));
        // Truncated data, trailing bytes.
        let (f, reason) = field(&f8("(2, 2)", &[0; 24]));
        assert_eq!(f, "data");
        assert!(
            reason.contains("24 bytes") && reason.contains("needs 32"),
            "{reason}"
        );
        assert_eq!(field(&f8("(1,)", &[0; 9])).0, "data");
        // Big-endian, unsupported dtypes, Fortran order.
        let be = npy(
            "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }",
            &[0; 8],
        );
        let (f, reason) = field(&be);
        assert_eq!(f, "descr");
        assert!(reason.contains("big-endian"), "{reason}");
        let obj = npy(
            "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
            &[0; 8],
        );
        assert_eq!(field(&obj).0, "descr");
        let c16 = npy(
            "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }",
            &[0; 16],
        );
        assert_eq!(field(&c16).0, "descr");
        let fortran = npy(
            "{'descr': '<f8', 'fortran_order': True, 'shape': (1,), }",
            &[0; 8],
        );
        assert_eq!(field(&fortran).0, "fortran_order");
        // Shapes: not integers, negative, overflowing, over the limit (before any allocation).
        assert_eq!(field(&f8("(2, x)", &[])).0, "shape");
        assert_eq!(field(&f8("(-1,)", &[])).0, "shape");
        let (f, reason) = field(&f8("(4294967296, 4294967296)", &[]));
        assert_eq!(f, "shape");
        assert!(reason.contains("MAX_VALUES"), "{reason}");
        assert_eq!(field(&f8("(8192, 8193)", &[])).0, "shape");
        // Header keys: unknown, missing, twice.
        let extra = npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}",
            &[0; 8],
        );
        assert!(field(&extra).1.contains("unknown key 'x'"));
        assert_eq!(
            field(&npy("{'descr': '<f8', 'shape': (1,)}", &[0; 8])).0,
            "fortran_order"
        );
        let twice = npy(
            "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}",
            &[0; 8],
        );
        assert_eq!(field(&twice), ("descr", "given twice".to_string()));
        // Integers not exact as floats.
        let big = npy(
            "{'descr': '<i8', 'fortran_order': False, 'shape': (1,)}",
            &i64::MAX.to_le_bytes(),
        );
        let (f, reason) = field(&big);
        assert_eq!(f, "data");
        assert!(reason.contains("2^53"), "{reason}");
        // A header length past the limit or past the file's end.
        let mut long = f8("(1,)", &[0; 8]);
        long[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(field(&long).0, "header");
    }
}
