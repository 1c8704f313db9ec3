//! The layers of the core crate and the stages of the aggregator's `run/`, each a strict order
//! in which a module uses only the ones before it.
//!
//! In the core crate, `shared/src`: `data` → `learn` → `privacy` → `aggregate` →
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
//!
//! The networked aggregator's crate `dpagg-aggregator-run`, `aggregator/run/src/`, is checked
//! the same way against [`RUN_STAGES`], the order its stages run in (ARCHITECTURE.md, "Stages of
//! `run/`"; [`RUN_ALLOWED`] holds the upward paths that stay, with their reasons): every path of
//! a file under `aggregator/run/src/` that names a module of the crate — `crate::x`, `super::x`,
//! `super::super::x` from a subfolder, `self::x` — must name a stage before the file's own (or
//! its own); a folder is the stage of its name (`run/report/html.rs` is `report`), `lib.rs`
//! comes after every stage and may use any, and a name of `lib.rs` that is no module
//! (`crate::sign`) counts as `lib.rs`. Paths out of the crate (`dpagg_lab`, other crates) are not
//! its business. Test code
//! is checked too: `#[cfg(test)]` modules and `tests.rs` files are their module's, and a test
//! module declared beside its stage, `config_fuzz.rs`, is that stage's (a
//! test that needs a later stage lives in that stage, or in `tests/tests/aggregator.rs`).

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

/// The stages of `aggregator/run/src/`, first first, as ARCHITECTURE.md lists them: a stage
/// may use only the ones before it; `lib.rs` comes after all of them.
const RUN_STAGES: [&str; 13] = [
    "config",
    "wire",
    "validate",
    "fetch",
    "trust",
    "screen",
    "agreed",
    "synthetic",
    "model",
    "report",
    "protocol",
    "metrics",
    "map_command",
];
/// What a name of `run/lib.rs` that is no module stands for.
const RUN_ROOT: &str = "lib.rs";

/// A folder of modules checked against an order.
struct Scope {
    /// The folder, relative to the workspace root.
    dir: &'static str,
    /// The file at its root.
    root: &'static str,
    /// The folder's module path from the crate root.
    within: &'static [&'static str],
    /// The names a path starts with to mean the crate root.
    aliases: &'static [&'static str],
    /// What the root file's items that are no modules stand for, if they count.
    root_items: Option<&'static str>,
    /// A top-level module's rank: it may use only modules of its rank or below.
    rank: fn(&str) -> Option<usize>,
    /// The message of an upward path: (from, to, path).
    upward: fn(&str, &str, &str) -> String,
}

/// The core crate.
const SHARED: Scope = Scope {
    dir: "shared/src",
    root: "lib.rs",
    within: &[],
    aliases: &["crate", "$crate", "dpagg_shared"],
    root_items: None,
    rank,
    upward: |from, to, path| format!("layer {from} uses layer {to} ({path})"),
};

/// The networked aggregator.
const RUN: Scope = Scope {
    dir: "aggregator/run/src",
    root: "lib.rs",
    within: &[],
    aliases: &["crate"],
    root_items: Some(RUN_ROOT),
    rank: run_rank,
    upward: |from, to, _| format!("run/{from} uses run/{to}, which comes after it"),
};

/// A module of `run/`'s rank: its place in [`RUN_STAGES`] (a test module `x_fuzz` or `x_tests`
/// declared beside stage `x` is `x`'s), `lib.rs` last.
fn run_rank(module: &str) -> Option<usize> {
    if module == RUN_ROOT {
        return Some(RUN_STAGES.len());
    }
    let stage = ["_fuzz", "_tests"]
        .iter()
        .find_map(|suffix| module.strip_suffix(suffix))
        .unwrap_or(module);
    RUN_STAGES.iter().position(|s| *s == stage)
}

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

/// What a name at the root of a scope stands for (the top-level module it is, or comes from),
/// and how paths reach that root.
struct Roots {
    names: BTreeMap<String, String>,
    /// The scope's module path from the crate root.
    within: Vec<String>,
    /// The names a path starts with to mean the crate root.
    aliases: &'static [&'static str],
}

impl Roots {
    /// The modules and re-exports of the scope's root file (`lib.rs`), and its
    /// other items when the scope counts them.
    fn of_root(root: &syn::File, scope: &Scope) -> Roots {
        let mut roots = Roots {
            names: BTreeMap::new(),
            within: scope.within.iter().map(|s| s.to_string()).collect(),
            aliases: scope.aliases,
        };
        for item in &root.items {
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    roots.names.insert(name.clone(), name);
                }
                syn::Item::Use(u) => {
                    for (segments, _) in use_paths(&u.tree) {
                        let first = roots.inside(&segments).and_then(|s| s.first().cloned());
                        let last = segments.last().cloned();
                        if let (Some(first), Some(last)) = (first, last) {
                            roots.names.insert(last, first);
                        }
                    }
                }
                _ => {
                    if let (Some(top), Some(name)) = (scope.root_items, item_name(item)) {
                        roots.names.insert(name, top.to_string());
                    }
                }
            }
        }
        roots
    }

    /// The modules and re-exports of the core crate's `lib.rs`.
    fn of_lib(lib: &syn::File) -> Roots {
        Roots::of_root(lib, &SHARED)
    }

    /// A path of a `use` in the root file, from the scope's root: `crate::…` and the
    /// scope's own prefix dropped; `None` for a path out of the scope.
    fn inside(&self, segments: &[String]) -> Option<Vec<String>> {
        let absolute: Vec<String> = match segments.first()?.as_str() {
            first if self.aliases.contains(&first) => segments[1..].to_vec(),
            "self" => self.within.iter().chain(&segments[1..]).cloned().collect(),
            first if self.names.contains_key(first) => {
                self.within.iter().chain(segments).cloned().collect()
            }
            _ => return None,
        };
        absolute
            .strip_prefix(self.within.as_slice())
            .map(<[String]>::to_vec)
    }

    /// The `#[macro_export]` macros of a file in `module`, which live at the crate root.
    fn add_exported_macros(&mut self, module: &[String], file: &syn::File) {
        let Some(top) = module.first() else { return };
        for item in &file.items {
            if let syn::Item::Macro(m) = item
                && m.attrs.iter().any(|a| a.path().is_ident("macro_export"))
                && let Some(name) = &m.ident
            {
                self.names.insert(name.to_string(), top.clone());
            }
        }
    }

    fn top_of(&self, name: &str) -> Result<String, String> {
        self.names
            .get(name)
            .cloned()
            .ok_or_else(|| name.to_string())
    }
}

/// The name an item declares, for the items a path can name.
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
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

/// The top-level module a path written in `module` (from the scope's root) names, if it is a
/// path into the scope: `Ok(module)`, or `Err(name)` for a name at the scope's root that is no
/// module or re-export.
fn resolve(
    module: &[String],
    segments: &[String],
    roots: &Roots,
) -> Option<Result<String, String>> {
    let first = segments.first()?.as_str();
    let here = || roots.within.iter().chain(module);
    // The path from the crate root.
    let absolute: Vec<String> = match first {
        _ if roots.aliases.contains(&first) => segments[1..].to_vec(),
        "super" => {
            let ups = segments.iter().take_while(|s| *s == "super").count();
            let here: Vec<&String> = here().collect();
            if ups > here.len() {
                return Some(Err("super".to_string()));
            }
            let kept = here[..here.len() - ups].iter().copied();
            kept.chain(&segments[ups..]).cloned().collect()
        }
        "self" => here().chain(&segments[1..]).cloned().collect(),
        // A bare name names a top-level module only at the scope's root.
        _ if module.is_empty() && roots.names.contains_key(first) => {
            roots.within.iter().chain(segments).cloned().collect()
        }
        _ => return None,
    };
    let inside = absolute.strip_prefix(roots.within.as_slice())?;
    Some(roots.top_of(inside.first()?))
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

/// The module a file under a scope's folder is by the default layout (`a/b.rs` and
/// `a/b/mod.rs` are `a::b`, `lib.rs` and `mod.rs` the root).
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

/// The problems of the references of `file` (under the scope's folder): an upward import, a
/// path into the scope that names nothing, a module with no place in its order.
fn problems(scope: &Scope, file: &Path, found: &[Reference]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let at = |line| format!("{}/{}:{line}", scope.dir, file.display());
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
        let upward = match ((scope.rank)(&r.from), (scope.rank)(to)) {
            (Some(a), Some(b)) => b > a,
            _ => true,
        };
        if upward {
            let text = format!("{}: {}", at(r.line), (scope.upward)(&r.from, to, &r.path));
            out.push((to.clone(), text));
        }
    }
    out.dedup();
    out
}

/// Checks one source text as the file `file` under the scope's folder (with the root's names
/// `roots`): every problem, as `folder/file:line: …`.
fn check_source(scope: &Scope, file: &str, source: &str, roots: &Roots) -> Vec<String> {
    let parsed = syn::parse_file(source).unwrap_or_else(|e| panic!("{file}: does not parse: {e}"));
    let file = Path::new(file);
    let found = references(&module_of(file), &parsed, roots);
    problems(scope, file, &found)
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

/// A scope's folder, parsed: each file (relative to the folder) with its module and syntax.
struct Crate {
    files: Vec<(PathBuf, Vec<String>, syn::File)>,
    roots: Roots,
}

impl Crate {
    fn read(scope: &Scope) -> Crate {
        let dir = workspace_root().join(scope.dir);
        let mut paths = Vec::new();
        rust_files(&dir, &mut paths);
        paths.sort();
        let mut files: Vec<(PathBuf, Vec<String>, syn::File)> = paths
            .iter()
            .map(|path| {
                let file = path
                    .strip_prefix(&dir)
                    .expect("under the folder")
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
        let root = files
            .iter()
            .find(|(f, _, _)| f == Path::new(scope.root))
            .unwrap_or_else(|| panic!("{}/{}", scope.dir, scope.root));
        let mut roots = Roots::of_root(&root.2, scope);
        for (_, module, parsed) in &files {
            roots.add_exported_macros(module, parsed);
        }
        Crate { files, roots }
    }
}

/// Every problem of a scope's files that `allowed` (file, module it uses, why) does not list,
/// and every entry of `allowed` that matches nothing.
fn broken_imports(scope: &Scope, allowed: &[(&str, &str, &str)]) -> Vec<String> {
    let krate = Crate::read(scope);
    assert!(
        krate.files.len() > 20,
        "found only {} files under {}",
        krate.files.len(),
        scope.dir
    );
    let mut broken = Vec::new();
    let mut allowed_used = vec![false; allowed.len()];
    for (file, module, parsed) in &krate.files {
        let found = references(module, parsed, &krate.roots);
        for (to, text) in problems(scope, file, &found) {
            let listed = allowed
                .iter()
                .position(|(f, m, _)| Path::new(f) == file && *m == to);
            match listed {
                Some(i) => allowed_used[i] = true,
                None => broken.push(text),
            }
        }
    }
    for ((file, module, _), used) in allowed.iter().zip(allowed_used) {
        if !used {
            broken.push(format!(
                "the allow-list has {file} using {module}, which it no longer does"
            ));
        }
    }
    broken
}

/// The paragraph of ARCHITECTURE.md that starts with `start`, and the backquoted names of its
/// first sentence's `a → b → …` chain.
fn architecture_chain(start: &str) -> (String, Vec<String>) {
    let text =
        std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let paragraph = text
        .split("\n\n")
        .find(|p| p.starts_with(start))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has a paragraph starting {start:?}"));
    let chain = paragraph[start.len()..]
        .split(". ")
        .next()
        .expect("a first sentence");
    let listed = chain
        .split('→')
        .map(|step| {
            let step = step.trim_start();
            let name = step.strip_prefix('`').and_then(|s| s.split('`').next());
            name.unwrap_or_else(|| panic!("a step of the chain that starts with no `name`: {step}"))
                .to_string()
        })
        .collect();
    (paragraph.to_string(), listed)
}

#[test]
fn no_layer_of_the_core_crate_uses_a_later_one() {
    let broken = broken_imports(&SHARED, &ALLOWED);
    assert!(
        broken.is_empty(),
        "{} import(s) break the layers of shared/src (ARCHITECTURE.md, \"Layers of `shared/`\"):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_place() {
    let krate = Crate::read(&SHARED);
    let mut modules: Vec<&String> = krate
        .roots
        .names
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
    let (paragraph, listed) = architecture_chain("**Layers of `shared/`.**");
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
    let check = |file, source| check_source(&SHARED, file, source, &roots);
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
    let krate = Crate::read(&SHARED);
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
    let run = Crate::read(&RUN);
    let module = |f: &str| {
        run.files
            .iter()
            .find(|(file, _, _)| file == Path::new(f))
            .map(|(_, m, _)| m.join("::"))
    };
    assert_eq!(module("config/tests.rs").as_deref(), Some("config::tests"));
    assert_eq!(module("report/html.rs").as_deref(), Some("report::html"));
}

/// Upward paths in `run/` that stay: (file under `aggregator/run/src`, the module it uses, why).
const RUN_ALLOWED: [(&str, &str, &str); 0] = [];

#[test]
fn no_stage_of_the_aggregators_run_uses_a_later_one() {
    let broken = broken_imports(&RUN, &RUN_ALLOWED);
    assert!(
        broken.is_empty(),
        "{} import(s) break the stages of aggregator/run/src (ARCHITECTURE.md, \"Stages of `run/`\"):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_module_of_run_has_a_stage() {
    let krate = Crate::read(&RUN);
    let modules: Vec<&String> = krate
        .roots
        .names
        .iter()
        .filter(|(name, top)| name == top)
        .map(|(name, _)| name)
        .collect();
    let unplaced: Vec<&&String> = modules.iter().filter(|m| run_rank(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "run/lib.rs declares modules that are no stage of RUN_STAGES: {unplaced:?}"
    );
    for stage in RUN_STAGES {
        assert!(
            modules.iter().any(|m| *m == stage),
            "RUN_STAGES lists `{stage}`, which run/lib.rs does not declare"
        );
    }
}

#[test]
fn architecture_md_lists_the_same_stages() {
    let (paragraph, listed) = architecture_chain("**Stages of `run/`.**");
    assert_eq!(
        listed, RUN_STAGES,
        "ARCHITECTURE.md's stages against RUN_STAGES"
    );
    for name in [RUN_ROOT, "tests/tests/layers.rs"] {
        assert!(
            paragraph.contains(&format!("`{name}`")),
            "the paragraph names `{name}`"
        );
    }
}

#[test]
fn the_checker_sees_planted_upward_imports_in_run() {
    let roots = Roots::of_root(
        &syn::parse_file(
            "pub mod config; pub mod fetch; pub mod report; pub mod synthetic; pub mod wire;\n\
             pub mod protocol;\nuse anyhow::Result;\npub fn sign() {}\n",
        )
        .expect("parses"),
        &RUN,
    );
    let check = |file, source| check_source(&RUN, file, source, &roots);
    assert_eq!(
        check("fetch.rs", "use std::io;\nuse crate::report::Report;\n"),
        ["aggregator/run/src/fetch.rs:2: run/fetch uses run/report, which comes after it"]
    );
    // From a subfolder, through `super` chains, in a macro, in a test module, to `lib.rs`.
    assert_eq!(
        check(
            "synthetic/screen.rs",
            "use super::super::protocol::execute;\nfn f() {\n    \
             tracing::info!(x = %crate::report::x());\n}\n\
             #[cfg(test)]\nmod tests {\n    use crate::sign;\n}\n"
        ),
        [
            "aggregator/run/src/synthetic/screen.rs:1: run/synthetic uses run/protocol, which comes after it",
            "aggregator/run/src/synthetic/screen.rs:3: run/synthetic uses run/report, which comes after it",
            "aggregator/run/src/synthetic/screen.rs:7: run/synthetic uses run/lib.rs, which comes after it",
        ]
    );
    assert_eq!(
        check("config.rs", "fn f(_: super::synthetic::SyntheticView) {}\n"),
        ["aggregator/run/src/config.rs:1: run/config uses run/synthetic, which comes after it"]
    );
    // Downward, inside the stage, out of the crate, and a test module beside its stage.
    let fine = "use crate::{config::X, wire::clean};\nuse super::fetch::Exclusion;\n\
                use super::*;\nuse dpagg_lab::demo;\nuse dpagg_shared::data::Dataset;\n\
                fn f() { self::g(); super::super::wire::clean(); }\n";
    assert!(check("synthetic/screen.rs", fine).is_empty());
    assert!(check("config_fuzz.rs", "use super::config::Settings;\n").is_empty());
    assert!(check("lib.rs", "use crate::protocol::execute;\n").is_empty());
}
