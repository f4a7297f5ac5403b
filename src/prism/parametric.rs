//! Prism's parametric families (see [`crate::parametric`]).
//!
//! ## `thm1-entropy-starved`: Alg. 1's entropy counts against Theorem 1
//!
//! Theorem 1 (Sec. III-C2) claims U_n(A_n) >= (1 - 1/e) U_n(A_n^*) per server, A_n Alg. 2's
//! set, B_n = sum_l N_{n,l} with N_{n,l} from Alg. 1, U_n(S) = sum_{e in S} f_n^l(e) and
//! A_n^* the best set of at most B_n experts with no per-layer constraint. Alg. 1 (line 4)
//! splits a server's slots over its layers in proportion to their entropies v_{n,l}, so a
//! layer whose activations are one point mass (entropy 0) gets no slot, however heavy its one
//! expert: the optimum keeps that expert, Alg. 2 cannot.
//!
//! **Construction** (X an integer, 2 <= X <= 16384). L = 2 layers of E = X one-byte experts,
//! Top-1 (K = 1, so each row is a distribution). Server 0 ("starved"): one GPU of 1 byte
//! (M_0 / m_e = 1 slot), layer 0 uniform, f_0^0(e) = 1/X, layer 1 a point mass,
//! f_0^1 = (1, 0, ..., 0). Server 1 ("spread"): one GPU of 2X bytes (2X slots), both layers
//! uniform, f_1^l(e) = 1/X. A network and a workload as in family `small` (not used by the
//! check).
//!
//! **Alg. 1.** Entropies (bits): v_{0,0} = log2 X >= 1, v_{0,1} = 0, v_{1,0} = v_{1,1} =
//! log2 X. Line 4: N_{0,0} = floor(1 x log2 X / (log2 X + 0)) = 1 and N_{0,1} = floor(0) = 0;
//! N_{1,l} = floor(2X x 1/2) = X (both shares are exactly 1/2, and the 1e-9 of reading (d)
//! does not move a floor of an integer, nor of 0, by one). Lines 6-7: N_{0,total} = X + 1 and
//! N_{1,total} = X, neither below E, so Step 2 (lines 8-18) moves nothing: B_0 = 1, B_1 = 2X.
//!
//! **Alg. 2.** Lines 1-3: A_0^0 = the top 1 of a uniform row, expert 0 (ties to the lower
//! index), A_0^1 = {}; A_1^l = every expert of layer l. Every expert is held by server 1, so
//! U_l is empty (line 5) and the repair (lines 6-13) replaces nothing. U_0(A_0) = 1/X and
//! U_1(A_1) = 2.
//!
//! **Optimum.** U_n is modular with non-negative weights, so A_n^* is the B_n largest values
//! (the check also enumerates every subset when L E = 2X <= 16). Server 0: B_0 = 1 and its
//! largest value is the point mass, f_0^1(0) = 1 (the others are 1/X or 0): U_0(A_0^*) = 1.
//! Server 1: A_1 holds all 2X experts, U_1(A_1^*) = 2 = U_1(A_1).
//!
//! **Measure.** The check reports the server of least margin U_n(A_n) - (1 - 1/e) U_n(A_n^*):
//! server 0's, 1/X - (1 - 1/e) < 0 (X >= 2), against server 1's 2/e > 0. So ratio = (1/X) / 1
//! = 1/X, below 1 - 1/e = 0.632 for every X >= 2 and tending to 0: no constant factor. (With
//! S slots on server 0, S <= X, the same steps give S / (X + S - 1), still -> 0.)
//!
//! **Premises.** The model premises of Theorem 1 hold: one expert size (1 byte), every
//! server's layer entropies sum to at least 1 bit (`alg1-entropy-defined`: server 0's uniform
//! layer; a server whose rows were all point masses would leave the model), and 2X + 1 slots
//! cover the 2X experts (`coverage-feasible`). The instance is `model`, not `regime`: 2
//! layers, Top-1, one GPU on each server, 1 slot on server 0's, and server 1 holds a full
//! copy. (The repaired Theorem 1, `prism/thm1-repaired`, passes here: with N_{0,0} = 1,
//! N_{0,1} = 0 the best set is A_0 itself.)
//!
//! ## `lemma1-half-mass`: one expert with half the mass against Lemma 1
//!
//! Lemma 1 (Sec. III-C1) claims k_delta >= 2^(H(p) - delta log2 E) for every p over E experts
//! and delta in (0, 1), k_delta the fewest experts covering at least 1 - delta of the mass
//! (logs in bits, as the check reads them). The printed bound drops the binary-entropy term
//! h(delta) of the Fano-type argument (moe-opt's repair, `prism/lemma1-repaired`), which is
//! largest, 1 bit, at delta = 1/2: one expert holding half the mass, the other half spread
//! evenly.
//!
//! **Construction** (X an integer, 2 <= X <= 16384). One layer of E = X one-byte experts,
//! Top-1, one server with one GPU of X bytes, and its row p = (1/2, 1/(2(X-1)), ...,
//! 1/(2(X-1))) (X - 1 equal small shares; X = 2 gives (1/2, 1/2)). Network and workload as in
//! family `small` (not used by the check).
//!
//! **Entropy.** H = (1/2) log2 2 + (X - 1) (1/(2(X-1))) log2(2(X-1)) = 1 + (1/2) log2(X - 1).
//!
//! **The check's worst delta.** [`super::claims::lemma1_worst`] sorts the shares and, on the
//! step where the k heaviest experts are the fewest covering 1 - delta (1 - S_k <= delta <
//! 1 - S_{k-1}), takes the left end delta = 1 - S_k, where the falling bound is largest; it
//! ranks the steps by the slack log2 k - (H - delta log2 X) = log2(k / bound), i.e. by
//! value / bound. With k = j + 1 (the heavy expert and j small ones), delta_j = 1 - S_k =
//! 1/2 - j / (2(X-1)) for j = 0, ..., X - 1 (j = X - 1 is the last step, whose infimum
//! log2 X - H at delta -> 0 the check takes, the same expression at delta_{X-1} = 0), so
//! slack_j = log2(j + 1) - H + delta_j log2 X = slack_0 + g(j), with
//! g(j) = log2(j + 1) - j log2 X / (2(X-1)). g is concave on [0, X - 1], g(0) = 0 and
//! g(X-1) = (1/2) log2 X >= 1/2, and g(1) = 1 - log2 X / (2(X-1)) >= 1/2 (log2 X <= X - 1), so
//! g(j) >= 1/2 for every j >= 1: the worst delta is delta_0 = 1/2 with k = 1, every other step
//! at least half a bit above it. Rounding cannot move the pick: the shares 1/(2(X-1)) are
//! not all binary fractions and the check normalises the row by its floating sum, which moves
//! delta_0 = 1 - S_1 and H by about X ulps, far from that half bit. So the check reports
//! delta = 1/2 up to rounding, and its value / bound has a relative error of order X 1e-16
//! (6.5e-13 measured at X = 16384), within the tests' 1e-9.
//!
//! **Measure.** At delta = 1/2 one expert covers 1 - delta = 1/2 of the mass: value = k = 1,
//! bound = 2^(1 + (1/2) log2(X-1) - (1/2) log2 X) = 2 sqrt(1 - 1/X) > 1 for X >= 2. So
//! value / bound = 1 / (2 sqrt(1 - 1/X)), below the claimed 1 for every X >= 2 (X = 2:
//! 1/sqrt 2 = 0.707), falling with X and tending to 1/2. The repaired lemma,
//! k >= 2^(H - h(1/2) - (1/2) log2 X) = sqrt(1 - 1/X) at this delta, is tight in the limit:
//! it proves value / bound >= 2^(-h+(delta)) >= 1/2 for the printed bound on every instance,
//! so 1/2 is the lowest this measure can go, and this family attains it as X grows.
//!
//! **Premises.** No model premise bears on Lemma 1 (a statement about any distribution); the
//! instance also meets the pipeline's (one size, entropy H > 0, X slots for X experts). It is
//! `regime` for 4 <= X <= 128 (`experts-per-layer`, Lemma 1's only regime premise) and `model`
//! otherwise.

use formulations::prism::{Gpu, Instance, Server};
use formulations::Error;

use super::claims::small_shape;
use crate::generate::Made;
use crate::parametric::{integer_param, ParametricFamily};

/// Prism's families, in claim order.
pub fn families() -> Vec<ParametricFamily> {
    vec![THM1_ENTROPY_STARVED, LEMMA1_HALF_MASS]
}

/// The first family of the module doc.
pub const THM1_ENTROPY_STARVED: ParametricFamily = ParametricFamily {
    name: "thm1-entropy-starved",
    claim: "prism/thm1-greedy-ratio",
    about: "2 layers of X experts, Top-1; server 0 has 1 slot, a uniform layer 0 and a point \
            mass on layer 1; server 1 holds everything: Alg. 1 gives server 0's slot to \
            layer 0 (entropy log2 X against 0), the optimum keeps the point mass",
    param: "X: the experts per layer, an integer from 2 to 16384",
    measure: "ratio",
    closed_form: "1/X -> 0",
    limit: 0.0,
    claimed: 1.0 - 1.0 / std::f64::consts::E,
    params: &[2.0, 3.0, 4.0, 8.0, 16.0, 32.0],
    expected: |x| 1.0 / x,
    build: thm1_entropy_starved,
};

/// The second family of the module doc.
pub const LEMMA1_HALF_MASS: ParametricFamily = ParametricFamily {
    name: "lemma1-half-mass",
    claim: "prism/lemma1-entropy-coverage",
    about: "one layer of X experts with shares (1/2, 1/(2(X-1)), ..., 1/(2(X-1))): at \
            delta = 1/2 one expert covers 1 - delta, the bound is 2 sqrt(1 - 1/X)",
    param: "X: the experts of the layer, an integer from 2 to 16384",
    measure: "value/bound",
    closed_form: "1/(2 sqrt(1 - 1/X)) -> 1/2",
    limit: 0.5,
    claimed: 1.0,
    params: &[2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 256.0],
    expected: |x| 1.0 / (2.0 * (1.0 - 1.0 / x).sqrt()),
    build: lemma1_half_mass,
};

/// Largest X of both families: their files stay under 1 MB.
const MOST_X: u64 = 1 << 14;

/// A one-GPU server of `slots` one-byte experts with rows `frequencies` (family `small`'s
/// compute and I/O figures).
fn server(name: &str, slots: u64, frequencies: Vec<Vec<f64>>) -> Server {
    Server {
        name: name.into(),
        gpus: vec![Gpu {
            memory_bytes: slots,
            compute_base_s: 0.002,
            compute_per_token_s: 0.0001,
            io_bps: Some(8e9),
        }],
        frequencies,
    }
}

/// A Top-1 instance of `layers` layers of `experts` one-byte experts on `servers`, with
/// family `small`'s network and workload.
fn instance(name: String, layers: u32, experts: u32, servers: Vec<Server>) -> Instance {
    small_shape(name, "family", (layers, experts, 1), servers)
}

/// The instance of `thm1-entropy-starved` at X (module doc).
fn thm1_entropy_starved(x: f64) -> Result<Made, Error> {
    let x = integer_param(THM1_ENTROPY_STARVED.name, x, 2, MOST_X)?;
    let uniform = vec![1.0 / x as f64; x as usize];
    let point: Vec<f64> = (0..x).map(|e| f64::from(u8::from(e == 0))).collect();
    let servers = vec![
        server("starved", 1, vec![uniform.clone(), point]),
        server("spread", 2 * x, vec![uniform.clone(), uniform]),
    ];
    let instance = instance(
        format!("family-thm1-entropy-starved-{x}"),
        2,
        x as u32,
        servers,
    );
    Ok(Made::new(
        &instance,
        format!("2 layers of {x} experts, Top-1; server 0: 1 slot, uniform + point mass; server 1: {} slots", 2 * x),
    ))
}

/// The instance of `lemma1-half-mass` at X (module doc).
fn lemma1_half_mass(x: f64) -> Result<Made, Error> {
    let x = integer_param(LEMMA1_HALF_MASS.name, x, 2, MOST_X)?;
    let small = 1.0 / (2 * (x - 1)) as f64;
    let row: Vec<f64> = (0..x).map(|e| if e == 0 { 0.5 } else { small }).collect();
    let instance = instance(
        format!("family-lemma1-half-mass-{x}"),
        1,
        x as u32,
        vec![server("s0", x, vec![row])],
    );
    Ok(Made::new(
        &instance,
        format!(
            "1 layer of {x} experts, shares 1/2 and {} x 1/{}",
            x - 1,
            2 * (x - 1)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Certificate;
    use crate::parametric::checked_as_proved;

    #[test]
    fn thm1_entropy_starved_breaks_the_bound_as_proved() {
        for (x, check, _) in checked_as_proved(
            &THM1_ENTROPY_STARVED,
            &[Box::new(crate::prism::claims::table())],
        ) {
            assert_eq!(check.certificate, Some(Certificate::Optimum), "X = {x}");
        }
    }

    #[test]
    fn lemma1_half_mass_breaks_the_bound_as_proved() {
        // The check decides over every delta exactly; it compares with no optimum.
        for (x, check, _) in checked_as_proved(
            &LEMMA1_HALF_MASS,
            &[Box::new(crate::prism::claims::table())],
        ) {
            assert_eq!(check.certificate, None, "X = {x}");
        }
    }

    #[test]
    fn closed_forms_by_hand() {
        // X = 8: U(A) = 1/8 against the point mass 1.
        assert_eq!((THM1_ENTROPY_STARVED.expected)(8.0), 0.125);
        // X = 4: H = 1 + log2(3)/2, bound 2^(H - log2(4)/2) = 2 sqrt(3/4) = sqrt 3, k = 1:
        // 1/sqrt 3 = 0.5773502691896258.
        assert!(((LEMMA1_HALF_MASS.expected)(4.0) - 0.5773502691896258).abs() < 1e-15);
    }

    #[test]
    fn x_outside_the_domain_is_refused() {
        for family in families() {
            for x in [1.0, 2.5, 16385.0, f64::NAN, f64::INFINITY] {
                assert!(family.make(x).is_err(), "{} X = {x}", family.name);
            }
            assert!(family.make(16384.0).is_ok(), "{}", family.name);
        }
    }
}
