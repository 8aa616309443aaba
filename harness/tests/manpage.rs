//! The manual pages cannot drift from the command and the provider:
//! rustica(1) (`rustica man`) names every subcommand and option that
//! `--help` shows, rustica-provider(7) documents every configuration key
//! rustica reads, and the bash completion knows every subcommand.

use std::path::Path;
use std::process::Command;

fn rustica(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rustica"))
        .args(args)
        .output()
        .expect("run rustica");
    assert!(
        out.status.success(),
        "rustica {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// roff's spelling of a name: each `-` as `\-`.
fn roff(name: &str) -> String {
    name.replace('-', "\\-")
}

/// The subcommands listed under "Commands:" in `--help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The options (`-x`, `--long`) that start the lines of `--help`'s
/// "Options:" section.
fn options(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Options:"))
        .skip(1)
        .filter_map(|l| {
            // An option line is indented by two spaces; its description's
            // continuation lines (and possible values) by more.
            let l = l.strip_prefix("  ").filter(|l| l.starts_with('-'))?;
            let head = l.split("  ").next().unwrap_or("");
            Some(
                head.split([',', ' ', '=', '['])
                    .filter(|t| {
                        let name = t.trim_start_matches('-');
                        t.starts_with('-')
                            && name
                                .chars()
                                .next()
                                .is_some_and(|c| c.is_ascii_alphanumeric())
                    })
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect()
}

#[test]
fn rustica_1_has_every_subcommand_and_option_of_help() {
    let page = rustica(&["man"]);
    assert!(page.contains(".TH RUSTICA 1"), "not a section 1 page");
    let top = rustica(&["--help"]);
    let subs = subcommands(&top);
    assert!(subs.len() >= 6, "too few subcommands parsed: {subs:?}");
    for opt in options(&top) {
        assert!(page.contains(&roff(&opt)), "rustica.1 lacks {opt}");
    }
    for sub in subs {
        assert!(
            page.contains(&format!(".SS \"rustica {sub}\"")),
            "rustica.1 has no section for `rustica {sub}`"
        );
        let help = rustica(&[&sub, "--help"]);
        let opts = options(&help);
        assert!(!opts.is_empty(), "no options parsed for {sub}:\n{help}");
        // The subcommand's section: from its .SS to the next .SS or .SH.
        let start = page.find(&format!(".SS \"rustica {sub}\"")).unwrap();
        let section = &page[start + 4..];
        let section = &section[..section
            .find("\n.SS ")
            .or_else(|| section.find("\n.SH "))
            .unwrap_or(section.len())];
        for opt in opts {
            assert!(
                section.contains(&format!("\\fB{}\\fR", roff(&opt))),
                "rustica.1's `rustica {sub}` section lacks {opt}"
            );
        }
    }
}

#[test]
fn rustica_provider_7_documents_every_config_key() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/man/rustica-provider.7");
    let page = std::fs::read_to_string(&path).expect("read rustica-provider.7");
    assert!(page.contains(".TH RUSTICA\\-PROVIDER 7"));
    for key in ibmca_shim::CONFIG_KEYS
        .iter()
        .chain(&["module", "activate"])
    {
        assert!(
            page.contains(&format!(".B {} =", roff(key)))
                || page.contains(&format!("\\fB{}\\fR", roff(key))),
            "{} does not document the config key {key}",
            path.display()
        );
    }
    for section in [
        "ROUTING",
        "COUNTERS",
        "PROVIDER PARAMETERS",
        "TROUBLESHOOTING",
    ] {
        assert!(
            page.contains(&format!(".SH {section}")),
            "no {section} section"
        );
    }
}

#[test]
fn bash_completion_knows_every_subcommand() {
    let script = rustica(&["completions", "bash"]);
    assert!(script.contains("complete -F _rustica"), "{script}");
    for sub in subcommands(&rustica(&["--help"])) {
        assert!(script.contains(&sub), "completion lacks {sub}");
    }
}
