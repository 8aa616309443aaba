//! The frames between the emulated libica (shared-card mode) and the card
//! process `rustica-card`, over a Unix stream socket; docs/card-model.md
//! describes them. Integers are little-endian u32: both ends run on the
//! same host.
//!
//! Request: kind (1 byte), client pid, length, payload.
//! - `KIND_MOD_EXPO`: length = key length L; payload input, modulus,
//!   exponent (L bytes each).
//! - `KIND_CRT`: length = L; payload input (L), p (H + 8), q (H),
//!   dp (H + 8), dq (H), qInverse (H + 8), H = (L + 1) / 2: libica's
//!   layout, with the kernel's half for an odd L (`crt_half`).
//!
//! L is the request's real length, from 1 byte up (the kernel's lower
//! bound; libica's callers start at 8).
//! - `KIND_CONTROL`: length = bytes of a UTF-8 command line.
//!
//! Answer to an RSA request: errno (0 = success), then L bytes of result
//! (zeros after an error). Answer to a control line: length, then text.
//!
//! The pid field is kept for compatibility and ignored: the card takes
//! the client's pid and uid from the socket (SO_PEERCRED, `peer_cred`).

use std::io::{self, Read, Write};

pub const KIND_MOD_EXPO: u8 = 1;
pub const KIND_CRT: u8 = 2;
pub const KIND_CONTROL: u8 = 3;

/// The largest key length (bytes) or control line a card accepts: 8192-bit
/// keys, well past the adapter's 4096, so a caller's size error is
/// answered, not a framing error.
pub const MAX_LENGTH: usize = 1024;

/// The length of a CRT request's short operands (q, dq) for a key of
/// `key_length` bytes: half of it, rounded up, as the kernel takes them
/// (drivers/s390/crypto/zcrypt_msgtype50.c: `short_len = (mod_len + 1)
/// / 2`); the long ones (p, dp, qInverse) have 8 bytes more.
pub fn crt_half(key_length: usize) -> usize {
    key_length.div_ceil(2)
}

/// Payload bytes of an RSA request of key length `key_length`.
pub fn payload_len(kind: u8, key_length: usize) -> Option<usize> {
    let half = crt_half(key_length);
    match kind {
        KIND_MOD_EXPO => Some(3 * key_length),
        KIND_CRT => Some(key_length + 3 * (half + 8) + 2 * half),
        _ => None,
    }
}

pub struct Header {
    pub kind: u8,
    pub pid: u32,
    pub length: usize,
}

pub fn write_header(w: &mut impl Write, h: &Header) -> io::Result<()> {
    let length = u32::try_from(h.length).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut b = [0u8; 9];
    b[0] = h.kind;
    b[1..5].copy_from_slice(&h.pid.to_le_bytes());
    b[5..9].copy_from_slice(&length.to_le_bytes());
    w.write_all(&b)
}

/// Reads a header; `Ok(None)` at a clean end of stream.
pub fn read_header(r: &mut impl Read) -> io::Result<Option<Header>> {
    let mut b = [0u8; 9];
    match r.read_exact(&mut b[..1]) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        other => other?,
    }
    r.read_exact(&mut b[1..])?;
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Ok(Some(Header {
        kind: b[0],
        pid: word(1),
        length: word(5) as usize,
    }))
}

pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Sends one control line and returns the card's answer.
pub fn control(stream: &mut (impl Read + Write), line: &str) -> io::Result<String> {
    write_header(
        stream,
        &Header {
            kind: KIND_CONTROL,
            pid: std::process::id(),
            length: line.len(),
        },
    )?;
    stream.write_all(line.as_bytes())?;
    let len = read_u32(stream)? as usize;
    let mut text = vec![0u8; len];
    stream.read_exact(&mut text)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The peer of a connected Unix socket as the kernel recorded it
/// (SO_PEERCRED): its pid and effective uid when it connected (or, for the
/// connecting side, when the listener bound). Neither end trusts what the
/// other writes about itself.
pub fn peer_cred(stream: &impl std::os::unix::io::AsRawFd) -> io::Result<(u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a descriptor the caller owns; `cred` and `len` are valid for
    // writing and `len` is the size of `cred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(io::ErrorKind::InvalidData.into());
    }
    Ok((cred.pid as u32, cred.uid))
}

/// Whether a peer with `uid` may be trusted by this process: its own
/// effective uid, or root.
pub fn trusted_uid(uid: u32) -> bool {
    // SAFETY: geteuid has no preconditions.
    uid == 0 || uid == unsafe { libc::geteuid() }
}
