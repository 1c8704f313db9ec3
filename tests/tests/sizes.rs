//! The size rules of the code base: no non-test source file over 600 lines and no
//! function over 80 lines, in every crate of the workspace and in the Python package's crate
//! (`python/`, built by maturin outside the workspace).
//!
//! Run it alone with `cargo test --release -p dpagg-tests --test sizes`; CI runs it with the rest of
//! the suite. A *test file* is a file named `tests.rs` (the one convention for tests beside a
//! module: `x/tests.rs`), or any file under a `tests/` or `benches/` folder; every other `.rs` file under a crate's `src/` counts, inline test modules
//! included (move them beside the module when a file grows). A function is any `fn` with a body
//! (free, in an `impl` or a trait default) outside `#[cfg(test)]` modules and `#[test]`
//! functions; its length is the lines from `fn` to its closing brace. Lines are counted on the
//! parsed source, so a long string literal or comment inside a function counts too.

use proc_macro2::Span;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Longest non-test source file, in lines.
const MAX_FILE_LINES: usize = 600;
/// Longest function, in lines.
const MAX_FN_LINES: usize = 80;
/// The crates' source folders, relative to the workspace root.
const SOURCE_DIRS: [&str; 8] = [
    "shared/src",
    "proto/src",
    "node/src",
    "aggregator/src",
    "aggregator/run/src",
    "aggregator/lab/src",
    "tests/src",
    "python/src",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || path
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches")))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The non-test source files of the workspace, relative to its root.
fn source_files() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    let mut files: Vec<PathBuf> = files
        .into_iter()
        .map(|p| p.strip_prefix(&root).expect("under the root").to_path_buf())
        .filter(|p| {
            !is_test_file(
                p.strip_prefix(p.iter().next().expect("crate"))
                    .expect("crate"),
            )
        })
        .collect();
    files.sort();
    files
}

/// Whether `attrs` holds `#[test]` or a `#[cfg(...)]` naming `test`.
fn is_test_item(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = a.path();
        path.is_ident("test")
            || (path.is_ident("cfg")
                && a.parse_args::<proc_macro2::TokenStream>().is_ok_and(|t| {
                    t.to_string()
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == "test")
                }))
    })
}

/// Functions longer than [`MAX_FN_LINES`]: (name, first line, lines).
#[derive(Default)]
struct LongFunctions(Vec<(String, usize, usize)>);

impl LongFunctions {
    fn check(&mut self, name: &syn::Ident, start: Span, end: Span) {
        let (first, last) = (start.start().line, end.end().line);
        let lines = last + 1 - first;
        if lines > MAX_FN_LINES {
            self.0.push((name.to_string(), first, lines));
        }
    }
}

impl<'a> Visit<'a> for LongFunctions {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if !is_test_item(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if !is_test_item(&f.attrs) {
            self.check(
                &f.sig.ident,
                f.sig.fn_token.span,
                f.block.brace_token.span.close(),
            );
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if !is_test_item(&f.attrs) {
            self.check(
                &f.sig.ident,
                f.sig.fn_token.span,
                f.block.brace_token.span.close(),
            );
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(body) = &f.default {
            self.check(
                &f.sig.ident,
                f.sig.fn_token.span,
                body.brace_token.span.close(),
            );
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The files of the out-of-line modules `file` declares under `#[cfg(test)]` (with or without a
/// `#[path]`), as paths relative to the workspace root.
fn test_module_files(file: &Path, parsed: &syn::File) -> Vec<PathBuf> {
    let dir = file.parent().expect("a file has a folder");
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    // Where `mod name;` looks: beside `lib.rs`, `main.rs` and `mod.rs`, else in a folder named
    // after the file.
    let base = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let mut out = Vec::new();
    for item in &parsed.items {
        let syn::Item::Mod(m) = item else { continue };
        if m.content.is_some() || !is_test_item(&m.attrs) {
            continue;
        }
        match path_attribute(&m.attrs) {
            Some(p) => out.push(dir.join(p)),
            None => {
                let name = m.ident.to_string();
                out.push(base.join(format!("{name}.rs")));
                out.push(base.join(&name).join("mod.rs"));
            }
        }
    }
    out
}

/// The value of a `#[path = "…"]` attribute.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

#[test]
fn no_source_file_over_600_lines_and_no_function_over_80() {
    let root = workspace_root();
    let files = source_files();
    assert!(files.len() > 50, "found only {} source files", files.len());
    let parsed: Vec<(PathBuf, String, syn::File)> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(root.join(file)).expect("readable source");
            let parsed = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{}: does not parse: {e}", file.display()));
            (file.clone(), text, parsed)
        })
        .collect();
    let test_modules: Vec<PathBuf> = parsed
        .iter()
        .flat_map(|(file, _, p)| test_module_files(file, p))
        .collect();
    let mut problems = Vec::new();
    for (file, text, parsed) in &parsed {
        // A test module's file, or a file of its submodules.
        if test_modules
            .iter()
            .any(|t| file == t || file.starts_with(t.with_extension("")))
        {
            continue;
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            problems.push(format!(
                "{}: {lines} lines (max {MAX_FILE_LINES})",
                file.display()
            ));
        }
        let mut long = LongFunctions::default();
        long.visit_file(parsed);
        for (name, line, n) in long.0 {
            problems.push(format!(
                "{}:{line}: fn {name} is {n} lines (max {MAX_FN_LINES})",
                file.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} size rule(s) broken:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_measure_sees_long_functions_and_test_modules() {
    let source = format!(
        "fn short() {{}}\nfn long() {{\n{}}}\n#[cfg(test)]\nmod tests {{ fn long_test() {{\n{}}} }}\nimpl S {{ fn method(&self) {{\n{}}} }}\n",
        "    let _ = 1;\n".repeat(90),
        "    let _ = 1;\n".repeat(90),
        "    let _ = 1;\n".repeat(79),
    );
    let mut long = LongFunctions::default();
    long.visit_file(&syn::parse_file(&source).expect("parses"));
    let names: Vec<(&str, usize, usize)> = long
        .0
        .iter()
        .map(|(n, a, b)| (n.as_str(), *a, *b))
        .collect();
    // `long` spans its `fn` line, 90 body lines and the closing brace; the test module is
    // skipped; `method` is 81 lines (fn line, 79 body lines, closing brace).
    assert_eq!(names, vec![("long", 2, 92), ("method", 187, 81)]);
    let parent = "#[cfg(test)]\nmod config_fuzz;\nmod config;\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\n";
    let parent = syn::parse_file(parent).expect("parses");
    assert_eq!(
        test_module_files(Path::new("aggregator/run/src/lib.rs"), &parent),
        [
            "aggregator/run/src/config_fuzz.rs",
            "aggregator/run/src/config_fuzz/mod.rs",
            "aggregator/run/src/x_tests.rs"
        ]
        .map(PathBuf::from)
    );
    assert_eq!(
        test_module_files(Path::new("shared/src/data/schema.rs"), &parent)[0],
        PathBuf::from("shared/src/data/schema/config_fuzz.rs")
    );
    assert!(is_test_file(Path::new("src/store/tests.rs")));
    assert!(!is_test_file(Path::new("src/aggregate/select_tests.rs")));
    assert!(!is_test_file(Path::new("src/store.rs")));
}
