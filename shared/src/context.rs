//! The context of the request being served: its id, for error bodies and logs
//! written anywhere below the handler, without passing it down every call;
//! and its gate while that is pending: what the request's store calls and its
//! answer wait for (the token check, `auth::check`, registers itself here;
//! this layer sits below auth and does not name it); and what a layer
//! below the handler leaves for the answer's headers (the write budget's
//! standing, `ratelimit::Budgeted`).

use std::any::Any;
use std::sync::{Mutex, OnceLock};

struct Current {
    id: String,
    gate: OnceLock<Box<dyn Any + Send + Sync>>,
    note: Mutex<Option<Box<dyn Any + Send + Sync>>>,
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
        gate: OnceLock::new(),
        note: Mutex::new(None),
    };
    REQUEST.scope(current, f).await
}

/// Makes `gate` the gate of the current request. False outside a request or
/// when it has one already: the caller then settles its gate itself.
pub fn set_gate<T: Any + Send + Sync>(gate: T) -> bool {
    REQUEST
        .try_with(|r| r.gate.set(Box::new(gate)).is_ok())
        .unwrap_or(false)
}

/// The current request's gate, if it registered one of type `T`.
pub fn gate<T: Any + Clone>() -> Option<T> {
    REQUEST
        .try_with(|r| r.gate.get()?.downcast_ref::<T>().cloned())
        .ok()
        .flatten()
}

/// Leaves `note` for the current request's answer, in place of the last
/// one (nothing outside a request).
pub fn leave_note<T: Any + Send + Sync>(note: T) {
    let _ = REQUEST.try_with(|r| {
        *r.note.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(note));
    });
}

/// The note left for the current request's answer, if one of type `T`.
pub fn note<T: Any + Clone>() -> Option<T> {
    REQUEST
        .try_with(|r| {
            let note = r.note.lock().unwrap_or_else(|e| e.into_inner());
            note.as_ref()?.downcast_ref::<T>().cloned()
        })
        .ok()
        .flatten()
}
