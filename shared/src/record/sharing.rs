//! Commits shared by the operations of one request (a batch): each operation
//! runs as it would alone, and when every one of them is either done or
//! waiting at its commit, their writes go out together, packed into as few
//! transactions as DynamoDB allows ([`MAX_TRANSACTION_ITEMS`]), sent with
//! [`Store::write_all`] (one after the other on DynamoDB, one durable commit
//! on the embedded store).
//!
//! - A counter moved by several operations (a list's count, the audit's, a
//!   daily rollup) is one `ADD` of their sum; any other item two operations
//!   write goes into separate transactions, in their order.
//! - Each transaction holds whole operations, so each operation is still all
//!   or nothing. When a transaction fails a condition, its operations commit
//!   again one by one ([`Outcome::Alone`]), so the one that fails is answered
//!   alone and the others land.
//! - The request's guard (an `Idempotency-Key`'s record) moves in the first
//!   transaction; each of the others checks that it did.
//!
//! The operations must not read what another writes (the batch groups them
//! so: `crate::domain::batch`); each reads the store as it stood.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::store::{Condition, MAX_TRANSACTION_ITEMS, Store, StoreError, Write};

/// What became of an operation's commit.
#[derive(Debug)]
pub enum Outcome {
    /// It landed with the others.
    Landed,
    /// Its transaction failed a condition (or it is not of a wave): it
    /// commits its writes, handed back, again on its own.
    Alone(Vec<Write>),
    /// The store failed (or did not say whether it wrote).
    Failed(StoreError),
}

/// The operations of one wave: how many still run (neither done nor
/// waiting at a commit), and the commits waiting.
pub struct Sharing {
    state: Mutex<State>,
    /// The wave's pick of counter shards ([`pick`]).
    pick: u32,
}

struct State {
    running: usize,
    waiting: Vec<Waiting>,
}

struct Waiting {
    /// The operation's place in the wave: commits go out in input order, so
    /// of two operations that meet on a record no claim named, the earlier
    /// lands and the later runs again after it (not the one that happened
    /// to reach its commit first).
    order: usize,
    writes: Vec<Write>,
    resource_id: String,
    reply: oneshot::Sender<Outcome>,
}

tokio::task_local! {
    static SHARING: (Arc<Sharing>, usize);
}

impl Sharing {
    /// A wave of `operations`, each to be run with [`Sharing::run`].
    pub fn new(operations: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                running: operations,
                waiting: Vec::new(),
            }),
            pick: rand::random(),
        })
    }

    /// Runs the wave's operation number `order`: its commits wait for the
    /// others'.
    pub async fn run<F: Future>(
        self: &Arc<Self>,
        store: &dyn Store,
        order: usize,
        f: F,
    ) -> F::Output {
        let output = SHARING.scope((self.clone(), order), f).await;
        let ready = self.stopped(None);
        flush(store, ready).await;
        output
    }

    /// One operation stopped running: done, or waiting at `commit`. The
    /// commits to make now: all of them, once none runs (those operations
    /// count as running again, as they will once answered).
    fn stopped(&self, commit: Option<Waiting>) -> Vec<Waiting> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.running -= 1;
        state.waiting.extend(commit);
        if state.running > 0 {
            return Vec::new();
        }
        let mut ready = std::mem::take(&mut state.waiting);
        state.running += ready.len();
        ready.sort_by_key(|w| w.order);
        ready
    }
}

/// The pick of counter shards for one operation's moves: that of the wave
/// its task belongs to (so a wave's moves add up), or one at random alone.
pub(super) fn shard_pick() -> u32 {
    SHARING
        .try_with(|(sharing, _)| sharing.pick)
        .unwrap_or_else(|_| rand::random())
}

/// Whether this task's operation is one of a wave.
pub(super) fn active() -> bool {
    SHARING.try_with(|_| ()).is_ok()
}

/// Hands the commit of `writes` (of `resource_id`) to the wave this task's
/// operation belongs to, and waits for it; outside a wave, hands them back
/// ([`Outcome::Alone`]). The store is given them borrowed, so a commit
/// alone gets them back as they were, without a copy kept meanwhile (a
/// tenth of a batch's instructions were that copy and its drop).
pub(super) async fn offer(store: &dyn Store, writes: Vec<Write>, resource_id: &str) -> Outcome {
    let Ok((sharing, order)) = SHARING.try_with(|(s, order)| (s.clone(), *order)) else {
        return Outcome::Alone(writes);
    };
    let (reply, outcome) = oneshot::channel();
    let ready = sharing.stopped(Some(Waiting {
        order,
        writes,
        resource_id: resource_id.to_owned(),
        reply,
    }));
    flush(store, ready).await;
    outcome.await.unwrap_or_else(|_| {
        Outcome::Failed(StoreError::Other("a shared commit was dropped".into()))
    })
}

/// One transaction being packed: its writes (and where each item's is, by
/// the hash of its key: a lookup allocates nothing), and the commits it holds.
#[derive(Default)]
struct Packed<'a> {
    /// Borrowed from the operations; a merged `ADD` is its own.
    writes: Vec<Cow<'a, Write>>,
    at: HashMap<u64, usize>,
    holds: Vec<usize>,
}

/// The hash of an item's key, for [`Packed::at`].
fn key_hash(pk: &str, sk: &str) -> u64 {
    use std::hash::BuildHasher;
    static HASHER: std::sync::LazyLock<std::collections::hash_map::RandomState> =
        std::sync::LazyLock::new(Default::default);
    HASHER.hash_one((pk, sk))
}

impl<'a> Packed<'a> {
    /// Where `write` (its key hashed `hash`, [`hash_of`]) goes in it: merged
    /// into an `ADD` of the same counter, new, or nowhere (another write of
    /// the same item is there already, or one of another item whose key
    /// hashes alike: it waits for the next transaction, which is only
    /// dearer).
    fn place(&self, write: &Write, hash: Option<u64>) -> Place {
        let Some(hash) = hash else {
            return Place::Taken;
        };
        match self.at.get(&hash).copied() {
            None => Place::New,
            Some(at) => match (self.writes[at].as_ref(), write) {
                (there @ Write::Add { attribute: a, .. }, Write::Add { attribute: b, .. })
                    if a == b && there.key_parts() == write.key_parts() =>
                {
                    Place::Merge(at)
                }
                _ => Place::Taken,
            },
        }
    }

    /// Takes `writes` whole, if they fit beside what it holds and leave
    /// room for the guard.
    fn take(&mut self, commit: usize, writes: &'a [Write]) -> bool {
        // Each key hashed once: a batch of 100 contacts places 1,500 writes.
        let hashes: Vec<Option<u64>> = writes.iter().map(hash_of).collect();
        let mut new = 0;
        for (write, &hash) in writes.iter().zip(&hashes) {
            match self.place(write, hash) {
                Place::Taken => return false,
                Place::New => new += 1,
                Place::Merge(_) => {}
            }
        }
        if !self.holds.is_empty() && self.writes.len() + new >= MAX_TRANSACTION_ITEMS {
            return false;
        }
        for (write, hash) in writes.iter().zip(hashes) {
            match self.place(write, hash) {
                Place::Merge(at) => {
                    if let (Write::Add { delta, .. }, Write::Add { delta: more, .. }) =
                        (self.writes[at].to_mut(), write)
                    {
                        *delta += more;
                    }
                }
                _ => {
                    if let Some(hash) = hash {
                        self.at.insert(hash, self.writes.len());
                    }
                    self.writes.push(Cow::Borrowed(write));
                }
            }
        }
        self.holds.push(commit);
        true
    }
}

/// The hash of a write's key, for [`Packed::at`] (`None`: it names none).
fn hash_of(write: &Write) -> Option<u64> {
    write.key_parts().map(|(pk, sk)| key_hash(pk, sk))
}

enum Place {
    New,
    Merge(usize),
    Taken,
}

/// Packs and writes `ready`, answering each.
async fn flush(store: &dyn Store, ready: Vec<Waiting>) {
    if ready.is_empty() {
        return;
    }
    let mut writes_of = Vec::with_capacity(ready.len());
    let mut answers = Vec::with_capacity(ready.len());
    for waiting in ready {
        writes_of.push(waiting.writes);
        answers.push((waiting.resource_id, waiting.reply));
    }
    let mut packed: Vec<Packed> = Vec::new();
    for (commit, writes) in writes_of.iter().enumerate() {
        let fits = packed
            .last_mut()
            .is_some_and(|last| last.take(commit, writes));
        if !fits {
            let mut next = Packed::default();
            next.take(commit, writes);
            packed.push(next);
        }
    }
    // A counter moved by +n and -n comes to nothing: no write.
    for p in &mut packed {
        p.writes
            .retain(|w| !matches!(w.as_ref(), Write::Add { delta: 0, .. }));
    }
    // The guard moves with the first transaction; the others check it did.
    let guarded = match super::guard::current(&answers[0].0) {
        None => None,
        Some(Err(e)) => {
            for (_, reply) in answers {
                let _ = reply.send(Outcome::Failed(StoreError::Other(e.message.clone())));
            }
            return;
        }
        Some(Ok(guarded)) => Some(guarded),
    };
    let mut guard_pending = None;
    if let Some(guarded) = guarded {
        let holds = after(&guarded.write);
        for p in packed.iter_mut().skip(1) {
            match &holds {
                Some(check) => p.writes.push(Cow::Owned(check.clone())),
                // A guard that cannot be checked: each commits alone.
                None => p.writes.clear(),
            }
        }
        packed[0].writes.push(Cow::Owned(guarded.write));
        guard_pending = Some(guarded.pending);
    }
    // Whether each transaction had any writes stays, to match the answers
    // to them.
    let written: Vec<bool> = packed.iter().map(|p| !p.writes.is_empty()).collect();
    let transactions: Vec<Vec<Cow<Write>>> = packed
        .iter_mut()
        .map(|p| std::mem::take(&mut p.writes))
        .filter(|t| !t.is_empty())
        .collect();
    let results = store.write_all(&transactions).await;
    drop(transactions);
    let mut results = results.into_iter();
    // What became of each commit: landed, alone (`None`) or failed. One
    // that no transaction took (a write naming no item, or one item twice)
    // commits alone, where the store says what is wrong with it.
    let mut landed: Vec<Result<(), Option<StoreError>>> =
        writes_of.iter().map(|_| Err(None)).collect();
    for (position, p) in packed.iter().enumerate() {
        let result = if !written[position] {
            Err(StoreError::ConditionFailed { index: 0 })
        } else {
            results
                .next()
                .unwrap_or_else(|| Err(StoreError::Other("no answer".into())))
        };
        if position == 0
            && let Some(pending) = guard_pending.take()
        {
            match &result {
                Ok(()) => pending.landed(),
                // Unknown: the request's end settles it.
                Err(StoreError::Uncertain(_)) => {}
                Err(_) => pending.failed(),
            }
        }
        for &commit in &p.holds {
            landed[commit] = match &result {
                Ok(()) => Ok(()),
                Err(StoreError::ConditionFailed { .. } | StoreError::Invalid(_)) => Err(None),
                Err(StoreError::ItemTooLarge) => Err(None),
                Err(e) => Err(Some(copy(e))),
            };
        }
    }
    // The transactions borrowed the writes until here.
    drop(packed);
    for ((landed, writes), (_, reply)) in landed.into_iter().zip(writes_of).zip(answers) {
        let outcome = match landed {
            Ok(()) => Outcome::Landed,
            Err(None) => Outcome::Alone(writes),
            Err(Some(e)) => Outcome::Failed(e),
        };
        let _ = reply.send(outcome);
    }
}

/// The same failure, for each commit of a transaction.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Uncertain(why) => StoreError::Uncertain(why.clone()),
        StoreError::Unavailable(why) => StoreError::Unavailable(why.clone()),
        // A refusal (the write budget's 429) stays itself for every commit:
        // as a 503 each operation's caller would retry at once.
        StoreError::Refused(reason) => match reason.downcast_ref::<crate::error::ApiError>() {
            Some(refusal) => StoreError::Refused(Box::new(refusal.clone())),
            None => StoreError::Unavailable(e.to_string()),
        },
        other => StoreError::Unavailable(other.to_string()),
    }
}

/// The check that the guard's write landed: its item at the version it
/// writes.
fn after(guard: &Write) -> Option<Write> {
    let Write::Put { item, .. } = guard else {
        return None;
    };
    let version = item.get(crate::store::VERSION)?.as_u64()?;
    Some(Write::Check {
        key: guard.key()?,
        condition: Condition::VersionIs(version),
    })
}
