//! The diffprivlib column of `dpagg-aggregator bench`: diffprivlib 0.6.6's
//! `LogisticRegression(epsilon=1, data_norm=1)` timed on exactly the rows dpagg's fits are timed
//! on, by the peer script `tests/peers/diffprivlib_fit.py` (compiled into this binary and written
//! to a temporary folder with the data, so the bench runs from anywhere).
//!
//! The rows go through one raw little-endian f64 file per shape (features row by row, then the
//! labels), removed with the folder. The script is run once for all shapes and prints
//! `fit N P SECONDS` per shape (the fastest of its repeats) and a `versions …` line. A Python
//! without diffprivlib, or any failure of the script, is not an error: the bench prints one line
//! saying why the column is missing and goes on.

use anyhow::{Context, Result, bail};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::util::files::atomic_write;
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The peer script, as committed under `tests/peers/`.
const SCRIPT: &str = include_str!("../../../tests/peers/diffprivlib_fit.py");

/// A Python that can import diffprivlib, or why there is none.
pub fn find_python(given: Option<&str>) -> Result<String, String> {
    let python = given.unwrap_or("python3");
    let probe = Command::new(python)
        .args(["-c", "import diffprivlib, sklearn, numpy"])
        .output();
    match probe {
        Err(e) => Err(format!("cannot run `{python}`: {e}")),
        Ok(out) if !out.status.success() => {
            let why = String::from_utf8_lossy(&out.stderr);
            let last = why.lines().last().unwrap_or("import failed").trim();
            Err(format!("`{python}` cannot import diffprivlib ({last})"))
        }
        Ok(_) => Ok(python.to_owned()),
    }
}

/// diffprivlib's fastest fit time per shape (in the order given) and the versions line.
pub fn time_fits(
    python: &str,
    shapes: &[(&Dataset, usize)],
    repeats: usize,
) -> Result<(Vec<f64>, String)> {
    let dir = tempfile::tempdir().context("cannot create a temporary folder")?;
    let script = dir.path().join("diffprivlib_fit.py");
    atomic_write(&script, SCRIPT.as_bytes()).context("cannot write the peer script")?;
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--repeats", &repeats.to_string()]);
    for (i, (data, _)) in shapes.iter().enumerate() {
        let path = dir.path().join(format!("rows-{i}.f64"));
        write_rows(&path, data)?;
        command
            .arg(&path)
            .arg(data.len().to_string())
            .arg(data.dim().to_string());
    }
    let out = command.output().context("cannot run the peer script")?;
    if !out.status.success() {
        bail!(
            "the peer script failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse(&String::from_utf8_lossy(&out.stdout), shapes.len())
}

/// Features row by row, then labels, as little-endian f64.
///
/// Streamed with a plain `File::create`, not `atomic_write`: `path` is in a folder this process
/// just made with `tempfile::tempdir` (a random name, mode 0700), where nobody else can plant a
/// link, and the file is read once by the peer script and thrown away.
fn write_rows(path: &Path, data: &Dataset) -> Result<()> {
    let file = std::fs::File::create(path).context("cannot write the rows")?;
    let mut w = std::io::BufWriter::new(file);
    for v in data.features().iter().chain(data.labels()) {
        w.write_all(&v.to_le_bytes())?;
    }
    w.flush().context("cannot write the rows")
}

fn parse(stdout: &str, expected: usize) -> Result<(Vec<f64>, String)> {
    let mut times = Vec::new();
    let mut versions = String::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["fit", _, _, seconds] => times.push(seconds.parse::<f64>()?),
            ["versions", rest @ ..] => versions = rest.join(" "),
            _ => bail!("unexpected line from the peer script: {line:?}"),
        }
    }
    if times.len() != expected {
        bail!(
            "the peer script timed {} shapes, not {expected}",
            times.len()
        );
    }
    Ok((times, versions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_scripts_output_and_refuses_anything_else() {
        let (t, v) = parse(
            "fit 100 2 0.5\nfit 10 3 0.25\nversions python 3.11.7 diffprivlib 0.6.6\n",
            2,
        )
        .expect("parses");
        assert_eq!(t, vec![0.5, 0.25]);
        assert_eq!(v, "python 3.11.7 diffprivlib 0.6.6");
        assert!(parse("fit 100 2 0.5\n", 2).is_err());
        assert!(parse("Traceback\n", 0).is_err());
    }

    #[test]
    fn a_missing_python_is_a_reason_not_an_error() {
        let why = find_python(Some("/nonexistent/python3")).expect_err("no such python");
        assert!(why.contains("cannot run"), "{why}");
    }
}
