//! Which keys two schemas differ in: what an aggregator says when a learner's schema fingerprint
//! is not its own. Both sides compare what the fingerprint covers ([`Schema::fingerprint`]), so
//! two schemas with the same fingerprint have no difference and any difference changes it.
//! Features are matched by name, so a feature added, removed or moved is named as such.

use super::Schema;
use serde_json::Value;

/// At most this many differences are named; the rest are counted.
pub const NAMED: usize = 8;

impl Schema {
    /// The keys in which `theirs` differs from this schema, as `path: ours …, theirs …` (at
    /// most [`NAMED`], then how many more); empty when both have the same fingerprint.
    pub fn differences(&self, theirs: &Schema) -> Vec<String> {
        let (ours, theirs) = (value(self), value(theirs));
        let mut out = Vec::new();
        diff("", &ours, &theirs, &mut out);
        if out.len() > NAMED {
            let more = out.len() - NAMED;
            out.truncate(NAMED);
            out.push(format!("and {more} more"));
        }
        out
    }
}

fn value(s: &Schema) -> Value {
    serde_json::to_value(s.canonical()).unwrap_or(Value::Null)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as a short text (`absent` for null; a remote schema's text is the caller's to
/// clean of control characters).
fn show(v: &Value) -> String {
    let text = match v {
        Value::Null => "absent".to_owned(),
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > SHOWN {
        text.chars().take(SHOWN).chain(['…']).collect()
    } else {
        text
    }
}

/// Longest value shown, in characters.
const SHOWN: usize = 60;

fn diff(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                if path.is_empty() && k == "features" {
                    features(x, y, out);
                } else {
                    diff(&join(path, k), x, y, out);
                }
            }
        }
        (a, b) if a != b => out.push(format!(
            "{}: ours {}, theirs {}",
            if path.is_empty() { "schema" } else { path },
            show(a),
            show(b)
        )),
        _ => {}
    }
}

fn name_of(f: &Value) -> String {
    f.get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

/// Features matched by name: each one's keys, then those only one side has, then the order.
fn features(ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    let empty = Vec::new();
    let a = ours.as_array().unwrap_or(&empty);
    let b = theirs.as_array().unwrap_or(&empty);
    let names_a: Vec<String> = a.iter().map(name_of).collect();
    let names_b: Vec<String> = b.iter().map(name_of).collect();
    for (f, name) in a.iter().zip(&names_a) {
        match names_b.iter().position(|n| n == name) {
            Some(j) => diff(&format!("features.{name}"), f, &b[j], out),
            None => out.push(format!("feature `{name}`: ours only")),
        }
    }
    for name in names_b.iter().filter(|n| !names_a.contains(n)) {
        out.push(format!("feature `{name}`: theirs only"));
    }
    let common_a: Vec<&String> = names_a.iter().filter(|n| names_b.contains(n)).collect();
    let common_b: Vec<&String> = names_b.iter().filter(|n| names_a.contains(n)).collect();
    if common_a != common_b {
        out.push("features: the same names in another order".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> Schema {
        Schema::from_toml_str(text, "s.toml").expect("valid")
    }

    const BASE: &str = "name = \"s\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n\
        [[features]]\nname = \"age\"\nlo = 20\nhi = 90\n\
        [[features]]\nname = \"insulin\"\nlo = 0\nhi = 900\ntransform = \"log1p\"\n";

    #[test]
    fn the_keys_that_differ_are_named_and_equal_schemas_have_none() {
        let ours = schema(BASE);
        assert!(ours.differences(&ours).is_empty());
        let theirs = schema(&BASE.replace("hi = 900\n", "hi = 900\ncenter = 200\nscale = 1\n"));
        assert_ne!(ours.fingerprint(), theirs.fingerprint());
        // Ours derives insulin's centre and scale from its bounds (ln 901 / 2 and a sixth of
        // ln 901); theirs gives both in raw units.
        let d = ours.differences(&theirs);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].starts_with("features.insulin.center: ours 3.4017")
                && d[0].ends_with("theirs 200.0"),
            "{d:?}"
        );
        assert!(
            d[1].starts_with("features.insulin.scale: ours 1.1339"),
            "{d:?}"
        );
        let renamed = schema(&BASE.replace("name = \"age\"", "name = \"Age\""));
        let d = ours.differences(&renamed);
        assert_eq!(
            d,
            vec!["feature `age`: ours only", "feature `Age`: theirs only"]
        );
        let label = schema(&BASE.replace("positive = \"1\"", "positive = \"yes\""));
        assert_eq!(
            ours.differences(&label),
            vec!["label.positive: ours \"1\", theirs \"yes\""]
        );
    }

    #[test]
    fn the_order_of_features_is_a_difference() {
        let swapped = "name = \"s\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n\
            [[features]]\nname = \"insulin\"\nlo = 0\nhi = 900\ntransform = \"log1p\"\n\
            [[features]]\nname = \"age\"\nlo = 20\nhi = 90\n";
        let d = schema(BASE).differences(&schema(swapped));
        assert_eq!(d, vec!["features: the same names in another order"]);
    }

    #[test]
    fn many_differences_are_counted_beyond_the_named_ones() {
        let mut a = String::from(
            "name = \"s\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n",
        );
        let mut b = a.clone();
        for j in 0..12 {
            a.push_str(&format!("[[features]]\nname = \"f{j}\"\nlo = 0\nhi = 1\n"));
            b.push_str(&format!("[[features]]\nname = \"f{j}\"\nlo = 0\nhi = 2\n"));
        }
        let d = schema(&a).differences(&schema(&b));
        assert_eq!(d.len(), NAMED + 1);
        // Each feature's hi, and the centre and scale derived from it.
        assert_eq!(d[NAMED], format!("and {} more", 3 * 12 - NAMED));
    }
}
