//! The learner-spec flags, declared once: `--mechanism`, `--delta`, `--lambda` and `--option`,
//! flattened into every command that trains or asks for a learner (`dpagg-node publish`,
//! `dpagg-aggregator simulate`, `demo`). ε is the command's own flag (one value for `publish`,
//! a list for `simulate`). The help of `--mechanism` and `--option` is generated from the
//! mechanism registry ([`crate::privacy::mechanism::kind`]), so a new mechanism appears in it
//! without an edit here.

use crate::privacy::mechanism::kind::parse_option;
use crate::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind, Options};

/// `--mechanism`, `--delta`, `--lambda`, `--option`.
#[derive(Debug, Clone, clap::Args)]
pub struct LearnerArgs {
    /// The mechanism (the list is generated from the registry).
    #[arg(
        long,
        default_value = "objective-perturbation",
        value_parser = MechanismKind::parse,
        help = mechanism_help(),
        long_help = mechanism_long_help()
    )]
    pub mechanism: MechanismKind,
    /// δ of the release; 0 selects the pure ε-DP variant where there is one (objective
    /// perturbation: CMS 2011 Theorem 9).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub delta: f64,
    /// Regulariser λ: `auto` (a function of n, d, ε and the mechanism only; recorded in the
    /// release) or a number (Minami et al. 2015, §5.1 uses 0.01).
    #[arg(long, default_value = "auto", allow_negative_numbers = true)]
    pub lambda: Lambda,
    /// Mechanism option name=value (repeat), e.g. --option steps=500 for dp-sgd (the options of
    /// each mechanism are listed under --mechanism).
    #[arg(long = "option", value_parser = parse_option)]
    pub option: Vec<(String, f64)>,
}

impl LearnerArgs {
    /// The `--option` values by name (a later repeat wins).
    pub fn options(&self) -> Options {
        self.option.iter().cloned().collect()
    }

    /// The spec at privacy level `epsilon`.
    pub fn spec(&self, epsilon: f64) -> LearnerSpec {
        LearnerSpec {
            kind: self.mechanism,
            epsilon,
            delta: self.delta,
            l2: self.lambda,
            options: self.options(),
            map: None,
        }
    }
}

/// The short help of `--mechanism`: every registered name.
pub fn mechanism_help() -> String {
    format!("Mechanism: {}", MechanismKind::names())
}

/// The long help of `--mechanism`: each mechanism's summary and options with their defaults and
/// ranges.
pub fn mechanism_long_help() -> String {
    let mut text = String::from("Mechanism (options are given with --option NAME=VALUE):");
    for kind in MechanismKind::all() {
        let r = kind.registration();
        text.push_str(&format!("\n- {}: {}", r.name, r.summary));
        if let Some(instead) = r.node_replacement {
            text.push_str(&format!(" (lab only; nodes release {instead})"));
        }
        for o in r.options {
            text.push_str(&format!(
                "\n    {} (default {}, {}): {}",
                o.name,
                crate::util::num::Num(o.default),
                o.range,
                o.help
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        learner: LearnerArgs,
    }

    /// The help lists every registered mechanism and option, and the flags parse into a spec.
    #[test]
    fn help_lists_the_registry_and_flags_make_a_spec() {
        let help = Cli::command().render_long_help().to_string();
        for kind in MechanismKind::all() {
            assert!(help.contains(kind.name()), "{} missing", kind.name());
            for o in kind.options() {
                assert!(help.contains(o.name), "{} missing", o.name);
            }
        }
        let cli = Cli::try_parse_from([
            "t",
            "--mechanism",
            "dp-sgd",
            "--delta",
            "1e-5",
            "--option",
            "steps=50",
        ])
        .expect("valid");
        let spec = cli.learner.spec(1.0);
        assert_eq!(spec.kind, MechanismKind::DpSgd);
        assert_eq!(spec.l2, Lambda::Auto);
        assert_eq!(spec.options, Options::from([("steps".to_owned(), 50.0)]));
        let e = Cli::try_parse_from(["t", "--mechanism", "laplace"]).expect_err("unknown");
        assert!(
            e.to_string().contains("available: objective-perturbation"),
            "{e}"
        );
    }
}
