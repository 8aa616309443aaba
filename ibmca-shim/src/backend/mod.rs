//! Backend selection: which operations go to libica, and the debug trace.
//!
//! A [`Router`] is built from one provider instance's [`Settings`] and
//! owned by that instance, so two library contexts that load rustica with
//! different settings each keep theirs. Without a router (programs that
//! never build one) everything runs in software. Only the dlopen'ed
//! libraries are shared by the process (opened once per name).

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

mod trace;
mod zcrypt;

use trace::open_trace;
pub(crate) use trace::Tracer;
pub use trace::{open_trace_file, Trace, TRACE_FILE};
pub use zcrypt::probe_zcrypt;

use crate::error::{ErrorKind, RsaError};
use crate::libica::Libica;
use crate::stats::{Backend, Op};

/// `backend = auto|libica|zcrypt|software`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// libica when it loads and its function list reports RSA hardware.
    Auto,
    /// libica whenever it loads, whatever it reports; loading it is required.
    Libica,
    /// The kernel's /dev/z90crypt directly, no libica: private operations
    /// fall back to software while no card answers.
    Zcrypt,
    /// Software only.
    Software,
}

/// The backend settings (from the provider's configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub choice: Choice,
    /// A soname or path; `None`: libica.so.4, else libica.so.3.
    pub libica: Option<String>,
    pub offload_min_bits: u32,
    pub offload_max_bits: u32,
    pub trace: Trace,
    /// `async = auto|off`: offload libica calls made inside OpenSSL ASYNC
    /// jobs to rustica's offload threads ([`crate::pool`]).
    pub asynchronous: bool,
    /// `async-threads`, `async-max-inflight`.
    pub async_limits: crate::pool::Limits,
    /// Why this process cannot use OpenSSL's ASYNC jobs whatever the
    /// setting: the provider found a core from another libcrypto than the
    /// one rustica calls (a 4.0 core beside rustica's libcrypto.so.3).
    pub async_unreachable: Option<String>,
    /// `offload-timeout-ms`: how long a libica call may take before
    /// software computes the result (0: no deadline).
    pub offload_timeout_ms: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            choice: Choice::Auto,
            libica: None,
            offload_min_bits: 512,
            offload_max_bits: crate::libica::abi::ADAPTER_MAX_BITS,
            trace: Trace::Off,
            asynchronous: true,
            async_limits: crate::pool::Limits::default(),
            async_unreachable: None,
            offload_timeout_ms: crate::pool::DEFAULT_TIMEOUT_MS,
        }
    }
}

/// What a [`Router`] chose.
#[derive(Clone, Debug)]
pub struct Status {
    /// "libica", "zcrypt", "software", or "unavailable" (backend = libica
    /// without a loadable libica: every private operation and key generation fails,
    /// saying why; public operations run on the host as always).
    pub name: &'static str,
    /// Why, and which libica (for logs and `rustica doctor`).
    pub detail: String,
}

/// Where one provider instance's RSA operations run, and its trace.
///
/// The backend is chosen (libica loaded) at the first call that needs it:
/// a private operation or key generation, or a question about the
/// backend ([`Router::status`] and friends, [`Router::load`]). Public
/// operations run on the host on every backend and only trace through
/// the router, so a process that only verifies or encrypts never loads
/// libica (its constructor alone costs about 1.42 M s390x instructions).
pub struct Router {
    /// The settings the backend is chosen by, and the offload range.
    settings: Settings,
    trace: Tracer,
    /// `offload-timeout-ms` and the pool's limits; `None`: no deadline.
    deadline: Option<crate::pool::Deadline>,
    /// The backend, once chosen.
    chosen: OnceLock<Probed>,
}

/// What the router found when it chose the backend.
struct Probed {
    libica: Option<Arc<Libica>>,
    /// backend = libica could not be honoured: why (every private
    /// operation and key generation fails).
    unavailable: Option<String>,
    status: Status,
    /// The offload pool's limits when libica calls inside ASYNC jobs go to
    /// it; `None`: always synchronous.
    async_limits: Option<crate::pool::Limits>,
    /// "on (...)" or "off (why)", for the trace, get_params and doctor.
    async_status: String,
    /// libica is in FIPS mode: keys below this size go to software by
    /// rule (libica would refuse them with EPERM).
    fips_floor: Option<u32>,
}

/// Why libica must not be loaded into this process, if it must not: a
/// privileged process (AT_SECURE) whose environment sets `LIBICA_*`
/// variables, which libica reads with plain getenv (`LIBICA_CRYPT_DEVICE`
/// names the device it opens read-write). Such a process computes in
/// software, whatever `backend` says, and the trace says why.
fn refuse_libica(privileged: bool, libica_vars: &[String]) -> Option<String> {
    if !privileged || libica_vars.is_empty() {
        return None;
    }
    Some(format!(
        "software: libica not loaded into a privileged process whose environment sets {} \
         (libica would read it; docs/security.md)",
        libica_vars.join(", ")
    ))
}

/// Loaded libraries by name: dlopen once per process.
static LOADED: Mutex<Vec<(String, Arc<Libica>)>> = Mutex::new(Vec::new());

fn load(explicit: Option<&str>) -> Result<Arc<Libica>, String> {
    loaded_as(explicit.unwrap_or(""), || Libica::open_first(explicit))
}

/// The route [`LOADED`] keeps under `key`, made by `make` the first time.
fn loaded_as<E>(key: &str, make: impl FnOnce() -> Result<Libica, E>) -> Result<Arc<Libica>, E> {
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, l)) = loaded.iter().find(|(k, _)| k == key) {
        return Ok(l.clone());
    }
    let l = Arc::new(make()?);
    loaded.push((key.to_string(), l.clone()));
    Ok(l)
}

/// What a [`Router`] chose: libica (when it routes to it), the status it
/// reports, and why private operations fail (backend = libica without a
/// loadable libica).
struct Chosen {
    libica: Option<Arc<Libica>>,
    status: Status,
    unavailable: Option<String>,
}

impl Chosen {
    fn software(detail: String) -> Chosen {
        Chosen {
            libica: None,
            status: Status {
                name: "software",
                detail,
            },
            unavailable: None,
        }
    }

    fn libica(l: Arc<Libica>, detail: String) -> Chosen {
        Chosen {
            libica: Some(l),
            status: Status {
                name: "libica",
                detail,
            },
            unavailable: None,
        }
    }
}

/// The backend `s` asks for, as this process can have it.
fn choose(s: &Settings) -> Chosen {
    let range = format!("{}..={} bits", s.offload_min_bits, s.offload_max_bits);
    match s.choice {
        Choice::Software => return Chosen::software("backend = software".into()),
        // No libica is loaded, so its variables do not matter.
        Choice::Zcrypt => return zcrypt::choose(&range),
        Choice::Auto | Choice::Libica => {}
    }
    // Only a privileged process's LIBICA_* variables matter; reading the
    // whole environment costs every other process about 100 K instructions
    // (docs/performance.md, "Where a process's time goes, phase by phase").
    let privileged = crate::env::privileged();
    let libica_vars = if privileged {
        crate::env::libica_variables()
    } else {
        Vec::new()
    };
    if let Some(why) = refuse_libica(privileged, &libica_vars) {
        return Chosen::software(why);
    }
    match s.choice {
        Choice::Libica => choose_libica(s, &range),
        _ => choose_auto(s, &range),
    }
}

/// backend = auto: libica when it offers RSA in hardware, else software.
fn choose_auto(s: &Settings, range: &str) -> Chosen {
    // libica drives IBM Z's CPACF and crypto adapters and exists for s390x
    // only: elsewhere, unless a libica is named, auto does not look for
    // one. The search walks every library directory twice (libica.so.4,
    // libica.so.3), about a hundred failing system calls and 0.2 ms in each
    // process's first RSA operation.
    if s.libica.is_none() && !cfg!(target_arch = "s390x") {
        return Chosen::software(format!(
            "backend = auto: software (libica is IBM Z's library, not looked for on {}; \
             name one with the libica key or RUSTICA_LIBICA)",
            std::env::consts::ARCH
        ));
    }
    match load(s.libica.as_deref()) {
        Ok(l) if l.rsa_hardware() => {
            let detail = format!("backend = auto: libica {}; offload {range}", l.describe());
            Chosen::libica(l, detail)
        }
        Ok(l) => Chosen::software(format!(
            "backend = auto: software, libica {} (set backend = libica to use it anyway)",
            l.describe()
        )),
        Err(e) => Chosen::software(format!("backend = auto: software, no libica ({e})")),
    }
}

/// backend = libica: libica, or every operation fails saying why.
fn choose_libica(s: &Settings, range: &str) -> Chosen {
    match load(s.libica.as_deref()) {
        Ok(l) => {
            let detail = format!("backend = libica: {}; offload {range}", l.describe());
            Chosen::libica(l, detail)
        }
        Err(e) => {
            let msg = format!(
                "backend = libica, but libica cannot be loaded ({e}); install libica, point the \
                 'libica' key (or RUSTICA_LIBICA) at it, or use backend = auto or software"
            );
            Chosen {
                libica: None,
                status: Status {
                    name: "unavailable",
                    detail: msg.clone(),
                },
                unavailable: Some(msg),
            }
        }
    }
}

/// Decided once: libica in FIPS mode refuses RSA below 3072 bits, so such
/// keys go to software by rule, not as a failure per call.
fn fips_floor(libica: Option<&Libica>, min_bits: u32) -> Option<u32> {
    libica
        .and_then(|l| l.fips_status())
        .filter(|st| st & crate::libica::abi::ICA_FIPS_MODE != 0)
        .map(|_| crate::libica::abi::FIPS_MIN_RSA_BITS)
        .filter(|floor| *floor > min_bits)
}

/// Whether the blocking calls inside ASYNC jobs (libica's, or the
/// kernel's requests with `backend = zcrypt`, named by `calls`) go to the
/// offload pool (its limits), and the status that says so or why not.
fn async_route(calls: Option<&str>, s: &Settings) -> (Option<crate::pool::Limits>, String) {
    match (calls, &s.async_unreachable) {
        (None, _) => (None, "off (no libica route: nothing blocks)".to_string()),
        _ if !s.asynchronous => (None, "off (async = off)".to_string()),
        (_, Some(why)) => (None, format!("off ({why})")),
        (Some(calls), None) => (
            Some(s.async_limits),
            format!(
                "on ({calls} inside ASYNC jobs: up to {} offload threads, {} in flight)",
                s.async_limits.threads, s.async_limits.max_inflight
            ),
        ),
    }
}

impl Router {
    /// The router of settings `s`: opens the trace; libica is loaded (once
    /// per process and name) only when something first needs the backend
    /// ([`Router::load`]).
    ///
    /// `backend = libica` with no loadable libica does not fail: OpenSSL
    /// 3.0 drops provider initialisation errors from openssl.cnf silently
    /// (and `?provider=rustica` then quietly runs everything on the
    /// default provider). Instead every private operation and key
    /// generation fails with the reason
    /// ([`ErrorKind::BackendUnavailable`]), so the error reaches the user
    /// at first use. Public operations never needed libica and run on the
    /// host.
    pub fn new(s: &Settings) -> Router {
        Router {
            settings: s.clone(),
            trace: Tracer::new(open_trace(&s.trace)),
            deadline: crate::pool::Deadline::from_ms(s.offload_timeout_ms, s.async_limits),
            chosen: OnceLock::new(),
        }
    }

    /// Chooses the backend now (loading libica as the settings ask) unless
    /// it is chosen already: `libica-load = init`, and every question
    /// about the backend. Traces the choice once (`init: ...`).
    pub fn load(&self) {
        self.probed();
    }

    fn probed(&self) -> &Probed {
        self.chosen.get_or_init(|| {
            let s = &self.settings;
            let Chosen {
                libica,
                mut status,
                unavailable,
            } = choose(s);
            let fips_floor = fips_floor(libica.as_deref(), s.offload_min_bits);
            if let Some(floor) = fips_floor {
                status.detail.push_str(&format!(
                    "; libica is in FIPS mode: keys below {floor} bits run in software (libica refuses them)"
                ));
            }
            let calls = libica.as_deref().map(|l| {
                if l.is_kernel() {
                    "/dev/z90crypt requests"
                } else {
                    "libica calls"
                }
            });
            let (async_limits, async_status) = async_route(calls, s);
            let probed = Probed {
                libica,
                unavailable,
                status,
                async_limits,
                async_status,
                fips_floor,
            };
            self.log(format_args!(
                "init: {}; async {}; offload deadline {}",
                probed.status.detail,
                probed.async_status,
                self.deadline_status()
            ));
            probed
        })
    }

    /// What this router chose, and why.
    pub fn status(&self) -> &Status {
        &self.probed().status
    }

    /// "libica", "zcrypt", "software", or "unavailable" (backend = libica found no
    /// libica).
    pub fn name(&self) -> &'static str {
        self.probed().status.name
    }

    /// Asynchronous offload: "on (...)" or "off (why)".
    pub fn async_status(&self) -> &str {
        &self.probed().async_status
    }

    /// The offload pool's limits, when libica calls inside ASYNC jobs go
    /// to it.
    pub(crate) fn async_limits(&self) -> Option<crate::pool::Limits> {
        self.probed().async_limits
    }

    /// How long a libica call may take before software computes the
    /// result, when there is a deadline (`offload-timeout-ms`).
    pub(crate) fn deadline(&self) -> Option<crate::pool::Deadline> {
        self.deadline
    }

    /// `offload-timeout-ms` as said by the init trace and `rustica doctor`.
    pub fn deadline_status(&self) -> String {
        match self.deadline {
            Some(d) => format!("{} ms, then software", d.after.as_millis()),
            None => "off (offload-timeout-ms = 0: a call waits for its answer)".into(),
        }
    }

    /// The libica operations run on, when it is the backend.
    pub fn libica(&self) -> Option<&Libica> {
        self.probed().libica.as_deref()
    }

    /// The libica loaded for this router's route: `None` in software and
    /// with `backend = zcrypt` (no libica), for the provider parameters.
    pub fn loaded_libica(&self) -> Option<&Libica> {
        self.libica().filter(|l| !l.is_kernel())
    }

    /// The backend a key of `bits` bits would use: "libica", "zcrypt" or
    /// "software".
    pub fn route_name(&self, bits: u32) -> &'static str {
        match self.offload(bits) {
            Some(l) if l.is_kernel() => "zcrypt",
            Some(_) => "libica",
            None => "software",
        }
    }

    /// The error every private operation and key generation returns when
    /// the configured backend cannot run.
    pub(crate) fn check_available(&self) -> Result<(), RsaError> {
        match &self.probed().unavailable {
            Some(m) => Err(RsaError::new(ErrorKind::BackendUnavailable, m.clone())),
            None => Ok(()),
        }
    }

    /// libica for a key of `bits` bits, when it is the route.
    pub(crate) fn offload(&self, bits: u32) -> Option<&Arc<Libica>> {
        let p = self.probed();
        let l = p.libica.as_ref()?;
        let min = p
            .fips_floor
            .unwrap_or(0)
            .max(self.settings.offload_min_bits);
        (min..=self.settings.offload_max_bits)
            .contains(&bits)
            .then_some(l)
    }

    /// The route of a `bits`-bit key when libica is not used for it.
    pub(crate) fn software_reason(&self, bits: u32) -> &'static str {
        let p = self.probed();
        if p.libica.is_none() {
            "software backend"
        } else if p.fips_floor.is_some_and(|f| bits < f) && bits >= self.settings.offload_min_bits {
            "libica is in FIPS mode and refuses RSA below 3072 bits"
        } else if bits < self.settings.offload_min_bits || bits > self.settings.offload_max_bits {
            "outside the offload range"
        } else {
            "not offloadable"
        }
    }

    pub(crate) fn tracing(&self) -> bool {
        self.trace.is_on()
    }

    /// Writes one trace line (when tracing is on); see [`Tracer::log`].
    pub(crate) fn log(&self, msg: fmt::Arguments<'_>) {
        self.trace.log(msg);
    }

    /// This router's trace for something that may outlive the router (a
    /// late answer arrives after its operation): `None` when tracing is off.
    pub(crate) fn tracer(&self) -> Option<Tracer> {
        self.tracing().then(|| self.trace.clone())
    }

    /// The per-operation trace line: backend, key size, outcome.
    pub(crate) fn log_op(&self, op: Op, bits: u32, backend: Backend, outcome: fmt::Arguments<'_>) {
        self.log(format_args!(
            "{} rsa-{bits}: backend={} {outcome}",
            op.name(),
            backend.name()
        ));
    }
}

/// Lets go of every libica this process loaded (tests, tools, and the
/// provider's last teardown in a process); a router still holding one
/// keeps it until it is dropped.
pub fn unload_all() {
    LOADED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

/// Loads libica (`explicit`, else the default names) and describes it:
/// path, version, RSA function list flags. For `rustica doctor`.
pub fn probe(explicit: Option<&str>) -> Result<String, String> {
    load(explicit).map(|l| l.describe())
}

#[cfg(test)]
mod tests {
    use super::trace::trace_line;
    use super::*;
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    #[test]
    fn libica_is_refused_only_to_privileged_processes_with_libica_variables() {
        let vars = vec!["LIBICA_CRYPT_DEVICE".to_string()];
        assert_eq!(refuse_libica(false, &vars), None);
        assert_eq!(refuse_libica(true, &[]), None);
        let why = refuse_libica(true, &vars).unwrap();
        assert!(why.contains("LIBICA_CRYPT_DEVICE"), "{why}");
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rustica-trace-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }

    #[test]
    fn trace_lines_escape_control_characters() {
        assert_eq!(trace_line(7, "init: ok"), "rustica[7]: init: ok\n");
        assert_eq!(
            trace_line(7, "a\nrustica[1]: forged\r\t\u{1b}[31m\u{85}é"),
            "rustica[7]: a\\nrustica[1]: forged\\r\\t\\u{1b}[31m\\u{85}é\n"
        );
    }

    #[test]
    fn trace_file_is_created_0600_and_appended() {
        let d = temp_dir("ok");
        drop(open_trace_file(&d).unwrap());
        let p = d.join(TRACE_FILE);
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut f = open_trace_file(&d).unwrap();
        f.write_all(b"one\n").unwrap();
        let mut f = open_trace_file(&d).unwrap();
        f.write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one\ntwo\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn hostile_trace_files_are_refused_and_untouched() {
        let d = temp_dir("hostile");
        let p = d.join(TRACE_FILE);
        let target = d.join("target");
        std::fs::write(&target, b"precious").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A symlink.
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let err = open_trace_file(&d).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_file(&p).unwrap();
        // A hard link.
        std::fs::hard_link(&target, &p).unwrap();
        let err = open_trace_file(&d).unwrap_err();
        assert!(err.contains("2 hard links"), "{err}");
        std::fs::remove_file(&p).unwrap();
        // Readable by others.
        std::fs::write(&p, b"").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = open_trace_file(&d).unwrap_err();
        assert!(err.contains("mode 644"), "{err}");
        // Another user's (root only can give a file away).
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        if std::os::unix::fs::chown(&p, Some(65534), None).is_ok() {
            let err = open_trace_file(&d).unwrap_err();
            assert!(err.contains("owned by uid 65534"), "{err}");
        }
        std::fs::remove_file(&p).unwrap();
        // A FIFO: refused without blocking.
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: c is a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // (Without a reader, a non-blocking open for writing fails: ENXIO.)
        let err = open_trace_file(&d).unwrap_err();
        assert!(
            err.contains("not a regular file") || err.contains("No such device"),
            "{err}"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
