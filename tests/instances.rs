//! Settings belong to the provider instance: one process, two library
//! contexts, rustica configured `backend = software` in one and
//! `backend = libica` (the emulated libica) in the other. Each context's
//! key generation and signatures run on its own backend, proven by
//! rustica's counters and by the emulator's own call log.

mod common;
#[path = "conformance/evp.rs"]
mod evp;

use std::path::Path;

use common::{emulator_path, module_path, stats, Backend, Op};
use evp::{Lib, RUSTICA};

/// An openssl.cnf loading rustica (with `keys` in its section) and the
/// default provider.
fn config(dir: &Path, name: &str, keys: &[(&str, &str)]) -> std::path::PathBuf {
    let mut text = format!(
        "openssl_conf = init\n[init]\nproviders = provs\n[provs]\nrustica = rustica_sect\n\
         default = default_sect\n[default_sect]\nactivate = 1\n[rustica_sect]\nmodule = {}\n\
         activate = 1\n",
        module_path().display()
    );
    for (k, v) in keys {
        text.push_str(&format!("{k} = {v}\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn each_library_context_keeps_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    let stats_path = dir.path().join("stats");
    let emu_log = dir.path().join("emu-calls");
    // Read when rustica (and the emulator) first need them, below; no
    // other test runs in this binary.
    std::env::set_var("RUSTICA_STATS_PATH", &stats_path);
    std::env::set_var("LIBICA_EMU_COUNTS", &emu_log);
    std::env::remove_var("RUSTICA_BACKEND");
    std::env::remove_var("RUSTICA_LIBICA");

    let emu = emulator_path();
    let software = Lib::from_config(&config(
        dir.path(),
        "software.cnf",
        &[("backend", "software")],
    ));
    let libica = Lib::from_config(&config(
        dir.path(),
        "libica.cnf",
        &[("backend", "libica"), ("libica", emu.to_str().unwrap())],
    ));

    // Interleaved, so neither instance's setting can be "the last one".
    let soft_key = software.generate(RUSTICA, 2048);
    let ica_key = libica.generate(RUSTICA, 2048);
    let digest = [0x5au8; 32];
    const SOFT_SIGNS: u64 = 3;
    const ICA_SIGNS: u64 = 5;
    for i in 0..ICA_SIGNS {
        if i < SOFT_SIGNS {
            let (_, by) = software.sign_digest(&soft_key, RUSTICA, &digest);
            assert_eq!(by, "rustica");
        }
        let (_, by) = libica.sign_digest(&ica_key, RUSTICA, &digest);
        assert_eq!(by, "rustica");
    }

    let s = stats::snapshot(&stats_path).expect("rustica's counters");
    // Each instance generated its key on its own backend: the libica
    // one's Miller-Rabin exponentiations ran on the emulator.
    assert_eq!(s.get(Op::Keygen, Backend::Software), 1);
    assert_eq!(s.get(Op::Keygen, Backend::Libica), 1);
    assert_eq!(s.get(Op::Sign, Backend::Software), SOFT_SIGNS);
    assert_eq!(s.get(Op::Sign, Backend::Libica), ICA_SIGNS);
    for b in [Backend::Fallback, Backend::Failed] {
        assert_eq!(s.get(Op::Sign, b), 0, "{b:?}");
    }
    // The emulator saw exactly the libica context's signatures.
    let log = std::fs::read_to_string(&emu_log).unwrap_or_default();
    let crt_calls = log
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("rsa_crt"))
        .count();
    assert_eq!(crt_calls as u64, ICA_SIGNS, "{log}");
}
