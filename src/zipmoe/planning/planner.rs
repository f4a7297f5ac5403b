//! Alg. 4 (App. C, hierarchical cache pool planning): fit the selection probabilities of every
//! layer by eq. (24) (line 4), visit every memory split of the grid (line 5), score it by the
//! expected makespan of [`formulations::zipmoe::pool`] (lines 6-29) and keep the first split of
//! least cost (lines 30-33).
//!
//! Readings (see also the pool module's doc):
//!
//! * **Grid order** (line 5 does not fix one): the pools of Lambda in hierarchy order F, C, S,
//!   E; the steps m_p of every pool but the last run 0, 1, ... up to what is left of M, the
//!   last pool takes the rest; splits are visited in increasing lexicographic order of (m_p)
//!   over Lambda. Line 30's strict `<` keeps the first split of least cost in this order.
//! * **Line 3's default** gamma = (1, 0, 0, 0) is returned only if no split has a cost below
//!   infinity; every cost is finite for a valid instance (Phi_N(k) > 0 is checked), so the
//!   default is never returned and is not modelled.
//! * **Several layers**: the cost of a split is the sum of the layers' expected makespans.

use formulations::zipmoe::pool::{
    self, phi_all, pool_sizes, validate, Pool, PoolInstance, PoolSizes, Split,
};
use formulations::ValidationError;
use serde::Serialize;

use super::ipf::{fit, Ipf};

/// One layer's workload model after line 4.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerModel {
    /// Eq. (24)'s weights, q, iterations and residual.
    pub ipf: Ipf,
    /// Phi_N(k) (line 13).
    pub phi_n_k: f64,
}

/// A scored grid point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridPoint {
    /// The split (steps m_p per pool F, C, S, E).
    pub split: Split,
    /// gamma_p = m_p / M per pool (F, C, S, E).
    pub ratios: [f64; 4],
    /// S_p of every pool and the Miss Pool's size, per layer.
    pub sizes: PoolSizes,
    /// Sum over layers of the expected makespan, seconds (Alg. 4's Cost).
    pub expected_makespan_s: f64,
    /// Each layer's expected makespan, seconds.
    pub layer_makespans_s: Vec<f64>,
}

/// Alg. 4's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The chosen split and its cost (line 35's gamma-hat).
    pub best: GridPoint,
    /// Grid points visited.
    pub grid_points: u64,
    /// Each layer's fitted model.
    pub layers: Vec<LayerModel>,
}

/// Line 4 for every layer: eq. (24) and Phi_N(k). Errors name the layer's field.
pub fn fit_layers(instance: &PoolInstance) -> Result<Vec<LayerModel>, ValidationError> {
    let k = instance.top_k;
    instance
        .layers
        .iter()
        .enumerate()
        .map(|(l, layer)| {
            let field = format!("layers[{l}].inclusion_probabilities");
            let ipf = fit(&layer.inclusion_probabilities, k, &instance.ipf, &field)?;
            let phi_n_k = phi_all(&ipf.selection_probabilities, k as usize);
            if !(phi_n_k.is_finite() && phi_n_k > 0.0) {
                return Err(ValidationError::new(
                    field,
                    format!("Phi_N(k) = {phi_n_k} after eq. (24): no k-subset has weight"),
                ));
            }
            Ok(LayerModel { ipf, phi_n_k })
        })
        .collect()
}

/// Line 5: every split of step 1/M over Lambda, in the order of the module doc.
pub fn grid(instance: &PoolInstance) -> Vec<Split> {
    let pools = instance.active_pools();
    let total = instance.grid_steps();
    let mut out = Vec::new();
    let mut steps = [0u32; 4];
    fn visit(pools: &[Pool], left: u32, steps: &mut [u32; 4], out: &mut Vec<Split>) {
        match pools {
            [] => {}
            [last] => {
                steps[last.index()] = left;
                out.push(Split { steps: *steps });
                steps[last.index()] = 0;
            }
            [first, rest @ ..] => {
                for m in 0..=left {
                    steps[first.index()] = m;
                    visit(rest, left - m, steps, out);
                }
                steps[first.index()] = 0;
            }
        }
    }
    visit(&pools, total, &mut steps, &mut out);
    out
}

/// Lines 6-29 for one split: pool sizes and the expected makespan summed over layers.
pub fn evaluate_split(instance: &PoolInstance, layers: &[LayerModel], split: &Split) -> GridPoint {
    let sizes = pool_sizes(instance, split);
    let k = instance.top_k as usize;
    let layer_makespans_s: Vec<f64> = layers
        .iter()
        .map(|m| {
            pool::expected_layer_makespan_s(
                &m.ipf.selection_probabilities,
                k,
                &sizes,
                m.phi_n_k,
                &instance.costs,
            )
        })
        .collect();
    GridPoint {
        split: *split,
        ratios: split.ratios(instance.grid_steps()),
        sizes,
        expected_makespan_s: layer_makespans_s.iter().sum(),
        layer_makespans_s,
    }
}

/// Alg. 4 on a validated instance with its fitted layers: the first split of least cost,
/// and how many splits it scored. Complexity: [`plan`]'s, without the fits.
pub fn search(instance: &PoolInstance, layers: &[LayerModel]) -> (GridPoint, u64) {
    let mut best: Option<GridPoint> = None;
    let mut visited = 0u64;
    for split in grid(instance) {
        visited += 1;
        let point = evaluate_split(instance, layers, &split);
        // Lines 30-33 (strict: ties keep the earlier split).
        if best
            .as_ref()
            .is_none_or(|b| point.expected_makespan_s < b.expected_makespan_s)
        {
            best = Some(point);
        }
    }
    (best.expect("the grid has at least one split"), visited)
}

/// Alg. 4: validates the instance, fits every layer (line 4) and searches the grid.
///
/// # Complexity
/// L layers of E experts, top-k, |Lambda| pools, M = 1 / grid step. The grid has
/// G = C(M + |Lambda| - 1, |Lambda| - 1) splits; each costs, per layer, Alg. 2 on every pool's
/// ranks (O(E^2) in all) and Alg. 3 on at most C(k + 4, 4) hit patterns. Time: the fits
/// ([`fit_layers`]: eq. (24)'s iterations, O(E k) each) plus O(G L (E^2 + k^4)). Memory:
/// O(L E + k^4); the grid is listed once, O(G).
///
/// # Examples
/// ```
/// use moe_opt::zipmoe::planning::generate::tiny_instance;
/// use moe_opt::zipmoe::planning::planner::{evaluate_split, grid, plan};
///
/// // Four pools and a grid step of 1/4: the splits are the ways of writing 4 steps as a sum
/// // of 4 parts, C(7, 3) = 35.
/// let instance = tiny_instance();
/// let p = plan(&instance).unwrap();
/// assert_eq!(p.grid_points, 35);
/// assert_eq!(p.best.split.steps.iter().sum::<u32>(), 4);
/// // Lines 30-33: no split of the grid has a lower expected makespan.
/// assert!(grid(&instance).iter().all(|s| {
///     evaluate_split(&instance, &p.layers, s).expected_makespan_s >= p.best.expected_makespan_s
/// }));
/// ```
pub fn plan(instance: &PoolInstance) -> Result<Plan, ValidationError> {
    validate(instance)?;
    let layers = fit_layers(instance)?;
    let (best, grid_points) = search(instance, &layers);
    Ok(Plan {
        best,
        grid_points,
        layers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use formulations::zipmoe::pool::grid_points;

    #[test]
    fn grid_order_and_count() {
        let mut i = super::super::generate::tiny_instance();
        i.pools = vec![Pool::Exponent, Pool::Full];
        i.grid_step = 0.5;
        // Lambda = (F, E), M = 2: (0, 2), (1, 1), (2, 0) for (F, E).
        let g: Vec<[u32; 4]> = grid(&i).iter().map(|s| s.steps).collect();
        assert_eq!(g, vec![[0, 0, 0, 2], [1, 0, 0, 1], [2, 0, 0, 0]]);
        i.pools = Pool::ALL.to_vec();
        i.grid_step = 0.1;
        assert_eq!(grid(&i).len() as u64, grid_points(10, 4));
        assert!(grid(&i).iter().all(|s| s.steps.iter().sum::<u32>() == 10));
    }
}
