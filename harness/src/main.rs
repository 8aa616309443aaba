//! `rustica`: the command that goes with the rustica OpenSSL provider.
//!
//! - `rustica lab`: the workshop's RSA matrix, run through the stock
//!   `openssl` command without (A) and with (B) rustica, validated and
//!   reported (see `lab`).
//! - `rustica stats`: the provider's operation counters (see `stats_cmd`).
//! - `rustica config`, `install`, `doctor`: system-wide set-up (see
//!   `config_cmd`, `install_cmd`, `doctor`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod config_cmd;
mod doctor;
mod install_cmd;
mod lab;
mod stats_cmd;
mod sysconf;
mod system;

#[derive(Parser, Debug)]
#[command(
    name = "rustica",
    version,
    about = "rustica: RSA for stock OpenSSL 3, offloaded to IBM Z through libica",
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
    /// Print an openssl.cnf that loads rustica system-wide, merged into an
    /// existing one.
    Config(config_cmd::ConfigArgs),
    /// Put rustica.so where OpenSSL loads provider modules from.
    Install(install_cmd::InstallArgs),
    /// Check an installed set-up end to end and say what is wrong.
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Lab(args) => lab::run(*args),
        Command::Stats(args) => stats_cmd::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Install(args) => install_cmd::run(args),
        Command::Doctor(args) => doctor::run(args),
    };
    ExitCode::from(code)
}
