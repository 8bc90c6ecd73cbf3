//! The whole API as one application: every resource group on one Router, the way
//! `crm serve` runs it locally and the tests drive it.

pub mod remote;
pub mod transfer;

use shared::http::{self, AppState, Group};

// `groups()`: every group this crate depends on (build.rs reads Cargo.toml).
include!(concat!(env!("OUT_DIR"), "/groups.rs"));

/// The OpenAPI document of every group, as docs/openapi.json holds it.
pub fn openapi() -> String {
    let document = http::openapi::document(&groups());
    serde_json::to_string_pretty(&document).expect("a document is JSON")
}

/// Every route of every group on one Router; `/mcp`'s tools relay to all of them.
/// Local bulk files (`shared::files::local`) are served beside the API, at
/// the URLs their jobs answer.
pub fn app(state: AppState) -> axum::Router {
    let files = state.files.clone();
    let app = http::app(state.with_relay(groups), groups());
    match files {
        Some(files) if files.local().is_some() => app.merge(shared::files::local::router(files)),
        _ => app,
    }
}

/// Whether a JSON string is a time as the API writes it (`2026-11-22T18:00:00.000Z`).
fn is_time(text: &str) -> bool {
    let b = text.as_bytes();
    text.len() == 24
        && b[4] == b'-'
        && b[10] == b'T'
        && b[23] == b'Z'
        && shared::ids::parse_ts(text).is_some()
}

/// `crm load --shift-times`: moves every time of a JSON-lines text by one
/// amount so that the latest is `now`. Lines that are not JSON pass unchanged
/// (the loader reports them).
pub fn shift_times(text: &str, now: shared::ids::Timestamp) -> String {
    use serde_json::Value;
    fn visit(value: &mut Value, f: &mut dyn FnMut(&mut String)) {
        match value {
            Value::String(s) => f(s),
            Value::Array(items) => items.iter_mut().for_each(|v| visit(v, f)),
            Value::Object(map) => map.values_mut().for_each(|v| visit(v, f)),
            _ => {}
        }
    }
    let mut lines: Vec<Result<Value, &str>> = text
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|_| l))
        .collect();
    let mut latest = None;
    for value in lines.iter_mut().flatten() {
        visit(value, &mut |s| {
            if is_time(s) {
                let t = shared::ids::parse_ts(s);
                latest = latest.max(t);
            }
        });
    }
    let Some(latest) = latest else {
        return text.to_owned();
    };
    let delta = now - latest;
    lines
        .into_iter()
        .map(|line| match line {
            Ok(mut value) => {
                visit(&mut value, &mut |s| {
                    if is_time(s)
                        && let Some(t) = shared::ids::parse_ts(s)
                    {
                        *s = shared::ids::format_ts(&(t + delta));
                    }
                });
                value.to_string()
            }
            Err(raw) => raw.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn shifting_moves_every_time_by_one_amount() {
        let text = r#"{"a":"2026-01-01T10:00:00.000Z","b":["2026-01-01T12:00:00.000Z"],"c":"2026-01-01"}
not json"#;
        let now = shared::ids::parse_ts("2026-03-01T12:00:00.000Z").unwrap();
        let shifted = super::shift_times(text, now);
        let lines: Vec<&str> = shifted.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"a":"2026-03-01T10:00:00.000Z","b":["2026-03-01T12:00:00.000Z"],"c":"2026-01-01"}"#
        );
        assert_eq!(lines[1], "not json");
    }
}
