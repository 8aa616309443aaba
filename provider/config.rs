//! The provider's configuration: keys from its openssl.cnf section, with
//! environment overrides for tests and troubleshooting (`RUSTICA_BACKEND`,
//! `RUSTICA_LIBICA`, `RUSTICA_DEBUG`), which a privileged process never
//! reads (`ibmca_shim::env`; docs/security.md).

use crate::error::{fail, Reason, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Libica,
    /// The kernel's /dev/z90crypt directly, no libica.
    Zcrypt,
    Software,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Debug {
    No,
    Yes,
    Stderr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub backend: BackendChoice,
    pub libica: Option<String>,
    pub offload_min_bits: u32,
    pub offload_max_bits: u32,
    pub debug: Debug,
    pub debug_path: Option<String>,
    /// `libica-load = init`: set the backend up (open libica) when the
    /// provider is loaded, for daemons that chroot or install a seccomp
    /// filter before their first RSA operation; default `first-use`.
    pub load_at_init: bool,
    /// `async = auto|off` (default auto): libica calls made inside an
    /// OpenSSL ASYNC job run on rustica's offload threads while the job
    /// pauses.
    pub asynchronous: bool,
    /// `async-threads` (1..=1024, default 32).
    pub async_threads: usize,
    /// `async-max-inflight` (1..=65536, default 128).
    pub async_max_inflight: usize,
    /// `offload-timeout-ms` (0..=3600000, default 1000; 0: no deadline):
    /// how long a libica call may take before software computes the result.
    pub offload_timeout_ms: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: BackendChoice::Auto,
            libica: None,
            offload_min_bits: 512,
            offload_max_bits: 4096,
            debug: Debug::No,
            debug_path: None,
            load_at_init: false,
            asynchronous: true,
            async_threads: ibmca_shim::pool::DEFAULT_THREADS,
            async_max_inflight: ibmca_shim::pool::DEFAULT_MAX_INFLIGHT,
            offload_timeout_ms: ibmca_shim::pool::DEFAULT_TIMEOUT_MS,
        }
    }
}

/// The libica names the loader may search for by itself.
const DEFAULT_LIBICA_SONAMES: [&str; 2] = ["libica.so.4", "libica.so.3"];

impl BackendChoice {
    /// The `backend` key's value (or `RUSTICA_BACKEND`'s).
    fn parse(v: &str) -> Result<BackendChoice> {
        Ok(match v.trim() {
            "auto" => BackendChoice::Auto,
            "libica" => BackendChoice::Libica,
            "zcrypt" => BackendChoice::Zcrypt,
            "software" => BackendChoice::Software,
            other => return Err(bad("backend", other, "auto, libica, zcrypt or software")),
        })
    }
}

fn bad(key: &str, value: &str, expected: &str) -> crate::error::Error {
    crate::error::Error::new(
        Reason::Config,
        format!("config key '{key}' has value '{value}'; expected {expected}"),
    )
}

impl Config {
    /// Builds the configuration from `lookup(key)` (the openssl.cnf section)
    /// overridden by RUSTICA_BACKEND, RUSTICA_LIBICA and RUSTICA_DEBUG
    /// (except in a privileged process, where only the section counts).
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config> {
        Self::load_with(lookup, ibmca_shim::env::var)
    }

    /// [`Config::load`] with the environment given as `env`.
    fn load_with(
        lookup: impl Fn(&str) -> Option<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config> {
        let mut c = Config::default();
        if let Some(v) = env("RUSTICA_BACKEND").or_else(|| lookup("backend")) {
            c.backend = BackendChoice::parse(&v)?;
        }
        c.libica = env("RUSTICA_LIBICA").or_else(|| lookup("libica"));
        if let Some(v) = &c.libica {
            // A bare name other than libica's own sonames would be searched
            // for by the loader, a relative path from the working directory:
            // both let whoever controls those choose code to run.
            let v = v.trim();
            if !(v.starts_with('/') || DEFAULT_LIBICA_SONAMES.contains(&v)) {
                return Err(bad(
                    "libica",
                    v,
                    "an absolute path, or libica.so.4 or libica.so.3",
                ));
            }
            c.libica = Some(v.to_string());
        }
        for (key, slot) in [
            ("offload-min-bits", &mut c.offload_min_bits),
            ("offload-max-bits", &mut c.offload_max_bits),
        ] {
            if let Some(v) = lookup(key) {
                *slot = v
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|b| (512..=16384).contains(b))
                    .ok_or_else(|| bad(key, &v, "a number of bits from 512 to 16384"))?;
            }
        }
        if c.offload_min_bits > c.offload_max_bits {
            return fail(
                Reason::Config,
                format!(
                    "offload-min-bits ({}) is larger than offload-max-bits ({})",
                    c.offload_min_bits, c.offload_max_bits
                ),
            );
        }
        if let Some(v) = env("RUSTICA_DEBUG").or_else(|| lookup("debug")) {
            c.debug = match v.trim() {
                "no" | "0" | "false" => Debug::No,
                "yes" | "1" | "true" => Debug::Yes,
                "stderr" => Debug::Stderr,
                other => return Err(bad("debug", other, "no, yes or stderr")),
            };
        }
        c.debug_path = lookup("debug-path");
        if let Some(v) = lookup("libica-load") {
            c.load_at_init = match v.trim() {
                "first-use" => false,
                "init" => true,
                other => return Err(bad("libica-load", other, "first-use or init")),
            };
        }
        if let Some(v) = lookup("async") {
            c.asynchronous = match v.trim() {
                "auto" | "on" | "yes" => true,
                "off" | "no" => false,
                other => return Err(bad("async", other, "auto or off")),
            };
        }
        for (key, slot, max) in [
            ("async-threads", &mut c.async_threads, 1024),
            ("async-max-inflight", &mut c.async_max_inflight, 65536),
        ] {
            if let Some(v) = lookup(key) {
                *slot = v
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| bad(key, &v, &format!("a number from 1 to {max}")))?;
            }
        }
        if let Some(v) = lookup("offload-timeout-ms") {
            c.offload_timeout_ms = v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= MAX_TIMEOUT_MS)
                .ok_or_else(|| {
                    bad(
                        "offload-timeout-ms",
                        &v,
                        &format!(
                            "a number of milliseconds from 0 (no deadline) to {MAX_TIMEOUT_MS}"
                        ),
                    )
                })?;
        }
        Ok(c)
    }
}

/// The largest `offload-timeout-ms`: an hour (the kernel gives up on a
/// request after 900 s anyway).
const MAX_TIMEOUT_MS: u32 = 3_600_000;

impl Config {
    /// The backend settings of the RSA primitive (`ibmca_shim::backend`).
    /// `debug = yes` appends to `<debug-path>/rustica-debug.log` (no
    /// default directory: without `debug-path`, or with a relative one, the
    /// trace is off and `configure` says why once on stderr); `debug =
    /// stderr` writes to standard error.
    pub fn backend_settings(&self) -> ibmca_shim::backend::Settings {
        use ibmca_shim::backend::{Choice, Settings, Trace};
        Settings {
            choice: match self.backend {
                BackendChoice::Auto => Choice::Auto,
                BackendChoice::Libica => Choice::Libica,
                BackendChoice::Zcrypt => Choice::Zcrypt,
                BackendChoice::Software => Choice::Software,
            },
            libica: self.libica.clone(),
            offload_min_bits: self.offload_min_bits,
            offload_max_bits: self.offload_max_bits,
            trace: match self.debug {
                Debug::No => Trace::Off,
                Debug::Stderr => Trace::Stderr,
                Debug::Yes => Trace::Dir(self.debug_path.as_deref().unwrap_or("").trim().into()),
            },
            asynchronous: self.asynchronous,
            async_limits: ibmca_shim::pool::Limits {
                threads: self.async_threads,
                max_inflight: self.async_max_inflight,
            },
            async_unreachable: None,
            offload_timeout_ms: self.offload_timeout_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bad_values() {
        let c = Config::load(|_| None).unwrap();
        assert_eq!(c.offload_max_bits, 4096);
        let err =
            Config::load(|k| (k == "offload-max-bits").then(|| "banana".to_string())).unwrap_err();
        assert!(err.message.contains("offload-max-bits"), "{}", err.message);
        assert!(err.message.contains("banana"));
        let err = Config::load(|k| (k == "debug").then(|| "loud".to_string())).unwrap_err();
        assert!(err.message.contains("'debug'"));
        assert!(!c.load_at_init);
        let c = Config::load(|k| (k == "libica-load").then(|| "init".to_string())).unwrap();
        assert!(c.load_at_init);
        let err = Config::load(|k| (k == "libica-load").then(|| "now".to_string())).unwrap_err();
        assert!(err.message.contains("first-use or init"), "{}", err.message);
    }

    #[test]
    fn async_keys() {
        let c = Config::load(|_| None).unwrap();
        assert!(c.asynchronous);
        assert_eq!((c.async_threads, c.async_max_inflight), (32, 128));
        let c = Config::load(|k| match k {
            "async" => Some("off".into()),
            "async-threads" => Some("4".into()),
            "async-max-inflight" => Some(" 9 ".into()),
            _ => None,
        })
        .unwrap();
        assert!(!c.asynchronous);
        let s = c.backend_settings();
        assert!(!s.asynchronous);
        assert_eq!(
            (s.async_limits.threads, s.async_limits.max_inflight),
            (4, 9)
        );
        for (k, v) in [
            ("async", "sometimes"),
            ("async-threads", "0"),
            ("async-threads", "2000"),
            ("async-max-inflight", "x"),
        ] {
            let err = Config::load(|key| (key == k).then(|| v.to_string())).unwrap_err();
            assert!(err.message.contains(k), "{}", err.message);
        }
    }

    #[test]
    fn offload_timeout() {
        let c = Config::load(|_| None).unwrap();
        assert_eq!(c.offload_timeout_ms, 1000);
        assert_eq!(c.backend_settings().offload_timeout_ms, 1000);
        for (v, ms) in [("0", 0), (" 250 ", 250), ("3600000", 3_600_000)] {
            let c = Config::load(|k| (k == "offload-timeout-ms").then(|| v.into())).unwrap();
            assert_eq!(c.backend_settings().offload_timeout_ms, ms);
        }
        for v in ["-1", "1s", "3600001", ""] {
            let err = Config::load(|k| (k == "offload-timeout-ms").then(|| v.into())).unwrap_err();
            assert!(
                err.message.contains("offload-timeout-ms")
                    && err.message.contains("0 (no deadline)"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn libica_is_an_absolute_path_or_a_default_soname() {
        for ok in [
            "/usr/lib/libica.so.4",
            "libica.so.4",
            "libica.so.3",
            " libica.so.3 ",
        ] {
            let c =
                Config::load_with(|k| (k == "libica").then(|| ok.to_string()), |_| None).unwrap();
            assert_eq!(c.libica.as_deref(), Some(ok.trim()));
        }
        for refused in [
            "libica.so",
            "own.so",
            "./libica.so.4",
            "lib/libica.so.4",
            "../x.so",
        ] {
            let err = Config::load_with(|k| (k == "libica").then(|| refused.to_string()), |_| None)
                .unwrap_err();
            assert!(err.message.contains("absolute path"), "{}", err.message);
            // The environment override obeys the same rule.
            let err = Config::load_with(
                |_| None,
                |v| (v == "RUSTICA_LIBICA").then(|| refused.to_string()),
            )
            .unwrap_err();
            assert!(err.message.contains(refused), "{}", err.message);
        }
    }

    #[test]
    fn backend_zcrypt_is_the_kernel_route() {
        let c = Config::load_with(|k| (k == "backend").then(|| "zcrypt".into()), |_| None).unwrap();
        assert_eq!(c.backend, BackendChoice::Zcrypt);
        assert_eq!(
            c.backend_settings().choice,
            ibmca_shim::backend::Choice::Zcrypt
        );
        let err =
            Config::load_with(|k| (k == "backend").then(|| "kernel".into()), |_| None).unwrap_err();
        assert!(
            err.message.contains("auto, libica, zcrypt or software"),
            "{}",
            err.message
        );
    }

    #[test]
    fn environment_overrides_the_section() {
        let env = |v: &str| match v {
            "RUSTICA_BACKEND" => Some("software".to_string()),
            "RUSTICA_LIBICA" => Some("/opt/libica.so.4".to_string()),
            "RUSTICA_DEBUG" => Some("stderr".to_string()),
            _ => None,
        };
        let section = |k: &str| match k {
            "backend" => Some("libica".to_string()),
            "libica" => Some("libica.so.3".to_string()),
            "debug" => Some("no".to_string()),
            _ => None,
        };
        let c = Config::load_with(section, env).unwrap();
        assert_eq!(c.backend, BackendChoice::Software);
        assert_eq!(c.libica.as_deref(), Some("/opt/libica.so.4"));
        assert_eq!(c.debug, Debug::Stderr);
    }

    #[test]
    fn debug_yes_has_no_default_directory() {
        use ibmca_shim::backend::Trace;
        let c = Config::load_with(|k| (k == "debug").then(|| "yes".into()), |_| None).unwrap();
        // An empty directory: configure turns the trace off and says why.
        assert_eq!(c.backend_settings().trace, Trace::Dir("".into()));
        let err = ibmca_shim::backend::open_trace_file(std::path::Path::new("")).unwrap_err();
        assert!(err.contains("debug-path"), "{err}");
        let err =
            ibmca_shim::backend::open_trace_file(std::path::Path::new("relative/dir")).unwrap_err();
        assert!(err.contains("not an absolute path"), "{err}");
    }

    #[test]
    fn backend_settings_mapping() {
        use ibmca_shim::backend::{Choice, Trace};
        let c = Config::load(|k| match k {
            "backend" => Some("software".into()),
            "debug" => Some("yes".into()),
            "debug-path" => Some("/var/tmp/x".into()),
            "offload-min-bits" => Some("1024".into()),
            _ => None,
        })
        .unwrap();
        let s = c.backend_settings();
        assert_eq!(s.choice, Choice::Software);
        assert_eq!(s.trace, Trace::Dir("/var/tmp/x".into()));
        assert_eq!((s.offload_min_bits, s.offload_max_bits), (1024, 4096));
        let c = Config::load(|k| (k == "debug").then(|| "stderr".into())).unwrap();
        assert_eq!(c.backend_settings().trace, Trace::Stderr);
        assert_eq!(c.backend_settings().choice, Choice::Auto);
    }
}
