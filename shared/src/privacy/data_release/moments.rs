//! `moments-laplace` and `moments-gaussian`: per-class count, sums, means, variances and
//! covariance by snapped Laplace or by the Gaussian mechanism on a public grid
//! ([`crate::privacy::statistics::moments`]).

use super::{ClassStatistics, DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, Public, Registration};
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::moments::{MomentNoise, MomentsParams, MomentsPlan};

/// The registry's entries: `moments-laplace`, `moments-gaussian`.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "moments-laplace",
        reference: "Laplace mechanism on (n_k, sum u, sum triu(uu^T)) with l1 global sensitivity (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides 15-18), snapped (Mironov 2012 Thm 1)",
        options: &[],
        pure: true,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "per class: count, sum, mean, variance, covariance matrix",
            guarantee: "ε-DP, snapped Laplace",
            options_note: "",
        }),
        mechanism: &Moments(MomentNoise::Laplace),
    },
    Registration {
        name: "moments-gaussian",
        reference: "Gaussian mechanism on (n_k, sum u, sum triu(uu^T)) with l2 global sensitivity, RDP (Mironov 2017 Prop 7), as exact discrete Gaussian noise on a public grid (Canonne, Kamath & Steinke 2020)",
        options: &[],
        pure: false,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "the same",
            guarantee: "(ε, δ)-DP, Gaussian mechanism, RDP curve",
            options_note: "",
        }),
        mechanism: &Moments(MomentNoise::Gaussian),
    },
];

struct Moments(MomentNoise);

impl DataMechanism for Moments {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let p = MomentsPlan::new(
            public.features,
            MomentsParams {
                noise: self.0,
                epsilon: spec.epsilon,
                delta: spec.delta,
                max_rows: public.rows,
            },
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(p))
    }
}

impl DataPlan for MomentsPlan {
    fn guarantee(&self) -> PrivacyGuarantee {
        MomentsPlan::guarantee(self)
    }

    fn rdp(&self) -> Option<RdpCurve> {
        MomentsPlan::rdp(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let m = self.release(input.raw, input.positive, rng).map_err(|e| {
            DataReleaseError::failed(kind, "the statistics could not be computed", e)
        })?;
        let [negative, positive] = m.classes;
        Ok(DataPayload::Moments(vec![
            ClassStatistics {
                label: -1.0,
                moments: negative,
            },
            ClassStatistics {
                label: 1.0,
                moments: positive,
            },
        ]))
    }
}
