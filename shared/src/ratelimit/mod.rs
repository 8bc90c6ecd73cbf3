//! Rate limits: a token bucket per token and one per workspace, kept in the
//! table, taken in leases (docs/design.md, "Rate limits").
//!
//! A bucket is one item holding its theoretical arrival time (`tat`, GCRA):
//! a bucket of `quota` requests per `window` refills one request every
//! `window / quota`, and a request is allowed while `tat` stays within one
//! window of now. An instance does not write the bucket per request: it
//! takes a lease of up to [`LEASE`] requests at once (one read and one
//! conditional write), serves them from memory for up to [`LEASE_TIME_US`],
//! and leases again when they run out. Leased requests count against the
//! bucket when they are taken, so instances together never pass the quota.
//! If the store fails, the request goes through (logged): a limiter must not
//! take the API down with it.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::json;
use validator::Validate;

use crate::error::{ApiError, ApiResult};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::store::{Key, Store, Write};

mod lease;

use lease::Taken;

/// Requests taken from a bucket per write, at least: with two buckets per
/// request, one write per ten requests. A larger quota leases a twentieth
/// of itself at once (at most [`MAX_LEASE`]), so a busy bucket writes less.
pub const LEASE: u32 = 20;
pub const MAX_LEASE: u32 = 1000;
/// How long a lease's requests may be used: unused ones lapse, so an idle
/// instance holds no share of a bucket for long.
pub const LEASE_TIME_US: i64 = 2_000_000;

/// `quota` requests per `windowSeconds`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Validate,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Requests in a window.
    #[validate(range(min = 1, max = 1_000_000))]
    pub quota: u32,
    /// The window, in seconds.
    #[validate(range(min = 1, max = 3600))]
    pub window_seconds: u32,
}

impl Policy {
    fn window_us(self) -> i64 {
        i64::from(self.window_seconds) * 1_000_000
    }

    /// Microseconds per request: how fast the bucket refills (at least 1 µs
    /// at the largest quota, so a lease's time is exact).
    fn interval_us(self) -> f64 {
        self.window_us() as f64 / f64::from(self.quota.max(1))
    }

    /// Requests left at `now` when the bucket stands at `tat`.
    fn left(self, tat: i64, now: i64) -> u32 {
        let room = (now + self.window_us() - tat.max(now)) as f64;
        (room / self.interval_us()).floor().max(0.0) as u32
    }

    /// `100/10s`, within the bounds an operator's own limits have (a zero
    /// quota or window would be no limit at all, or no requests).
    fn parse(text: &str) -> Option<Self> {
        let (quota, window) = text.split_once('/')?;
        let window = window.strip_suffix('s')?;
        let policy = Policy {
            quota: quota.trim().parse().ok()?,
            window_seconds: window.trim().parse().ok()?,
        };
        policy.validate().ok().map(|()| policy)
    }
}

/// A workspace's limits: per token, and for the workspace as a whole.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Validate,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Each token's bucket.
    #[validate(nested)]
    pub token: Policy,
    /// The bucket all of the workspace's tokens share.
    #[validate(nested)]
    pub workspace: Policy,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        token: Policy {
            quota: 100,
            window_seconds: 10,
        },
        workspace: Policy {
            quota: 1000,
            window_seconds: 10,
        },
    };
}

/// The limits of every process: off, or these defaults (a workspace's own
/// replace them).
pub struct Limiter {
    defaults: Option<Limits>,
    local: Mutex<HashMap<Key, Lease>>,
}

/// What this instance holds of one bucket.
#[derive(Debug, Clone, Copy)]
struct Lease {
    policy: Policy,
    /// The bucket's `tat` as this instance last wrote it.
    tat: i64,
    /// Requests taken and not used yet.
    held: u32,
    until: i64,
}

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
    refused_by: Option<usize>,
}

impl Admission {
    /// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers).
    pub fn headers(&self) -> Option<(String, String)> {
        if self.standings.is_empty() {
            return None;
        }
        let policy = self
            .standings
            .iter()
            .map(|s| {
                format!(
                    "\"{}\";q={};w={}",
                    s.name, s.policy.quota, s.policy.window_seconds
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let limit = self
            .standings
            .iter()
            .map(|s| format!("\"{}\";r={};t={}", s.name, s.remaining, s.reset))
            .collect::<Vec<_>>()
            .join(", ");
        Some((policy, limit))
    }

    /// The 429 when a bucket is empty.
    pub fn refusal(&self) -> Option<ApiError> {
        let wait = self.retry_after?;
        let empty = self.standings.get(self.refused_by?)?;
        Some(
            ApiError::new(
                http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "rate limit of the {} reached: {} requests per {} s; retry in {wait} s",
                    empty.name, empty.policy.quota, empty.policy.window_seconds
                ),
            )
            .retry_after(wait),
        )
    }
}

impl Limiter {
    /// From `CRM_RATE_LIMIT_TOKEN` and `CRM_RATE_LIMIT_WORKSPACE` (`100/10s`,
    /// `1000/10s` by default); `CRM_RATE_LIMITS=off` turns limits off.
    pub fn from_env() -> Self {
        if std::env::var("CRM_RATE_LIMITS").is_ok_and(|v| v == "off") {
            return Self::off();
        }
        let policy = |name: &str, default: Policy| {
            match std::env::var(name) {
            Err(_) => default,
            Ok(text) => Policy::parse(&text).unwrap_or_else(|| {
                tracing::warn!(variable = name, value = %text, "not a rate limit like 100/10s; the default applies");
                default
            }),
        }
        };
        Self::with(Limits {
            token: policy("CRM_RATE_LIMIT_TOKEN", Limits::DEFAULT.token),
            workspace: policy("CRM_RATE_LIMIT_WORKSPACE", Limits::DEFAULT.workspace),
        })
    }

    pub fn with(defaults: Limits) -> Self {
        Self {
            defaults: Some(defaults),
            local: Mutex::default(),
        }
    }

    pub fn off() -> Self {
        Self {
            defaults: None,
            local: Mutex::default(),
        }
    }

    /// Takes `cost` more requests (a batch counts its operations) of
    /// `token`'s bucket (a token's SHA-256 prefix) and of its workspace's,
    /// for a request that took `already` of them. A request never takes more
    /// than a whole bucket (a larger batch waits for a full one). Never fails:
    /// a store error lets the request through.
    pub async fn admit(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        token: &str,
        cost: u32,
        already: u32,
    ) -> Admission {
        let Some(defaults) = self.defaults else {
            return Admission::default();
        };
        let buckets = [
            ("token", keys::rate_bucket(ws, token), true),
            ("workspace", keys::rate_bucket(ws, ""), false),
        ];
        // What this instance holds serves first; the buckets it lacks are
        // leased together (one read, their writes side by side).
        let now = now_us();
        let mut taken: [Option<Taken>; 2] = [None, None];
        let mut wants = Vec::new();
        for (i, (_, key, per_token)) in buckets.iter().enumerate() {
            match self.take_held(key, (cost, already), now) {
                Ok(t) => taken[i] = Some(t),
                Err(kept) => wants.push((
                    i,
                    lease::Want {
                        key: key.clone(),
                        per_token: *per_token,
                        kept,
                    },
                )),
            }
        }
        if !wants.is_empty() {
            let (at, wants): (Vec<usize>, Vec<lease::Want>) = wants.into_iter().unzip();
            match self
                .lease(store, ws, &wants, defaults, (cost, already))
                .await
            {
                Ok(leased) => at
                    .into_iter()
                    .zip(leased)
                    .for_each(|(i, t)| taken[i] = Some(t)),
                Err(e) => {
                    tracing::warn!(error = %e, "rate limiter store failed; request let through")
                }
            }
        }
        let mut admission = Admission::default();
        for ((name, ..), t) in buckets.iter().zip(taken) {
            let Some(Taken {
                policy,
                tat,
                held,
                short,
            }) = t
            else {
                continue;
            };
            let now = now_us();
            admission.standings.push(Standing {
                name,
                policy,
                remaining: policy.left(tat, now) + held,
                reset: ((tat.max(now) - now) as f64 / 1e6).ceil() as u32,
            });
            if short > 0 && admission.refused_by.is_none() {
                // When the bucket will have what this instance lacks.
                let wait = tat.max(now) + (f64::from(short) * policy.interval_us()).ceil() as i64
                    - policy.window_us()
                    - now;
                admission.retry_after = Some(((wait.max(1) as f64) / 1e6).ceil() as u32);
                admission.refused_by = Some(admission.standings.len() - 1);
            }
        }
        admission
    }
}

/// Bucket times are in microseconds since the epoch.
fn now_us() -> i64 {
    ids::now().timestamp_micros()
}

/// A workspace's limits as stored (`keys::rate_limits`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredLimits {
    limits: Limits,
}

/// The limits of workspace `ws`: its own, or the defaults.
pub async fn limits_of(store: &dyn Store, limiter: &Limiter, ws: WorkspaceId) -> ApiResult<Limits> {
    let stored = store.get(&keys::rate_limits(ws), false).await?;
    let defaults = limiter.defaults.unwrap_or(Limits::DEFAULT);
    Ok(match stored {
        Some(item) => {
            serde_json::from_value::<StoredLimits>(item.into())
                .map_err(|e| ApiError::internal(format!("stored limits do not read back: {e}")))?
                .limits
        }
        None => defaults,
    })
}

/// Sets workspace `ws`'s limits (an operator's change; instances take them
/// at their next lease).
pub async fn set_limits(store: &dyn Store, ws: WorkspaceId, limits: Limits) -> ApiResult<Limits> {
    let key = keys::rate_limits(ws);
    let item = json!({ "pk": key.pk, "sk": key.sk, "_type": "RateLimits", "limits": limits });
    let item = item.as_object().cloned().unwrap_or_default();
    store
        .write(vec![Write::Put {
            item,
            condition: None,
        }])
        .await?;
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_one_request_per_interval() {
        let p = Policy {
            quota: 10,
            window_seconds: 10,
        };
        assert_eq!(p.left(0, 0), 10, "full when idle");
        assert_eq!(
            p.left(10_000_000, 0),
            0,
            "empty after a whole window's worth"
        );
        assert_eq!(p.left(10_000_000, 1_000_000), 1, "one more a second later");
        let fast = Policy {
            quota: 1_000_000,
            window_seconds: 1,
        };
        assert_eq!(
            fast.left(20, 0),
            1_000_000 - 20,
            "a lease of 20 takes 20 µs"
        );
        assert_eq!(
            Policy::parse("100/10s"),
            Some(Policy {
                quota: 100,
                window_seconds: 10
            })
        );
        assert_eq!(Policy::parse("100"), None);
        assert_eq!(Policy::parse("0/10s"), None, "no requests at all");
        assert_eq!(Policy::parse("100/0s"), None, "no window: no limit");
    }
}
