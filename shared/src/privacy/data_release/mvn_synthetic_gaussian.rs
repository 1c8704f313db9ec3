//! `mvn-synthetic-gaussian`: MVN synthetic rows sampled from a mean and second moment perturbed
//! by the Gaussian mechanism on public grids
//! ([`crate::privacy::synthetic::mvn_release::MvnGaussian`]).

use super::mvn_synthetic::{mvn_points, synthetic_rows};
use super::{
    DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, Public,
};
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::synthetic::mvn_release::{MvnGaussian, MvnGaussianParams};

/// The kind.
pub(super) const KIND: DataKind = DataKind(&MvnSyntheticGaussian);

struct MvnSyntheticGaussian;

impl DataMechanism for MvnSyntheticGaussian {
    fn name(&self) -> &'static str {
        "mvn-synthetic-gaussian"
    }

    fn reference(&self) -> &'static str {
        "MVN synthetic data from a mean and second moment perturbed by the Gaussian mechanism (RDP, Mironov 2017 Prop 7) as exact discrete Gaussian noise on a public grid (Canonne, Kamath & Steinke 2020); sampling is post-processing"
    }

    fn options(&self) -> &'static [(&'static str, f64)] {
        &[("rows", 1000.0), ("eigen_floor", 1e-3)]
    }

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
