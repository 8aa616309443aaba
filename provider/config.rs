//! The provider's configuration: keys from its openssl.cnf section, with
//! environment overrides for tests and troubleshooting.

use crate::error::{fail, Reason, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Libica,
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
        }
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
    /// overridden by RUSTICA_BACKEND, RUSTICA_LIBICA and RUSTICA_DEBUG.
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut c = Config::default();
        if let Some(v) = env("RUSTICA_BACKEND").or_else(|| lookup("backend")) {
            c.backend = match v.trim() {
                "auto" => BackendChoice::Auto,
                "libica" => BackendChoice::Libica,
                "software" => BackendChoice::Software,
                other => return Err(bad("backend", other, "auto, libica or software")),
            };
        }
        c.libica = env("RUSTICA_LIBICA").or_else(|| lookup("libica"));
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
        Ok(c)
    }
}

impl Config {
    /// The backend settings of the RSA primitive (`ibmca_shim::backend`).
    /// `debug = yes` writes to `debug-path` (default /tmp), file
    /// `rustica-debug.log`; `debug = stderr` to standard error.
    pub fn backend_settings(&self) -> ibmca_shim::backend::Settings {
        use ibmca_shim::backend::{Choice, Settings, Trace};
        Settings {
            choice: match self.backend {
                BackendChoice::Auto => Choice::Auto,
                BackendChoice::Libica => Choice::Libica,
                BackendChoice::Software => Choice::Software,
            },
            libica: self.libica.clone(),
            offload_min_bits: self.offload_min_bits,
            offload_max_bits: self.offload_max_bits,
            trace: match self.debug {
                Debug::No => Trace::Off,
                Debug::Stderr => Trace::Stderr,
                Debug::Yes => {
                    Trace::Dir(self.debug_path.as_deref().unwrap_or("/tmp").trim().into())
                }
            },
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
