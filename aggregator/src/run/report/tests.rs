//! Tests of the report: escaping of node strings, warnings about small splits, the evidence sentences.
use super::*;
use dpagg_shared::aggregate::select::{CvEstimate, SelectionConfig};

#[test]
fn node_strings_are_escaped_in_html() {
    let report = Report {
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
    .with_summary();
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
    let model = ModelFile::of(&report, &schema, None);
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

/// A final model that kept local, with the others' best cross-validated gain `gain` and their
/// agreement `agreement`.
fn kept_local(gain: f64, agreement: f64) -> FinalModel {
    let config = SelectionConfig::default();
    let estimate = |candidate, gain| CvEstimate {
        candidate,
        accuracy: 0.7 + gain,
        gain,
        gain_se: 0.02,
        loss_gain: gain,
        loss_gain_se: 0.02,
    };
    FinalModel {
        chosen: Candidate::Local,
        candidates: Vec::new(),
        comparators: Vec::new(),
        cv: vec![
            estimate(Candidate::Local, 0.0),
            estimate(Candidate::MirrorAveraging, gain),
        ],
        mixing_weights: Vec::new(),
        mixing_weights_with_own: Vec::new(),
        local_lambda: 0.01,
        stacking_lambda: 0.01,
        margins_lambda: 0.01,
        config: config.for_agreement(agreement),
        agreement,
        rows: 60,
        evidence_rows: 60,
    }
}

/// Each sentence that keeps local says why, and says when the learners did not agree.
#[test]
fn the_evidence_says_why_local_was_kept_and_whether_the_learners_agree() {
    let agree = evidence(&kept_local(-0.01, 0.99));
    assert!(agree.contains("did not beat your own model"), "{agree}");
    assert!(!agree.contains("agree"), "{agree}");
    let disagree = evidence(&kept_local(-0.01, 0.5));
    assert!(
        disagree.contains("did not beat")
            && disagree.contains("do not agree with each other (agreement 0.50)"),
        "{disagree}"
    );
    let short = evidence(&kept_local(0.01, 0.5));
    assert!(
        short.contains("cannot tell whether the others' learners help")
            && short.contains("scored +1.0 points (95 % interval")
            && short.contains("agreement 0.50, below 0.97"),
        "{short}"
    );
}
