//! docs/threat-model.md names, for each threat, the test that holds its
//! control: every test it names exists, in the file it names, and every row
//! names one (or says why not), so the model cannot drift from the suite.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where a file the model names lives: `x.rs` is a suite of tests/tests;
/// a path names itself.
fn source(name: &str) -> PathBuf {
    if name.contains('/') {
        root().join(name)
    } else {
        root().join("tests/tests").join(name)
    }
}

/// The backquoted words of `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_test_the_threat_model_names_exists() {
    let model = std::fs::read_to_string(root().join("docs/threat-model.md")).unwrap();
    let mut named = 0;
    for line in model
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| -"))
    {
        let cells: Vec<&str> = line.split(" | ").collect();
        let Some(tests) = cells.last() else { continue };
        if ["test |", "what it holds |", "where it is kept |"]
            .iter()
            .any(|h| tests.ends_with(h))
        {
            continue; // a header
        }
        let mut file: Option<String> = None;
        let mut in_row = 0;
        for word in quoted(tests) {
            if word.ends_with(".rs") {
                file = Some(word.to_owned());
                continue;
            }
            let (Some(file), true) = (
                &file,
                word.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c == '*' || c.is_ascii_digit()),
            ) else {
                continue;
            };
            let text = std::fs::read_to_string(source(file))
                .unwrap_or_else(|e| panic!("{file}, named by docs/threat-model.md: {e}"));
            // `*_x` names a family of tests ending in `_x`.
            let found = match word.strip_prefix('*') {
                Some(suffix) => text.contains(&format!("{suffix}(")),
                None => text.contains(&format!("fn {word}(")),
            };
            assert!(
                found,
                "docs/threat-model.md names {file} `{word}`, which is not there: {line}"
            );
            in_row += 1;
        }
        let why_not =
            tests.contains("out of reach") || tests.contains("CI)") || tests.contains("(CI");
        if cells.len() >= 4 && !line.contains("| actor |") {
            assert!(
                in_row > 0 || why_not || file.is_some(),
                "a row names no test: {line}"
            );
        }
        named += in_row;
    }
    assert!(named >= 50, "the model names {named} tests");
}
