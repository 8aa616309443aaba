//! `rustica`: the command that goes with the rustica OpenSSL provider.
//!
//! - `rustica lab`: the workshop's RSA matrix, run through the stock
//!   `openssl` command without (A) and with (B) rustica, validated and
//!   reported (see `lab`).
//! - `rustica stats`: the provider's operation counters (see `stats_cmd`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod lab;
mod stats_cmd;

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
    Lab(lab::LabArgs),
    /// Show (or reset) rustica's operation counters.
    Stats(stats_cmd::StatsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Lab(args) => lab::run(args),
        Command::Stats(args) => stats_cmd::run(args),
    };
    ExitCode::from(code)
}
