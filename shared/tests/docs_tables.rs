//! The tables of `docs/mechanisms.md` — learners and data releases — are generated from the
//! registries' metadata ([`mechanism::docs_table`], [`data_release::docs_table`]) and kept
//! between the page's marker comments (`<!-- generated: NAME -->` … `<!-- end generated -->`).
//! This test fails when the page differs from the registries; `DPAGG_BLESS=1` rewrites the
//! blocks instead:
//!
//! ```text
//! DPAGG_BLESS=1 cargo test --release -p dpagg-shared --test docs_tables
//! ```

use dpagg_shared::privacy::registry::{generated_block, replace_generated};
use dpagg_shared::privacy::{data_release, mechanism};

/// The page, from the workspace root.
const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/mechanisms.md");

#[test]
fn the_tables_of_docs_mechanisms_md_are_the_registries() {
    let blocks = [
        ("mechanisms", mechanism::docs_table()),
        ("data-kinds", data_release::docs_table()),
    ];
    let mut page = std::fs::read_to_string(PAGE).expect("docs/mechanisms.md");
    if std::env::var_os("DPAGG_BLESS").is_some_and(|v| v == "1") {
        for (name, table) in &blocks {
            page = replace_generated(&page, name, table)
                .unwrap_or_else(|| panic!("docs/mechanisms.md has no `{name}` markers"));
        }
        std::fs::write(PAGE, page).expect("rewrote docs/mechanisms.md");
        return;
    }
    for (name, table) in &blocks {
        assert_eq!(
            generated_block(&page, name),
            Some(table.as_str()),
            "docs/mechanisms.md's `{name}` table differs from the registry; regenerate it with \
             `DPAGG_BLESS=1 cargo test --release -p dpagg-shared --test docs_tables`"
        );
    }
    assert!(
        !page.contains("example-"),
        "a test-only registration is documented"
    );
}
