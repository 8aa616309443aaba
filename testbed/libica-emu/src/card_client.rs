//! Shared-card mode (`LIBICA_EMU_CARD=<socket>`): the RSA calls go to the
//! card process (`rustica-card`), which many processes share, instead of
//! being computed here. One connection per call: no state survives a fork,
//! and a card restarted between calls is simply reached again.
//!
//! The card is trusted only if the socket's peer runs as this process's
//! uid or as root (SO_PEERCRED), checked before any key is sent; any other
//! listener is no card (ENODEV). A card that does not answer within the
//! timeout (`LIBICA_EMU_CARD_TIMEOUT_MS`, by default the kernel's 900 s
//! request timeout for CEX4 and later queues) is answered ETIME, the
//! kernel's errno for a timed-out request. The frames are wiped once sent.

use std::io::{Read, Write};
use std::os::raw::c_uint;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use rustica_card::wire;

use crate::errno::{EIO, ENODEV, ETIME};

/// The kernel's request timeout for CEX4 and later queues
/// (drivers/s390/crypto/zcrypt_cex4.c: `aq->request_timeout =
/// CEX4_CLEANUP_TIME`, 900 × HZ).
pub(crate) const KERNEL_REQUEST_TIMEOUT: Duration = Duration::from_secs(900);

/// Sends one RSA request (`parts` in the order wire.rs lists, each with
/// the width the frame gives it: right-aligned, zeros before) and writes
/// the card's result into `out`; returns the card's errno. No card at the
/// path, or a listener of another uid, is a missing device (ENODEV); no
/// answer within `timeout` is ETIME; a broken exchange is EIO.
pub(crate) fn request(
    socket: &Path,
    timeout: Duration,
    kind: u8,
    parts: &[(&[u8], usize)],
    out: &mut [u8],
) -> c_uint {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return ENODEV;
    };
    match wire::peer_cred(&stream) {
        Ok((_, uid)) if wire::trusted_uid(uid) => {}
        _ => return ENODEV,
    }
    let deadline = Instant::now() + timeout;
    match exchange(&mut stream, deadline, kind, parts, out) {
        Ok(rc) => rc,
        Err(e) => {
            out.fill(0);
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                ETIME
            } else {
                EIO
            }
        }
    }
}

/// A stream whose reads and writes end at `deadline`, however the card
/// spreads its bytes.
struct Bounded<'a> {
    stream: &'a mut UnixStream,
    deadline: Instant,
}

impl Bounded<'_> {
    fn arm(&mut self) -> std::io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.set_write_timeout(Some(left))
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.arm()?;
        self.stream.read(buf)
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.arm()?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

fn exchange(
    stream: &mut UnixStream,
    deadline: Instant,
    kind: u8,
    parts: &[(&[u8], usize)],
    out: &mut [u8],
) -> std::io::Result<c_uint> {
    let header = wire::Header {
        kind,
        pid: std::process::id(),
        length: out.len(),
    };
    let mut stream = Bounded { stream, deadline };
    // One write for the whole request: the card reads it whole anyway.
    // Sized once (no reallocation leaves a copy behind) and wiped on drop.
    let mut frame = Zeroizing::new(Vec::with_capacity(
        9 + parts.iter().map(|&(_, width)| width).sum::<usize>(),
    ));
    wire::write_header(&mut *frame, &header)?;
    for &(p, width) in parts {
        let Some(zeros) = width.checked_sub(p.len()) else {
            return Err(std::io::ErrorKind::InvalidInput.into());
        };
        let at = frame.len();
        frame.resize(at + zeros, 0);
        frame.extend_from_slice(p);
    }
    stream.write_all(&frame)?;
    drop(frame);
    let rc = wire::read_u32(&mut stream)?;
    stream.read_exact(out)?;
    Ok(rc)
}
