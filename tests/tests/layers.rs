//! The layers of `shared` point one way (docs/design.md, "Layers"): the core
//! (store, ids, errors, keys, records, pages, periods, queries, the queue, the
//! loader, auth, HTTP plumbing) never names a resource. Only `domain/*` does.

use std::path::{Path, PathBuf};

fn shared_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src")
}

fn core_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.ends_with("domain") {
            continue;
        }
        if path.is_dir() {
            core_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn core_modules_import_no_resource() {
    let mut files = Vec::new();
    core_files(&shared_src(), &mut files);
    assert!(files.len() > 20, "{files:?}");
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name == "lib.rs" {
            continue; // declares `pub mod domain;`
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("domain::") && !code.contains("crate::domain"),
                "{}:{} names a resource module: {line}",
                file.display(),
                n + 1
            );
        }
    }
}
