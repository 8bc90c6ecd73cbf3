//! The suites' own text, read by the tests that hold each group's suite to
//! check what the group declares (its read-backs, its event types).

use std::path::Path;

/// The arguments of every call of `.method(..)` in `tests/tests/*.rs`, with
/// comments cut and whitespace removed (so rustfmt's line breaks do not
/// matter), to the parenthesis that closes the call.
pub fn calls(method: &str) -> Vec<String> {
    let suites = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let open = format!(".{method}(");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&suites).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .flat_map(|line| line.split_whitespace())
            .collect();
        for (at, _) in code.match_indices(&open) {
            let args = &code[at + open.len()..];
            let mut depth = 1;
            let end = args
                .char_indices()
                .find(|(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(args.len(), |(i, _)| i);
            out.push(args[..end].to_owned());
        }
    }
    out
}

/// The string literals of a call's arguments, in order (no literal here
/// holds a quote).
pub fn literals(args: &str) -> Vec<&str> {
    args.split('"').skip(1).step_by(2).collect()
}
