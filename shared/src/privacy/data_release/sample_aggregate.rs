//! `sample-and-aggregate`: logistic-regression coefficients by sample-and-aggregate with a
//! smooth-sensitivity median per coordinate ([`crate::privacy::statistics::sample_aggregate`]).

use super::{DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec, DocRow, OptionSpec, OptionType, Public, Registration};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::sample_aggregate::{SampleAggregate, SampleAggregateParams};

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[
    Registration {
        name: "sample-and-aggregate",
        reference: "Sample-and-aggregate of a logistic-regression fit, smooth-sensitivity median per coordinate (Kashima's notes on Aggarwal & Yu 2008, ch. 16, last slides; NRS 2007 sec. 4)",
        options: &[
        OptionSpec {
            name: "blocks",
            default: 0.0,
            range: OptionType::Whole {
                low: 0,
                high: 10_000_000,
            },
            help: "disjoint random blocks (0: ⌊n/2⌋ blocks of two rows)",
        },
        OptionSpec {
            name: "l2",
            default: 0.01,
            range: OptionType::POSITIVE,
            help: "the L2 regulariser of each block's fit",
        },
        OptionSpec {
            name: "bound",
            default: 0.0,
            range: OptionType::NON_NEGATIVE,
            help: "each fit is clipped to [−bound, bound] (0: 1/l2, which bounds every fit's norm for rows in the unit ball, so the clipping never binds)",
        },
    ],
        pure: false,
        computes_epsilon: false,
        proven: true,
        doc: Some(DocRow {
            what: "logistic-regression coefficients from `blocks` disjoint blocks",
            guarantee: "(ε, δ)-DP, smooth-sensitivity median per coordinate",
            options_note: "(`blocks` 0: ⌊n/2⌋ blocks of two rows; `bound` 0: 1/`l2`)",
        }),
        mechanism: &SampleAggregateKind,
    },
];

struct SampleAggregateKind;

impl DataMechanism for SampleAggregateKind {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let blocks = match spec.count("blocks", 0, 10_000_000)? {
            0 => public.rows / 2,
            k => k,
        };
        let l2 = spec.option("l2");
        let bound = match spec.option("bound") {
            0.0 if l2 > 0.0 => 1.0 / l2,
            b => b,
        };
        if blocks < 3 || public.n < blocks as u64 {
            return Err(DataReleaseError::InvalidSpec(format!(
                "sample-and-aggregate needs at least 3 blocks and a row per block: `blocks` = {blocks}, and this node has {} rows",
                public.n
            )));
        }
        let s = SampleAggregate::new(
            SampleAggregateParams {
                epsilon: spec.epsilon,
                delta: spec.delta,
                blocks,
                l2,
                bound,
            },
            public.dim,
        )
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?;
        Ok(Box::new(s))
    }
}

impl DataPlan for SampleAggregate {
    fn guarantee(&self) -> PrivacyGuarantee {
        SampleAggregate::guarantee(self)
    }

    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let r = self
            .release(input.dataset, rng)
            .map_err(|e| DataReleaseError::failed(kind, "sample-and-aggregate failed", e))?;
        Ok(DataPayload::Coefficients {
            weights: r.coefficients,
            blocks: r.blocks,
            block_size: r.block_size,
        })
    }
}
