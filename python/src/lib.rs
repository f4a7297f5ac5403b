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
/// log2phy, logcnt)` with the reference's shapes and its -1 padding of `log2phy`, and `None`;
/// with `method="exact"`, the balance problem's exact method's plan under EPLB's locality
/// (`time_limit` seconds per layer) and its account (status, sum of the layers' busiest GPU
/// loads, bound, gap, each layer's) as JSON.
#[pyfunction]
#[pyo3(signature = (weight, num_replicas, num_groups, num_nodes, num_gpus, method="eplb", time_limit=None))]
#[allow(clippy::too_many_arguments)]
fn eplb<'py>(
    py: Python<'py>,
    weight: PyReadonlyArray2<'py, f64>,
    num_replicas: usize,
    num_groups: usize,
    num_nodes: usize,
    num_gpus: usize,
    method: &str,
    time_limit: Option<f64>,
) -> PyResult<(EplbArrays<'py>, Option<String>)> {
    let weight = weight.as_array();
    let rows: Vec<Vec<f64>> = weight.rows().into_iter().map(|r| r.to_vec()).collect();
    let arguments = [num_replicas, num_groups, num_nodes, num_gpus];
    let (plan, exact) = match method {
        "eplb" => {
            if time_limit.is_some() {
                return Err(PyValueError::new_err(
                    "eplb: only method=\"exact\" takes a time_limit",
                ));
            }
            let plan = py
                .detach(|| {
                    moe_opt::eplb::rebalance_experts(
                        &rows,
                        num_replicas,
                        num_groups,
                        num_nodes,
                        num_gpus,
                    )
                })
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            (plan, None)
        }
        "exact" => {
            if time_limit.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
                return Err(PyValueError::new_err(
                    "eplb: time_limit must be a positive number of seconds",
                ));
            }
            let options = formulations::milp::SolveOptions {
                time_limit_s: time_limit,
                ..Default::default()
            };
            let (plan, account) = py
                .detach(|| moe_opt::balance::exact::exact_eplb(&rows, arguments, &options))
                .map_err(|e| match e {
                    moe_opt::balance::exact::ExactEplbError::Eplb(e) => {
                        PyValueError::new_err(e.to_string())
                    }
                    moe_opt::balance::exact::ExactEplbError::Other(e) => {
                        MoeOptError::new_err((e.to_string(), 1))
                    }
                })?;
            let json = serde_json::to_string(&account)
                .map_err(|e| MoeOptError::new_err((e.to_string(), 1)))?;
            (plan, Some(json))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "eplb: method must be \"eplb\" or \"exact\", got {other:?}"
            )))
        }
    };
    let as_i64 = |v: &Vec<usize>| v.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let phy2log: Vec<Vec<i64>> = plan.physical_to_logical.iter().map(as_i64).collect();
    let logcnt: Vec<Vec<i64>> = plan.replica_count.iter().map(as_i64).collect();
    let log2phy = plan.logical_to_physical_padded();
    Ok((
        (
            matrix(py, &phy2log)?,
            cube(py, &log2phy)?,
            matrix(py, &logcnt)?,
        ),
        exact,
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
