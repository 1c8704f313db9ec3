//! Tests of the report: escaping of node strings, warnings about small splits, the charts.
use super::*;
use crate::model::{CandidateView, FINAL_PRIVACY};

/// A report with one included node whose name is hostile, stacking chosen at +15 points.
fn fixture() -> Report {
    Report {
        generated_at: "now".into(),
        request: "latest".into(),
        schema_fingerprint: "fp".into(),
        beta: 3.0,
        l2: 0.01,
        seed: 1,
        train_rows: 10,
        test_rows: 5,
        included: 1,
        excluded: 0,
        accepted_proofs: vec!["noise-as-sampled", "real-arithmetic"],
        candidate_accuracies: Accuracies::measure(
            Candidate::all(),
            |c| {
                if c == Candidate::Local {
                    0.5
                } else if c == Candidate::Stacking {
                    0.65
                } else {
                    0.6
                }
            },
            0.1,
        ),
        final_model: FinalView {
            chosen: "stacking",
            test_accuracy: 0.65,
            gain_over_local: 0.15,
            gain_ci95: [0.05, 0.25],
            local_lambda: 0.01,
            stacking_lambda: 0.1,
            agreement: 0.99,
            evidence: "in cross-validation on 60 own rows, stacking gained 12.0 ± 3.0 points over your own model, more than the 2.3 standard errors required".into(),
            candidates: Vec::new(),
            weights: vec![1.0],
            privacy: FINAL_PRIVACY,
        },
        comparator_accuracies: Accuracies::measure(Candidate::comparators(), |_| 0.5, 0.0),
        summary: Vec::new(),
        warnings: vec!["a <b>warning</b>".into()],
        nodes: vec![NodeReport {
            endpoint: "http://x:1".into(),
            organisation_id: Some("<script>alert(1)</script>".into()),
            status: "included",
            release_id: Some("r".into()),
            mechanism: Some("m".into()),
            epsilon: Some(1.0),
            delta: Some(0.0),
            neighbour_relation: Some("replace-one".into()),
            proof: Some("real-arithmetic"),
            accuracy: Some(0.7),
            no_better_than_majority: None,
            mixing_weight: Some(1.0),
            mixing_weight_with_own: Some(0.9),
            exclusion: None,
            elapsed_ms: 1,
            certificate_identity: None,
            signature: None,
            release_protobuf: None,
        }],
        synthetic: None,
        agreed_map: None,
        majority: None,
        signed_by: None,
        signature: None,
        schema: None,
        learner_schema: None,
    }
    .with_summary()
}

#[test]
fn node_strings_are_escaped_in_html() {
    let report = fixture();
    let html = report.html();
    assert!(!html.contains("<script>") && !html.contains("<b>warning"));
    assert!(html.contains("Best single learner") && html.contains("class=\"legend\""));
    assert_eq!(report.summary.len(), 8);
    assert!(
        report
            .table()
            .starts_with("final model (stacking): 0.650 vs tuned local 0.500: +15.0 points"),
        "{}",
        report.table()
    );
    assert!(html.contains("not with respect to the aggregator&#39;s own records"));
    let schema = Schema::from_toml_str(
        "name = \"t\"\nintercept = false\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n[[features]]\nname = \"a\"\nlo = 0\nhi = 1\n",
        "t.toml",
    )
    .expect("schema");
    let model = model_of(&report.final_model, &report.generated_at, &schema, None);
    assert_eq!(
        (model.weights[0], model.candidate.as_str()),
        (1.0, "stacking")
    );
    assert_eq!(model.columns, ["a"]);
    assert!(report.table().contains("95 % interval"));
    assert!(report.table().contains("warning: a <b>warning</b>"));
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("<svg") && html.contains("accuracy</text>"));
    assert!(report.table().contains("mirror averaging"));
    // report.json keeps the keys and order it had when each combiner was a field, with stacking
    // on margins added after stacking (the Python client and `verify` read them; signatures
    // cover the serialised bytes).
    let json = serde_json::to_string_pretty(&report).expect("json");
    let at = |key: &str| {
        json.find(&format!("\n  \"{key}\": "))
            .unwrap_or_else(|| panic!("{key} missing"))
    };
    let keys = [
        "excluded",
        "local_baseline_accuracy",
        "mirror_averaged_accuracy",
        "with_own_learner_accuracy",
        "own_learner_mixing_weight",
        "stacking_accuracy",
        "stacking_margins_accuracy",
        "final_model",
        "uniform_average_accuracy",
        "best_single_accuracy",
        "summary",
    ];
    assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{json}");
    let summary: Vec<&str> = report.summary.iter().map(|l| l.name).collect();
    assert_eq!(
        summary,
        [
            "local baseline (tuned, own data only)",
            "final model (chosen on own data)",
            "mirror averaging",
            "mirror averaging + own learner",
            "stacking",
            "stacking (margins)",
            "uniform average",
            "best single learner"
        ]
    );
    // Every candidate the selection can choose is defined where the report names it, and the
    // mixing-weight column is not labelled λ (the regulariser's name).
    assert!(
        Candidate::all().all(|c| html.contains(&format!("<li><b>{}</b>: ", c.name()))),
        "{html}"
    );
    let header = report.table().lines().nth(2).unwrap_or_default().to_owned();
    assert!(
        header.contains("accuracy mixing weight  excluded because") && !header.contains('λ'),
        "{header}"
    );
}

#[test]
fn one_class_and_small_splits_are_warned_about() {
    let data = |labels: &[f64]| Dataset::new(vec![0.5; labels.len()], labels.to_vec(), 1);
    let mixed: Vec<f64> = (0..200)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    assert!(split_warnings(&data(&mixed), &data(&mixed)).is_empty());
    let w = split_warnings(&data(&mixed), &data(&[-1.0; 120]));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("test split has one class only (120 rows, all negative)"));
    let w = split_warnings(&data(&[1.0; 30]), &data(&mixed[..63]));
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("training split has one class only"));
    assert!(
        w[1].contains("63 test rows only") && w[1].contains("±12 points"),
        "{w:?}"
    );
}

#[test]
fn parameters_are_rounded_to_what_they_mean() {
    use super::chart::significant;
    let cases = [
        (0.012_345_678_901_234_567, "0.0123"),
        (12.3456, "12.3"),
        (1e-7, "1e-7"),
        (0.01, "0.01"),
        (123_456.0, "1.23e5"),
        (0.1 + 0.2, "0.3"),
        (3.0, "3"),
        (-0.5, "-0.5"),
    ];
    for (x, expected) in cases {
        assert_eq!(significant(x, 3), expected, "{x}");
    }
    let mut report = fixture();
    report.final_model.local_lambda = 0.012_345_678_901_234_567;
    report.beta = 3.000_000_000_000_000_4;
    let html = report.html();
    assert!(
        html.contains("local model&#39;s λ = 0.0123 ")
            || html.contains("local model's λ = 0.0123 "),
        "{html}"
    );
    assert!(!html.contains("0.01234567"), "{html}");
    assert!(html.contains("β = 3 on"), "{html}");
}

#[test]
fn gains_sit_on_an_axis_centred_at_zero_and_accuracies_on_one_that_does_not_start_at_0() {
    let mut report = fixture();
    report.final_model.gain_over_local = 0.046;
    report.final_model.gain_ci95 = [0.012, 0.080];
    report.final_model.candidates = vec![CandidateView {
        name: "mirror-averaging",
        cv_accuracy: 0.8,
        cv_gain: -0.01,
        cv_gain_se: 0.01,
        test_accuracy: 0.79,
    }];
    let html = report.html();
    // The final model's gain and its interval, in points; the axis reaches ±10 (8.0 rounded up
    // to a round number), so the 4.6-point gain spans about a quarter of the half-axis.
    assert!(html.contains("+4.6 [+1.2, +8.0]"), "{html}");
    assert!(html.contains("-1.0 [-3.0, +1.0]"), "{html}");
    assert!(
        html.contains(">+10</text>") && html.contains(">-10</text>"),
        "{html}"
    );
    // The zero line through every row, in the middle of the plot (260 + 420/2).
    assert!(html.contains("x1=\"470.0\" y1=\"0\""), "{html}");
    // Green for a gain whose interval lies above zero, grey for one that spans it.
    assert!(html.contains("fill=\"#2e7d32\"") && html.contains("fill=\"#9e9e9e\""));
    // The accuracies (0.5 to 0.7 with their intervals on 5 test rows) start the axis above 0
    // only when their intervals allow; here the Wilson intervals on 5 rows reach low, so check
    // the axis' left end is named and is the lowest interval end rounded down.
    assert!(html.contains("The axis starts at "), "{html}");
    let mut narrow = fixture();
    narrow.test_rows = 10_000;
    for l in &mut narrow.summary {
        l.accuracy = 0.85 + 0.01 * l.accuracy;
        l.ci95 = [l.accuracy - 0.01, l.accuracy + 0.01];
    }
    for n in &mut narrow.nodes {
        n.accuracy = Some(0.86);
    }
    let html = narrow.html();
    assert!(html.contains("The axis starts at 0.8."), "{html}");
}
