//! The HTTP side of `latscope monitor`: `hyper` (HTTP/1.1 on a single-threaded tokio runtime, in its own
//! thread) serves `GET /metrics` from the latest snapshot, in the format the request's `Accept` header
//! negotiates; every other path is 404, every other method 405. It never touches the measurement (it
//! only reads the published snapshot) and its memory is bounded whatever clients do:
//! - a request head larger than [`MAX_HEAD`] is refused (431) without being kept;
//! - a client has [`HEAD_TIMEOUT`] to send a request head and [`CONNECTION_TIMEOUT`] in all;
//! - at most [`MAX_CONNECTIONS`] connections are open at once; the ones beyond are closed at once.

use super::{log, Shared};
use crate::error::CliError;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use latscope_report::prometheus::{render, Exposition};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

/// The largest request head (request line and headers) read; hyper's smallest buffer.
pub const MAX_HEAD: usize = 8192;
/// How long a client may take to send a request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may stay open (Prometheus reconnects: its scrapes take milliseconds).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 128;
/// How often the accepting loop looks at the stop flag.
const CHECK_DONE: Duration = Duration::from_millis(200);

/// The bound socket, before the measurement starts (so a port in use ends the run at once).
#[derive(Debug)]
pub struct Server(TcpListener);

/// Binds the server's address.
pub fn bind(addr: SocketAddr) -> Result<Server, CliError> {
    let fail = |e: std::io::Error| {
        CliError(format!("--listen {addr}: cannot serve there ({e}); pick a free port, e.g. --listen 127.0.0.1:9465"))
    };
    let listener = TcpListener::bind(addr).map_err(fail)?;
    listener.set_nonblocking(true).map_err(fail)?;
    Ok(Server(listener))
}

/// Answers requests until `done`.
pub fn serve(server: &Server, shared: &Shared, done: &AtomicBool) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() {
        Ok(r) => r,
        Err(e) => {
            log(&format!("monitor: HTTP server: cannot start ({e}); the metrics are not served"));
            return;
        }
    };
    runtime.block_on(accept_loop(server, shared, done));
    // Dropping the runtime closes every connection still open.
}

async fn accept_loop(server: &Server, shared: &Shared, done: &AtomicBool) {
    let listener = match server.0.try_clone().and_then(tokio::net::TcpListener::from_std) {
        Ok(l) => l,
        Err(e) => {
            log(&format!("monitor: HTTP server: cannot listen ({e}); the metrics are not served"));
            return;
        }
    };
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut said_full = false;
    while !done.load(Ordering::SeqCst) {
        let (stream, _) = match tokio::time::timeout(CHECK_DONE, listener.accept()).await {
            Err(_) => continue,
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                // Out of file descriptors and the like: wait instead of spinning.
                log(&format!("monitor: HTTP server: {e}"));
                tokio::time::sleep(CHECK_DONE).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            if !said_full {
                log(&format!("monitor: HTTP server: {MAX_CONNECTIONS} connections open; closing the ones beyond"));
                said_full = true;
            }
            drop(stream);
            continue;
        };
        said_full = false;
        let shared = Arc::clone(shared);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let r = answer(&req, &shared);
                async move { Ok::<_, Infallible>(r) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(stream), service);
            // A client that goes away, sends garbage or stalls is its own business.
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            drop(permit);
        });
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: impl Into<Bytes>, headers: &[(hyper::header::HeaderName, &'static str)]) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    for (name, value) in headers {
        r.headers_mut().insert(name, HeaderValue::from_static(value));
    }
    r
}

fn answer(req: &Request<Incoming>, shared: &Shared) -> Reply {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    match (get, req.uri().path()) {
        (true, "/metrics") => {
            let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
            let format = Exposition::negotiate(accept);
            let snapshot = shared.lock().unwrap_or_else(PoisonError::into_inner).clone();
            reply(StatusCode::OK, render(&snapshot, format), &[(CONTENT_TYPE, format.content_type())])
        }
        (true, "/") => reply(StatusCode::OK, "latscope monitor: the metrics are at /metrics\n", &[]),
        (true, _) => reply(StatusCode::NOT_FOUND, "not found: the metrics are at /metrics\n", &[]),
        (false, _) => reply(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD are served\n", &[(ALLOW, "GET, HEAD")]),
    }
}
