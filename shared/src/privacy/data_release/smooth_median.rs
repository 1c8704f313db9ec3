//! `smooth-median`: per-feature medians by smooth sensitivity, the d features composed by basic
//! composition ([`crate::privacy::statistics::smooth_median`]).

use super::{DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, Public, Registration};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::smooth_median::{self, SmoothMedianParams};

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "smooth-median",
        reference: "Median with smooth sensitivity, beta = eps/(2 ln(2/delta)), Lap(2S*/eps) as exact discrete Laplace noise on a public grid (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides 24-27; Nissim, Raskhodnikova & Smith 2007; Canonne, Kamath & Steinke 2020)",
        options: &[],
        pure: false,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "per feature, the median",
            guarantee: "(ε, δ)-DP, smooth sensitivity (Kashima's notes, slides 24–27; Nissim, Raskhodnikova & Smith 2007)",
            options_note: "",
        }),
        mechanism: &SmoothMedian,
    },
];

struct SmoothMedian;

/// One median's parameters per feature, and the guarantee of all of them.
#[derive(Debug)]
struct Medians {
    params: Vec<SmoothMedianParams>,
    guarantee: PrivacyGuarantee,
}

impl DataMechanism for SmoothMedian {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        if public.features.is_empty() {
            return Err(DataReleaseError::InvalidSpec(
                "the schema has no features".into(),
            ));
        }
        // Basic composition over the d features (Kashima's notes on Aggarwal & Yu 2008, ch. 16,
        // Lemma 16.7).
        let d = public.features.len() as f64;
        let params: Vec<SmoothMedianParams> = public
            .features
            .iter()
            .map(|f| SmoothMedianParams {
                epsilon: spec.epsilon / d,
                delta: spec.delta / d,
                lo: f.lo,
                hi: f.hi,
            })
            .collect();
        // Refused here, from public quantities, so the refusal is never charged.
        for p in &params {
            p.check()
                .map_err(|e| DataReleaseError::InvalidSpec(e.to_string()))?;
        }
        Ok(Box::new(Medians {
            params,
            guarantee: PrivacyGuarantee::replace_one(spec.epsilon, spec.delta),
        }))
    }
}

impl DataPlan for Medians {
    fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let mut values = Vec::with_capacity(self.params.len());
        for (j, p) in self.params.iter().enumerate() {
            let column: Vec<f64> = input
                .raw
                .iter()
                .map(|r| r.get(j).copied().unwrap_or(f64::NAN))
                .collect();
            let m = smooth_median::release(&column, p, rng)
                .map_err(|e| DataReleaseError::failed(kind, "a median could not be computed", e))?;
            values.push(m.clamped(p));
        }
        Ok(DataPayload::Medians(values))
    }
}
