//! The suites of the `api` test binary are the files of `tests/`, found here
//! rather than listed by hand: a group's new test file is a module of the
//! binary with no line elsewhere (issue #46). `api.rs` (the root) and
//! `tls.rs` (a binary of its own, it sets the environment) are not suites.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    // A directory: cargo reruns this when any file in it changes or is added.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut suites: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let suite = name.strip_suffix(".rs")?;
            (suite != "api" && suite != "tls").then(|| suite.to_owned())
        })
        .collect();
    suites.sort();
    let mut out = String::new();
    for suite in &suites {
        let path = dir.join(format!("{suite}.rs"));
        writeln!(
            out,
            "#[path = {:?}]\nmod {suite};",
            path.display().to_string()
        )
        .unwrap();
    }
    let target = Path::new(&std::env::var("OUT_DIR").unwrap()).join("suites.rs");
    std::fs::write(target, out).expect("OUT_DIR/suites.rs");
}
