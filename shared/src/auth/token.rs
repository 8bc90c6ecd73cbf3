//! The token format: `crm_<workspace>_<32 random base62><6-character checksum>`.

use sha2::{Digest, Sha256};

use crate::ids::{self, WorkspaceId};

/// The recognisable start of every token (secret scanners can look for it).
pub const TOKEN_PREFIX: &str = "crm_";
const TOKEN_RANDOM_CHARS: usize = 32;
const TOKEN_CHECKSUM_CHARS: usize = 6;

/// A new token of `workspace`: `crm_<workspace>_<32 random><6 checksum>`, all
/// base62 after the workspace (190 random bits). The workspace tells a request
/// its tenant before any read; the checksum, of everything before it, lets a
/// mistyped or made-up token be refused with no read at all (as GitHub's
/// tokens are). The checksum is no secret: the stored hash is what proves a token.
pub fn generate_token(workspace: WorkspaceId) -> String {
    let body = format!(
        "{TOKEN_PREFIX}{workspace}_{}",
        ids::random_base62(TOKEN_RANDOM_CHARS)
    );
    let checksum = checksum(&body);
    body + &checksum
}

fn checksum(body: &str) -> String {
    Sha256::digest(body.as_bytes())
        .iter()
        .take(TOKEN_CHECKSUM_CHARS)
        .map(|b| ids::BASE62[usize::from(*b) % ids::BASE62.len()] as char)
        .collect()
}

/// What a bearer token says before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenShape {
    /// `crm_<workspace>_...` with a checksum that holds.
    Current(WorkspaceId),
    /// The earlier format (`crm_` and 40 characters) or a chosen bootstrap token.
    Legacy,
    /// Not a token of this API, or the current format with a checksum that
    /// does not hold: refused unread.
    Malformed,
}

pub fn token_shape(token: &str) -> TokenShape {
    let Some(rest) = token.strip_prefix(TOKEN_PREFIX) else {
        return TokenShape::Malformed;
    };
    if token.len() > 200 {
        return TokenShape::Malformed;
    }
    let Some((workspace, tail)) = rest.split_once('_') else {
        return TokenShape::Legacy;
    };
    let current = !workspace.is_empty()
        && workspace.bytes().all(|b| b.is_ascii_digit())
        && tail.len() == TOKEN_RANDOM_CHARS + TOKEN_CHECKSUM_CHARS
        && tail.bytes().all(|b| b.is_ascii_alphanumeric());
    if !current {
        return TokenShape::Legacy;
    }
    let (body, sum) = token.split_at(token.len() - TOKEN_CHECKSUM_CHARS);
    match workspace.parse::<u64>() {
        Ok(id) if checksum(body) == sum => TokenShape::Current(WorkspaceId(id)),
        _ => TokenShape::Malformed,
    }
}

pub fn hash_token(token: &str) -> String {
    ids::sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_workspace_and_carry_a_checksum() {
        let a = generate_token(WorkspaceId(42));
        let b = generate_token(WorkspaceId(42));
        assert_ne!(a, b);
        assert!(
            a.starts_with("crm_42_") && a.len() == "crm_42_".len() + 38,
            "{a}"
        );
        assert!(a[7..].bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(token_shape(&a), TokenShape::Current(WorkspaceId(42)));
        // Any one character changed is caught by the checksum (or reads as
        // another shape, which the stored hash then refuses).
        for i in 7..a.len() {
            let mut typo = a.clone().into_bytes();
            typo[i] = if typo[i] == b'x' { b'y' } else { b'x' };
            let typo = String::from_utf8(typo).unwrap();
            assert_eq!(token_shape(&typo), TokenShape::Malformed, "{typo}");
        }
        // Another workspace in a real token: the checksum no longer holds.
        assert_eq!(
            token_shape(&a.replacen("crm_42_", "crm_43_", 1)),
            TokenShape::Malformed
        );
        // Earlier tokens and chosen bootstrap tokens take the earlier path.
        assert_eq!(
            token_shape(&format!("crm_{}", "a".repeat(40))),
            TokenShape::Legacy
        );
        assert_eq!(
            token_shape("crm_local_dev_token_0123456789"),
            TokenShape::Legacy
        );
        assert_eq!(token_shape("ghp_0123456789"), TokenShape::Malformed);
        assert_eq!(hash_token(&a).len(), 64);
        // The published SHA-256 test vector of "abc".
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
