//! `laplace-statistics`: per-class counts, sums and means of raw values by the Laplace mechanism
//! with global sensitivity, snapped ([`crate::privacy::statistics::class_sums`]).

use super::{ClassStatistics, DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, Public, Registration};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::class_sums::{Class, ClassSumsParams, ClassSumsPlan};
use crate::privacy::statistics::moments::ClassMoments;

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "laplace-statistics",
        reference: "Laplace mechanism with global sensitivity (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides 15-19; Dwork et al. 2006), snapped (Mironov 2012 Thm 1)",
        options: &[],
        pure: true,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "per class: count, per-feature sums and means",
            guarantee: "ε-DP, snapped Laplace (Kashima's notes, slides 15–19)",
            options_note: "",
        }),
        mechanism: &LaplaceStatistics,
    },
];

struct LaplaceStatistics;

impl DataMechanism for LaplaceStatistics {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let p = ClassSumsPlan::new(
            public.features,
            ClassSumsParams {
                epsilon: spec.epsilon,
                relation: NeighbourRelation::ReplaceOne,
                max_rows: public.rows,
            },
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(p))
    }
}

impl DataPlan for ClassSumsPlan {
    fn guarantee(&self) -> PrivacyGuarantee {
        ClassSumsPlan::guarantee(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let s = self.release(input.raw, input.positive, rng).map_err(|e| {
            DataReleaseError::failed(kind, "the statistics could not be computed", e)
        })?;
        let d = s.dim();
        let class = |c: Class, label: f64| ClassStatistics {
            label,
            moments: ClassMoments {
                count: s.count(c),
                sum: (0..d).filter_map(|j| s.sum(c, j)).collect(),
                mean: (0..d).filter_map(|j| s.mean(c, j)).collect(),
                variance: Vec::new(),
                covariance: Vec::new(),
            },
        };
        Ok(DataPayload::Moments(vec![
            class(Class::Negative, -1.0),
            class(Class::Positive, 1.0),
        ]))
    }
}
