//! `histogram`: per-feature, per-class counts over public bins by snapped Laplace
//! ([`crate::privacy::statistics::histogram`]).

use super::{
    DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec,
    FeatureHistogram, Public,
};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::histogram::{HistogramParams, HistogramPlan};

/// The kind.
pub(super) const KIND: DataKind = DataKind(&Histogram);

struct Histogram;

impl DataMechanism for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn reference(&self) -> &'static str {
        "Laplace mechanism on histograms, GS_hist = 2 per histogram (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18), snapped (Mironov 2012 Thm 1)"
    }

    fn options(&self) -> &'static [(&'static str, f64)] {
        &[("bins", 10.0)]
    }

    fn pure(&self) -> bool {
        true
    }

    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let bins = spec.count("bins", 1, 1000)?;
        let p = HistogramPlan::new(
            public.features,
            HistogramParams {
                epsilon: spec.epsilon,
                bins,
                max_rows: public.rows,
            },
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(p))
    }
}

impl DataPlan for HistogramPlan {
    fn guarantee(&self) -> PrivacyGuarantee {
        HistogramPlan::guarantee(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let h = self.release(input.raw, input.positive, rng).map_err(|e| {
            DataReleaseError::failed(kind, "the histograms could not be computed", e)
        })?;
        Ok(DataPayload::Histograms(
            h.edges
                .iter()
                .zip(&h.counts)
                .map(|(edges, [neg, pos])| FeatureHistogram {
                    edges: edges.clone(),
                    negative: neg.clone(),
                    positive: pos.clone(),
                })
                .collect(),
        ))
    }
}
