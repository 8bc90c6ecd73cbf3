//! The context of the request being served: its id, for error bodies and logs
//! written anywhere below the handler, without passing it down every call; and
//! its token check while that is pending (the store and the answer wait for it,
//! see `auth::check`).

use std::sync::OnceLock;

use crate::auth::TokenCheck;

struct Current {
    id: String,
    token: OnceLock<TokenCheck>,
}

tokio::task_local! {
    static REQUEST: Current;
}

/// The current request's id (for error bodies and logs), or "-" outside a request.
pub fn current_request_id() -> String {
    request_id().unwrap_or_else(|| "-".to_owned())
}

/// The id of the request being served, if any.
pub fn request_id() -> Option<String> {
    REQUEST.try_with(|r| r.id.clone()).ok()
}

/// Runs `f` as the request `request_id`.
pub async fn scope<F: std::future::Future>(request_id: String, f: F) -> F::Output {
    let current = Current {
        id: request_id,
        token: OnceLock::new(),
    };
    REQUEST.scope(current, f).await
}

/// Makes `check` the token check of the current request. False outside a
/// request or when it has one already: the caller then waits for its check.
pub(crate) fn set_token_check(check: &TokenCheck) -> bool {
    REQUEST
        .try_with(|r| r.token.set(check.clone()).is_ok())
        .unwrap_or(false)
}

/// The current request's token check, if it registered one.
pub(crate) fn token_check() -> Option<TokenCheck> {
    REQUEST.try_with(|r| r.token.get().cloned()).ok().flatten()
}
