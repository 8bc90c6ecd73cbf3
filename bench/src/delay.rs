//! A TCP proxy that holds every chunk for a fixed time in each direction: the
//! store "that far away", as DynamoDB is from a function (a few milliseconds a
//! round trip), where DynamoDB Local on loopback answers in microseconds and
//! serves concurrent requests one after the other on its own CPU. With it, a
//! request that makes two reads one after the other pays two round trips, and
//! two reads side by side pay one, as they do on AWS. (The kernel here has no
//! `netem`, so the delay is this program's.)

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Listens on a free loopback port and forwards to `upstream` (`host:port`)
/// with `delay` each way; answers the proxy's address.
pub async fn start(upstream: String, delay: Duration) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, delay));
                tokio::spawn(pump(server_read, client_write, delay));
            });
        }
    });
    Ok(address)
}

/// Forwards what `from` reads to `to`, each chunk `delay` after it arrived,
/// in order, without holding back the chunks behind it.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due.into()).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx
                    .send((Instant::now() + delay, buffer[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
