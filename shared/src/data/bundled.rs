//! The two public datasets shipped with dpagg, compiled into the binary.
//!
//! Both CSV files and their hand-written schemas live in the repository's `data/` folder (see
//! `data/README.md` for origin, licence and where the schema bounds come from) and are embedded
//! with `include_str!`, so nothing is read from disk at run time. The tests of this module load
//! both, which is why [`Bundled::schema`] and [`Bundled::load`] can return values rather than
//! `Result`s.

use crate::data::csv::{LoadReport, RawRows, read_csv, read_csv_with_raw};
use crate::data::dataset::Dataset;
use crate::data::schema::Schema;

/// A dataset bundled with dpagg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bundled {
    /// Breast Cancer Wisconsin (Diagnostic): 569 rows, 30 features, label `diagnosis`
    /// (`M` malignant → +1, `B` benign → −1).
    BreastCancer,
    /// Pima Indians Diabetes: 768 rows, 8 features, label `diabetes` (`pos` → +1, `neg` → −1).
    Diabetes,
}

/// The experimental setup of the paper for a bundled dataset (Minami et al. 2015, §5.2): a
/// class-stratified test set drawn at random, the remaining rows split evenly over the
/// organisations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaperSplit {
    /// Number of positive (+1) rows in the test set.
    pub test_positive: usize,
    /// Number of negative (−1) rows in the test set.
    pub test_negative: usize,
    /// Number of organisations sharing the training rows.
    pub orgs: usize,
    /// Training rows per organisation.
    pub per_org: usize,
}

impl PaperSplit {
    /// Size of the test set.
    pub fn test_size(&self) -> usize {
        self.test_positive + self.test_negative
    }

    /// Total number of training rows (`orgs × per_org`).
    pub fn train_size(&self) -> usize {
        self.orgs * self.per_org
    }
}

const BREAST_CANCER_SCHEMA: &str = include_str!("../../../data/breast_cancer.schema.toml");
const BREAST_CANCER_CSV: &str = include_str!("../../../data/breast_cancer.csv");
const DIABETES_SCHEMA: &str = include_str!("../../../data/diabetes.schema.toml");
const DIABETES_CSV: &str = include_str!("../../../data/diabetes.csv");

impl Bundled {
    /// Every bundled dataset.
    pub const ALL: [Bundled; 2] = [Bundled::BreastCancer, Bundled::Diabetes];

    /// Looks a dataset up by its name: `"breast-cancer"` or `"diabetes"`.
    pub fn from_name(name: &str) -> Option<Bundled> {
        Bundled::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The dataset's name, as accepted by [`Bundled::from_name`].
    pub fn name(self) -> &'static str {
        match self {
            Bundled::BreastCancer => "breast-cancer",
            Bundled::Diabetes => "diabetes",
        }
    }

    /// The schema file's name in `data/`, used in messages.
    fn schema_file(self) -> &'static str {
        match self {
            Bundled::BreastCancer => "data/breast_cancer.schema.toml",
            Bundled::Diabetes => "data/diabetes.schema.toml",
        }
    }

    /// The CSV file's name in `data/`, used in messages.
    fn csv_file(self) -> &'static str {
        match self {
            Bundled::BreastCancer => "data/breast_cancer.csv",
            Bundled::Diabetes => "data/diabetes.csv",
        }
    }

    /// The text of the bundled schema (TOML), e.g. to write it next to a node's configuration.
    pub fn schema_text(self) -> &'static str {
        match self {
            Bundled::BreastCancer => BREAST_CANCER_SCHEMA,
            Bundled::Diabetes => DIABETES_SCHEMA,
        }
    }

    /// The text of the bundled CSV file.
    pub fn csv_text(self) -> &'static str {
        match self {
            Bundled::BreastCancer => BREAST_CANCER_CSV,
            Bundled::Diabetes => DIABETES_CSV,
        }
    }

    /// The dataset's public schema.
    ///
    /// # Panics
    /// Never in a tested build: the embedded schema is parsed by this module's tests.
    pub fn schema(self) -> Schema {
        Schema::from_toml_str(self.schema_text(), self.schema_file())
            .expect("bundled schema is valid (checked by bundled::tests)")
    }

    /// The whole dataset, normalised by its schema (the `ball` map), with the loading report.
    ///
    /// # Panics
    /// Never in a tested build: the embedded CSV is loaded by this module's tests.
    pub fn load(self) -> (Dataset, LoadReport) {
        self.load_with(&self.schema())
    }

    /// The whole dataset under the `paper` map of the same declared bounds
    /// ([`Schema::paper_map`]): what Minami et al.'s (2015) experiments (and `experiment paper`)
    /// use.
    pub fn load_paper(self) -> (Dataset, LoadReport) {
        self.load_with(&self.schema().paper_map())
    }

    /// The whole dataset's raw values clipped to the schema's bounds ([`RawRows`]), for data
    /// releases stated in raw units.
    ///
    /// # Panics
    /// Never in a tested build: the embedded CSV is loaded by this module's tests.
    pub fn load_raw(self) -> RawRows {
        read_csv_with_raw(self.csv_text().as_bytes(), self.csv_file(), &self.schema())
            .expect("bundled CSV matches its schema (checked by bundled::tests)")
            .1
    }

    /// The whole dataset under another map of the same columns (e.g. the schema with centres
    /// and scales from pooled private statistics, [`crate::privacy::private_normalisation`]).
    ///
    /// # Panics
    /// If `schema` does not describe the bundled CSV's columns.
    pub fn load_with(self, schema: &Schema) -> (Dataset, LoadReport) {
        read_csv(self.csv_text().as_bytes(), self.csv_file(), schema)
            .expect("bundled CSV matches its schema (checked by bundled::tests)")
    }

    /// The paper's experimental setup for this dataset (Minami et al. 2015, §5.2).
    pub fn paper_split(self) -> PaperSplit {
        match self {
            // 85 M + 84 B = 169 test rows; the other 400 over 10 organisations.
            Bundled::BreastCancer => PaperSplit {
                test_positive: 85,
                test_negative: 84,
                orgs: 10,
                per_org: 40,
            },
            // 84 pos + 84 neg = 168 test rows; the other 600 over 10 organisations.
            Bundled::Diabetes => PaperSplit {
                test_positive: 84,
                test_negative: 84,
                orgs: 10,
                per_org: 60,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::dot;

    #[test]
    fn names_round_trip() {
        for b in Bundled::ALL {
            assert_eq!(Bundled::from_name(b.name()), Some(b));
        }
        assert_eq!(
            Bundled::from_name("breast-cancer"),
            Some(Bundled::BreastCancer)
        );
        assert_eq!(Bundled::from_name("diabetes"), Some(Bundled::Diabetes));
        assert_eq!(Bundled::from_name("iris"), None);
    }

    #[test]
    fn schemas_parse_and_match_their_csv_headers() {
        for b in Bundled::ALL {
            let s = b.schema();
            assert_eq!(s.name, b.name());
            assert!(s.intercept);
            let header: Vec<String> = b
                .csv_text()
                .lines()
                .next()
                .expect("header")
                .split(',')
                .map(|h| h.trim_matches('"').to_owned())
                .collect();
            let features: Vec<&str> = s.features.iter().map(|f| f.name.as_str()).collect();
            // Every CSV column is used, features in file order, label last.
            assert_eq!(header.len(), features.len() + 1, "{}", b.name());
            assert_eq!(
                &header[..features.len()],
                features.as_slice(),
                "{}",
                b.name()
            );
            assert_eq!(header[features.len()], s.label.column);
            assert_eq!(s.fingerprint(), b.schema().fingerprint());
        }
        assert_ne!(
            Bundled::BreastCancer.schema().fingerprint(),
            Bundled::Diabetes.schema().fingerprint()
        );
    }

    fn check(b: Bundled, rows: usize, features: usize, pos: usize, neg: usize) {
        let (ball, report) = b.load();
        assert_eq!(ball.len(), rows);
        assert!(ball.max_row_norm() <= 1.0);
        assert_eq!(
            report.total_clipped(),
            0,
            "the declared bounds cover the shipped file"
        );
        let (d, report) = b.load_paper();
        let total = report.total_clipped();
        eprintln!(
            "{}: {} rows, clipped per feature: {:?} (total {total})",
            b.name(),
            report.rows,
            report.clipped
        );
        assert_eq!(d.len(), rows);
        assert_eq!(report.rows, rows);
        assert_eq!(d.dim(), features + 1, "features plus intercept");
        assert_eq!(report.clipped.len(), features);
        assert_eq!(d.labels().iter().filter(|&&l| l == 1.0).count(), pos);
        assert_eq!(d.labels().iter().filter(|&&l| l == -1.0).count(), neg);
        assert!(d.max_row_norm() <= 1.0);
        // Bounds are generous: fewer than 1% of the shipped values are clipped (none, in fact).
        assert!(
            total * 100 < rows * features,
            "too many clipped values: {total}"
        );
        assert_eq!(total, 0, "the declared bounds cover the shipped file");
        let split = b.paper_split();
        assert!(split.test_positive < pos && split.test_negative < neg);
        assert_eq!(split.test_size() + split.train_size(), rows);
    }

    #[test]
    fn breast_cancer_loads() {
        check(Bundled::BreastCancer, 569, 30, 212, 357);
        assert_eq!(Bundled::BreastCancer.paper_split().test_size(), 169);
        assert_eq!(Bundled::BreastCancer.paper_split().train_size(), 400);
    }

    #[test]
    fn diabetes_loads() {
        check(Bundled::Diabetes, 768, 8, 268, 500);
        assert_eq!(Bundled::Diabetes.paper_split().test_size(), 168);
        assert_eq!(Bundled::Diabetes.paper_split().train_size(), 600);
        // First row: 6,148,72,35,0,33.6,0.627,50,"pos" mapped by the declared bounds, scaled by 1/sqrt(9).
        let (d, _) = Bundled::Diabetes.load_paper();
        let raw = [6.0, 148.0, 72.0, 35.0, 0.0, 33.6, 0.627, 50.0];
        let schema = Bundled::Diabetes.schema();
        for (j, (&v, f)) in raw.iter().zip(&schema.features).enumerate() {
            let want = (2.0 * (v - f.lo) / (f.hi - f.lo) - 1.0) / 3.0;
            assert!(
                (d.row(0)[j] - want).abs() < 1e-12,
                "feature {j}: {} vs {want}",
                d.row(0)[j]
            );
        }
        assert!((d.row(0)[8] - 1.0 / 3.0).abs() < 1e-15);
        assert_eq!(d.label(0), 1.0);
    }

    /// The paper map of a bundled schema is the schema of the same bounds without ball mode: the
    /// fingerprint the bundled schemas had before ball mode existed (so `experiment paper` and
    /// nodes that keep the old map are unchanged).
    #[test]
    fn paper_map_keeps_the_fingerprints_of_the_bounds_only_schemas() {
        assert_eq!(
            Bundled::Diabetes.schema().paper_map().fingerprint(),
            "d7dd8c2620f27a7eb84499ee580e4b73b2234e98b229ee112096ba61055690b2"
        );
        assert_eq!(
            Bundled::BreastCancer.schema().paper_map().fingerprint(),
            "cf16fd9678422753b2b2eedfdff3cc806439a8b65d9ccb43db5321e9be47567e"
        );
        for b in Bundled::ALL {
            assert_ne!(
                b.schema().fingerprint(),
                b.schema().paper_map().fingerprint()
            );
        }
    }

    /// The default ball map of Breast Cancer rows 0 and 1, as computed by the
    /// research prototype, to the prototype's printed precision.
    #[test]
    fn breast_cancer_ball_rows_match_the_prototype() {
        let (d, report) = Bundled::BreastCancer.load();
        let want = [
            ([0.1194, -0.3061, 0.1375, 0.1130, 0.1443], 0.0617),
            ([0.2632, -0.0685, 0.2482, 0.2586, -0.0815], 0.0878),
        ];
        for (i, (first, last)) in want.iter().enumerate() {
            let row = d.row(i);
            for (j, w) in first.iter().enumerate() {
                assert!(
                    (row[j] - w).abs() < 2e-4,
                    "row {i} col {j}: {} vs {w}",
                    row[j]
                );
            }
            assert!((row[30] - last).abs() < 2e-4, "row {i}: {}", row[30]);
            assert!(
                (dot(row, row).sqrt() - 1.0).abs() < 1e-12,
                "projected onto the sphere"
            );
        }
        assert_eq!(
            report.projected, 569,
            "every Breast Cancer row is projected"
        );
    }

    /// Diabetes row 0 under the ball map, computed by hand from the schema's constants:
    /// 6,148,72,35,0,33.6,0.627,50 with insulin 0 = missing.
    #[test]
    fn diabetes_ball_row_follows_the_declared_constants() {
        let (d, report) = Bundled::Diabetes.load();
        let l101 = 100f64.ln_1p();
        let (c, s) = (l101 / 2.0, l101 / 6.0);
        let z = [
            ((6.0f64 / 0.2).ln_1p() - c) / s,
            (148.0 - 140.0) / 40.0,
            (72.0 - 80.0) / 10.0,
            (35.0f64.ln_1p() - c) / s,
            0.0,
            (33.6 - 30.0) / 5.0,
            ((0.627f64 / 0.025).ln_1p() - c) / s,
            (50.0 - 35.0) / 10.0,
        ];
        let r = 2.0 / 8f64.sqrt();
        let mut x: Vec<f64> = z.iter().map(|v| v * r).collect();
        x.push(0.2);
        let norm = dot(&x, &x).sqrt();
        assert!(norm > 1.0, "this row is projected");
        for (j, w) in x.iter().enumerate() {
            // The schema writes the constants to 6 decimals.
            assert!(
                (d.row(0)[j] - w / norm).abs() < 1e-5,
                "col {j}: {} vs {}",
                d.row(0)[j],
                w / norm
            );
        }
        assert_eq!(d.row(0)[4], 0.0, "insulin 0 is `missing`: z = 0");
        let missing: usize = report.missing.iter().map(|(_, n)| n).sum();
        assert!(missing > 0 && report.projected > 0 && report.projected <= 768);
    }
}
