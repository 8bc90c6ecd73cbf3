//! Deals of a migration or of the demo, through `crm load`.

use async_trait::async_trait;

use super::Deal;
use super::input::{self, DealCreate, DealPatch};
use super::write::{insert, update};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::keys;
use crate::keys::DealId;
use crate::load::{LineType, Loadable, RawLine, WithId};
use crate::store::Store;

/// A `deal` line: `id` and the create body of `POST /v3/deals`, under the same
/// rules (its contact a contact of the workspace, loaded on an earlier line).
/// Loaded again, the line is a PATCH body: the deal takes the fields the line
/// names (no write when it has them already).
#[async_trait]
impl Loadable for WithId<RawLine<Deal>> {
    const TYPE: &'static str = "deal";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let key = keys::deal(caller.workspace_id, DealId(self.id));
        self.create_or_update(
            store,
            &key,
            |id, line, stamps| async move {
                let line: DealCreate = line.read()?;
                let now = crate::ids::now();
                let fields = input::created(store, caller.workspace_id, line, now).await?;
                insert(store, caller, DealId(id), &fields, stamps).await
            },
            |id, line| async move { update(store, caller, DealId(id), line.read::<DealPatch>()?).await },
        )
        .await
    }
}

/// The `crm load` lines of deals: `deal`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<WithId<RawLine<Deal>>>()]
}
