//! rustica(1), generated from the command's clap definitions, so the page
//! says what `--help` says: every subcommand with its synopsis, description
//! and options in one page (`man rustica`), followed by the few sections
//! `--help` has no place for (environment, files, examples).
//!
//! The package build writes it with `rustica man`; harness/tests/manpage.rs
//! checks that every option and subcommand of `--help` is in it.

use std::io::Write;

use clap_mangen::Man;

/// Sections after the generated ones. Written in roff: `\-` is a minus
/// sign (a plain `-` may be typeset as a hyphen, which breaks copy and
/// paste of options).
const TRAILER: &str = r#".SH ENVIRONMENT
.TP
.B RUSTICA_MODULE
The rustica module to use when no \fB\-\-module\fR is given.
.TP
.B RUSTICA_STATS_PATH
rustica's counters file (default \fI/dev/shm/rustica\-stats\-UID\fR), read by
\fBrustica stats\fR and written by the provider in every process.
.TP
.B OPENSSL_CONF
The openssl.cnf that \fBrustica doctor\fR checks when no \fB\-\-config\fR is given.
.TP
.B TMPDIR
Where \fBrustica doctor\fR makes its private work directory (default
\fI/tmp\fR; a new directory of mode 0700 with a random name, removed at the
end).
.TP
.B RUSTICA_BACKEND, RUSTICA_LIBICA, RUSTICA_DEBUG
Override the provider's \fBbackend\fR, \fBlibica\fR and \fBdebug\fR keys; see
\fBrustica\-provider\fR(7).
.SH FILES
.TP
.I MODULESDIR/rustica.so
The provider module, in the directory \fBopenssl version \-m\fR names
(Debian 12 on amd64: \fI/usr/lib/x86_64\-linux\-gnu/ossl\-modules\fR).
\fBrustica config\fR prefers it over a module beside the program.
\fBrustica lab\fR and \fBrustica doctor\fR prefer \fIrustica.so\fR or cargo's
\fIlibrustica.so\fR beside the program, which is what a build tree has.
.TP
.I OPENSSLDIR/openssl.cnf
The system configuration (\fBopenssl version \-d\fR). rustica never edits it:
\fBrustica config \-\-out FILE\fR writes a merged copy for you to review.
.TP
.I /etc/ssl/openssl\-rustica.cnf
Where to have \fBrustica config \-\-out\fR write the merged copy as root: a
directory only root can change. Never a shared directory such as
\fI/tmp\fR: another user could have put a file naming their own module at
the name first. \fBrustica config\fR writes a new file (mode 0644) and
renames it onto \fB\-\-out\fR once OpenSSL accepted it; it refuses a
symbolic link, another user's file, and a directory that another user can
change. \fBrustica doctor\fR refuses to use a configuration that another
user could have written.
.TP
.I /usr/share/doc/rustica/openssl.cnf.example
A minimal configuration that loads rustica.
.TP
.I /dev/shm/rustica\-stats\-UID
Each user's counters file, read by \fBrustica stats \-\-all\-users\fR and
\fB\-\-sum\fR. The documents and metric series \fBrustica stats\fR prints are
described in \fI/usr/share/doc/rustica/statistics.md\fR.
.TP
.I rustica\-metrics.service, rustica\-metrics.timer
Installed by the packages, disabled: every 15 seconds, every user's
counters as \fIrustica.prom\fR in node_exporter's textfile collector
directory (Debian: \fI/var/lib/prometheus/node\-exporter\fR; RPM:
\fI/var/lib/node_exporter/textfile_collector\fR); see
\fI/usr/share/doc/rustica/monitoring.md\fR.
.SH EXIT STATUS
0 on success. \fBrustica lab\fR: 1 when a result is invalid, 2 for a set\-up
problem, 130 when interrupted. \fBrustica doctor\fR: 1 when a check failed.
\fBrustica stats\fR: 2 when the counters file cannot be read.
.SH EXAMPLES
Load rustica for every OpenSSL program, after reviewing the result:
.PP
.nf
.RS
rustica config \-\-out /etc/ssl/openssl\-rustica.cnf
OPENSSL_CONF=/etc/ssl/openssl\-rustica.cnf rustica doctor
cp /etc/ssl/openssl\-rustica.cnf "$(openssl version \-d | cut \-d\(dq \-f2)/openssl.cnf"
.RE
.fi
.PP
Prove that a signature ran on rustica:
.PP
.nf
.RS
rustica stats \-\-reset
openssl dgst \-sha256 \-sign key.pem \-out doc.sig doc.txt
rustica stats
.RE
.fi
.PP
Every service's counters, as root, then the live rates of all of them:
.PP
.nf
.RS
rustica stats \-\-all\-users \-\-sum
rustica stats \-\-sum \-\-watch 2
.RE
.fi
.PP
Feed node_exporter and Prometheus:
.PP
.nf
.RS
systemctl enable \-\-now rustica\-metrics.timer
.RE
.fi
.PP
The workshop matrix, quickly:
.PP
.nf
.RS
rustica lab \-\-sizes 2048 \-\-count 10
.RE
.fi
.SH SEE ALSO
\fBrustica\-provider\fR(7), \fBopenssl\fR(1), \fBconfig\fR(5), \fBprovider\fR(7)
"#;

/// The whole page.
pub fn render() -> std::io::Result<Vec<u8>> {
    let mut cmd = crate::cli::cli();
    cmd.build();
    let version = cmd.get_version().unwrap_or_default().to_string();
    let man = Man::new(cmd.clone());
    let mut page = Vec::new();
    // Written here, not by render_title: it drops the empty date argument,
    // which shifts the source and manual into the wrong fields.
    append(&mut page, &man, render_preamble, false)?;
    writeln!(
        page,
        ".TH RUSTICA 1 \"\" \"rustica {version}\" \"rustica manual\""
    )?;
    for part in [
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ] {
        append(&mut page, &man, part, false)?;
    }
    page.extend_from_slice(b".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let bin_name = format!("rustica {}", sub.get_name());
        writeln!(page, ".SS \"{bin_name}\"")?;
        let sub_man = Man::new(sub.clone().bin_name(&bin_name));
        for part in [
            Man::render_synopsis_section,
            Man::render_description_section,
            Man::render_options_section,
        ] {
            append(&mut page, &sub_man, part, true)?;
        }
    }
    page.extend_from_slice(TRAILER.as_bytes());
    Ok(page)
}

type Part = fn(&Man, &mut dyn Write) -> std::io::Result<()>;

/// Only the quote-character preamble every rendered part starts with.
fn render_preamble(man: &Man, w: &mut dyn Write) -> std::io::Result<()> {
    let mut text = Vec::new();
    man.render_name_section(&mut text)?;
    for line in String::from_utf8_lossy(&text)
        .lines()
        .take_while(|l| !l.starts_with(".SH"))
    {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

/// Appends one rendered part. clap_mangen starts every part with the same
/// two-line quote-character preamble: the page keeps the one before .TH.
/// A subcommand's part loses its `.SH` heading, becoming a paragraph of
/// the subcommand's `.SS`.
fn append(page: &mut Vec<u8>, man: &Man, part: Part, nested: bool) -> std::io::Result<()> {
    let mut text = Vec::new();
    part(man, &mut text)?;
    let text = String::from_utf8_lossy(&text);
    let titled = page.windows(4).any(|w| w == b".TH ");
    for line in text.lines() {
        let preamble = line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
        if preamble && titled {
            continue;
        }
        if nested && line.starts_with(".SH ") {
            page.extend_from_slice(b".PP\n");
            continue;
        }
        writeln!(page, "{line}")?;
    }
    Ok(())
}

/// `rustica man`: the page on stdout.
pub fn print() -> u8 {
    match render().and_then(|page| std::io::stdout().write_all(&page)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rustica man: {e}");
            1
        }
    }
}
