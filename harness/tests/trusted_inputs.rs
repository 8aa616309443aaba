//! Files root is pointed at (round 4 of the safety review, findings 3 and
//! 4): `rustica lab --c-config FILE` and `rustica config --from-engine
//! FILE` / `--input FILE` ran `openssl` as root on a file that another
//! user owned, or that included one, so that user's library was loaded as
//! root; and `rustica config` accepted a configuration in which rustica
//! refused to load. The parts that give files to another user run as root
//! (CI does); elsewhere they say so and return.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod common;
use common::{real_module, rustica, temp_dir, text};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A library whose constructor writes `marker`: loaded by anyone, it
/// leaves the file behind.
fn marker_library(dir: &Path, marker: &Path) -> PathBuf {
    let src = dir.join("marker.c");
    fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void mark(void)\n\
             {{ FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let lib = dir.join("marker.so");
    let o = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    lib
}

/// An openssl.cnf that loads `lib` as a provider (and, for the migration,
/// the ibmca engine it is meant to replace).
fn config_loading(lib: &Path) -> String {
    format!(
        "openssl_conf = init\n[init]\nproviders = prov\nengines = eng\n[prov]\n\
         default = d\nplanted = planted_s\n[d]\nactivate = 1\n[planted_s]\nmodule = {}\n\
         activate = 1\n[eng]\nibmca = ibmca_s\n[ibmca_s]\nengine_id = ibmca\n",
        lib.display()
    )
}

/// `rustica config ARGS --module MODULE [--out OUT]`.
fn config(args: &[&std::ffi::OsStr], module: &Path, out: Option<&Path>) -> std::process::Output {
    let mut c = rustica();
    c.arg("config").args(args).arg("--module").arg(module);
    if let Some(out) = out {
        c.arg("--out").arg(out);
    }
    c.output().unwrap()
}

fn give_to_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
}

#[test]
fn root_refuses_files_another_user_can_change() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let module = real_module();
    let dir = temp_dir("trusted-inputs");
    // A sticky shared directory, as /tmp.
    let shared = dir.join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let marker = dir.join("loaded-as-root");
    let lib = marker_library(&shared, &marker);
    give_to_nobody(&lib);
    let planted = shared.join("openssl.cnf");
    fs::write(&planted, config_loading(&lib)).unwrap();
    give_to_nobody(&planted);
    // Root's own file, which includes nobody's.
    let including = dir.join("root.cnf");
    fs::write(&including, format!(".include {}\n", planted.display())).unwrap();

    for conf in [&planted, &including] {
        let o = rustica()
            .args(["lab", "--sizes", "1024", "--count", "1", "--reps", "1"])
            .args(["--keygen-reps", "1", "--cell-budget", "0", "--skip"])
            .arg("newkey,multi,speed")
            .arg("--module")
            .arg(&module)
            .arg("--c-config")
            .arg(conf)
            .arg("--out")
            .arg(dir.join("lab-out"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("not used") && err.contains("uid 65534"),
            "{err}"
        );

        for flag in ["--from-engine", "--input"] {
            let out = dir.join("out.cnf");
            let o = config(&[flag.as_ref(), conf.as_os_str()], &module, Some(&out));
            assert!(!o.status.success(), "{flag}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("not used"), "{flag}: {err}");
            assert!(!out.exists(), "{flag}: the output was written");
        }
        assert!(
            !marker.exists(),
            "another user's library was loaded as root ({})",
            conf.display()
        );
    }

    // The same library in root's own file is root's choice: loaded, and
    // named in the migration report among what the output still loads.
    let own_lib = dir.join("own-marker.so");
    fs::copy(&lib, &own_lib).unwrap();
    std::os::unix::fs::chown(&own_lib, Some(0), Some(0)).unwrap();
    let own = dir.join("own.cnf");
    fs::write(&own, config_loading(&own_lib)).unwrap();
    let o = config(
        &[
            "--from-engine".as_ref(),
            own.as_os_str(),
            "--no-check".as_ref(),
        ],
        &module,
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("provider module {}", own_lib.display())),
        "{err}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// `rustica config` checked the output by "rustica" and no "error" in
/// `openssl list -providers`; rustica's own refusal ("rustica: not loaded:
/// config key 'backend' ...") has neither problem, so a configuration that
/// disables rustica on every program of the host was written as accepted.
#[test]
fn config_writes_nothing_in_which_rustica_refuses_to_load() {
    let module = real_module();
    let dir = temp_dir("config-refused");
    let out = dir.join("out.cnf");
    let o = config(
        &["--fresh".as_ref(), "--backend".as_ref(), "bogus".as_ref()],
        &module,
        Some(&out),
    );
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("printed messages"), "{err}");
    assert!(!out.exists(), "the refused configuration was written");

    // The engine's libica value, copied verbatim, was such a value: a bare
    // name other than libica.so.4 / .so.3. One the loader's cache does not
    // know is not carried, and the output loads rustica cleanly.
    let engine = dir.join("engine.cnf");
    fs::write(
        &engine,
        "openssl_conf = init\n[init]\nengines = eng\n[eng]\nibmca = ibmca_s\n\
         [ibmca_s]\nengine_id = ibmca\nlibica = libica-not-installed-here.so.4\n",
    )
    .unwrap();
    let o = config(
        &["--from-engine".as_ref(), engine.as_os_str()],
        &module,
        Some(&out),
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not carried: libica-not-installed-here.so.4"),
        "{err}"
    );
    let written = fs::read_to_string(&out).unwrap();
    // Only the comment that says what was taken out names it.
    assert!(
        !written
            .lines()
            .any(|l| l.trim_start().starts_with("libica")),
        "{written}"
    );
    let _ = fs::remove_dir_all(&dir);
}
