//! `mvn-synthetic`: Miura et al.'s (2022) MVN synthetic rows with no added noise, after a
//! propose-test-release of the eigenvalue assumption
//! ([`crate::privacy::synthetic::mvn_release::MvnPlain`]). Also the helpers both MVN kinds
//! share: the `rows` option and the rows as points of the unit cube.
//!
//! **Unproven as run (floating point).** Here the rows *are* the mechanism: Theorem 3.2 bounds
//! the Rényi divergence between N(μ, Σ) and N(μ′, Σ′) for exact real samples, but the rows are
//! computed in f64 as μ + Lz from f64 normal draws z. The set of f64 values μ + Lz can take
//! depends on μ and L themselves (their low bits and the rounding of each product and sum), so
//! an output can be impossible under one dataset and possible under its neighbour — the leak
//! Mironov (2012) showed for f64 Laplace noise, with no noise added afterwards to mask it. A
//! coupling proof (round the rows to a public grid of width Λ; bound the chance that an exact
//! sample lies within the f64 error η of a cell boundary) would need a bound η on how far the
//! f64 normal sampler's draws are from exact ones, which the ziggurat sampler does not come
//! with; and even with η near f64's precision (≈ 10⁻¹⁴ here) the extra δ, about
//! m·(d + 1)·2η/Λ, is of the order of the δ a node is asked for unless Λ is coarse (1,000 rows
//! of 11 columns on a 10⁻⁴ grid: ≈ 2·10⁻⁶). No proof is written for the sampler as run, so
//! the kind is **unproven**
//! ([`super::Registration::proven`]): nodes and aggregators refuse it unless `allow_unproven`.
//! `mvn-synthetic-gaussian` is the release to use: its rows are post-processing of moments
//! perturbed by exact discrete Gaussian noise, so their f64 sampling leaks nothing more.

use super::{DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, MAX_SYNTHETIC_VALUES, OptionSpec, OptionType, Public, Registration};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::synthetic::mvn_release::{MvnPlain, MvnPlainParams, to_unit_cube};

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "mvn-synthetic",
        reference: "MVN synthetic data without added noise, Theorem 3.2 with Prop. 2.4 (Miura et al. 2022), after propose-test-release of the eigenvalue assumption (Dwork & Lei 2009)",
        options: &[
        ROWS,
        OptionSpec {
            name: "sigma",
            default: 0.01,
            range: OptionType::open_closed(0.0, 1.0),
            help: "the public lower bound on the covariance's smallest eigenvalue, tested privately first",
        },
        OptionSpec {
            name: "test_epsilon",
            default: 0.1,
            range: OptionType::POSITIVE,
            help: "ε of that test (propose-test-release)",
        },
    ],
        pure: false,
        computes_epsilon: true,
        proven: false,
        doc: Some(DocRow {
            what: "`rows` rows from N(μ, Σ) of the rows in [−1, 1]^(d+1), no noise (Miura et al. 2022)",
            guarantee: "Theorem 3.2 over the rows, after a private test of λ_min(Σ) ≥ `sigma`; **unproven as run** (the f64 rows are the mechanism): refused unless `allow_unproven`",
            options_note: "",
        }),
        mechanism: &MvnSynthetic,
    },
];

struct MvnSynthetic;

impl DataMechanism for MvnSynthetic {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let rows = synthetic_rows(spec, public.features.len())?;
        let m = MvnPlain::new(
            public.n,
            public.features.len(),
            MvnPlainParams {
                rows,
                sigma: spec.option("sigma"),
                delta: spec.delta,
                test_epsilon: spec.option("test_epsilon"),
            },
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(m))
    }
}

impl DataPlan for MvnPlain {
    fn guarantee(&self) -> PrivacyGuarantee {
        MvnPlain::guarantee(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let points = mvn_points(kind, input)?;
        let rows = self.release(&points, rng).map_err(|e| {
            DataReleaseError::failed(
                kind,
                "the private test of the covariance's eigenvalue assumption did not pass, or sampling failed",
                e,
            )
        })?;
        Ok(DataPayload::Synthetic {
            dim: rows.dim,
            rows: rows.rows,
            values: rows.values,
        })
    }
}

/// The `rows` option both MVN kinds take.
pub(super) const ROWS: OptionSpec = OptionSpec {
    name: "rows",
    default: 1000.0,
    range: OptionType::Count,
    help: "synthetic rows to draw (at most 2,000,000 values in all)",
};

/// The `rows` option, within the per-release size limit.
pub(super) fn synthetic_rows(spec: &DataSpec, features: usize) -> Result<usize, DataReleaseError> {
    let most = MAX_SYNTHETIC_VALUES / (features + 1);
    spec.count("rows", 1, most)
}

/// The rows as points of [−1, 1]^(d+1) (Miura et al.'s (2022) domain; the label last).
pub(super) fn mvn_points(
    kind: DataKind,
    input: &DataInput<'_>,
) -> Result<Vec<Vec<f64>>, DataReleaseError> {
    to_unit_cube(input.features, input.raw, input.positive).map_err(|e| {
        DataReleaseError::failed(kind, "the rows could not be mapped to the unit cube", e)
    })
}
