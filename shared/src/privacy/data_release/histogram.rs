//! `histogram`: per-feature, per-class counts over public bins by snapped Laplace
//! ([`crate::privacy::statistics::histogram`]).

use super::{DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, FeatureHistogram, OptionSpec, OptionType, Public, Registration};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::histogram::{HistogramParams, HistogramPlan};

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "histogram",
        reference: "Laplace mechanism on histograms, GS_hist = 2 per histogram (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18), snapped (Mironov 2012 Thm 1)",
        options: &[OptionSpec {
        name: "bins",
        default: 10.0,
        range: OptionType::Whole { low: 1, high: 1000 },
        help: "equal-width public bins of each feature's [lo, hi]",
    }],
        pure: true,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "per feature and class, counts over `bins` public bins of [lo, hi]",
            guarantee: "ε-DP, snapped Laplace",
            options_note: "",
        }),
        mechanism: &Histogram,
    },
];

struct Histogram;

impl DataMechanism for Histogram {
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
