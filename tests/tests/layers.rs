//! The layers of `shared` point one way (docs/design.md, "Layers"): the core
//! (store, ids, errors, keys, records, pages, periods, queries, the queue, the
//! loader, auth, HTTP plumbing) never names a resource, only `domain/*` does;
//! and no core module depends on one that depends on it, even through others.

use std::path::{Path, PathBuf};

fn shared_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src")
}

/// The `.rs` files below `dir`, but those under a folder named `skip`.
fn rust_files(dir: &Path, skip: Option<&str>, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if skip.is_some_and(|skip| path.ends_with(skip)) {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, skip, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn core_files(dir: &Path, out: &mut Vec<PathBuf>) {
    rust_files(dir, Some("domain"), out);
}

/// Fails on the first line of code (comments cut) of `files` naming one
/// of `names`, saying what it is.
fn assert_none_names(files: &[PathBuf], names: &[&str], what: &str) {
    assert!(files.len() > 20, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(name) = names.iter().find(|name| code.contains(*name)) {
                panic!("{}:{} names {what} ({name}): {line}", file.display(), n + 1);
            }
        }
    }
}

#[test]
fn core_modules_import_no_resource() {
    let mut files = Vec::new();
    core_files(&shared_src(), &mut files);
    // lib.rs declares `pub mod domain;`.
    files.retain(|file| !file.ends_with("lib.rs"));
    assert_none_names(&files, &["domain::", "crate::domain"], "a resource module");
}

/// The resources answer in their own types; how an answer becomes HTTP (its
/// status, its OpenAPI description) is the host's, `http` (issue #46): a
/// batch's 200 or 207 is `http::MultiStatus`, not the batch's own doing.
#[test]
fn the_domain_names_neither_http_nor_its_framework() {
    let mut files = Vec::new();
    rust_files(&shared_src().join("domain"), None, &mut files);
    assert_none_names(&files, &["axum", "aide::", "crate::http"], "the HTTP host");
}

/// The core's modules (the top-level ones of `shared/src` but `domain`) and,
/// for each, the core modules its files name (`crate::<module>`), with a file
/// that does.
fn core_graph() -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, PathBuf>> {
    let mut files = Vec::new();
    core_files(&shared_src(), &mut files);
    let mut graph =
        std::collections::BTreeMap::<String, std::collections::BTreeMap<String, PathBuf>>::new();
    for file in files {
        let relative = file.strip_prefix(shared_src()).unwrap().to_path_buf();
        let module = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" {
            continue;
        }
        let edges = graph.entry(module.clone()).or_default();
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let name: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name != module && !name.is_empty() {
                    edges.entry(name).or_insert_with(|| relative.clone());
                }
            }
        }
    }
    graph
}

/// The core's modules form no circle: each depends only on modules below
/// it. A test that fails on the first back-edge, naming the circle.
#[test]
fn the_core_has_no_import_cycle() {
    let graph = core_graph();
    assert!(graph.len() > 15, "{:?}", graph.keys());
    // Depth-first, with the path: an edge to a module on the path closes a circle.
    fn visit(
        node: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, PathBuf>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(at) = path.iter().position(|n| n == node) {
            let circle = &path[at..];
            let why: Vec<String> = circle
                .iter()
                .zip(circle.iter().cycle().skip(1))
                .map(|(a, b)| format!("{a} -> {b} ({})", graph[a][b].display()))
                .collect();
            panic!("the core has an import circle: {}", why.join(", "));
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if graph.contains_key(next) {
                visit(next, graph, path, done);
            }
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let mut done = std::collections::BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

/// Each package of Cargo.lock and the names of the packages it depends on.
fn lock_graph() -> std::collections::HashMap<String, Vec<String>> {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"))
        .unwrap();
    let mut graph = std::collections::HashMap::<String, Vec<String>>::new();
    for block in lock.split("[[package]]").skip(1) {
        let name = block
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .to_owned();
        let deps = block
            .split("dependencies = [")
            .nth(1)
            .map(|d| d.split(']').next().unwrap_or(""))
            .unwrap_or("")
            .lines()
            .filter_map(|l| {
                l.trim()
                    .trim_end_matches(',')
                    .strip_prefix('"')?
                    .strip_suffix('"')
            })
            .map(|d| d.split(' ').next().unwrap().to_owned());
        graph.entry(name).or_default().extend(deps);
    }
    graph
}

/// The embedded store is for `crm serve` and the tests: no Lambda function
/// (nor `shared`, which they all link) depends on its engine, redb, even
/// through another crate. (Cargo.lock lists dev-dependencies too, so this
/// is stricter than `cargo tree -e normal`.)
#[test]
fn no_function_links_the_embedded_engine() {
    let graph = lock_graph();
    let functions = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned());
    for root in functions.chain(["shared".to_owned()]) {
        let (mut seen, mut todo) = (std::collections::HashSet::new(), vec![root.clone()]);
        while let Some(name) = todo.pop() {
            if seen.insert(name.clone()) {
                todo.extend(graph.get(&name).into_iter().flatten().cloned());
            }
        }
        assert!(seen.len() > 10, "{root}: {seen:?}");
        for engine in ["redb", "imbl", "embedded-store"] {
            assert!(!seen.contains(engine), "{root} depends on {engine}");
        }
    }
}
