//! The HTTP side of `latscope monitor`: `tiny_http` serves `GET /metrics` from the latest snapshot, in the
//! format the request's `Accept` header negotiates; every other path is 404, every other method 405.
//! One thread answers requests one at a time, so scrapes cannot pile up work; it never touches the
//! measurement (it only reads the published snapshot).

use super::{log, Shared};
use crate::error::CliError;
use latscope_report::prometheus::{render, Exposition};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::PoisonError;
use std::time::Duration;
use tiny_http::{Header, Method, Request, Response, Server};

/// Binds the server (before the measurement starts, so a port in use ends the run at once).
pub fn bind(addr: SocketAddr) -> Result<Server, CliError> {
    Server::http(addr).map_err(|e| {
        CliError(format!("--listen {addr}: cannot serve there ({e}); pick a free port, e.g. --listen 127.0.0.1:9465"))
    })
}

/// Answers requests until `done`.
pub fn serve(server: &Server, shared: &Shared, done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(req)) => answer(req, shared),
            Ok(None) => {}
            Err(e) => {
                log(&format!("monitor: HTTP server: {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

type Reply = Response<std::io::Cursor<Vec<u8>>>;

/// Adds a header (ASCII constants and content types chosen here: never refused).
fn with(r: Reply, name: &str, value: &str) -> Reply {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => r.with_header(h),
        Err(()) => r,
    }
}

fn answer(req: Request, shared: &Shared) {
    let path = req.url().split('?').next().unwrap_or_default().to_string();
    let method = req.method().clone();
    let response = match (&method, path.as_str()) {
        (Method::Get | Method::Head, "/metrics") => {
            let accept = req.headers().iter().find(|h| h.field.equiv("Accept")).map(|h| h.value.as_str().to_string());
            let format = Exposition::negotiate(accept.as_deref());
            let snapshot = shared.lock().unwrap_or_else(PoisonError::into_inner).clone();
            with(Response::from_string(render(&snapshot, format)), "Content-Type", format.content_type())
        }
        (Method::Get | Method::Head, "/") => Response::from_string("latscope monitor: the metrics are at /metrics\n"),
        (Method::Get | Method::Head, _) => {
            Response::from_string("not found: the metrics are at /metrics\n").with_status_code(404)
        }
        _ => with(Response::from_string("only GET and HEAD are served\n").with_status_code(405), "Allow", "GET, HEAD"),
    };
    // A client that went away is its own business.
    let _ = req.respond(response);
}
