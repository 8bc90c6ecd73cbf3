//! What each Lambda function needs of AWS, declared beside its code: a
//! group's in its `group()` ([`crate::http::Group::deployed`]), a worker's
//! in its crate. `infra/functions.json`, the CDK app's list of functions, is
//! generated from these declarations (tests/tests/infra.rs), and the SAM
//! template is held to the CDK app's synthesized stack (tests/tests/cdk.rs):
//! a function's permissions are written once, in Rust, where its code shows
//! what it reads and writes (decision 0036).

use serde::Serialize;

/// Reads by key and by Query.
pub const READ: &[&str] = &["dynamodb:GetItem", "dynamodb:Query"];
/// Writes of single items and transactions of them.
pub const WRITE: &[&str] = &[
    "dynamodb:PutItem",
    "dynamodb:DeleteItem",
    "dynamodb:UpdateItem",
    "dynamodb:ConditionCheckItem",
];
/// Reads of many keys in one request.
pub const BATCH: &[&str] = &["dynamodb:BatchGetItem"];

/// A queue a function sends to, or that invokes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Queue {
    /// Background jobs (`CRM_JOB_QUEUE_URL`).
    Jobs,
    /// Webhook deliveries (`CRM_WEBHOOK_QUEUE_URL`).
    Deliveries,
}

/// What invokes a function that has no routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    Jobs,
    Deliveries,
    /// The table's stream (new event items).
    Stream,
}

/// What a function does with the bulk files (`CRM_FILES_BUCKET`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Files {
    /// Presigns their URLs.
    Presign,
    /// Also reads, writes and removes them.
    Work,
}

/// One Lambda function as the stack declares it (the fields of
/// `FunctionSpec` in infra/cdk/lib/functions.ts).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Function {
    /// The Cargo binary, which is also its group's name.
    pub binary: &'static str,
    pub description: &'static str,
    /// DynamoDB actions on the table (none: no table access).
    pub actions: Vec<&'static str>,
    /// Whether the actions extend to the gsi1 index.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub index: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sends: Option<Queue>,
    /// Gets `CRM_CHECKOUT_BASE_URL`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub checkout: bool,
    /// Seconds (10 unless said).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Files>,
}

impl Function {
    /// A function that touches neither the table nor anything else.
    pub fn new(binary: &'static str, description: &'static str) -> Self {
        Self {
            binary,
            description,
            actions: Vec::new(),
            index: false,
            sends: None,
            checkout: false,
            timeout: None,
            trigger: None,
            files: None,
        }
    }

    /// May use these DynamoDB actions on the table: `&[READ, WRITE]`, or
    /// some actions of their own.
    pub fn actions(mut self, actions: &[&[&'static str]]) -> Self {
        self.actions.extend(actions.concat());
        self
    }

    /// Its actions extend to the gsi1 index.
    pub fn index(mut self) -> Self {
        self.index = true;
        self
    }

    pub fn sends(mut self, queue: Queue) -> Self {
        self.sends = Some(queue);
        self
    }

    pub fn checkout(mut self) -> Self {
        self.checkout = true;
        self
    }

    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout = Some(seconds);
        self
    }

    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = Some(trigger);
        self
    }

    pub fn files(mut self, files: Files) -> Self {
        self.files = Some(files);
        self
    }
}
