//! Shared-card mode (`LIBICA_EMU_CARD=<socket>`): the RSA calls go to the
//! card process (`rustica-card`), which many processes share, instead of
//! being computed here. One connection per call: no state survives a fork,
//! and a card restarted between calls is simply reached again.

use std::io::{Read, Write};
use std::os::raw::c_uint;
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::wire;
use crate::EIO;

/// Sends one RSA request (`parts` in the order wire.rs lists) and writes
/// the card's result into `out`; returns the card's errno. No card at the
/// path is a missing device (ENODEV); a broken exchange is EIO.
pub(crate) fn request(socket: &Path, kind: u8, parts: &[&[u8]], out: &mut [u8]) -> c_uint {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return libc::ENODEV as c_uint;
    };
    exchange(&mut stream, kind, parts, out).unwrap_or(EIO)
}

fn exchange(
    stream: &mut UnixStream,
    kind: u8,
    parts: &[&[u8]],
    out: &mut [u8],
) -> std::io::Result<c_uint> {
    let header = wire::Header {
        kind,
        pid: std::process::id(),
        length: out.len(),
    };
    // One write for the whole request: the card reads it whole anyway.
    let mut frame = Vec::with_capacity(9 + parts.iter().map(|p| p.len()).sum::<usize>());
    wire::write_header(&mut frame, &header)?;
    for p in parts {
        frame.extend_from_slice(p);
    }
    stream.write_all(&frame)?;
    let rc = wire::read_u32(stream)?;
    stream.read_exact(out)?;
    Ok(rc)
}
