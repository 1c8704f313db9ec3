//! [`AgreedMap`] on the wire (`LearnerSpec.map`, message `AgreedMap`): the conversions both
//! ways. Decoding checks the shape — sizes within [`MAX_FEATURES`], k × p directions, a known
//! transform — so that a peer cannot make a node allocate or loop on a malformed map; whether
//! the map fits the node's schema and every constant is valid is decided by
//! [`AgreedMap::apply`] when the node builds the release (an invalid argument, before anything
//! is charged).

use crate::convert::{WireError, quote};
use crate::v1 as pb;
use dpagg_shared::data::agreed_map::{AgreedMap, FORMAT, FeatureMap, MAX_FEATURES};
use dpagg_shared::data::normalise::{Subspace, Transform};

fn transform_name(t: Transform) -> &'static str {
    match t {
        Transform::Identity => "identity",
        Transform::Log1p => "log1p",
    }
}

impl From<&AgreedMap> for pb::AgreedMap {
    fn from(m: &AgreedMap) -> Self {
        let (components, directions) = match &m.subspace {
            Some(s) => (
                s.components() as u32,
                s.directions.iter().flatten().copied().collect(),
            ),
            None => (0, Vec::new()),
        };
        Self {
            schema_fingerprint: m.schema.clone(),
            source: m.source.clone(),
            row_scale: m.row_scale,
            intercept_value: m.intercept_value,
            features: m
                .features
                .iter()
                .map(|f| pb::FeatureMap {
                    name: f.name.clone(),
                    transform: transform_name(f.transform).to_owned(),
                    unit: f.unit,
                    center: f.center,
                    scale: f.scale,
                })
                .collect(),
            components,
            directions,
        }
    }
}

impl TryFrom<pb::AgreedMap> for AgreedMap {
    type Error = WireError;

    fn try_from(m: pb::AgreedMap) -> Result<Self, WireError> {
        let p = m.features.len();
        if p == 0 || p > MAX_FEATURES {
            return Err(WireError::Invalid {
                field: "map.features",
                value: p.to_string(),
                requirement: "one per schema feature, at most 4096",
            });
        }
        let k = m.components as usize;
        if k > p || m.directions.len() != k * p {
            return Err(WireError::Invalid {
                field: "map.directions",
                value: format!("{} values for {k} components", m.directions.len()),
                requirement: "components × features values, at most one component per feature",
            });
        }
        let features = m
            .features
            .into_iter()
            .map(|f| {
                let transform = match f.transform.as_str() {
                    "identity" | "" => Transform::Identity,
                    "log1p" => Transform::Log1p,
                    other => return Err(WireError::UnknownTransform(quote(other))),
                };
                Ok(FeatureMap {
                    name: f.name,
                    transform,
                    unit: f.unit,
                    center: f.center,
                    scale: f.scale,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let subspace = (k > 0).then(|| Subspace {
            directions: m.directions.chunks_exact(p).map(<[f64]>::to_vec).collect(),
        });
        Ok(AgreedMap {
            format: FORMAT.to_owned(),
            schema: m.schema_fingerprint,
            source: m.source,
            row_scale: m.row_scale,
            intercept_value: m.intercept_value,
            features,
            subspace,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(k: usize) -> AgreedMap {
        AgreedMap {
            format: FORMAT.to_owned(),
            schema: "ab".repeat(32),
            source: "own rows".into(),
            row_scale: 0.7,
            intercept_value: 0.2,
            features: (0..3)
                .map(|j| FeatureMap {
                    name: format!("f{j}"),
                    transform: if j == 1 {
                        Transform::Log1p
                    } else {
                        Transform::Identity
                    },
                    unit: (j == 1).then_some(2.0),
                    center: j as f64,
                    scale: 1.0 + j as f64,
                })
                .collect(),
            subspace: (k > 0).then(|| Subspace {
                directions: (0..k).map(|i| vec![i as f64, -0.0, 1.5]).collect(),
            }),
        }
    }

    #[test]
    fn a_map_survives_the_wire() {
        for k in [0, 1, 3] {
            let m = map(k);
            let back = AgreedMap::try_from(pb::AgreedMap::from(&m)).expect("valid");
            assert_eq!(back, m, "{k}");
        }
    }

    #[test]
    fn malformed_maps_are_refused_by_shape() {
        let mut wire = pb::AgreedMap::from(&map(2));
        wire.directions.pop();
        let e = AgreedMap::try_from(wire).expect_err("short");
        assert!(e.to_string().contains("map.directions"), "{e}");
        let mut wire = pb::AgreedMap::from(&map(0));
        wire.components = 4;
        assert!(AgreedMap::try_from(wire).is_err());
        let mut wire = pb::AgreedMap::from(&map(0));
        wire.features[0].transform = "sqrt".into();
        let e = AgreedMap::try_from(wire).expect_err("transform");
        assert!(e.to_string().contains("sqrt"), "{e}");
        let wire = pb::AgreedMap {
            features: Vec::new(),
            ..pb::AgreedMap::from(&map(0))
        };
        assert!(AgreedMap::try_from(wire).is_err());
    }
}
