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

/// Round 5's setup: a private directory (0755) holding a sticky shared
/// one (1777, as /tmp), and in the shared one nobody's marker library.
/// Returns (dir, shared, marker, library); the shared directory is
/// `DIR/sticky`.
fn shared_marker(name: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(name);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let shared = dir.join("sticky");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let marker = dir.join("loaded-as-root");
    let lib = marker_library(&shared, &marker);
    give_to_nobody(&lib);
    (dir, shared, marker, lib)
}

/// `rustica config --input CONF` (env: extra variables) must refuse CONF
/// before anything loads nobody's library, and write nothing.
fn assert_refused(conf: &Path, env: &[(&str, &std::ffi::OsStr)], flag: &str, marker: &Path) {
    let module = real_module();
    let out = conf.with_file_name("out.cnf");
    let mut c = rustica();
    c.arg("config")
        .arg(flag)
        .arg(conf)
        .arg("--module")
        .arg(&module)
        .arg("--out")
        .arg(&out);
    c.env_remove("OPENSSL_MODULES")
        .env_remove("OPENSSL_CONF_INCLUDE");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let loaded = marker.exists();
    assert!(
        !loaded,
        "nobody's library ran as root during rustica config: {}",
        text(&o)
    );
    assert!(!o.status.success(), "accepted: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not used") && err.contains("uid 65534"),
        "{err}"
    );
    assert!(!out.exists(), "the output was written");
}

/// Round 5, item 1: a relative `module =` is joined by OpenSSL to its
/// modules directory ($OPENSSL_MODULES, else the compiled-in MODULESDIR),
/// so enough `..` reaches any file; only absolute paths were judged, and
/// root's openssl ran nobody's library during `rustica config`'s check.
#[test]
fn a_relative_module_path_is_judged_where_openssl_finds_it() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, _shared, marker, lib) = shared_marker("relative-module");
    // From the compiled-in modules directory: up to / and down again.
    let o = std::process::Command::new("openssl")
        .args(["version", "-m"])
        .env("OPENSSL_CONF", "/dev/null")
        .output()
        .unwrap();
    let modulesdir = String::from_utf8_lossy(&o.stdout)
        .split('"')
        .nth(1)
        .unwrap()
        .to_string();
    let ups = "../".repeat(Path::new(&modulesdir).components().count() - 1);
    let via_default = format!("{ups}{}", lib.strip_prefix("/").unwrap().display());
    let conf = dir.join("root.cnf");
    fs::write(&conf, config_loading(Path::new(&via_default))).unwrap();
    assert_refused(&conf, &[], "--input", &marker);
    // From $OPENSSL_MODULES, a directory of root's own.
    let mods = dir.join("modules");
    fs::create_dir(&mods).unwrap();
    fs::write(&conf, config_loading(Path::new("../sticky/marker.so"))).unwrap();
    assert_refused(
        &conf,
        &[("OPENSSL_MODULES", mods.as_os_str())],
        "--input",
        &marker,
    );
    let _ = fs::remove_dir_all(&dir);
}

/// Round 5, item 2: a library that is not there yet was judged by its
/// directory with the rule for paths on the way, which accepts a sticky
/// world-writable directory; nobody creates the file afterwards and root's
/// OpenSSL loads it. A missing library now needs a directory only root and
/// the caller may write to; one in root's own directory is still taken.
#[test]
fn a_library_missing_from_a_shared_directory_is_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, lib) = shared_marker("missing-library");
    let later = shared.join("later.so");
    let conf = dir.join("root.cnf");
    fs::write(&conf, config_loading(&later)).unwrap();
    let module = real_module();
    let out = dir.join("out.cnf");
    let o = config(
        &["--input".as_ref(), conf.as_os_str(), "--no-check".as_ref()],
        &module,
        Some(&out),
    );
    if o.status.success() {
        // What the old rule let happen: nobody puts the library there, and
        // root's next OpenSSL on the written file runs it.
        fs::copy(&lib, &later).unwrap();
        give_to_nobody(&later);
        let _ = std::process::Command::new("openssl")
            .args(["list", "-providers"])
            .env("OPENSSL_CONF", &out)
            .output()
            .unwrap();
        panic!(
            "accepted (nobody's library then ran as root: {}): {}",
            marker.exists(),
            text(&o)
        );
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not used") && err.contains("later.so"),
        "{err}"
    );
    assert!(!out.exists(), "the output was written");
    // Missing from a directory of root's that nobody else may write to:
    // root's choice, taken.
    let own = dir.join("own-modules");
    fs::create_dir(&own).unwrap();
    fs::set_permissions(&own, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(&conf, config_loading(&own.join("later.so"))).unwrap();
    let o = config(
        &["--input".as_ref(), conf.as_os_str(), "--no-check".as_ref()],
        &module,
        Some(&out),
    );
    assert!(o.status.success(), "{}", text(&o));
    let _ = fs::remove_dir_all(&dir);
}

/// Round 5, item 3: OpenSSL takes a relative `.include` against
/// $OPENSSL_CONF_INCLUDE first and `.pragma includedir` only without it;
/// rustica judged the pragma's file (root's own) while OpenSSL read
/// nobody's, and the marker ran as root during rustica config's check.
#[test]
fn the_include_judged_is_the_one_openssl_reads() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, lib) = shared_marker("include-order");
    let own = dir.join("own");
    fs::create_dir(&own).unwrap();
    fs::write(own.join("inc.cnf"), "# root's own\n").unwrap();
    let planted = shared.join("inc.cnf");
    fs::write(&planted, config_loading(&lib)).unwrap();
    give_to_nobody(&planted);
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        format!(".pragma includedir:{}\n.include inc.cnf\n", own.display()),
    )
    .unwrap();
    assert_refused(
        &conf,
        &[("OPENSSL_CONF_INCLUDE", shared.as_os_str())],
        "--input",
        &marker,
    );
    let _ = fs::remove_dir_all(&dir);
}

/// Round 5, item 4: the engine's `libica` path was carried into rustica's
/// section unjudged, and `config --from-engine`'s own check then loaded it
/// as root (rustica's libica backend opens it).
#[test]
fn the_engines_libica_is_judged_as_a_module_is() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, _shared, marker, lib) = shared_marker("engine-libica");
    let conf = dir.join("engine.cnf");
    fs::write(
        &conf,
        format!(
            "openssl_conf = init\n[init]\nengines = eng\n[eng]\nibmca = ibmca_s\n\
             [ibmca_s]\nengine_id = ibmca\nlibica = {}\n",
            lib.display()
        ),
    )
    .unwrap();
    assert_refused(&conf, &[], "--from-engine", &marker);
    let _ = fs::remove_dir_all(&dir);
}

/// `rustica config --input CONF --no-check` (env: extra variables).
fn config_input(conf: &Path, out: &Path, env: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    let mut c = rustica();
    c.arg("config")
        .arg("--input")
        .arg(conf)
        .arg("--module")
        .arg(real_module())
        .arg("--out")
        .arg(out)
        .arg("--no-check");
    c.env_remove("OPENSSL_MODULES")
        .env_remove("OPENSSL_CONF_INCLUDE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Round 6, item 2: includes that appear later. A missing include in a
/// sticky shared directory, an included directory that is only
/// sticky-trusted, and a relative include (read by each program from its
/// own working directory) were all accepted and written into the output,
/// which root's next OpenSSL then read from wherever nobody chose.
#[test]
fn includes_that_can_appear_later_are_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, lib) = shared_marker("late-includes");
    let cases = [
        (
            format!(".include {}/later.cnf\n", shared.display()),
            "does not exist",
        ),
        (format!(".include {}\n", shared.display()), "sticky or not"),
        (".include later.cnf\n".to_string(), "working directory"),
    ];
    for (line, why) in cases {
        let conf = dir.join("root.cnf");
        fs::write(&conf, &line).unwrap();
        let out = dir.join("out.cnf");
        let o = config_input(&conf, &out, &[]);
        if o.status.success() {
            // What the old rule let happen: nobody writes the include, and
            // root's next OpenSSL on the written file runs their library.
            let planted = shared.join("later.cnf");
            fs::write(&planted, config_loading(&lib)).unwrap();
            give_to_nobody(&planted);
            let _ = std::process::Command::new("openssl")
                .args(["list", "-providers"])
                .env("OPENSSL_CONF", &out)
                .current_dir(&shared)
                .output()
                .unwrap();
            panic!(
                "{line:?} accepted (nobody's library then ran as root: {}): {}",
                marker.exists(),
                text(&o)
            );
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("not used") && err.contains(why),
            "{line:?}: {err}"
        );
        assert!(!out.exists(), "{line:?}: the output was written");
    }
    let _ = fs::remove_dir_all(&dir);
}

/// Round 6, item 3: OpenSSL expands `$var` (and `${var}`, `$ENV::NAME`)
/// in a value before it loads it; `module = $libdir/marker.so` was judged
/// as a missing file and rustica config's own check ran nobody's library.
#[test]
fn a_library_named_through_a_variable_is_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, _lib) = shared_marker("variables");
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        format!(
            "libdir = {}\n{}",
            shared.display(),
            config_loading(Path::new("$libdir/marker.so"))
        ),
    )
    .unwrap();
    let module = real_module();
    let out = dir.join("out.cnf");
    let o = config(&["--input".as_ref(), conf.as_os_str()], &module, Some(&out));
    assert!(
        !marker.exists(),
        "nobody's library ran as root during rustica config: {}",
        text(&o)
    );
    assert!(!o.status.success(), "accepted: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("rewrites this value"), "{err}");
    assert!(!out.exists(), "the output was written");
    let _ = fs::remove_dir_all(&dir);
}

/// Round 6, item 4: a provider section without `module` loads
/// `<OPENSSL_MODULES>/<name>.so`, which was never judged.
#[test]
fn a_provider_without_module_is_judged_where_openssl_finds_it() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, _lib) = shared_marker("implicit-module");
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        "openssl_conf = init\n[init]\nproviders = prov\n[prov]\ndefault = d\n\
         marker = marker_s\n[d]\nactivate = 1\n[marker_s]\nactivate = 1\n",
    )
    .unwrap();
    assert_refused(
        &conf,
        &[("OPENSSL_MODULES", shared.as_os_str())],
        "--input",
        &marker,
    );
    let _ = fs::remove_dir_all(&dir);
}

/// Round 6, item 4: `lab --c-config` was judged with the lab's own
/// OPENSSL_CONF_INCLUDE, but side C runs with it removed and read the
/// include the pragma names: nobody's, whose library ran as root.
#[test]
fn the_labs_side_c_is_judged_in_its_own_environment() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, lib) = shared_marker("lab-env");
    let own = dir.join("own");
    fs::create_dir(&own).unwrap();
    fs::write(own.join("inc.cnf"), "# root's own\n").unwrap();
    let planted = shared.join("inc.cnf");
    fs::write(&planted, config_loading(&lib)).unwrap();
    give_to_nobody(&planted);
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        format!(
            ".pragma includedir:{}\n.include inc.cnf\n",
            shared.display()
        ),
    )
    .unwrap();
    let o = rustica()
        .args(["lab", "--sizes", "1024", "--count", "1", "--reps", "1"])
        .args(["--keygen-reps", "1", "--cell-budget", "0", "--skip"])
        .arg("newkey,multi,speed")
        .arg("--module")
        .arg(real_module())
        .arg("--c-config")
        .arg(&conf)
        .arg("--out")
        .arg(dir.join("lab-out"))
        .env("OPENSSL_CONF_INCLUDE", &own)
        .env_remove("OPENSSL_MODULES")
        .output()
        .unwrap();
    assert!(
        !marker.exists(),
        "nobody's library ran as root in the lab: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not used") && err.contains("uid 65534"),
        "{err}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// An engine section without `dynamic_path` is loaded by its id from
/// `<OPENSSL_ENGINES>/<id>.so`; that file was never judged, and rustica
/// config's own check ran nobody's library as root.
#[test]
fn an_engine_found_by_id_is_judged_where_openssl_finds_it() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, shared, marker, _lib) = shared_marker("engine-by-id");
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        "openssl_conf = init\n[init]\nengines = eng\n[eng]\nmarker = marker_s\n\
         [marker_s]\ninit = 1\n",
    )
    .unwrap();
    assert_refused(
        &conf,
        &[("OPENSSL_ENGINES", shared.as_os_str())],
        "--input",
        &marker,
    );
    let _ = fs::remove_dir_all(&dir);
}

/// OpenSSL joins a line ending in `\` with the next, so `mod\` and
/// `ule = LIB` make a `module`; read line by line, the section had no
/// module, and rustica config's own check ran nobody's library as root.
#[test]
fn a_key_continued_on_the_next_line_is_refused() {
    if !is_root() {
        eprintln!("skipped: needs root to give files to another user; CI runs as root");
        return;
    }
    let (dir, _shared, marker, lib) = shared_marker("continued");
    let conf = dir.join("root.cnf");
    fs::write(
        &conf,
        format!(
            "openssl_conf = init\n[init]\nproviders = prov\n[prov]\ndefault = d\n\
             planted = planted_s\n[d]\nactivate = 1\n[planted_s]\nmod\\\nule = {}\n\
             activate = 1\n",
            lib.display()
        ),
    )
    .unwrap();
    let module = real_module();
    let out = dir.join("out.cnf");
    let o = config(&["--input".as_ref(), conf.as_os_str()], &module, Some(&out));
    assert!(
        !marker.exists(),
        "nobody's library ran as root during rustica config: {}",
        text(&o)
    );
    assert!(!o.status.success(), "accepted: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("one line"), "{err}");
    assert!(!out.exists(), "the output was written");
    let _ = fs::remove_dir_all(&dir);
}
