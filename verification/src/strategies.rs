//! proptest strategies for set-function properties: subsets and chains A subset B with an
//! element x outside B, over a ground set of size n.

use proptest::prelude::*;

/// A subset of {0, ..., n-1} as membership flags.
pub fn subset(n: usize) -> impl Strategy<Value = Vec<bool>> {
    proptest::collection::vec(any::<bool>(), n)
}

/// (A, B, x) with A subset B and x outside B; needs n >= 1.
pub fn chain(n: usize) -> impl Strategy<Value = (Vec<bool>, Vec<bool>, usize)> {
    assert!(n >= 1, "a chain needs a non-empty ground set");
    (0..n, proptest::collection::vec(0u8..3, n)).prop_map(move |(x, roles)| {
        // role 0: outside B; 1: in B only; 2: in A (and B). x is always outside.
        let a = (0..n).map(|i| i != x && roles[i] == 2).collect();
        let b = (0..n).map(|i| i != x && roles[i] >= 1).collect();
        (a, b, x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        #[test]
        fn chains_are_nested_and_the_element_is_outside((a, b, x) in chain(7)) {
            for i in 0..7 {
                prop_assert!(!a[i] || b[i]);
            }
            prop_assert!(!b[x] && !a[x]);
        }
    }
}
