//! What the generator says and what it expects back: HTTP/1.1 keep-alive `GET`s, or the
//! key-value protocol of `server_tokio_shape` (`workload/server/client.rs`).

use std::io::Write as _;

/// A protocol the generator speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protocol {
    /// `GET <path> HTTP/1.1` with keep-alive; a response must be `200` with a
    /// `Content-Length` body.
    Http {
        /// The request path.
        path: String,
    },
    /// `GET k<key>\n` or, one request in ten, `SET k<key> v<key>\n`, over 1,000 keys; each
    /// answer checked.
    KeyValue,
}

/// A response found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Bytes it takes, head and body.
    pub len: usize,
    /// HTTP status (200 for a key-value answer that checked out).
    pub status: u16,
}

/// What the generator keeps per connection to build requests and check their answers.
#[derive(Debug, Clone)]
pub struct Speaker {
    protocol: Protocol,
    /// The HTTP request, built once.
    http: Vec<u8>,
    /// xorshift64 state of the key-value requests.
    rng: u64,
    /// The key-value request in flight: `(set, key)`.
    asked: (bool, u64),
}

/// Keys of the key-value requests (as `workload::server::client`).
const KEYS: u64 = 1_000;
/// One request in this many is a `SET`.
const SET_EVERY: u64 = 10;

impl Speaker {
    /// A connection's speaker; `seed` varies the key-value requests between connections.
    pub fn new(protocol: &Protocol, host: &str, seed: u64) -> Speaker {
        let http = match protocol {
            Protocol::Http { path } => {
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tickless-load\r\n\r\n")
                    .into_bytes()
            }
            Protocol::KeyValue => Vec::new(),
        };
        Speaker {
            protocol: protocol.clone(),
            http,
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            asked: (false, 0),
        }
    }

    /// Writes the next request into `out` (cleared first).
    pub fn request(&mut self, out: &mut Vec<u8>) {
        out.clear();
        match self.protocol {
            Protocol::Http { .. } => out.extend_from_slice(&self.http),
            Protocol::KeyValue => {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let key = self.rng % KEYS;
                let set = (self.rng >> 32).is_multiple_of(SET_EVERY);
                self.asked = (set, key);
                let _ = if set {
                    writeln!(out, "SET k{key} v{key}")
                } else {
                    writeln!(out, "GET k{key}")
                };
            }
        }
    }

    /// The response at the start of `buf`, if all of it is there.
    ///
    /// # Errors
    ///
    /// A malformed response, or a key-value answer that does not fit its request.
    pub fn response(&self, buf: &[u8]) -> Result<Option<Response>, String> {
        match self.protocol {
            Protocol::Http { .. } => parse_http_response(buf),
            Protocol::KeyValue => {
                let Some(end) = buf.iter().position(|&b| b == b'\n') else {
                    return Ok(None);
                };
                let line = &buf[..=end];
                let (set, key) = self.asked;
                crate::workload::server::client::check(set, key, line)
                    .map_err(|e| e.to_string())?;
                Ok(Some(Response {
                    len: end + 1,
                    status: 200,
                }))
            }
        }
    }
}

/// Longest response head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// An HTTP/1.x response at the start of `buf`: its status line, headers and a
/// `Content-Length` body (no chunked bodies: the servers measured send a length). `None` while
/// part of it has not arrived.
///
/// # Errors
///
/// Not an HTTP/1.x status line, a malformed or missing `Content-Length`, a chunked body, or a
/// head longer than 16 KiB.
pub fn parse_http_response(buf: &[u8]) -> Result<Option<Response>, String> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > MAX_HEAD {
            return Err(format!("no end of the response head in {MAX_HEAD} bytes"));
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| "the response head is not UTF-8".to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut words = status_line.splitn(3, ' ');
    let (version, code) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1 status line: {status_line:?}"));
    }
    let status: u16 = code
        .parse()
        .ok()
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| format!("bad status in {status_line:?}"))?;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line {line:?}"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| format!("bad Content-Length {value:?}"))?;
            if length.is_some_and(|l| l != n) {
                return Err("two different Content-Lengths".into());
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(format!("Transfer-Encoding {value:?} is not supported"));
        }
    }
    // A 1xx, 204 or 304 response has no body; any other needs its length here.
    let length = match (status, length) {
        (100..=199 | 204 | 304, _) => 0,
        (_, Some(n)) => n,
        (_, None) => return Err(format!("a {status} response without Content-Length")),
    };
    let len = head_end + 4 + length;
    Ok((buf.len() >= len).then_some(Response { len, status }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\ndate: Thu, 03 Dec 2026 16:00:00 GMT\r\n\r\nHello, world!";

    #[test]
    fn a_whole_response_and_every_prefix_of_it() {
        let whole = parse_http_response(HELLO).unwrap().unwrap();
        assert_eq!(
            whole,
            Response {
                len: HELLO.len(),
                status: 200
            }
        );
        for cut in 0..HELLO.len() {
            assert_eq!(
                parse_http_response(&HELLO[..cut]).unwrap(),
                None,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn two_responses_back_to_back_are_taken_one_at_a_time() {
        let mut two = HELLO.to_vec();
        two.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        let first = parse_http_response(&two).unwrap().unwrap();
        assert_eq!(first.len, HELLO.len());
        let second = parse_http_response(&two[first.len..]).unwrap().unwrap();
        assert_eq!(
            second,
            Response {
                len: two.len() - HELLO.len(),
                status: 404
            }
        );
    }

    #[test]
    fn bodiless_statuses_need_no_length() {
        let r = parse_http_response(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Some(Response {
                len: 27,
                status: 204
            })
        );
    }

    #[test]
    fn malformed_responses_are_errors() {
        for bad in [
            &b"HTTP/2 200\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 abc OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\nContent-Length: 2\r\n\r\n",
        ] {
            assert!(
                parse_http_response(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(parse_http_response(&vec![b'a'; MAX_HEAD + 1]).is_err());
    }

    #[test]
    fn key_value_answers_are_checked_against_their_request() {
        let mut s = Speaker::new(&Protocol::KeyValue, "", 3);
        let mut req = Vec::new();
        s.request(&mut req);
        let text = String::from_utf8(req.clone()).unwrap();
        let key: u64 = text.split_whitespace().nth(1).unwrap()[1..]
            .parse()
            .unwrap();
        let answer = if text.starts_with("SET") {
            "OK\n".to_string()
        } else {
            format!("VALUE v{key}\n")
        };
        assert_eq!(s.response(b"").unwrap(), None);
        let r = s.response(answer.as_bytes()).unwrap().unwrap();
        assert_eq!(r.len, answer.len());
        assert!(s.response(b"ERROR unknown command\n").is_err());
    }

    #[test]
    fn the_http_request_is_keep_alive_get() {
        let mut s = Speaker::new(&Protocol::Http { path: "/".into() }, "127.0.0.1:80", 1);
        let mut req = Vec::new();
        s.request(&mut req);
        assert!(req.starts_with(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"));
        assert!(req.ends_with(b"\r\n\r\n"));
    }
}
