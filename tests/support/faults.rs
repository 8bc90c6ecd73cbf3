//! Faults of the store, on both backends, for the tests of what a write
//! promises when the network fails ([`fault_test!`]).
//!
//! On DynamoDB Local the faults are real: a [`FaultProxy`] sits between the
//! store and DynamoDB Local, and the store's own attempts meet them. The
//! embedded store runs in the process and loses no answer, so there the
//! faults are the outcomes a lost answer leaves at the store's boundary,
//! from a wrapper ([`FaultyStore`]): a write refused (nothing written), or a
//! write applied whose outcome the store never learned
//! ([`StoreError::Uncertain`]). The same tests hold both.
//!
//! [`fault_test!`]: crate::fault_test

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shared::store::{Item, Key, Metrics, Page, Query, SharedStore, Store, StoreError, Write};

pub use crate::fault_proxy::{Fault, FaultProxy};

/// How long one DynamoDB call may take in the fault tests, and how late a
/// slow fault is: past it.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);
pub const SLOW: Duration = Duration::from_millis(700);

/// A kind of write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Several items at once (a transaction).
    Transaction,
    /// One item (an idempotency key's claim and answer).
    Put,
}

impl Op {
    fn operation(self) -> &'static str {
        match self {
            Op::Transaction => "TransactWriteItems",
            Op::Put => "PutItem",
        }
    }

    fn of(writes: &[Write]) -> Self {
        if writes.len() > 1 {
            Op::Transaction
        } else {
            Op::Put
        }
    }
}

/// The faults of one test app.
pub enum Faults {
    Proxy(FaultProxy),
    Store(Arc<FaultyStore>),
}

impl Faults {
    /// The next attempts of a write of `op` meet `faults`, one each, and
    /// the store learns the write's outcome by sending it again (DynamoDB);
    /// the embedded store loses no answer to begin with.
    pub fn meet(&self, op: Op, faults: &[Fault]) {
        if let Faults::Proxy(proxy) = self {
            proxy.next(op.operation(), faults);
        }
    }

    /// The next write of `op` is applied and every answer to it is lost:
    /// the store cannot learn its outcome.
    pub fn lose_every_answer(&self, op: Op) {
        match self {
            Faults::Proxy(proxy) => proxy.every_attempt_of_next(op.operation(), Fault::DropAfter),
            Faults::Store(store) => store.plan.lock().unwrap().lose = Some(op),
        }
    }

    /// Every call meets a fault with probability `rate` (seeded).
    pub fn random(&self, seed: u64, rate: f64) {
        match self {
            Faults::Proxy(proxy) => proxy.random(seed, rate),
            Faults::Store(store) => {
                store.plan.lock().unwrap().random = Some((StdRng::seed_from_u64(seed), rate))
            }
        }
    }

    /// No more faults.
    pub fn calm(&self) {
        match self {
            Faults::Proxy(proxy) => proxy.calm(),
            Faults::Store(store) => {
                let mut plan = store.plan.lock().unwrap();
                plan.lose = None;
                plan.random = None;
            }
        }
    }

    /// How many faults were met, for asserting that a test met some.
    pub fn met(&self) -> u64 {
        match self {
            Faults::Proxy(proxy) => Fault::ALL.iter().map(|&f| proxy.met(f)).sum(),
            Faults::Store(store) => store.plan.lock().unwrap().met,
        }
    }

    pub fn report(&self) -> String {
        match self {
            Faults::Proxy(proxy) => proxy.report(),
            Faults::Store(store) => format!("{} faults", store.plan.lock().unwrap().met),
        }
    }
}

#[derive(Default)]
struct StorePlan {
    lose: Option<Op>,
    random: Option<(StdRng, f64)>,
    met: u64,
}

/// What a call meets.
enum Met {
    Nothing,
    /// Refused: nothing written.
    Refused,
    /// Written, and the outcome never learned.
    Lost,
}

/// A store whose calls fail as a lost answer leaves them (see the module).
pub struct FaultyStore {
    inner: SharedStore,
    plan: Mutex<StorePlan>,
}

impl FaultyStore {
    pub fn new(inner: SharedStore) -> Self {
        Self {
            inner,
            plan: Mutex::new(StorePlan::default()),
        }
    }

    fn meet(&self, write: Option<Op>) -> Met {
        let mut plan = self.plan.lock().unwrap();
        let met = if write.is_some() && plan.lose == write {
            plan.lose = None;
            Met::Lost
        } else if let Some((rng, rate)) = &mut plan.random {
            match (rng.random_bool(*rate), write) {
                (false, _) => Met::Nothing,
                (true, Some(_)) if rng.random_bool(0.5) => Met::Lost,
                (true, _) => Met::Refused,
            }
        } else {
            Met::Nothing
        };
        if !matches!(met, Met::Nothing) {
            plan.met += 1;
        }
        met
    }

    fn refused() -> StoreError {
        StoreError::Unavailable("refused by the fault wrapper".into())
    }
}

#[async_trait]
impl Store for FaultyStore {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        match self.meet(None) {
            Met::Nothing => self.inner.get(key, consistent).await,
            _ => Err(Self::refused()),
        }
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        match self.meet(None) {
            Met::Nothing => self.inner.batch_get(keys).await,
            _ => Err(Self::refused()),
        }
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        match self.meet(None) {
            Met::Nothing => self.inner.query(query).await,
            _ => Err(Self::refused()),
        }
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        match self.meet(Some(Op::of(&writes))) {
            Met::Nothing => self.inner.write(writes).await,
            Met::Refused => Err(Self::refused()),
            Met::Lost => {
                self.inner.write(writes).await?;
                Err(StoreError::Uncertain(
                    "answer lost by the fault wrapper".into(),
                ))
            }
        }
    }

    async fn purge(&self) -> Result<(), StoreError> {
        self.inner.purge().await
    }

    fn metrics(&self) -> &Metrics {
        self.inner.metrics()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}
