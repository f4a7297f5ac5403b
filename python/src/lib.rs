//! `moe_opt._native`: what the Python package `moe_opt` calls. The command line runs in this
//! process ([`moe_opt::cli::run_captured`]) with the GIL released, so a notebook gets the
//! command's own JSON and CSV without a subprocess, and another Python thread can poll
//! `progress` meanwhile; EPLB takes and gives numpy arrays.

use numpy::{IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    MoeOptError,
    PyException,
    "A moe-opt command failed: args are (message, exit code); code 2 is bad input, 1 a failure of moe-opt or the solver."
);

/// Runs `moe-opt ARGS...` in this process and returns `(stdout, notes)`: its standard output
/// (`--help` returns the help) and its notes for standard error (`wrote FILE`). The GIL is
/// released while it runs.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> PyResult<(String, String)> {
    let result = py.detach(|| {
        let registry = moe_opt::problems::builtin();
        moe_opt::cli::run_captured(&registry, args)
    });
    result
        .map(|c| (c.stdout, c.notes))
        .map_err(|e| MoeOptError::new_err((e.message, e.code)))
}

/// The progress of the run in progress, `(what, done, total)`, or None.
#[pyfunction]
fn progress() -> Option<(String, u64, u64)> {
    moe_opt::progress::snapshot().map(|s| (s.what, s.done, s.total))
}

/// The three outputs of EPLB's `rebalance_experts`, as numpy arrays of int64.
type EplbArrays<'py> = (
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray3<i64>>,
    Bound<'py, PyArray2<i64>>,
);

/// EPLB's `rebalance_experts` on `weight[layer][logical expert]` (float64): `(phy2log,
/// log2phy, logcnt)` with the reference's shapes and its -1 padding of `log2phy`.
#[pyfunction]
fn eplb<'py>(
    py: Python<'py>,
    weight: PyReadonlyArray2<'py, f64>,
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
) -> PyResult<EplbArrays<'py>> {
    let weight = weight.as_array();
    let rows: Vec<Vec<f64>> = weight.rows().into_iter().map(|r| r.to_vec()).collect();
    let plan = py
        .detach(|| {
            moe_opt::eplb::rebalance_experts(&rows, num_replicas, num_groups, num_nodes, num_gpus)
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let as_i64 = |v: &Vec<usize>| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let phy2log: Vec<Vec<i64>> = plan.physical_to_logical.iter().map(as_i64).collect();
    let logcnt: Vec<Vec<i64>> = plan.replica_count.iter().map(as_i64).collect();
    let log2phy = plan.logical_to_physical_padded();
    Ok((
        matrix(py, &phy2log)?,
        cube(py, &log2phy)?,
        matrix(py, &logcnt)?,
    ))
}

fn matrix<'py>(py: Python<'py>, rows: &[Vec<i64>]) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let width = rows.first().map_or(0, Vec::len);
    let flat: Vec<i64> = rows.concat();
    flat.into_pyarray(py).reshape([rows.len(), width])
}

fn cube<'py>(py: Python<'py>, rows: &[Vec<Vec<i64>>]) -> PyResult<Bound<'py, PyArray3<i64>>> {
    let middle = rows.first().map_or(0, Vec::len);
    let width = rows.first().and_then(|r| r.first()).map_or(0, Vec::len);
    let flat: Vec<i64> = rows.iter().flatten().flatten().copied().collect();
    flat.into_pyarray(py).reshape([rows.len(), middle, width])
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(progress, m)?)?;
    m.add_function(wrap_pyfunction!(eplb, m)?)?;
    m.add("MoeOptError", m.py().get_type::<MoeOptError>())?;
    m.add("__version__", moe_opt::report::VERSION)?;
    Ok(())
}
