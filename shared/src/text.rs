//! Text as search sees it: lowercase, accents removed ("José" is "jose").

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Lowercase without accents or surrounding spaces; inner spaces collapse to one.
pub fn fold(text: &str) -> String {
    let folded: String = text
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .collect::<String>()
        .to_lowercase();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Shortest word a name search matches (the spec: at least 3 letters).
pub const MIN_SEARCH_LETTERS: usize = 3;
/// Words of one name kept in the search index.
pub const MAX_INDEXED_WORDS: usize = 10;

/// The distinct folded words of a name that a search can match, in order.
pub fn search_words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in fold(name).split(|c: char| !c.is_alphanumeric()) {
        if word.chars().count() >= MIN_SEARCH_LETTERS && !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
        if words.len() == MAX_INDEXED_WORDS {
            break;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_accents_and_spaces() {
        assert_eq!(fold("  José  da SILVA "), "jose da silva");
        assert_eq!(fold("Ção Ñandú Über"), "cao nandu uber");
    }

    #[test]
    fn search_words_are_distinct_and_long_enough() {
        assert_eq!(
            search_words("Ana Maria da Silva-Souza ana"),
            ["ana", "maria", "silva", "souza"]
        );
        assert!(search_words("Al Bo").is_empty());
        assert_eq!(search_words(&"word ".repeat(3)).len(), 1);
    }
}
