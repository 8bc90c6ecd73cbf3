//! A request's verdict: where it stands in each bucket, as the IETF
//! `RateLimit` headers say it, and the 429 past one.

use super::Policy;
use crate::error::ApiError;

/// Where a request stands in one bucket.
#[derive(Debug, Clone, Copy)]
pub struct Standing {
    pub name: &'static str,
    pub policy: Policy,
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub reset: u32,
}

/// A request's verdict: where it stands in each bucket, and the wait when
/// one of them is empty.
#[derive(Debug, Default)]
pub struct Admission {
    pub standings: Vec<Standing>,
    pub retry_after: Option<u32>,
    /// The standing of the bucket that refused the request.
    pub(super) refused_by: Option<usize>,
}

impl Admission {
    /// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers).
    pub fn headers(&self) -> Option<(String, String)> {
        if self.standings.is_empty() {
            return None;
        }
        // Written into two buffers: on every answer, where `format!` and a
        // join cost more than the rest of the limiter's work.
        let mut policy = String::with_capacity(64);
        let mut limit = String::with_capacity(64);
        let mut number = itoa::Buffer::new();
        for (i, s) in self.standings.iter().enumerate() {
            if i > 0 {
                policy.push_str(", ");
                limit.push_str(", ");
            }
            for (out, a, b, first, second) in [
                (
                    &mut policy,
                    ";q=",
                    ";w=",
                    u64::from(s.policy.quota),
                    u64::from(s.policy.window_seconds),
                ),
                (
                    &mut limit,
                    ";r=",
                    ";t=",
                    u64::from(s.remaining),
                    u64::from(s.reset),
                ),
            ] {
                out.push('"');
                out.push_str(s.name);
                out.push('"');
                out.push_str(a);
                out.push_str(number.format(first));
                out.push_str(b);
                out.push_str(number.format(second));
            }
        }
        Some((policy, limit))
    }

    /// The 429 when a bucket is empty.
    pub fn refusal(&self) -> Option<ApiError> {
        let wait = self.retry_after?;
        let empty = self.standings.get(self.refused_by?)?;
        let (quota, window) = (empty.policy.quota, empty.policy.window_seconds);
        let message = if empty.name == "writes" {
            format!(
                "write budget of the workspace reached: {quota} items per {window} s; retry in {wait} s"
            )
        } else {
            format!(
                "rate limit of the {} reached: {quota} requests per {window} s; retry in {wait} s",
                empty.name
            )
        };
        Some(ApiError::new(http::StatusCode::TOO_MANY_REQUESTS, message).retry_after(wait))
    }
}
