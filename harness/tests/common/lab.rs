//! `rustica lab` as the tests run it: a small run by default, whose
//! options a test replaces or adds by name (clap refuses an option given
//! twice, so replacing is the only way to change one), and the helpers
//! the lab tests share to read what a run wrote.

use super::{real_module, rustica};
use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A `rustica lab` command line under construction.
#[derive(Clone, Debug, Default)]
pub struct Lab {
    /// Options in the order given: name, then its value if it takes one.
    options: Vec<(String, Option<OsString>)>,
    env: Vec<(String, String)>,
    dir: Option<PathBuf>,
}

impl Lab {
    /// `rustica lab` with no option at all (set-up failures, defaults).
    pub fn bare() -> Lab {
        Lab::default()
    }

    /// The smallest complete lab: 1024 bits, one process of each kind per
    /// side, one round, one key per side, no sampling beyond that, one
    /// second per TLS and speed run, a DNSSEC zone of 20 names; `--full`,
    /// so that no step is left out as the quick lab leaves some (its rules
    /// have unit tests).
    pub fn small() -> Lab {
        Lab::bare()
            .flag("--full")
            .set("--sizes", "1024")
            .set("--count", "1")
            .set("--reps", "1")
            .set("--keygen-reps", "1")
            .set("--cell-budget", "0")
            .set("--tls-seconds", "1")
            .set("--speed-seconds", "1")
            .set("--dnssec-names", "20")
    }

    /// Sets `name` to `value`, replacing an earlier value.
    pub fn set(mut self, name: &str, value: impl AsRef<OsStr>) -> Lab {
        let value = Some(value.as_ref().to_os_string());
        match self.options.iter_mut().find(|(n, _)| n == name) {
            Some(o) => o.1 = value,
            None => self.options.push((name.to_string(), value)),
        }
        self
    }

    /// Adds a switch (`--aa`, `--count-libica-calls`).
    pub fn flag(mut self, name: &str) -> Lab {
        if !self.options.iter().any(|(n, _)| n == name) {
            self.options.push((name.to_string(), None));
        }
        self
    }

    /// Leaves `name` out.
    pub fn unset(mut self, name: &str) -> Lab {
        self.options.retain(|(n, _)| n != name);
        self
    }

    pub fn module(self, path: &Path) -> Lab {
        self.set("--module", path)
    }

    /// The workspace's real module (`real_module`).
    pub fn real_module(self) -> Lab {
        self.module(&real_module())
    }

    pub fn out(self, dir: &Path) -> Lab {
        self.set("--out", dir)
    }

    pub fn skip(self, what: &str) -> Lab {
        self.set("--skip", what)
    }

    /// B on the emulated libica (`emulated_libica`).
    pub fn on_emulated_libica(self) -> Lab {
        self.set("--backend", "libica")
            .set("--libica", emulated_libica())
    }

    pub fn env(mut self, name: &str, value: &str) -> Lab {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Runs the lab from `dir` (relative paths are read against it).
    pub fn current_dir(mut self, dir: &Path) -> Lab {
        self.dir = Some(dir.to_path_buf());
        self
    }

    pub fn command(&self) -> Command {
        let mut c = rustica();
        c.arg("lab");
        for (name, value) in &self.options {
            c.arg(name);
            if let Some(v) = value {
                c.arg(v);
            }
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c
    }

    pub fn output(&self) -> Output {
        self.command().output().unwrap()
    }
}

/// The emulated libica cargo built beside the module (libica-emu):
/// $RUSTICA_LIBICA_EMU, else libica_emu.so beside the module under test.
pub fn emulated_libica() -> PathBuf {
    let p = match std::env::var_os("RUSTICA_LIBICA_EMU") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => real_module().with_file_name("libica_emu.so"),
    };
    assert!(
        p.is_file(),
        "the emulated libica {} is missing: run cargo build --workspace (or set RUSTICA_LIBICA_EMU)",
        p.display()
    );
    p
}

/// OpenSSL's legacy provider, copied as `rustica.so`: loads fine, does no
/// RSA, counts nothing.
pub fn fake_module(dir: &Path) -> PathBuf {
    let out = Command::new("openssl")
        .args(["version", "-m"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let modules = text
        .split('"')
        .nth(1)
        .expect("MODULESDIR in `openssl version -m`");
    let legacy = Path::new(modules).join("legacy.so");
    assert!(
        legacy.is_file(),
        "{} is needed for the negative tests",
        legacy.display()
    );
    let fake = dir.join("rustica.so");
    fs::copy(&legacy, &fake).unwrap();
    fake
}

pub fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// One column of a row of report.json, by its key.
pub fn column<'a>(row: &'a Value, key: &str) -> &'a Value {
    row["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["column"] == key)
        .unwrap_or_else(|| panic!("no column {key}"))
}
