//! A test-only data kind that shows what adding a data kind takes: this file and one line in the
//! registry (`data_kinds!` in [`super`]), nothing else. It releases, per feature, the point
//! lo + `position`·(hi − lo) of the schema's public bounds whatever the data: a release
//! independent of the records is ε-DP for every ε (the output distributions on neighbouring
//! datasets are equal), so it states the ε it was asked for.

use super::{
    DataInput, DataKind, DataMechanism, DataPayload, DataPlan, DataReleaseError, DataSpec,
    OptionSpec, OptionType, Public, Registration,
};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;

/// Its name.
pub const NAME: &str = "example-bounds";

/// The registry's entry.
pub(super) const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    reference: "a data-independent release (tests only)",
    options: &[OptionSpec {
        name: "position",
        default: 0.5,
        range: OptionType::Real {
            low: 0.0,
            low_closed: true,
            high: 1.0,
            high_closed: true,
        },
        help: "where in each feature's [lo, hi] the released point lies",
    }],
    pure: true,
    computes_epsilon: false,
    proven: true,
    doc: None,
    mechanism: &Bounds,
}];

/// The behaviour.
struct Bounds;

/// The planned release: the points, known from the schema alone.
#[derive(Debug)]
struct Points {
    values: Vec<f64>,
    epsilon: f64,
}

impl DataMechanism for Bounds {
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError> {
        let t = spec.option("position");
        let values = public
            .features
            .iter()
            .map(|f| f.lo + t * (f.hi - f.lo))
            .collect();
        Ok(Box::new(Points {
            values,
            epsilon: spec.epsilon,
        }))
    }
}

impl DataPlan for Points {
    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, 0.0)
    }

    fn sample(
        &self,
        _kind: DataKind,
        _input: &DataInput<'_>,
        _rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        Ok(DataPayload::Medians(self.values.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::FeatureSpec;

    #[test]
    fn a_registered_kind_is_parsed_checked_and_planned_like_the_others() {
        let kind = DataKind::parse(NAME).expect("registered by its one line");
        assert!(DataKind::names().contains(&NAME));
        assert!(DataKind::all().any(|k| k == kind) && kind.is_proven());
        let mut spec = DataSpec::new(kind, 1.0, 0.0);
        assert_eq!(spec.parameters()["position"], 0.5, "the declared default");
        spec.options.insert("position".into(), 1.0);
        assert!(spec.check().is_ok());
        let features = [FeatureSpec::bounded("age", 20.0, 80.0)];
        let planned = super::super::plan(&spec, &features, 10, 2).expect("planned");
        assert_eq!(planned.guarantee(), PrivacyGuarantee::replace_one(1.0, 0.0));
        // Out of its declared range: a one-line refusal naming the option, before any data.
        spec.options.insert("position".into(), 1.5);
        let e = spec.check().expect_err("out of range");
        assert_eq!(
            e.to_string(),
            "`example-bounds`: option `position` = 1.5 must be in [0, 1]"
        );
        assert!(e.is_data_independent());
        spec.options.insert("bins".into(), 3.0);
        let e = spec.check().expect_err("unknown");
        assert!(e.to_string().contains("takes no option `bins`"), "{e}");
        assert!(!super::super::docs_table().contains(NAME), "not documented");
    }
}
