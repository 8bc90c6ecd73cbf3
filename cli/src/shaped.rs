//! A request hyper cannot read (a request target of 64 KB or more, a head
//! past its buffer, a line that is not HTTP) never reaches the API: hyper
//! answers it by itself, with an empty body, and closes the connection. Each
//! connection of `crm serve` is wrapped so that such an answer goes out in
//! the API's error shape instead, with a request id, and is logged like any
//! answer. (On AWS, API Gateway answers these before any function runs.)

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The server's listener: its connections come [`Shaped`].
pub struct Listener(pub TcpListener);

impl axum::serve::Listener for Listener {
    type Io = Shaped<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (
            Shaped {
                inner: io,
                pending: Vec::new(),
            },
            addr,
        )
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection whose hyper-made error answers are rewritten.
pub struct Shaped<T> {
    inner: T,
    /// The rest of a rewritten answer, still to write.
    pending: Vec<u8>,
}

/// The answers hyper makes by itself, and what the API says instead.
const REWRITTEN: [(u16, &str, &str); 3] = [
    (
        414,
        "URI Too Long",
        "the request target is longer than the server reads (64 KB)",
    ),
    (
        431,
        "Request Header Fields Too Large",
        "the request's head is larger than the server reads",
    ),
    (400, "Bad Request", "the request is not valid HTTP/1.1"),
];

/// The API's answer in place of hyper's, when `head` is one of hyper's own
/// (an error status with an empty body: the API's errors always have one).
fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    // The status first, on the bytes: every answer's writes pass here, and
    // only three statuses can be hyper's own.
    let code = head.strip_prefix(b"HTTP/1.1 ")?.get(..4)?;
    let (status, error, message) = REWRITTEN.into_iter().find(|(status, ..)| {
        let digits = [status / 100, status / 10 % 10, status % 10].map(|d| b'0' + d as u8);
        code[..3] == digits && code[3] == b' '
    })?;
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")? + 2;
    let text = std::str::from_utf8(&head[..end]).ok()?;
    if !text
        .to_ascii_lowercase()
        .contains("\r\ncontent-length: 0\r\n")
    {
        return None;
    }
    let request_id = shared::ids::new_ulid();
    tracing::info!(request_id = %request_id, route = "unread", status, "request");
    let body = serde_json::json!({
        "statusCode": status, "error": error, "message": message, "requestId": request_id,
    })
    .to_string();
    Some(
        format!(
            "HTTP/1.1 {status} {error}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             x-request-id: {request_id}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl<T: AsyncWrite + Unpin> Shaped<T> {
    /// Writes what is left of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Shaped<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Shaped<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        if let Some(answer) = rewrite(buf) {
            // hyper's bytes count as written; the API's go out in their place.
            self.pending = answer;
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    /// Vectored, as the socket is: hyper then writes an answer's head and
    /// body without first copying them into one buffer.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        if let Some(answer) = bufs.iter().find(|b| !b.is_empty()).and_then(|b| rewrite(b)) {
            self.pending = answer;
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
