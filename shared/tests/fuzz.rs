//! Property tests of the inputs an operator or a peer hands to `dpagg-shared`: CSV files loaded
//! against the bundled Diabetes schema, and schema TOML text. Whatever the content, loading ends
//! in a value or a one-line error naming the file, never a panic, and what loads keeps the
//! invariant the privacy proofs need (every normalised row has ‖x‖₂ ≤ 1, every value finite).
//!
//! What each property proves ([`CASES`] = 512 cases each):
//! - [`arbitrary_bytes_load_or_fail_on_one_line`]: up to 4 KiB of random bytes (and random text)
//!   written to a file and loaded with `load_csv` against the Diabetes schema (ball map) and its
//!   paper map.
//! - [`near_valid_csvs_load_or_fail_on_one_line`]: one file in three clean (it loads), the
//!   others with the schema's header (shuffled, with extra,
//!   repeated or missing columns, quoted, with a BOM, CRLF line ends) over rows whose cells are
//!   numbers in and out of range, any f64 as text, NaN, ±inf, empty, 2,000-digit numbers, odd
//!   Unicode, quoted newlines and quotes, with ragged rows; loaded rows are counted and lie in
//!   the unit ball.
//! - [`arbitrary_text_is_a_schema_or_a_one_line_error`]: random text and random edits of the
//!   bundled schemas given to `Schema::from_toml_str`.
//! - [`near_valid_schemas_parse_or_fail_and_map_into_the_ball`]: schemas built from every key
//!   (paper and ball mode, both transforms, NaN, ±inf, subnormal, huge and negative constants,
//!   odd names, keys left out and unknown keys added): they parse or fail on one line; a schema
//!   that parses has a fingerprint, and rows of any values (NaN and ±inf included) normalise to
//!   finite rows of norm ≤ 1.

use dpagg_shared::cli::config_fuzz::{edited, toml_string};
use dpagg_shared::data::csv::{DataError, load_csv};
use dpagg_shared::{Bundled, Schema};
use proptest::collection::vec;
use proptest::prelude::*;
use std::io::Write;
use std::sync::LazyLock;

/// Cases per property: each writes and reads a file or parses a schema in well under a
/// millisecond, so this keeps the file at a few seconds in release mode.
const CASES: u32 = 512;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    }
}

/// The bundled Diabetes schema (ball map) and the same columns under the paper map.
static SCHEMAS: LazyLock<[Schema; 2]> = LazyLock::new(|| {
    let ball = Bundled::Diabetes.schema();
    let paper = ball.paper_map();
    [ball, paper]
});

/// Any f64, with the special values drawn often.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<f64>(),
        1 => prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE),
            Just(f64::from_bits(1)),
            Just(f64::MAX),
            Just(f64::MIN),
            Just(1e-300),
        ],
        3 => -10.0..1_000.0f64,
    ]
}

/// Asserts `e` is one line starting with `origin`.
fn one_line_naming(e: &impl std::fmt::Display, origin: &str) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    assert!(
        text.starts_with(origin),
        "error does not start with {origin:?}: {text:?}"
    );
}

/// Writes `content` to a file and loads it with each schema; checks the result.
fn load(content: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("tempfile");
    file.write_all(content).expect("write");
    file.flush().expect("flush");
    let origin = file.path().display().to_string();
    for schema in SCHEMAS.iter() {
        match load_csv(file.path(), schema) {
            Err(e) => {
                one_line_naming(&e, &origin);
                assert!(!matches!(e, DataError::Io { .. }), "{e}");
            }
            Ok((data, report)) => {
                assert!(!data.is_empty());
                assert_eq!(report.rows, data.len());
                assert_eq!(data.dim(), schema.dim());
                for i in 0..data.len() {
                    let row = data.row(i);
                    assert!(row.iter().all(|v| v.is_finite()), "{row:?}");
                    let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
                    assert!(norm <= 1.0, "row {i} has norm {norm}");
                }
                assert!(data.labels().iter().all(|&y| y == 1.0 || y == -1.0));
            }
        }
    }
}

/// A cell: mostly plausible numbers, otherwise anything a file may hold.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0.0..200.0f64).prop_map(|v| v.to_string()),
        2 => float().prop_map(|v| v.to_string()),
        1 => float().prop_map(|v| format!("{v:e}")),
        1 => prop_oneof![
            Just(String::new()),
            Just("NaN".to_owned()),
            Just("-inf".to_owned()),
            Just("infinity".to_owned()),
            Just("1e400".to_owned()),
            Just("-0".to_owned()),
            Just("0x10".to_owned()),
            Just("1_000".to_owned()),
            Just(" 5 ".to_owned()),
            Just("\"7\"".to_owned()),
            Just("\"1\n2\"".to_owned()),
            Just("\"a\"\"b\"".to_owned()),
            Just("pos".to_owned()),
            Just("neg".to_owned()),
        ],
        1 => "[0-9]{1,2000}",
        1 => "[0-9.eE+-]{0,12}",
        1 => ".{0,12}",
    ]
}

/// A label cell: usually right, sometimes a near miss.
fn label() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("pos".to_owned()),
        4 => Just("neg".to_owned()),
        1 => Just("\"pos\"".to_owned()),
        1 => prop_oneof![Just("POS"), Just("pos "), Just(""), Just("1"), Just("neg\r")]
            .prop_map(str::to_owned),
        1 => ".{0,6}",
    ]
}

/// A near-valid CSV file for the Diabetes columns: one time in three clean (every cell a
/// number, every label right, so that it loads), otherwise with odd cells and columns.
fn near_valid_csv() -> impl Strategy<Value = Vec<u8>> {
    any::<bool>()
        .prop_flat_map(|a| (Just(a), any::<bool>()))
        .prop_flat_map(|(a, b)| csv_file(a && b))
}

fn csv_file(clean: bool) -> impl Strategy<Value = Vec<u8>> {
    let names: Vec<String> = SCHEMAS[0]
        .features
        .iter()
        .map(|f| f.name.clone())
        .chain(std::iter::once(SCHEMAS[0].label.column.clone()))
        .collect();
    let label_column = SCHEMAS[0].label.column.clone();
    let extra = if clean {
        vec(Just("id".to_owned()), 0..2).boxed()
    } else {
        vec(
            prop_oneof![
                3 => Just("id".to_owned()),
                1 => proptest::sample::select(names.clone()),
                2 => ".{0,8}"
            ],
            0..3,
        )
        .boxed()
    };
    let drop = if clean {
        Just(None).boxed()
    } else {
        prop_oneof![8 => Just(None), 1 => any::<prop::sample::Index>().prop_map(Some)].boxed()
    };
    let header = (Just(names).prop_shuffle(), extra, drop, any::<bool>()).prop_map(
        |(mut columns, extra, drop, quoted)| {
            columns.extend(extra);
            if let Some(i) = drop {
                columns.remove(i.index(columns.len()));
            }
            (columns, quoted)
        },
    );
    let cell = if clean {
        (0.0..100.0f64).prop_map(|v| v.to_string()).boxed()
    } else {
        cell().boxed()
    };
    let label = if clean {
        prop_oneof![Just("pos".to_owned()), Just("neg".to_owned())].boxed()
    } else {
        label().boxed()
    };
    let ragged = if clean {
        Just(0i8).boxed()
    } else {
        prop_oneof![6 => Just(0i8), 1 => -2i8..3].boxed()
    };
    let rows = vec((vec(cell, 12), label, ragged), 0..40);
    (header, rows, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        move |((header, quoted), rows, bom, crlf, trailing)| {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            let quote = |c: &String| {
                if quoted {
                    format!("\"{c}\"")
                } else {
                    c.clone()
                }
            };
            text.push_str(&header.iter().map(quote).collect::<Vec<_>>().join(","));
            for (cells, label, ragged) in rows {
                text.push_str(end);
                // Every column gets a cell, the label column the label.
                let mut row: Vec<String> = header
                    .iter()
                    .zip(cells.iter().cycle())
                    .map(|(h, c)| {
                        if *h == label_column {
                            label.clone()
                        } else {
                            c.clone()
                        }
                    })
                    .collect();
                let len = (row.len() as i64 + i64::from(ragged)).max(0) as usize;
                row.resize(len, "1".to_owned());
                text.push_str(&row.join(","));
            }
            if trailing {
                text.push_str(end);
            }
            text.into_bytes()
        },
    )
}

/// TOML text of a float (TOML spells the special values `nan`, `inf`, `-inf`).
fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v:?}")
    }
}

/// An optional `key = value` line (`None`: the key is left out, one time in 30).
fn line(key: &'static str, value: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    proptest::option::weighted(0.97, value)
        .prop_map(move |v| v.map(|v| format!("{key} = {v}\n")).unwrap_or_default())
}

/// An optional key that is usually absent.
fn rare(key: &'static str, value: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    proptest::option::weighted(0.15, value)
        .prop_map(move |v| v.map(|v| format!("{key} = {v}\n")).unwrap_or_default())
}

/// A number for a schema key: usually drawn from `plausible`, sometimes any f64.
fn number(plausible: impl Strategy<Value = f64>) -> impl Strategy<Value = String> {
    prop_oneof![9 => plausible, 1 => float()].prop_map(toml_float)
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => "[a-z]{1,8}",
        1 => Just(String::new()),
        1 => Just(" ".to_owned()),
        3 => ".{1,10}",
    ]
    .prop_map(|n| toml_string(&n))
}

/// A `[[features]]` entry; `ball` adds the ball-mode keys (and paper mode gets them now and
/// then, which it must refuse).
fn feature(ball: bool) -> impl Strategy<Value = String> {
    let transform = prop_oneof![
        8 => Just("\"identity\"".to_owned()),
        8 => Just("\"log1p\"".to_owned()),
        1 => Just("\"exp\"".to_owned()),
        1 => Just("3".to_owned()),
    ];
    let ball_keys = (
        proptest::option::weighted(0.7, transform),
        rare("unit", number(1e-3..100.0f64)),
        line("center", number(-100.0..100.0f64)),
        line("scale", number(1e-3..100.0f64)),
        rare("missing", number(prop_oneof![Just(0.0), -10.0..10.0f64])),
    )
        .prop_map(|(t, unit, center, scale, missing)| {
            let t = t.map(|t| format!("transform = {t}\n")).unwrap_or_default();
            format!("{t}{unit}{center}{scale}{missing}")
        });
    let ball_keys = if ball {
        proptest::option::weighted(0.97, ball_keys).boxed()
    } else {
        proptest::option::weighted(0.03, ball_keys).boxed()
    };
    (
        line("name", name()),
        (-1e3..1e3f64, prop_oneof![9 => 1e-6..1e4f64, 1 => float()]),
        proptest::option::weighted(0.05, float().prop_map(toml_float)),
        rare("description", ".{0,8}".prop_map(|d| toml_string(&d))),
        ball_keys,
        proptest::option::weighted(0.02, Just("colour = 1\n")),
    )
        .prop_map(
            |(name, (lo, width), wild_lo, description, ball_keys, extra)| {
                let lo_text = wild_lo.unwrap_or_else(|| toml_float(lo));
                format!(
                    "[[features]]\n{name}lo = {lo_text}\nhi = {}\n{description}{}{}",
                    toml_float(lo + width),
                    ball_keys.unwrap_or_default(),
                    extra.unwrap_or_default()
                )
            },
        )
}

/// A schema built from every key, each left out, mistyped or out of range at times.
fn near_valid_schema() -> impl Strategy<Value = String> {
    let mode = prop_oneof![
        6 => Just(Some("ball")),
        2 => Just(Some("paper")),
        2 => Just(None),
        1 => Just(Some("sphere")),
    ];
    mode.prop_flat_map(|mode| {
        let ball = mode == Some("ball");
        let normalisation = (
            rare("row_scale", number(1e-3..2.0f64)),
            rare("intercept_value", number(0.0..1.0f64)),
        )
            .prop_map(move |(row_scale, intercept)| match mode {
                None => String::new(),
                Some(mode) => format!("[normalisation]\nmode = \"{mode}\"\n{row_scale}{intercept}"),
            });
        let label = (
            prop_oneof![9 => Just(toml_string("outcome")), 1 => name()],
            prop_oneof![9 => Just(toml_string("pos")), 1 => name()],
            prop_oneof![9 => Just(toml_string("neg")), 1 => name()],
        )
            .prop_map(|(c, p, n)| {
                format!("[label]\ncolumn = {c}\npositive = {p}\nnegative = {n}\n")
            });
        (
            line("name", name()),
            rare("intercept", any::<bool>().prop_map(|b| b.to_string())),
            normalisation,
            label,
            prop_oneof![1 => vec(feature(ball), 0..3), 4 => vec(feature(ball), 1..12)],
        )
            .prop_map(|(name, intercept, normalisation, label, features)| {
                format!(
                    "{name}{intercept}{normalisation}{label}{}",
                    features.concat()
                )
            })
    })
}

/// Parses `text`; checks the error, or what a valid schema promises.
fn parse(text: &str, rows: &[Vec<f64>]) {
    match Schema::from_toml_str(text, "fuzz.schema.toml") {
        Err(e) => one_line_naming(&e, "fuzz.schema.toml"),
        Ok(schema) => {
            assert_eq!(schema.fingerprint().len(), 64);
            let p = schema.features.len();
            let mut out = vec![0.0; schema.dim()];
            for raw in rows {
                let raw: Vec<f64> = raw.iter().copied().cycle().take(p).collect();
                if raw.len() < p {
                    continue;
                }
                let _ = schema.normalise_row(&raw, &mut out);
                assert!(
                    out.iter().all(|v| v.is_finite()),
                    "{raw:?} → {out:?} under {text}"
                );
                let norm = out.iter().map(|v| v * v).sum::<f64>().sqrt();
                assert!(norm <= 1.0, "{raw:?} → norm {norm} under {text}");
            }
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_load_or_fail_on_one_line(
        content in prop_oneof![
            vec(any::<u8>(), 0..4_096),
            ".{0,400}".prop_map(String::into_bytes),
        ]
    ) {
        load(&content);
    }

    #[test]
    fn near_valid_csvs_load_or_fail_on_one_line(content in near_valid_csv()) {
        load(&content);
    }

    #[test]
    fn arbitrary_text_is_a_schema_or_a_one_line_error(
        text in prop_oneof![
            ".{0,400}",
            "[a-z_\\[\\]=\" .0-9\n]{0,400}",
            edited(proptest::sample::select(Bundled::ALL.to_vec()).prop_map(|b| b.schema_text().to_owned())),
        ],
        rows in vec(vec(float(), 1..10), 0..4),
    ) {
        parse(&text, &rows);
    }

    #[test]
    fn near_valid_schemas_parse_or_fail_and_map_into_the_ball(
        text in prop_oneof![3 => near_valid_schema(), 1 => edited(near_valid_schema())],
        rows in vec(vec(float(), 1..12), 1..6),
    ) {
        parse(&text, &rows);
    }
}
