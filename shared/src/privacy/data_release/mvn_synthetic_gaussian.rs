//! `mvn-synthetic-gaussian`: MVN synthetic rows sampled from a mean and second moment perturbed
//! by the Gaussian mechanism on public grids
//! ([`crate::privacy::synthetic::mvn_release::MvnGaussian`]).

use super::mvn_synthetic::{ROWS, mvn_points, synthetic_rows};
use super::{DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, OptionSpec, OptionType, Public, Registration};
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::synthetic::mvn_release::{MvnGaussian, MvnGaussianParams};

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "mvn-synthetic-gaussian",
        reference: "MVN synthetic data from a mean and second moment perturbed by the Gaussian mechanism (RDP, Mironov 2017 Prop 7) as exact discrete Gaussian noise on a public grid (Canonne, Kamath & Steinke 2020); sampling is post-processing",
        options: &[
        ROWS,
        OptionSpec {
            name: "eigen_floor",
            default: 1e-3,
            range: OptionType::open_closed(0.0, 1.0),
            help: "the floor of the noisy covariance's eigenvalues",
        },
    ],
        pure: false,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "`rows` rows from the normal with a Gaussian-perturbed mean and second moment",
            guarantee: "(ε, δ)-DP, RDP curve",
            options_note: "",
        }),
        mechanism: &MvnSyntheticGaussian,
    },
];

struct MvnSyntheticGaussian;

impl DataMechanism for MvnSyntheticGaussian {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let rows = synthetic_rows(spec, public.features.len())?;
        let m = MvnGaussian::new(
            public.n,
            public.features.len(),
            MvnGaussianParams {
                rows,
                epsilon: spec.epsilon,
                delta: spec.delta,
                eigen_floor: spec.option("eigen_floor"),
            },
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(m))
    }
}

impl DataPlan for MvnGaussian {
    fn guarantee(&self) -> PrivacyGuarantee {
        MvnGaussian::guarantee(self)
    }

    fn rdp(&self) -> Option<RdpCurve> {
        MvnGaussian::rdp(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let points = mvn_points(kind, input)?;
        let rows = self
            .release(&points, rng)
            .map_err(|e| DataReleaseError::failed(kind, "sampling failed", e))?;
        Ok(DataPayload::Synthetic {
            dim: rows.dim,
            rows: rows.rows,
            values: rows.values,
        })
    }
}
