//! `dpagg-aggregator map`: the agreed map from the aggregator's own training rows, written to
//! the file the run configuration names (`map = "agreed-map.toml"`), for the nodes to publish
//! with (`dpagg-node publish --map`) and the run to ask for.
//!
//! The aggregator chooses how its rows reach the nodes: `--in-the-clear` sends the map's
//! constants as computed (the means, spreads and, through the subspace's directions, how the
//! labels of its *map rows* relate to the features: statistics of its own records, which every
//! node then sees), or `--epsilon ε --delta δ` releases them differentially privately — the
//! per-class moments of the map rows by the Gaussian mechanism
//! ([`dpagg_shared::privacy::statistics::moments`], noise from the secure generator), from which
//! the map is post-processed. Either way the nodes' guarantees are unaffected: a map is a public,
//! per-record function fixed before they read a row (`docs/proofs/agreed-map.md`).

use crate::config::MapConfig;
use crate::protocol::own_data_records;
use anyhow::{Context, Result, bail};
use dpagg_shared::cli::Out;
use dpagg_shared::data::agreed_map::own::map_rows;
use dpagg_shared::data::agreed_map::{AgreedMap, Components, Summaries, derive, from_own_rows};
use dpagg_shared::data::schema::{FeatureSpec, Schema};
use dpagg_shared::privacy::noise::NoiseSource;
use dpagg_shared::privacy::statistics::moments::{MomentNoise, MomentsParams, MomentsPlan};
use dpagg_shared::util::files::atomic_write;
use std::io::Write;

/// How the map's statistics of the own rows are released to the nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Release {
    /// As computed.
    Clear,
    /// (ε, δ)-DP per-class moments of the map rows.
    Private {
        /// ε.
        epsilon: f64,
        /// δ.
        delta: f64,
    },
}

/// The (ε, δ)-DP moments of `records` (raw values, NaN where missing) under `schema`'s
/// transforms — each value clipped to [lo, hi] and transformed, a missing one at the middle of
/// its transformed bounds — as summaries, with noise from `noise`.
pub fn private_summaries(
    schema: &Schema,
    records: &[Vec<f64>],
    positive: &[bool],
    (epsilon, delta): (f64, f64),
    noise: &mut NoiseSource,
) -> Result<Summaries> {
    let features: Vec<FeatureSpec> = schema
        .features
        .iter()
        .map(|f| FeatureSpec::bounded(f.name.clone(), f.transform(f.lo), f.transform(f.hi)))
        .collect();
    let values: Vec<Vec<f64>> = records
        .iter()
        .map(|row| {
            schema
                .features
                .iter()
                .zip(row)
                .zip(&features)
                .map(|((f, &v), t)| {
                    if v.is_nan() || f.is_missing(v) {
                        t.lo / 2.0 + t.hi / 2.0
                    } else {
                        f.transform(v.clamp(f.lo, f.hi))
                    }
                })
                .collect()
        })
        .collect();
    let plan = MomentsPlan::new(
        &features,
        MomentsParams {
            noise: MomentNoise::Gaussian,
            epsilon,
            delta,
            max_rows: values.len().max(1),
        },
    )?;
    Ok(plan.release(&values, positive, noise)?.summaries())
}

/// The map of `config`'s own training rows with `components`, released as `release`.
pub fn make(config: &MapConfig, components: Option<usize>, release: Release) -> Result<AgreedMap> {
    let (schema, train) = own_data_records(&config.own)?;
    let p = schema.features.len();
    let components = match components {
        None => Components::auto(p),
        Some(0) => Components::All,
        Some(k) if k <= p => Components::Subspace(k),
        Some(k) => bail!("--components {k}: the schema has {p} features (choose 0 to {p})"),
    };
    match release {
        Release::Clear => Ok(from_own_rows(
            &schema,
            &train.rows,
            &train.positive,
            components,
            config.own.seed,
        )?
        .map),
        Release::Private { epsilon, delta } => {
            let marks = map_rows(&train.positive, config.own.seed);
            let chosen: Vec<usize> = (0..marks.len()).filter(|&i| marks[i]).collect();
            let rows = train.subset(&chosen);
            let mut noise = NoiseSource::secure().context("no secure noise")?;
            let summaries = private_summaries(
                &schema,
                &rows.rows,
                &rows.positive,
                (epsilon, delta),
                &mut noise,
            )?;
            let source = format!(
                "(ε = {epsilon}, δ = {delta})-DP moments of {} of the aggregator's own training \
                 rows (Gaussian mechanism, replace-one)",
                rows.rows.len()
            );
            Ok(derive(&schema, &summaries, components, &source)?)
        }
    }
}

/// `dpagg-aggregator map`: makes the map and writes it where `config.map` says.
pub fn write(
    config: &MapConfig,
    components: Option<usize>,
    release: Release,
    out: &mut Out,
) -> Result<()> {
    let path = &config.map;
    let map = make(config, components, release)?;
    atomic_write(path, map.to_toml().as_bytes())
        .with_context(|| format!("{}: cannot write", path.display()))?;
    let shape = map.components().map_or_else(
        || format!("centres and scales of {} features", map.features.len()),
        |k| format!("{k} directions over {} features", map.features.len()),
    );
    writeln!(out, "wrote the agreed map to {} ({shape})", path.display())?;
    writeln!(out, "from {}", map.source)?;
    if release == Release::Clear {
        writeln!(
            out,
            "in the clear: every node sees these statistics of your rows; send the file to them \
             with the schema (dpagg-node publish --map {})",
            path.display()
        )?;
    }
    Ok(())
}
