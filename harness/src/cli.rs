//! The command line's clap definitions: `main` parses them, `manpage` and
//! the completion scripts are generated from them (so neither reaches up
//! into `main`).

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "rustica",
    version,
    about = "RSA for stock OpenSSL 3, offloaded to IBM Z through libica",
    long_about = "RSA for stock OpenSSL 3, offloaded to IBM Z through libica.\n\n\
        rustica is an OpenSSL 3 provider (the module rustica.so) that does RSA key generation, \
        signatures and encryption for unmodified OpenSSL programs, sending modular \
        exponentiation to IBM Z crypto hardware through libica and computing in software \
        where there is none. This command sets it up system-wide (install, config), checks \
        the set-up (doctor), shows rustica's operation counters (stats) and runs the \
        workshop's A/B measurement matrix (lab). The provider's configuration keys are \
        described in rustica-provider(7).",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the workshop's RSA matrix without (A) and with (B) rustica and
    /// prove that B ran on rustica.
    Lab(Box<crate::lab::LabArgs>),
    /// Show (or reset) rustica's operation counters.
    Stats(crate::stats_cmd::StatsArgs),
    /// B/A from samples on standard input, with the lab's 95 % interval and
    /// verdict (the bench scripts use it; docs/lab.md says how).
    Compare(crate::compare_cmd::CompareArgs),
    /// Print an openssl.cnf that loads rustica system-wide, merged into an
    /// existing one.
    Config(crate::config_cmd::ConfigArgs),
    /// Put rustica.so where OpenSSL loads provider modules from.
    Install(crate::install_cmd::InstallArgs),
    /// Check an installed set-up end to end and say what is wrong.
    Doctor(crate::doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the rustica(1) manual page (roff), generated from this
    /// command's own help; the package build uses it.
    #[command(hide = true)]
    Man,
}

/// The command's definition, for the manual page and completion.
pub fn cli() -> clap::Command {
    Cli::command()
}
