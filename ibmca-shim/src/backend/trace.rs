//! The debug trace (`debug = yes|stderr`, `debug-path`): where its lines
//! go, the trace file's checks, and the escaping that keeps one line one
//! line.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where debug trace lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trace {
    Off,
    Stderr,
    /// Appended to `DIR/rustica-debug.log` (mode 0600), opened once by
    /// [`Router::new`] with the checks of [`open_trace_file`]. `DIR` must be
    /// absolute.
    Dir(PathBuf),
}

/// The trace file's name inside `debug-path`.
pub const TRACE_FILE: &str = "rustica-debug.log";

/// Where [`super::Router::log`] writes (through its [`Tracer`]).
pub(super) enum TraceSink {
    Off,
    Stderr,
    /// The trace file, and its identity (device, inode) when opened: a
    /// daemon that closes every descriptor it did not open may reuse the
    /// number for something else, and then nothing is written to it.
    File(std::fs::File, (u64, u64)),
}

/// Opens `DIR/rustica-debug.log` once for appending: never through a
/// symlink (`O_NOFOLLOW`), never blocking (a FIFO), created with mode 0600;
/// then, before writing anything, requires a regular file of the effective
/// user with no group or other permission bits and one link.
pub fn open_trace_file(dir: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    if dir.as_os_str().is_empty() {
        return Err(
            "debug = yes needs 'debug-path = DIR' (an absolute directory) in the \
                    configuration; or use debug = stderr"
                .into(),
        );
    }
    if !dir.is_absolute() {
        return Err(format!(
            "debug-path '{}' is not an absolute path",
            dir.display()
        ));
    }
    let path = dir.join(TRACE_FILE);
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => format!("{}: a symbolic link", path.display()),
            _ => format!("{}: {e}", path.display()),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let problem = if !meta.file_type().is_file() {
        Some("not a regular file".to_string())
    } else if meta.uid() != euid {
        Some(format!("owned by uid {}, not {euid}", meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "mode {:o} gives access to other users",
            meta.mode() & 0o7777
        ))
    } else if meta.nlink() != 1 {
        Some(format!("{} hard links", meta.nlink()))
    } else {
        None
    };
    match problem {
        Some(p) => Err(format!("{}: {p}", path.display())),
        None => Ok(file),
    }
}

/// One trace line, control characters escaped (a value from a config file
/// or a key cannot forge or split lines), ending in a newline.
pub(super) fn trace_line(pid: i32, msg: &str) -> String {
    let mut line = format!("rustica[{pid}]: ");
    for c in msg.chars() {
        match c {
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            '\t' => line.push_str("\\t"),
            c if c.is_control() => {
                let _ = fmt::Write::write_fmt(&mut line, format_args!("\\u{{{:x}}}", c as u32));
            }
            c => line.push(c),
        }
    }
    line.push('\n');
    line
}

/// Says something on standard error, ignoring failures (stderr may be
/// closed or full; a trace problem must never stop anything).
fn say_on_stderr(msg: &str) {
    crate::fd2::write(format!("rustica: {msg}\n").as_bytes());
}

/// The debug trace's sink; one that cannot be opened is off (said once on
/// stderr).
pub(super) fn open_trace(trace: &Trace) -> TraceSink {
    match trace {
        Trace::Off => TraceSink::Off,
        Trace::Stderr => TraceSink::Stderr,
        Trace::Dir(dir) => match open_trace_file(dir).and_then(|f| {
            use std::os::unix::fs::MetadataExt;
            let m = f.metadata().map_err(|e| e.to_string())?;
            Ok(TraceSink::File(f, (m.dev(), m.ino())))
        }) {
            Ok(sink) => sink,
            Err(e) => {
                say_on_stderr(&format!("debug trace off: {e}"));
                TraceSink::Off
            }
        },
    }
}

impl TraceSink {
    /// Writes one trace line, in one write: lines of concurrent processes
    /// and threads stay whole (the file is opened in append mode, and a
    /// forked child shares it). Nothing when the sink is off, or when the
    /// file's descriptor now names another file.
    pub(super) fn write(&self, msg: fmt::Arguments<'_>) {
        use std::io::Write as _;
        if matches!(self, TraceSink::Off) {
            return;
        }
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let line = trace_line(pid, &msg.to_string());
        match self {
            TraceSink::Off => {}
            TraceSink::Stderr => {
                crate::fd2::write(line.as_bytes());
            }
            TraceSink::File(f, id) => {
                use std::os::unix::fs::MetadataExt;
                let same = f.metadata().is_ok_and(|m| (m.dev(), m.ino()) == *id);
                if same {
                    let _ = (&*f).write_all(line.as_bytes());
                }
            }
        }
    }
}

/// A router's trace, shared: it stays open while something that outlives
/// its router still has a line to write (an offload thread with a late
/// answer), and closes with the last holder.
#[derive(Clone)]
pub(crate) struct Tracer(Arc<TraceSink>);

impl Tracer {
    pub(super) fn new(sink: TraceSink) -> Tracer {
        Tracer(Arc::new(sink))
    }

    pub(super) fn is_on(&self) -> bool {
        !matches!(*self.0, TraceSink::Off)
    }

    /// Writes one trace line; see [`TraceSink::write`].
    pub(crate) fn log(&self, msg: fmt::Arguments<'_>) {
        self.0.write(msg);
    }
}
