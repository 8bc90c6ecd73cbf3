//! Standard Webhooks signatures (standardwebhooks.com): `v1,` and the
//! base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed by
//! the secret's bytes. During a rotation the header carries one signature
//! per secret, space-separated; a receiver accepts any it can verify.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The prefix of a secret: `whsec_` and the base64 of its bytes.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: 32 random bytes.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The `webhook-signature` header of `body` sent as message `id` at `timestamp`
/// (epoch seconds), one signature per secret.
pub fn signature(secrets: &[&str], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|secret| {
            let key = STANDARD
                .decode(secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret))
                .ok()?;
            let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
            mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
            Some(format!(
                "v1,{}",
                STANDARD.encode(mac.finalize().into_bytes())
            ))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the specification's reference libraries.
    #[test]
    fn signs_as_the_reference_libraries_do() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_rotation_signs_with_both_secrets() {
        let (old, new) = (new_secret(), new_secret());
        assert!(old.starts_with(SECRET_PREFIX) && STANDARD.decode(&old[6..]).unwrap().len() == 32);
        let both = signature(&[&new, &old], "evt_1", 1, "{}");
        let parts: Vec<&str> = both.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], signature(&[&new], "evt_1", 1, "{}"));
        assert_eq!(parts[1], signature(&[&old], "evt_1", 1, "{}"));
    }
}
