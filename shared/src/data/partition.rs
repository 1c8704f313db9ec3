//! Random partitions of data over organisations, and test splits (Minami et al. 2015, §5).
//!
//! §5 places n/(M+1) points on each of the M+1 organisations at random; [`equal_partition`] does
//! that (rows beyond K·⌊n/K⌋ are left out so that every organisation has the same size);
//! [`sized_partition`] gives organisations of chosen, unequal sizes.
//! [`stratified_split`] draws the paper's balanced test sets for the real data (Breast Cancer: 85 M
//! + 84 B; Diabetes: 84 + 84) and [`proportional_split`] a stratified fraction for other CSV files.

use crate::data::dataset::Dataset;
use rand::Rng;
use rand::seq::SliceRandom;

/// Why a split is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PartitionError {
    /// Not enough rows for the organisations asked for.
    #[error("cannot split {rows} rows over {orgs} organisations (need at least one row each)")]
    TooFewRows {
        /// Rows available.
        rows: usize,
        /// Organisations asked for.
        orgs: usize,
    },
    /// Not enough rows of one label for the requested test set.
    #[error("the test set needs {wanted} rows labelled {label}, but the data has only {available}")]
    TooFewOfLabel {
        /// The label (+1 or −1).
        label: i8,
        /// Rows wanted.
        wanted: usize,
        /// Rows available.
        available: usize,
    },
    /// The sizes asked for add up to more rows than there are.
    #[error("organisations of {sizes:?} rows need {wanted} rows, but only {rows} are available")]
    TooManyWanted {
        /// The sizes asked for.
        sizes: Vec<usize>,
        /// Their sum.
        wanted: usize,
        /// Rows available.
        rows: usize,
    },
    /// A test fraction outside (0, 1).
    #[error("test fraction must be in (0, 1), got {0}")]
    BadFraction(f64),
}

/// Splits `data` at random into `orgs` datasets of ⌊n/orgs⌋ rows each.
pub fn equal_partition<R: Rng + ?Sized>(
    data: &Dataset,
    orgs: usize,
    rng: &mut R,
) -> Result<Vec<Dataset>, PartitionError> {
    let n = data.len();
    if orgs == 0 || n < orgs {
        return Err(PartitionError::TooFewRows { rows: n, orgs });
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(rng);
    let per = n / orgs;
    Ok(idx
        .chunks_exact(per)
        .take(orgs)
        .map(|rows| data.subset(rows))
        .collect())
}

/// Splits `data` at random into organisations of the given `sizes` (unequal organisations,
/// e.g. a small clinic among large hospitals); rows beyond their sum are left out.
pub fn sized_partition<R: Rng + ?Sized>(
    data: &Dataset,
    sizes: &[usize],
    rng: &mut R,
) -> Result<Vec<Dataset>, PartitionError> {
    let wanted: usize = sizes.iter().sum();
    if sizes.is_empty() || sizes.contains(&0) {
        return Err(PartitionError::TooFewRows {
            rows: data.len(),
            orgs: sizes.len(),
        });
    }
    if wanted > data.len() {
        return Err(PartitionError::TooManyWanted {
            sizes: sizes.to_vec(),
            wanted,
            rows: data.len(),
        });
    }
    let mut idx: Vec<usize> = (0..data.len()).collect();
    idx.shuffle(rng);
    let mut start = 0;
    Ok(sizes
        .iter()
        .map(|&n| {
            let part = data.subset(&idx[start..start + n]);
            start += n;
            part
        })
        .collect())
}

/// (test, train): a test set with exactly `positive` rows labelled +1 and `negative` labelled −1
/// drawn at random; the rest (in random order) is the training set.
pub fn stratified_split<R: Rng + ?Sized>(
    data: &Dataset,
    positive: usize,
    negative: usize,
    rng: &mut R,
) -> Result<(Dataset, Dataset), PartitionError> {
    let mut pos: Vec<usize> = (0..data.len()).filter(|&i| data.label(i) > 0.0).collect();
    let mut neg: Vec<usize> = (0..data.len()).filter(|&i| data.label(i) < 0.0).collect();
    for (label, wanted, have) in [(1i8, positive, pos.len()), (-1, negative, neg.len())] {
        if have < wanted {
            return Err(PartitionError::TooFewOfLabel {
                label,
                wanted,
                available: have,
            });
        }
    }
    pos.shuffle(rng);
    neg.shuffle(rng);
    let test: Vec<usize> = pos[..positive]
        .iter()
        .chain(&neg[..negative])
        .copied()
        .collect();
    let mut train: Vec<usize> = pos[positive..]
        .iter()
        .chain(&neg[negative..])
        .copied()
        .collect();
    train.shuffle(rng);
    Ok((data.subset(&test), data.subset(&train)))
}

/// (test, train) with round(fraction·count) rows of each label in the test set.
pub fn proportional_split<R: Rng + ?Sized>(
    data: &Dataset,
    fraction: f64,
    rng: &mut R,
) -> Result<(Dataset, Dataset), PartitionError> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(PartitionError::BadFraction(fraction));
    }
    let pos = data.labels().iter().filter(|&&l| l > 0.0).count();
    let neg = data.len() - pos;
    let take = |c: usize| (c as f64 * fraction).round() as usize;
    stratified_split(data, take(pos), take(neg), rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::seed::derived_rng;

    fn toy(n: usize) -> Dataset {
        let x = (0..n).map(|i| i as f64 / n as f64).collect();
        let y = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        Dataset::new(x, y, 1)
    }

    #[test]
    fn equal_partition_is_disjoint_and_equal() {
        let d = toy(103);
        let parts = equal_partition(&d, 10, &mut derived_rng(1, &[])).expect("ok");
        assert_eq!(parts.len(), 10);
        assert!(parts.iter().all(|p| p.len() == 10));
        let mut seen: Vec<f64> = parts.iter().flat_map(|p| p.features().to_vec()).collect();
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        assert_eq!(seen.len(), 100);
        assert!(equal_partition(&d, 104, &mut derived_rng(1, &[])).is_err());
        assert!(equal_partition(&d, 0, &mut derived_rng(1, &[])).is_err());
    }

    #[test]
    fn stratified_split_has_exact_counts() {
        let d = toy(300); // 100 positive, 200 negative
        let (test, train) = stratified_split(&d, 40, 30, &mut derived_rng(2, &[])).expect("ok");
        assert_eq!(test.labels().iter().filter(|&&l| l > 0.0).count(), 40);
        assert_eq!(test.len(), 70);
        assert_eq!(train.len(), 230);
        assert_eq!(
            stratified_split(&d, 101, 0, &mut derived_rng(2, &[])).expect_err("must fail"),
            PartitionError::TooFewOfLabel {
                label: 1,
                wanted: 101,
                available: 100
            }
        );
        let (test, _) = proportional_split(&d, 0.1, &mut derived_rng(3, &[])).expect("ok");
        assert_eq!(test.len(), 30);
        assert!(proportional_split(&d, 1.0, &mut derived_rng(3, &[])).is_err());
    }

    #[test]
    fn sized_partition_gives_the_sizes_asked_for_from_distinct_rows() {
        let d = toy(103);
        let parts = sized_partition(&d, &[5, 40, 20], &mut derived_rng(3, &[])).expect("ok");
        let sizes: Vec<usize> = parts.iter().map(Dataset::len).collect();
        assert_eq!(sizes, vec![5, 40, 20]);
        let mut seen: Vec<f64> = parts.iter().flat_map(|p| p.features().to_vec()).collect();
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        assert_eq!(seen.len(), 65);
        assert!(matches!(
            sized_partition(&d, &[100, 4], &mut derived_rng(3, &[])),
            Err(PartitionError::TooManyWanted { wanted: 104, .. })
        ));
        assert!(sized_partition(&d, &[3, 0], &mut derived_rng(3, &[])).is_err());
    }
}
