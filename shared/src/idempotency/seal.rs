//! A kept answer is sealed for the token that made it. The answer of a create
//! may be shown once (a new token's secret, a webhook's `whsec_`), and every
//! answer may hold a person's data: the table keeps neither readable. The key
//! is an HMAC under the token's secret, which only its holder presents; the
//! table keeps only the secret's SHA-256, from which the key cannot be made.
//! So a retry by the same token opens its first answer, and anyone else (a
//! reader of the table or of its backups, another token) holds ciphertext.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD as B64;

/// The sealing key of one token.
pub struct Sealer(LessSafeKey);

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// The sealer of `token`, the bearer secret as the request presented it.
    pub fn of_token(token: &str) -> Self {
        let mac = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
        let derived = hmac::sign(&mac, b"crm idempotency answers v1");
        let key = UnboundKey::new(&AES_256_GCM, derived.as_ref())
            .expect("an HMAC-SHA256 is an AES-256 key's length");
        Self(LessSafeKey::new(key))
    }

    /// `plain` sealed and bound to `record` (the record's key): base64 of the
    /// nonce, the ciphertext and its tag.
    pub fn seal(&self, record: &str, plain: &[u8]) -> Option<String> {
        // A random 96-bit nonce per answer: one token seals far fewer than
        // the 2^32 answers GCM allows under random nonces.
        let nonce: [u8; NONCE_LEN] = rand::random();
        let mut data = plain.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(record.as_bytes()),
                &mut data,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Some(B64.encode(out))
    }

    /// The answer sealed by [`Sealer::seal`] for `record`, or `None` when it
    /// was sealed by another token or for another record.
    pub fn open(&self, record: &str, sealed: &str) -> Option<Vec<u8>> {
        let bytes = B64.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, data) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut data = data.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(record.as_bytes()), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::Sealer;

    #[test]
    fn only_the_same_token_opens_what_it_sealed_for_that_record() {
        let mine = Sealer::of_token("crm_1_mine");
        let sealed = mine.seal("r1", b"{\"token\":\"crm_1_secret\"}").unwrap();
        assert!(!sealed.contains("secret"));
        assert_eq!(
            mine.open("r1", &sealed).unwrap(),
            b"{\"token\":\"crm_1_secret\"}"
        );
        assert_eq!(Sealer::of_token("crm_1_other").open("r1", &sealed), None);
        assert_eq!(mine.open("r2", &sealed), None, "bound to its record");
        assert_ne!(mine.seal("r1", b"x"), mine.seal("r1", b"x"), "a nonce each");
    }
}
