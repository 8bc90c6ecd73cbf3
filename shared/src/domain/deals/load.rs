//! Deals of a migration or of the demo, through `crm load`.

use async_trait::async_trait;

use super::input::DealInput;
use super::write::{insert, new_fields, update};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::keys;
use crate::load::{LineType, Loadable, WithId};
use crate::store::Store;

/// A `deal` line: `id` and the create body of `POST /v3/deals`, under the same
/// rules (its contact a contact of the workspace, loaded on an earlier line).
/// Loaded again, the deal takes the fields the line names (no write when it
/// has them already).
#[async_trait]
impl Loadable for WithId<DealInput> {
    const TYPE: &'static str = "deal";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let key = keys::deal(caller.workspace_id, self.id);
        self.create_or_update(
            store,
            &key,
            |id, line, stamps| async move {
                let fields = new_fields(store, caller, line).await?;
                insert(store, caller, id, &fields, stamps).await
            },
            |id, line| update(store, caller, id, line),
        )
        .await
    }
}

/// The `crm load` lines of deals: `deal`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<WithId<DealInput>>()]
}
