use super::*;
use std::os::unix::fs::PermissionsExt;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

#[test]
fn includes_and_libraries_are_followed() {
    let d = tempfile::tempdir().unwrap();
    let sub = d.path().join("conf.d");
    std::fs::create_dir(&sub).unwrap();
    write(&sub, "a.cnf", "[p]\nmodule = /nonexistent/a.so\n");
    write(&sub, "ignored.txt", "module = /never/read.so\n");
    write(d.path(), "inner.cnf", "[e]\ndynamic_path = engine.so\n");
    let top = write(
        d.path(),
        "top.cnf",
        &format!(
            ".pragma includedir:{}\n.include = inner.cnf\n.include {}  # the drop-ins\n",
            d.path().display(),
            sub.display()
        ),
    );
    // A library that is not there: the nearest directory that is
    // (here /) is judged instead.
    let tree = trusted_config(&top).unwrap();
    assert_eq!(tree.files.len(), 3, "{tree:?}");
    let loads: Vec<&str> = tree.loads.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(loads, ["engine.so", "/nonexistent/a.so"]);
    assert_eq!(tree.loads[1].from, sub.join("a.cnf"));
}

#[test]
fn a_missing_library_in_a_directory_others_may_write_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let top = write(
        d.path(),
        "top.cnf",
        &format!("module = {}/later.so\n", open.display()),
    );
    let err = trusted_config(&top).unwrap_err();
    assert!(err.contains("later.so") && err.contains("sticky"), "{err}");
}

#[test]
fn an_included_file_others_may_write_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let inner = write(d.path(), "inner.cnf", "\n");
    std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o666)).unwrap();
    let top = write(
        d.path(),
        "top.cnf",
        &format!(".include {}\n", inner.display()),
    );
    let err = trusted_config(&top).unwrap_err();
    assert!(
        err.contains("includes") && err.contains("other users"),
        "{err}"
    );
}

#[test]
fn an_include_cycle_ends() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path().join("top.cnf");
    write(
        d.path(),
        "top.cnf",
        &format!(".include {}\n", top.display()),
    );
    let err = trusted_config(&top).unwrap_err();
    assert!(err.contains("nested deeper"), "{err}");
}

/// The environment of a child with exactly these two variables (the
/// lab's side C has neither).
fn env(conf_include: Option<&Path>, modules: Option<&Path>) -> ReadEnv {
    ReadEnv {
        conf_include: conf_include.map(|p| p.as_os_str().to_owned()),
        modules: modules.map(|p| p.as_os_str().to_owned()),
        engines: None,
        openssl: PathBuf::from("openssl"),
        system_wide: false,
    }
}

/// [`env`] for a file every program of the host reads.
fn system_wide(conf_include: Option<&Path>, modules: Option<&Path>) -> ReadEnv {
    ReadEnv {
        system_wide: true,
        ..env(conf_include, modules)
    }
}

#[test]
fn includes_resolve_in_openssls_order() {
    let d = tempfile::tempdir().unwrap();
    for sub in ["pragma", "env", "later"] {
        std::fs::create_dir(d.path().join(sub)).unwrap();
        write(&d.path().join(sub), "inc.cnf", &format!("# {sub}\n"));
    }
    // The pragma set in an included file holds for the includes after
    // it, in the outer file too (OpenSSL keeps it per configuration).
    write(
        &d.path().join("pragma"),
        "set.cnf",
        &format!(".pragma includedir:{}/later\n", d.path().display()),
    );
    let top = write(
        d.path(),
        "top.cnf",
        &format!(
            ".pragma includedir:{0}/pragma\n.include inc.cnf\n.include set.cnf\n\
             .include inc.cnf\n",
            d.path().display()
        ),
    );
    let tree = trusted_config_in(&top, &env(None, None)).unwrap();
    let read: Vec<_> = tree
        .files
        .iter()
        .map(|f| f.strip_prefix(d.path()).unwrap())
        .collect();
    assert_eq!(
        read,
        [
            Path::new("top.cnf"),
            Path::new("pragma/inc.cnf"),
            Path::new("pragma/set.cnf"),
            Path::new("later/inc.cnf")
        ]
    );
    // OPENSSL_CONF_INCLUDE before any pragma.
    let e = d.path().join("env");
    let tree = trusted_config_in(&top, &env(Some(&e), None)).unwrap();
    // (set.cnf is looked for there too, and is not there.)
    assert_eq!(tree.files[1..], [e.join("inc.cnf"), e.join("inc.cnf")]);
    // Set but empty: relative to /.
    let empty = ReadEnv {
        conf_include: Some(OsString::new()),
        ..env(None, None)
    };
    let walk = Walk {
        env: &empty,
        includedir: Some(d.path().to_path_buf()),
        section: String::new(),
        sections: HashMap::new(),
    };
    assert_eq!(
        include_paths("x.cnf", &walk, &top).unwrap(),
        [Path::new("/x.cnf")]
    );
    // For a file every program reads, the pragma's file is judged too:
    // the programs without the variable read that one.
    let tree = trusted_config_in(&top, &system_wide(Some(&e), None)).unwrap();
    assert!(
        tree.files.contains(&d.path().join("pragma/inc.cnf")),
        "{tree:?}"
    );
    assert!(tree.files.contains(&e.join("inc.cnf")), "{tree:?}");
}

#[test]
fn a_relative_module_is_judged_in_the_modules_directory() {
    let d = tempfile::tempdir().unwrap();
    let mods = d.path().join("modules");
    let open = d.path().join("open");
    std::fs::create_dir(&mods).unwrap();
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let lib = write(&open, "x.so", "");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
    let top = write(d.path(), "top.cnf", "module = ../open/x.so\n");
    let err = trusted_config_in(&top, &env(None, Some(&mods))).unwrap_err();
    assert!(
        err.contains("opened as") && err.contains("other users"),
        "{err}"
    );
    // Missing, in a sticky directory anybody may create it in.
    write(d.path(), "top.cnf", "module = ../open/later.so\n");
    let err = trusted_config_in(&top, &env(None, Some(&mods))).unwrap_err();
    assert!(
        err.contains("later.so") && err.contains("sticky or not"),
        "{err}"
    );
    // Missing from a directory of the caller's alone: taken.
    write(d.path(), "top.cnf", "module = later.so\n");
    trusted_config_in(&top, &env(None, Some(&mods))).unwrap();
}

/// A directory of the test's that anybody may write to, as /tmp (1777).
fn sticky(d: &Path) -> PathBuf {
    let s = d.join("sticky");
    std::fs::create_dir(&s).unwrap();
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o1777)).unwrap();
    s
}

/// Round 6, item 2: an include that is not there yet was skipped, so
/// whoever could create it later chose what root's OpenSSL read.
#[test]
fn a_missing_include_is_judged_as_a_missing_library() {
    let d = tempfile::tempdir().unwrap();
    let shared = sticky(d.path());
    let top = write(
        d.path(),
        "top.cnf",
        &format!(".include {}/later.cnf\n", shared.display()),
    );
    let err = trusted_config_in(&top, &env(None, None)).unwrap_err();
    assert!(
        err.contains("later.cnf") && err.contains("does not exist") && err.contains("sticky"),
        "{err}"
    );
    // Missing from a directory only its owner may write to: taken.
    write(
        d.path(),
        "top.cnf",
        &format!(".include {}/later.cnf\n", d.path().display()),
    );
    trusted_config_in(&top, &env(None, None)).unwrap();
}

/// Round 6, item 2: an included directory is read for every *.cnf in it,
/// so one that others may add files to (sticky or not) is refused, even
/// empty.
#[test]
fn an_included_directory_others_may_add_to_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let shared = sticky(d.path());
    let top = write(
        d.path(),
        "top.cnf",
        &format!(".include {}\n", shared.display()),
    );
    let err = trusted_config_in(&top, &env(None, None)).unwrap_err();
    assert!(err.contains("sticky or not"), "{err}");
}

/// Round 6, item 2: a relative include with no absolute pragma before it
/// is read by each program from its own working directory.
#[test]
fn a_relative_include_needs_an_absolute_includedir() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "inc.cnf", "\n");
    for text in [
        ".include inc.cnf\n".to_string(),
        ".pragma includedir:conf.d\n.include inc.cnf\n".to_string(),
    ] {
        let top = write(d.path(), "top.cnf", &text);
        let err = trusted_config_in(&top, &system_wide(None, None)).unwrap_err();
        assert!(err.contains("working directory"), "{text}: {err}");
    }
    // With OPENSSL_CONF_INCLUDE in this process only: other programs,
    // setuid ones included, read the file without it.
    let top = write(d.path(), "top.cnf", ".include inc.cnf\n");
    let err = trusted_config_in(&top, &system_wide(Some(d.path()), None)).unwrap_err();
    assert!(err.contains("working directory"), "{err}");
    // A program started with it reads the file where it says.
    trusted_config_in(&top, &env(Some(d.path()), None)).unwrap();
    // And so does every program after an absolute pragma.
    let top = write(
        d.path(),
        "top.cnf",
        &format!(
            ".pragma = includedir:{}\n.include = inc.cnf\n",
            d.path().display()
        ),
    );
    trusted_config_in(&top, &system_wide(None, None)).unwrap();
}

/// Round 6, item 3: OpenSSL expands variables and undoes escapes and
/// quotes in a value before it opens it; the text was judged instead.
#[test]
fn a_value_openssl_rewrites_is_refused() {
    let d = tempfile::tempdir().unwrap();
    for line in [
        "module = $libdir/evil.so",
        "module = ${libdir}/evil.so",
        "dynamic_path = $ENV::HOME/evil.so",
        "libica = /usr/lib/\\.\\./evil.so",
        "SO_PATH = /usr/'lib'/x.so",
        "sect::module = /a/\"b\"/x.so",
        ".include $ENV::SITE/x.cnf",
        ".include ${dir}/x.cnf",
        ".pragma includedir:$ENV::HOME",
    ] {
        let top = write(d.path(), "top.cnf", &format!("libdir = /tmp\n{line}\n"));
        let err = trusted_config_in(&top, &env(None, None)).unwrap_err();
        assert!(err.contains("rewrites this value"), "{line}: {err}");
    }
    // A value wholly in double quotes is the text inside.
    let top = write(d.path(), "top.cnf", "module = \"/nonexistent/x.so\"\n");
    let tree = trusted_config_in(&top, &env(None, None)).unwrap();
    assert_eq!(tree.loads[0].path, "/nonexistent/x.so");
    // Variables elsewhere (the CA sections of Debian's openssl.cnf) are
    // no library's and stay.
    let top = write(d.path(), "top.cnf", "dir = ./demoCA\ncerts = $dir/certs\n");
    trusted_config_in(&top, &env(None, None)).unwrap();
}

/// Round 6, item 4: a provider section without `module` loads NAME.so (or
/// its `identity`) from the modules directory; that file was never
/// judged.
#[test]
fn a_provider_without_module_is_judged_by_its_name() {
    let d = tempfile::tempdir().unwrap();
    let shared = sticky(d.path());
    let lib = write(&shared, "evil.so", "");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
    let conf = |section: &str| {
        format!(
            "openssl_conf = init\n[init]\nproviders = provs\n[provs]\ndefault = d\n\
             evil = evil_s\n[d]\nactivate = 1\n[evil_s]\n{section}activate = 1\n"
        )
    };
    let top = write(d.path(), "top.cnf", &conf(""));
    let err = trusted_config_in(&top, &env(None, Some(&shared))).unwrap_err();
    assert!(
        err.contains("provider = evil") && err.contains("evil.so") && err.contains("other users"),
        "{err}"
    );
    // By its identity; missing, in a directory anybody may create it in.
    write(d.path(), "top.cnf", &conf("identity = later\n"));
    let err = trusted_config_in(&top, &env(None, Some(&shared))).unwrap_err();
    assert!(
        err.contains("later.so") && err.contains("does not exist"),
        "{err}"
    );
    // From a directory of the caller's alone, and `default` (built in),
    // nothing to refuse.
    let tree = trusted_config_in(&top, &env(None, Some(d.path()))).unwrap();
    let names: Vec<_> = tree
        .loads
        .iter()
        .map(|l| (l.key.as_str(), l.path.as_str()))
        .collect();
    assert_eq!(names, [("provider", "later")]);
    // A `module` line is what loads, and the name is not.
    write(d.path(), "top.cnf", &conf("module = /nonexistent/x.so\n"));
    let tree = trusted_config_in(&top, &env(None, Some(&shared))).unwrap();
    assert_eq!(tree.loads.len(), 1, "{tree:?}");
}

/// Round 6, item 4: the lab's children run without OPENSSL_CONF_INCLUDE
/// and OPENSSL_MODULES; the file was judged with the lab's own values.
#[test]
fn a_childs_environment_is_the_one_judged() {
    let removed = ["OPENSSL_CONF_INCLUDE", "OPENSSL_MODULES"];
    let e = ReadEnv::of_child(Path::new("openssl"), &removed, &[]);
    assert_eq!((e.conf_include, e.modules), (None, None));
    assert!(!e.system_wide);
    let set = [("OPENSSL_MODULES".to_string(), "/m".to_string())];
    let e = ReadEnv::of_child(Path::new("openssl"), &removed, &set);
    assert_eq!(e.modules.as_deref(), Some(OsStr::new("/m")));
    // What that means for a file: the pragma's include, not the
    // variable's, is the one side C reads.
    let d = tempfile::tempdir().unwrap();
    let shared = sticky(d.path());
    let top = write(
        d.path(),
        "top.cnf",
        &format!(
            ".pragma includedir:{}\n.include later.cnf\n",
            shared.display()
        ),
    );
    trusted_config_in(&top, &env(Some(d.path()), None)).unwrap();
    let err = trusted_config_in(&top, &env(None, None)).unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
}

/// An engine section without `dynamic_path` is loaded by its id from the
/// engines directory (OPENSSL_ENGINES, else ENGINESDIR), and the dynamic
/// engine's DIR_ADD names a directory it loads from; neither was judged.
#[test]
fn an_engine_found_by_id_is_judged_where_openssl_finds_it() {
    let d = tempfile::tempdir().unwrap();
    let shared = sticky(d.path());
    let lib = write(&shared, "evil.so", "");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
    let top = write(
        d.path(),
        "top.cnf",
        "openssl_conf = init\n[init]\nengines = e\n[e]\nevil = evil_s\n[evil_s]\ninit = 1\n",
    );
    let engines = ReadEnv {
        engines: Some(shared.as_os_str().to_owned()),
        ..env(None, None)
    };
    let err = trusted_config_in(&top, &engines).unwrap_err();
    assert!(
        err.contains("engine = evil") && err.contains("evil.so"),
        "{err}"
    );
    // From a directory of the caller's alone: taken.
    let own = ReadEnv {
        engines: Some(d.path().as_os_str().to_owned()),
        ..env(None, None)
    };
    trusted_config_in(&top, &own).unwrap();
    // The dynamic engine told to load from a shared directory.
    write(
        d.path(),
        "top.cnf",
        &format!(
            "openssl_conf = init\n[init]\nengines = e\n[e]\nevil = evil_s\n[evil_s]\n\
             engine_id = dynamic\nDIR_LOAD = 2\nDIR_ADD = {}\nID = evil\nLOAD = EMPTY\n",
            shared.display()
        ),
    );
    let err = trusted_config_in(&top, &own).unwrap_err();
    assert!(
        err.contains("DIR_ADD") && err.contains("sticky or not"),
        "{err}"
    );
}

/// OpenSSL joins a line ending in `\` with the next: `mod\` + `ule = X`
/// is a `module`, which the line-by-line reading missed (the provider
/// was then judged by its name, in root's modules directory).
#[test]
fn a_continued_line_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let top = write(
        d.path(),
        "top.cnf",
        "openssl_conf = init\n[init]\nproviders = p\n[p]\nx = x_s\n[x_s]\n\
         mod\\\nule = /tmp/x.so\n",
    );
    let err = trusted_config_in(&top, &env(None, Some(d.path()))).unwrap_err();
    assert!(err.contains("line 7") && err.contains("one line"), "{err}");
}
