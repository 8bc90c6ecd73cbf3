//! The context of the request being served: its id, for error bodies and logs
//! written anywhere below the handler, without passing it down every call.

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The current request's id (for error bodies and logs), or "-" outside a request.
pub fn current_request_id() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| "-".to_owned())
}

/// Runs `f` as the request `request_id`.
pub async fn scope<F: std::future::Future>(request_id: String, f: F) -> F::Output {
    REQUEST_ID.scope(request_id, f).await
}
