//! The utility group: the server's time and a diagnostic of the store.

use axum::Json;
use axum::extract::State;
use shared::auth::Caller;
use shared::domain::utility::{self, StoreCheck, Time, UtcTime};
use shared::http::{AppState, Group, Reply};

pub fn group() -> Group {
    Group::new("utility")
        .get("/v3/time", time)
        .get("/v3/time/utc", utc)
        .get("/v3/test-store", test_store)
}

async fn time(_caller: Caller) -> Json<Time> {
    Json(utility::time())
}

async fn utc(_caller: Caller) -> Json<UtcTime> {
    Json(utility::utc())
}

async fn test_store(State(s): State<AppState>, caller: Caller) -> Reply<StoreCheck> {
    Ok(Json(utility::test_store(s.store.as_ref(), &caller).await?))
}
