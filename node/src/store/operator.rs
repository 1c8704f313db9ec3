//! The operator's publishes (`dpagg-node publish`, `publish-data`): made by a process beside
//! `serve`, recorded in the same database so that the serving node's metrics count them
//! ([`Store::operator_publishes`]) and the audit trail names who made them.

use super::{Store, StoreError};

/// One publish by the node's operator, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorPublish {
    /// The OS user who ran the command.
    pub operator: String,
    /// `learner` or `data`.
    pub kind: &'static str,
    /// `published`, `existing`, or the reason of a refusal or failure (the metrics' outcome).
    pub outcome: &'static str,
    /// The release, when there is one.
    pub release_id: Option<String>,
    /// The (ε, δ) asked for.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// How long the publish took (training included), in seconds.
    pub seconds: f64,
}

/// The operator's publishes of one kind and outcome, all time.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorCount {
    /// `learner` or `data`.
    pub kind: String,
    /// The outcome.
    pub outcome: String,
    /// How many.
    pub count: u64,
    /// Their total time, in seconds.
    pub seconds: f64,
}

impl Store {
    /// Records an operator's publish (after it returned, whatever its outcome).
    pub fn record_operator_publish(&self, p: &OperatorPublish) -> Result<(), StoreError> {
        self.writer()
            .execute(
                "INSERT INTO operator_publishes \
                 (unix_ms, operator, kind, outcome, release_id, epsilon, delta, seconds) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                rusqlite::params![
                    dpagg_shared::util::time::now_ms(),
                    p.operator,
                    p.kind,
                    p.outcome,
                    p.release_id,
                    p.epsilon,
                    p.delta,
                    p.seconds
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The operator's publishes by kind and outcome, all time.
    pub fn operator_publishes(&self) -> Result<Vec<OperatorCount>, StoreError> {
        let conn = self.reader();
        let mut statement = conn
            .prepare(
                "SELECT kind, outcome, COUNT(*), TOTAL(seconds) FROM operator_publishes \
                 GROUP BY kind, outcome ORDER BY kind, outcome",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([], |r| {
                Ok(OperatorCount {
                    kind: r.get(0)?,
                    outcome: r.get(1)?,
                    count: r.get::<_, i64>(2)?.max(0) as u64,
                    seconds: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The operator's publishes by kind, counted at or under each of `bounds` seconds and in
    /// all (the last count): coarse buckets, never their times (`metrics.rs`).
    pub fn operator_durations(
        &self,
        bounds: &[f64],
    ) -> Result<Vec<(String, Vec<u64>)>, StoreError> {
        let conn = self.reader();
        let mut statement = conn
            .prepare("SELECT kind, seconds FROM operator_publishes")
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut out: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
        for row in rows {
            let (kind, seconds) = row.map_err(|e| self.err(e))?;
            let counts = out.entry(kind).or_insert_with(|| vec![0; bounds.len() + 1]);
            for (count, bound) in counts.iter_mut().zip(bounds.iter().chain([&f64::INFINITY])) {
                if seconds <= *bound {
                    *count += 1;
                }
            }
        }
        Ok(out.into_iter().collect())
    }
}
