//! The marks of a kept answer: which values it holds, without holding them.
//! A kept answer is sealed ([`super::seal`]), yet an erasure must find every
//! answer that holds the person it erases. So the answer keeps, in the clear,
//! a short hash of each value in it: each string whole (lowercased, trimmed)
//! and each word of it of four characters or more. An erasure hashes the
//! person's values the same way ([`of_values`]) and finds the answers by
//! their marks. A mark says no more than the record it came from, which the
//! table holds anyway until that record is erased; the erasure drops the
//! marks with the answer.

use serde_json::Value;

use crate::ids::{WorkspaceId, sha256_hex};

/// Marks kept at most: an answer with more (a large batch's) is not kept,
/// as an answer too large is not (its retry reads it back or is told it
/// was applied).
pub const MAX_MARKS: usize = 2_000;

/// The shortest word marked on its own.
const MIN_WORD: usize = 4;

/// The mark of one value in workspace `ws`: 64 bits of a SHA-256.
fn mark(ws: WorkspaceId, value: &str) -> String {
    let hash = sha256_hex(format!("{ws}\u{0}{value}").as_bytes());
    hash[..16].to_owned()
}

/// What of `text` is marked: the text whole, and each word.
fn pieces(text: &str, into: &mut Vec<String>) {
    let whole = text.trim().to_lowercase();
    if whole.is_empty() {
        return;
    }
    for word in whole.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if word.chars().count() >= MIN_WORD && word != whole {
            into.push(word.to_owned());
        }
    }
    into.push(whole);
}

fn strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => pieces(s, into),
        Value::Array(items) => items.iter().for_each(|v| strings(v, into)),
        Value::Object(map) => map.values().for_each(|v| strings(v, into)),
        _ => {}
    }
}

/// The marks of an answer's body (its strings, when it is JSON; the text
/// otherwise), sorted and distinct; `None` past [`MAX_MARKS`].
pub fn of_answer(ws: WorkspaceId, body: &str) -> Option<Vec<String>> {
    let mut found = Vec::new();
    match serde_json::from_str::<Value>(body) {
        Ok(json) => strings(&json, &mut found),
        Err(_) => pieces(body, &mut found),
    }
    let mut marks: Vec<String> = found.iter().map(|p| mark(ws, p)).collect();
    marks.sort_unstable();
    marks.dedup();
    (marks.len() <= MAX_MARKS).then_some(marks)
}

/// The marks of a person's values (e-mails, phones, names, name words), as
/// [`of_answer`] marks them where they appear.
pub fn of_values<'a>(ws: WorkspaceId, values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut marks: Vec<String> = values
        .into_iter()
        .map(|v| v.trim().to_lowercase())
        .filter(|v| !v.is_empty())
        .map(|v| mark(ws, &v))
        .collect();
    marks.sort_unstable();
    marks.dedup();
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_found_by_its_values_and_words_not_by_others() {
        let ws = WorkspaceId(3);
        let answer = r#"{"id":"17","name":"Maria Silva","email":"Maria@Example.com","phone":"5511987654321","notes":"likes tea, call 5511987654321"}"#;
        let marks = of_answer(ws, answer).unwrap();
        let holds = |value: &str| {
            of_values(ws, [value])
                .iter()
                .all(|m| marks.binary_search(m).is_ok())
        };
        assert!(holds("maria@example.com"));
        assert!(holds("5511987654321"));
        assert!(holds("Maria Silva"));
        assert!(holds("silva"), "a word of the name");
        assert!(!holds("ana@example.com"));
        assert!(!holds("tea"), "shorter than a word");
        assert!(
            !of_values(WorkspaceId(4), ["silva"])
                .iter()
                .any(|m| marks.binary_search(m).is_ok()),
            "marks differ per workspace"
        );
        assert!(!marks.iter().any(|m| m.contains("silva")));
    }

    #[test]
    fn an_answer_with_too_many_values_has_no_marks() {
        let many: Vec<String> = (0..MAX_MARKS + 1).map(|i| format!("v{i}")).collect();
        let body = serde_json::to_string(&many).unwrap();
        assert_eq!(of_answer(WorkspaceId(1), &body), None);
    }
}
