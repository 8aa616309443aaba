//! `rustica`: the command that goes with the rustica OpenSSL provider.
//!
//! - `rustica lab`: the workshop's RSA matrix, run through the stock
//!   `openssl` command without (A) and with (B) rustica, validated and
//!   reported (see `lab`).
//! - `rustica stats`: the provider's operation counters (see `stats_cmd`).
//! - `rustica compare`: B/A with the lab's interval and verdict for samples
//!   a bench script took (see `compare_cmd`).
//! - `rustica config`, `install`, `doctor`: system-wide set-up (see
//!   `config_cmd`, `install_cmd`, `doctor`).
//! - `rustica completions SHELL`, and the hidden `rustica man`: shell
//!   completion and the rustica(1) page, both generated from these clap
//!   definitions (see `manpage`).

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

mod compare_cmd;
mod config_cmd;
mod doctor;
mod install_cmd;
mod lab;
mod manpage;
mod paths;
mod safe_fs;
mod stats_cmd;
mod sysconf;
mod system;
mod utc;

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
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the workshop's RSA matrix without (A) and with (B) rustica and
    /// prove that B ran on rustica.
    Lab(Box<lab::LabArgs>),
    /// Show (or reset) rustica's operation counters.
    Stats(stats_cmd::StatsArgs),
    /// B/A from samples on standard input, with the lab's 95 % interval and
    /// verdict (the bench scripts use it; docs/lab.md says how).
    Compare(compare_cmd::CompareArgs),
    /// Print an openssl.cnf that loads rustica system-wide, merged into an
    /// existing one.
    Config(config_cmd::ConfigArgs),
    /// Put rustica.so where OpenSSL loads provider modules from.
    Install(install_cmd::InstallArgs),
    /// Check an installed set-up end to end and say what is wrong.
    Doctor(doctor::DoctorArgs),
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

fn main() -> ExitCode {
    let args = Cli::parse();
    let code = match args.command {
        Command::Lab(args) => lab::run(*args),
        Command::Stats(args) => stats_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Install(args) => install_cmd::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut cli(), "rustica", &mut std::io::stdout());
            0
        }
        Command::Man => manpage::print(),
    };
    ExitCode::from(code)
}
