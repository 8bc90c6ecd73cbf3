//! `crm serve` started for a benchmark, and a keep-alive HTTP/1.1
//! connection to it (shared by `bench-local` and `bench-webhooks`).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub const TOKEN: &str = "crm_bench_local_token_0123456789";

pub struct Serving {
    pub child: tokio::process::Child,
    pub port: u16,
}

impl Serving {
    /// SIGKILL: a crash.
    pub async fn crash(mut self) {
        let _ = self.child.kill().await;
    }

    /// SIGTERM, as Ctrl-C: the server stops cleanly.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `crm serve` and answers the time until it accepts connections.
pub async fn serve(crm: &Path, args: &[&str]) -> (Serving, Duration) {
    serve_with(crm, args, &[]).await
}

/// [`serve`] with more environment.
pub async fn serve_with(crm: &Path, args: &[&str], env: &[(&str, &str)]) -> (Serving, Duration) {
    let port = free_port();
    let mut command = tokio::process::Command::new(crm);
    command
        .arg("serve")
        .args(["--port", &port.to_string()])
        .args(args)
        .envs(env.iter().copied());
    start(command, port).await
}

pub async fn start(mut command: tokio::process::Command, port: u16) -> (Serving, Duration) {
    let started = Instant::now();
    let child = command
        .env("CRM_BOOTSTRAP_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        // The limiter as deployed, with room for the bench's rate.
        .env("CRM_RATE_LIMIT_TOKEN", "1000000/1s")
        .env("CRM_RATE_LIMIT_WORKSPACE", "1000000/1s")
        .env("CRM_WRITE_BUDGET", "1000000/1s")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("crm starts");
    loop {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server did not start"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    (Serving { child, port }, started.elapsed())
}

/// One keep-alive HTTP/1.1 connection, calling with one token.
pub struct Conn {
    stream: BufReader<TcpStream>,
    token: String,
}

impl Conn {
    pub async fn open(port: u16, token: &str) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream: BufReader::new(stream),
            token: token.to_owned(),
        }
    }

    pub async fn call(&mut self, method: &str, path: &str, body: &str) -> (u16, String) {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.token,
            body.len()
        );
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        self.stream.read_line(&mut line).await.unwrap();
        let status = line.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let mut length = 0;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}
