//! The delivery slots of an endpoint: items that each hold one delivery at
//! a time, with a lease, so that at most `CRM_WEBHOOK_CONCURRENCY`
//! deliveries go to one endpoint at once, and a sender that died frees its
//! slot when the lease ends.

use super::record::Webhook;
use crate::error::ApiResult;
use crate::ids;
use crate::keys;
use crate::outbound;
use crate::store::{Condition, Item, Key, Store, StoreError, Write};

/// A slot's lease lasts the attempt's timeout and this.
const LEASE_MARGIN: std::time::Duration = std::time::Duration::from_secs(15);

pub(super) struct Slot {
    key: Key,
    version: u64,
}

/// A free slot of `webhook`'s, taken; `None`: all busy.
pub(super) async fn take(
    store: &dyn Store,
    webhook: &Webhook,
    settings: &outbound::Settings,
) -> ApiResult<Option<Slot>> {
    let n = settings.concurrency.max(1);
    let start = rand::random_range(0..n);
    let until = ids::now()
        + chrono::Duration::from_std(settings.timeout + LEASE_MARGIN).unwrap_or_default();
    for i in 0..n {
        let key = keys::webhook_slot(webhook.workspace_id, &webhook.id, (start + i) % n);
        let version = u64::from(rand::random::<u32>());
        let mut item = Item::new();
        item.insert(crate::store::PK.into(), key.pk.clone().into());
        item.insert(crate::store::SK.into(), key.sk.clone().into());
        item.insert(crate::store::TYPE.into(), "WebhookSlot".into());
        item.insert("until".into(), until.timestamp_millis().into());
        item.insert("version".into(), version.into());
        for _ in 0..2 {
            let put = Write::Put {
                item: item.clone(),
                condition: Some(Condition::NotExists),
            };
            match store.write(vec![put]).await {
                Ok(()) => return Ok(Some(Slot { key, version })),
                Err(StoreError::ConditionFailed { .. }) => {
                    if !free_if_stale(store, &key).await? {
                        break;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(None)
}

/// Frees the slot at `key` when its lease ended; `true`: freed.
async fn free_if_stale(store: &dyn Store, key: &Key) -> ApiResult<bool> {
    let Some(held) = store.get(key, true).await? else {
        return Ok(true);
    };
    let until = held.get("until").and_then(|u| u.as_i64()).unwrap_or(0);
    let version = held.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if until > ids::now().timestamp_millis() {
        return Ok(false);
    }
    let delete = Write::Delete {
        key: key.clone(),
        condition: Some(Condition::VersionIs(version)),
    };
    match store.write(vec![delete]).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn free(store: &dyn Store, slot: Slot) {
    let delete = Write::Delete {
        key: slot.key,
        condition: Some(Condition::VersionIs(slot.version)),
    };
    if let Err(e) = store.write(vec![delete]).await {
        tracing::warn!(error = %e, "a delivery slot was not freed; its lease frees it");
    }
}
