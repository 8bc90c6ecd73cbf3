//! Policies: a bucket's quota over its window, a workspace's limits, and
//! the limits an operator stores for a workspace.

use serde::{Deserialize, Serialize};
use serde_json::json;
use validator::Validate;

use super::Limiter;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::store::{Store, Write};

/// Requests taken from a bucket per write: with two buckets per request, one
/// write per ten requests. A larger quota leases a twentieth of itself at
/// once (at most [`MAX_LEASE`]), so a busy bucket writes less; a slower one
/// no more than it refills over [`LEASE_TIME_US`] ([`Policy::lease_size`]).
pub const LEASE: u32 = 20;
pub const MAX_LEASE: u32 = 1000;
/// How long a lease's requests may be served: then the instance leases
/// again (reading the bucket and the workspace's limits anew), and gives
/// back what it did not serve.
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
    pub(super) fn window_us(self) -> i64 {
        i64::from(self.window_seconds.max(1)) * 1_000_000
    }

    /// The bucket time `requests` take: `window / quota` each, in whole
    /// microseconds rounded down, so that [`Self::left`] counts them back
    /// exactly (integers throughout: no request lost to rounding).
    pub(super) fn time_of(self, requests: u32) -> i64 {
        i64::from(requests) * self.window_us() / i64::from(self.quota.max(1))
    }

    /// The bucket time `requests` need, rounded up: how long to wait for them.
    pub(super) fn time_for(self, requests: u32) -> i64 {
        let quota = i64::from(self.quota.max(1));
        (i64::from(requests) * self.window_us() + quota - 1) / quota
    }

    /// The requests `time` of the bucket holds, rounded down.
    pub(super) fn fits(self, time: i64) -> u32 {
        let requests = time.max(0) * i64::from(self.quota) / self.window_us();
        u32::try_from(requests).unwrap_or(u32::MAX)
    }

    /// Requests left at `now` when the bucket stands at `tat`.
    pub(super) fn left(self, tat: i64, now: i64) -> u32 {
        let room = (now + self.window_us() - tat.max(now)).max(0);
        u32::try_from(room * i64::from(self.quota) / self.window_us()).unwrap_or(u32::MAX)
    }

    /// Requests a lease takes when the bucket has them free: a twentieth of
    /// the quota, at least [`LEASE`] and at most `most` (its kind's,
    /// [`Kind::most_leased`]), but never more than the bucket refills over a
    /// lease's life ([`LEASE_TIME_US`]), so an instance that stops serving
    /// keeps little (one request at a time at 20 per hour; 8 at 20 per 5 s;
    /// 20 at 100 per 10 s).
    pub(super) fn lease_size(self, most: u32) -> u32 {
        let by_quota = (self.quota / 20).clamp(LEASE, most.max(LEASE));
        let by_time = LEASE_TIME_US * i64::from(self.quota) / self.window_us();
        by_quota
            .min(u32::try_from(by_time).unwrap_or(u32::MAX))
            .max(1)
    }

    /// `100/10s`, within the bounds an operator's own limits have (a zero
    /// quota or window would be no limit at all, or no requests).
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (quota, window) = text.split_once('/')?;
        let window = window.strip_suffix('s')?;
        let policy = Policy {
            quota: quota.trim().parse().ok()?,
            window_seconds: window.trim().parse().ok()?,
        };
        policy.validate().ok().map(|()| policy)
    }
}

/// A workspace's limits: requests per token, requests for the workspace as
/// a whole, and the items its writes may put a second (its write budget).
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
    /// The workspace's write budget: items (by the KB) its writes put, API
    /// and imports together (`ratelimit::Budgeted`). Stored limits set
    /// before it existed read back with the default.
    #[serde(default = "default_writes")]
    #[validate(nested)]
    pub writes: Policy,
}

fn default_writes() -> Policy {
    Limits::DEFAULT.writes
}

/// Which bucket of a workspace's limits, and who takes from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Token,
    Workspace,
    /// The write budget, taken by API writes.
    Writes,
    /// The write budget, taken by a background job's writes: they leave a
    /// fifth of it free ([`Kind::kept`]), so API writes keep room while an
    /// import runs at the budget.
    JobWrites,
}

impl Kind {
    /// The most a lease of this kind holds: [`MAX_LEASE`] requests, or as
    /// many operations' items of the write budget (an operation takes at
    /// least `OPERATION_FLOOR` of them). Counted in requests, a batch of 100
    /// creates (over 1,000 items) emptied a lease of the budget each time:
    /// one more durable commit a batch on the embedded store, a third of a
    /// batch's throughput on disk.
    pub(super) fn most_leased(self) -> u32 {
        match self {
            Kind::Token | Kind::Workspace => MAX_LEASE,
            Kind::Writes | Kind::JobWrites => MAX_LEASE * super::budget::OPERATION_FLOOR,
        }
    }

    /// What a take of this kind leaves free of a bucket of `policy`.
    pub(super) fn kept(self, policy: Policy) -> u32 {
        match self {
            Kind::JobWrites => policy.quota / 5,
            Kind::Token | Kind::Workspace | Kind::Writes => 0,
        }
    }
}

impl Limits {
    /// The policy of a token's bucket, or of its workspace's.
    pub(super) fn of(self, kind: Kind) -> Policy {
        match kind {
            Kind::Token => self.token,
            Kind::Workspace => self.workspace,
            Kind::Writes | Kind::JobWrites => self.writes,
        }
    }

    pub const DEFAULT: Limits = Limits {
        token: Policy {
            quota: 100,
            window_seconds: 10,
        },
        workspace: Policy {
            quota: 1000,
            window_seconds: 10,
        },
        // Below the partitions' ceiling: docs/plans/tenant-write-rate.md §3.
        writes: Policy {
            quota: 12_000,
            window_seconds: 1,
        },
    };
}

/// A workspace's limits as stored (`keys::rate_limits`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredLimits {
    pub(super) limits: Limits,
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
        // A request's time rounds down and the count rounds down too: no
        // request is lost where the window is not a whole number of
        // microseconds per request (9 per 10 s: 1,111,111.1 µs each).
        let nine = Policy {
            quota: 9,
            window_seconds: 10,
        };
        let mut tat = 0;
        for left in (0..9).rev() {
            tat += nine.time_of(1);
            assert_eq!(nine.left(tat, 0), left);
        }
        assert_eq!(nine.time_for(1), 1_111_112, "a wait rounds up");
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

    #[test]
    fn a_lease_is_never_more_than_its_bucket_refills_over_its_life() {
        let size = |quota, window_seconds| {
            Policy {
                quota,
                window_seconds,
            }
            .lease_size(MAX_LEASE)
        };
        assert_eq!(size(1, 1), 2, "then half of what is free: 1");
        assert_eq!(size(20, 5), 8, "2 s at 4 requests a second");
        assert_eq!(size(20, 3600), 1, "one request every 3 minutes");
        assert_eq!(size(30, 3600), 1);
        assert_eq!(size(100, 10), 20, "the default token's: 20");
        assert_eq!(size(1000, 10), 50, "the default workspace's: a twentieth");
        assert_eq!(size(1_000_000, 1), MAX_LEASE);
    }

    #[test]
    fn a_lease_of_the_write_budget_holds_as_many_operations_as_one_of_requests() {
        let budget = |quota| {
            Policy {
                quota,
                window_seconds: 1,
            }
            .lease_size(Kind::Writes.most_leased())
        };
        assert_eq!(budget(12_000), 600, "the default budget's: a twentieth");
        assert_eq!(
            budget(1_000_000),
            10_000,
            "1,000 operations' floor of items"
        );
        assert_eq!(Kind::JobWrites.most_leased(), Kind::Writes.most_leased());
        assert_eq!(Kind::Token.most_leased(), MAX_LEASE);
    }
}
