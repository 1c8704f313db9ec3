//! The layers of the core crate: in `shared/src`, `data` → `learn` → `privacy` → `aggregate` →
//! `simulation`, and a layer uses only the ones before it (ARCHITECTURE.md, "Layers of
//! `shared/`"). `util` comes before every layer and uses none of them; `cli` and `identity`,
//! each behind its cargo feature, come after every layer: they serve the binaries, may use any
//! layer, and no layer uses them.
//!
//! Run it alone with `cargo test --release -p dpagg-tests --test layers`; CI runs it with the
//! rest of the suite. It parses every `.rs` file under `shared/src` and resolves every `use`
//! item and every path in code — types, expressions, patterns, trait bounds, visibilities, and
//! the tokens of macro calls such as `assert_eq!(crate::learn::…)` — that starts with `crate`,
//! `$crate`, `dpagg_shared`, `self` or a chain of `super`, to the top-level module it names
//! (a name the crate root re-exports, such as `crate::Dataset`, to the module it comes from).
//! Doc comments are not code: they may link to any layer.
//!
//! Test code is not exempt: `#[cfg(test)]` modules and the `tests.rs` files beside a module are
//! checked like the rest, so a layer's tests build their fixtures from the layers below it, and
//! a test that needs a higher layer lives in that layer (or in `shared/tests/`).
//!
//! An import that has to go up stays only in [`ALLOWED`], with its reason; the test also fails
//! on an entry there that no longer matches anything, on a top-level module that has no place
//! in the layers, and when ARCHITECTURE.md's sentence lists the layers in another order.

use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The layers of `shared/src`, lowest first, as ARCHITECTURE.md lists them.
const LAYERS: [&str; 5] = ["data", "learn", "privacy", "aggregate", "simulation"];
/// The modules before every layer: any module may use them, and they use no layer.
const BASE: [&str; 1] = ["util"];
/// The modules after every layer: they may use any layer, and no layer uses them.
const TOP: [&str; 2] = ["cli", "identity"];
/// Upward imports that stay: (file under `shared/src`, the module it uses, why).
const ALLOWED: [(&str, &str, &str); 0] = [];

/// The core crate's source folder, relative to the workspace root.
const SOURCE_DIR: &str = "shared/src";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A top-level module's rank: a module may use only modules of its rank or below.
fn rank(module: &str) -> Option<usize> {
    if BASE.contains(&module) {
        Some(0)
    } else if let Some(i) = LAYERS.iter().position(|l| *l == module) {
        Some(1 + i)
    } else if TOP.contains(&module) {
        Some(1 + LAYERS.len())
    } else {
        None
    }
}

/// What a name at the crate root stands for: the top-level module it is, or comes from.
#[derive(Default)]
struct Roots(BTreeMap<String, String>);

impl Roots {
    /// The modules and re-exports of `lib.rs`.
    fn of_lib(lib: &syn::File) -> Roots {
        let mut roots = Roots::default();
        for item in &lib.items {
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    roots.0.insert(name.clone(), name);
                }
                syn::Item::Use(u) => {
                    for (segments, _) in use_paths(&u.tree) {
                        let first = segments.iter().find(|s| *s != "crate").cloned();
                        let last = segments.last().cloned();
                        if let (Some(first), Some(last)) = (first, last) {
                            roots.0.insert(last, first);
                        }
                    }
                }
                _ => {}
            }
        }
        roots
    }

    /// The `#[macro_export]` macros of a file in `module`, which live at the crate root.
    fn add_exported_macros(&mut self, module: &[String], file: &syn::File) {
        let Some(top) = module.first() else { return };
        for item in &file.items {
            if let syn::Item::Macro(m) = item
                && m.attrs.iter().any(|a| a.path().is_ident("macro_export"))
                && let Some(name) = &m.ident
            {
                self.0.insert(name.to_string(), top.clone());
            }
        }
    }

    fn top_of(&self, name: &str) -> Result<String, String> {
        self.0.get(name).cloned().ok_or_else(|| name.to_string())
    }
}

/// Every path a `use` tree imports, as its segments (a trailing `self` dropped; a glob is `*`)
/// with the span of its last segment.
fn use_paths(tree: &syn::UseTree) -> Vec<(Vec<String>, Span)> {
    fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Span)>) {
        let mut leaf = |name: String, span: Span, prefix: &Vec<String>| {
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name);
            }
            out.push((path, span));
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => leaf(n.ident.to_string(), n.ident.span(), prefix),
            syn::UseTree::Rename(r) => leaf(r.ident.to_string(), r.ident.span(), prefix),
            syn::UseTree::Glob(g) => leaf("*".to_string(), g.star_token.span, prefix),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    walk(tree, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The top-level module a path written in `module` names, if it is a path into this crate:
/// `Ok(module)`, or `Err(name)` for a name at the crate root that is no module or re-export.
fn resolve(
    module: &[String],
    segments: &[String],
    roots: &Roots,
) -> Option<Result<String, String>> {
    let first = segments.first()?.as_str();
    match first {
        "crate" | "$crate" | "dpagg_shared" => Some(roots.top_of(segments.get(1)?)),
        "super" => {
            let ups = segments.iter().take_while(|s| *s == "super").count();
            if ups < module.len() {
                Some(Ok(module[0].clone()))
            } else if ups == module.len() {
                Some(roots.top_of(segments.get(ups)?))
            } else {
                Some(Err("super".to_string()))
            }
        }
        "self" => match module.first() {
            Some(top) => Some(Ok(top.clone())),
            None => Some(roots.top_of(segments.get(1)?)),
        },
        // A bare name names a top-level module only at the crate root.
        _ if module.is_empty() => roots.0.get(first).cloned().map(Ok),
        _ => None,
    }
}

/// One path of a file that leaves its top-level module.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    line: usize,
    /// The top-level module the file is in.
    from: String,
    /// The top-level module the path names, or `Err` with a root name nothing declares.
    to: Result<String, String>,
    path: String,
}

/// Collects the references of one file, inline modules included.
struct Collect<'a> {
    module: Vec<String>,
    roots: &'a Roots,
    found: Vec<Reference>,
}

impl Collect<'_> {
    fn note(&mut self, segments: &[String], span: Span) {
        let Some(from) = self.module.first().cloned() else {
            return; // the crate root belongs to no layer
        };
        let Some(to) = resolve(&self.module, segments, self.roots) else {
            return;
        };
        if to.as_ref() != Ok(&from) {
            self.found.push(Reference {
                line: span.start().line,
                from,
                to,
                path: segments.join("::"),
            });
        }
    }

    /// The paths in a macro call's tokens: `crate :: a :: b`, `$crate :: …`, `super :: …`.
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let is_colons = |i: usize| match (tokens.get(i), tokens.get(i + 1)) {
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) => {
                a.as_char() == ':' && b.as_char() == ':'
            }
            _ => false,
        };
        let mut i = 0;
        while i < tokens.len() {
            let start = i;
            let mut segments = Vec::new();
            let mut span = None;
            match &tokens[i] {
                TokenTree::Group(g) => self.scan(g.stream()),
                TokenTree::Punct(p) if p.as_char() == '$' => {
                    if let Some(TokenTree::Ident(id)) = tokens.get(i + 1) {
                        segments.push(format!("${id}"));
                        span = Some(id.span());
                        i += 1;
                    }
                }
                TokenTree::Ident(id) if start < 2 || !is_colons(start - 2) => {
                    segments.push(id.to_string());
                    span = Some(id.span());
                }
                _ => {}
            }
            if let Some(span) = span {
                while is_colons(i + 1) {
                    let Some(TokenTree::Ident(next)) = tokens.get(i + 3) else {
                        break;
                    };
                    segments.push(next.to_string());
                    i += 3;
                }
                if segments.len() > 1 {
                    self.note(&segments, span);
                }
            }
            i += 1;
        }
    }
}

impl<'a> Visit<'a> for Collect<'_> {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        for (segments, span) in use_paths(&u.tree) {
            self.note(&segments, span);
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        if p.leading_colon.is_none()
            && let Some(first) = p.segments.first()
        {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.note(&segments, first.ident.span());
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.visit_path(&m.path);
        self.scan(m.tokens.clone());
    }
    // Attributes are doc comments, `cfg`s and derives: no code.
    fn visit_attribute(&mut self, _: &'a syn::Attribute) {}
}

/// The references of `source`, a file in `module`, that leave its top-level module.
fn references(module: &[String], source: &syn::File, roots: &Roots) -> Vec<Reference> {
    let mut collect = Collect {
        module: module.to_vec(),
        roots,
        found: Vec::new(),
    };
    collect.visit_file(source);
    collect.found
}

/// The module a file under `shared/src` is by the default layout (`a/b.rs` and `a/b/mod.rs`
/// are `a::b`, `lib.rs` the root).
fn module_of(file: &Path) -> Vec<String> {
    let mut module: Vec<String> = file
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
        module.pop();
    }
    module
}

/// The problems of the references of `file` (under `shared/src`): an upward import, a path
/// into the crate that names nothing, a module with no place in the layers.
fn problems(file: &Path, found: &[Reference]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let at = |line| format!("{SOURCE_DIR}/{}:{line}", file.display());
    for r in found {
        let to = match &r.to {
            Ok(to) => to,
            Err(name) => {
                let text = format!(
                    "{}: `{}` names nothing at the crate root",
                    at(r.line),
                    r.path
                );
                out.push((name.clone(), text));
                continue;
            }
        };
        let upward = match (rank(&r.from), rank(to)) {
            (Some(a), Some(b)) => b > a,
            _ => true,
        };
        if upward {
            let text = format!(
                "{}: layer {} uses layer {to} ({})",
                at(r.line),
                r.from,
                r.path
            );
            out.push((to.clone(), text));
        }
    }
    out.dedup();
    out
}

/// Checks one source text as the file `file` under `shared/src` (with the crate root's names
/// `roots`): every problem, as `shared/src/file:line: …`.
fn check_source(file: &str, source: &str, roots: &Roots) -> Vec<String> {
    let parsed = syn::parse_file(source).unwrap_or_else(|e| panic!("{file}: does not parse: {e}"));
    let file = Path::new(file);
    let found = references(&module_of(file), &parsed, roots);
    problems(file, &found)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
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

/// The core crate, parsed: each file (relative to `shared/src`) with its module and syntax.
struct Crate {
    files: Vec<(PathBuf, Vec<String>, syn::File)>,
    roots: Roots,
}

impl Crate {
    fn read() -> Crate {
        let dir = workspace_root().join(SOURCE_DIR);
        let mut paths = Vec::new();
        rust_files(&dir, &mut paths);
        paths.sort();
        let mut files: Vec<(PathBuf, Vec<String>, syn::File)> = paths
            .iter()
            .map(|path| {
                let file = path
                    .strip_prefix(&dir)
                    .expect("under shared/src")
                    .to_path_buf();
                let text = std::fs::read_to_string(path).expect("readable source");
                let parsed = syn::parse_file(&text)
                    .unwrap_or_else(|e| panic!("{}: does not parse: {e}", path.display()));
                (file.clone(), module_of(&file), parsed)
            })
            .collect();
        // A file a `#[path]` attribute names is the module that declares it.
        let mut declared = BTreeMap::new();
        for (file, module, parsed) in &files {
            for item in &parsed.items {
                if let syn::Item::Mod(m) = item
                    && let Some(p) = path_attribute(&m.attrs)
                {
                    let mut inner = module.clone();
                    inner.push(m.ident.to_string());
                    declared.insert(file.parent().expect("a folder").join(p), inner);
                }
            }
        }
        for (file, module, _) in &mut files {
            if let Some(inner) = declared.get(file) {
                *module = inner.clone();
            }
        }
        let lib = files
            .iter()
            .find(|(f, _, _)| f == Path::new("lib.rs"))
            .expect("shared/src/lib.rs");
        let mut roots = Roots::of_lib(&lib.2);
        for (_, module, parsed) in &files {
            roots.add_exported_macros(module, parsed);
        }
        Crate { files, roots }
    }
}

#[test]
fn no_layer_of_the_core_crate_uses_a_later_one() {
    let krate = Crate::read();
    assert!(
        krate.files.len() > 100,
        "found only {} files",
        krate.files.len()
    );
    let mut broken = Vec::new();
    let mut allowed_used = vec![false; ALLOWED.len()];
    for (file, module, parsed) in &krate.files {
        let found = references(module, parsed, &krate.roots);
        for (to, text) in problems(file, &found) {
            let allowed = ALLOWED
                .iter()
                .position(|(f, m, _)| Path::new(f) == file && *m == to);
            match allowed {
                Some(i) => allowed_used[i] = true,
                None => broken.push(text),
            }
        }
    }
    for ((file, module, _), used) in ALLOWED.iter().zip(allowed_used) {
        if !used {
            broken.push(format!(
                "ALLOWED lists {file} using {module}, which it no longer does"
            ));
        }
    }
    assert!(
        broken.is_empty(),
        "{} import(s) break the layers of shared/src (ARCHITECTURE.md, \"Layers of `shared/`\"):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_place() {
    let krate = Crate::read();
    let mut modules: Vec<&String> = krate
        .roots
        .0
        .iter()
        .filter(|(name, top)| name == top)
        .map(|(name, _)| name)
        .collect();
    modules.sort();
    let mut placed: Vec<&str> = BASE.iter().chain(&LAYERS).chain(&TOP).copied().collect();
    placed.sort_unstable();
    assert_eq!(
        modules, placed,
        "lib.rs's modules against BASE, LAYERS and TOP"
    );
}

#[test]
fn architecture_md_lists_the_same_layers() {
    let text =
        std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let start = "**Layers of `shared/`.**";
    let paragraph = text
        .split("\n\n")
        .find(|p| p.starts_with(start))
        .expect("ARCHITECTURE.md has a paragraph starting \"**Layers of `shared/`.**\"");
    let chain = paragraph[start.len()..]
        .split(". ")
        .next()
        .expect("a first sentence");
    let listed: Vec<&str> = chain
        .split('→')
        .map(|step| {
            let step = step.trim_start();
            let name = step.strip_prefix('`').and_then(|s| s.split('`').next());
            name.unwrap_or_else(|| {
                panic!("a step of the layers that starts with no `name`: {step}")
            })
        })
        .collect();
    assert_eq!(listed, LAYERS, "ARCHITECTURE.md's layers against LAYERS");
    for name in BASE.iter().chain(&TOP) {
        assert!(
            paragraph.contains(&format!("`{name}`")),
            "the paragraph names `{name}`"
        );
    }
    assert!(
        paragraph.contains("tests/tests/layers.rs"),
        "the paragraph names this test"
    );
}

#[test]
fn the_checker_sees_planted_upward_imports() {
    let roots = Roots::of_lib(
        &syn::parse_file(
            "pub mod data; pub mod learn; pub mod privacy; pub mod util;\n\
             pub use privacy::noise::NoiseSource;\n",
        )
        .expect("parses"),
    );
    let check = |file, source| check_source(file, source, &roots);
    assert_eq!(
        check("data/x.rs", "use crate::privacy::noise::NoiseSource;\n"),
        [
            "shared/src/data/x.rs:1: layer data uses layer privacy (crate::privacy::noise::NoiseSource)"
        ]
    );
    assert_eq!(
        check(
            "data/x.rs",
            "fn f() {\n    super::super::privacy::noise::derive_seed(1, &[]);\n}\n"
        ),
        [
            "shared/src/data/x.rs:2: layer data uses layer privacy (super::super::privacy::noise::derive_seed)"
        ]
    );
    assert_eq!(
        check(
            "data/x.rs",
            "use crate::{\n    learn::x,\n    privacy::y,\n    util::z,\n};\n"
        ),
        [
            "shared/src/data/x.rs:2: layer data uses layer learn (crate::learn::x)",
            "shared/src/data/x.rs:3: layer data uses layer privacy (crate::privacy::y)",
        ]
    );
    // Inside a macro call, a test module, through a root re-export, and a type.
    assert_eq!(
        check(
            "data/x.rs",
            "fn f(_: crate::NoiseSource) {}\n#[cfg(test)]\nmod tests {\n    fn g() { assert!(crate::learn::ok()); }\n}\n"
        ),
        [
            "shared/src/data/x.rs:1: layer data uses layer privacy (crate::NoiseSource)",
            "shared/src/data/x.rs:4: layer data uses layer learn (crate::learn::ok)",
        ]
    );
    // Not code, or not upward: a doc link, a `super` chain inside the layer, downward paths.
    let fine = "/// [`crate::privacy::x`]\nfn f() { super::super::data::g(); }\n\
                use crate::data::Dataset;\nuse super::*;\nuse std::io;\n";
    assert!(check("data/schema/x.rs", fine).is_empty());
    let down = "use crate::{data::Dataset, learn::fit, util::files};\nfn f(_: crate::data::X) {}\n";
    assert!(check("privacy/mechanism/x.rs", down).is_empty());
    // `util` uses no layer; a path to a name the root does not have is reported.
    assert_eq!(
        check(
            "util/x.rs",
            "use crate::data::Dataset;\nuse crate::Missing;\n"
        ),
        [
            "shared/src/util/x.rs:1: layer util uses layer data (crate::data::Dataset)",
            "shared/src/util/x.rs:2: `crate::Missing` names nothing at the crate root",
        ]
    );
}

#[test]
fn files_are_the_modules_that_declare_them() {
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_of(Path::new("data/mod.rs")), ["data"]);
    assert_eq!(
        module_of(Path::new("data/schema/row_map.rs")),
        ["data", "schema", "row_map"]
    );
    let krate = Crate::read();
    let module = |f: &str| {
        krate
            .files
            .iter()
            .find(|(file, _, _)| file == Path::new(f))
            .map(|(_, m, _)| m.join("::"))
    };
    assert_eq!(
        module("aggregate/select/tests.rs").as_deref(),
        Some("aggregate::select::tests")
    );
    assert_eq!(
        module("data/schema_init_scan.rs").as_deref(),
        Some("data::schema_init::scan")
    );
}
