//! The lab's DNS room: what the DNS signers are. Which signer runs at
//! which key size, the zone, BIND's and PowerDNS's programs
//! (`dns_tools`), the DNSSEC and PowerDNS steps of the step table
//! (`dns_steps`) and a zone transfer over TCP (`axfr`).
//!
//! It may use the statistics and plan rooms. The signers' runs need the
//! matrix's runner, so they live in the measure room (`dnssec`, `pdns`),
//! which uses this one.

pub mod axfr;
pub mod dns_steps;
pub mod dns_tools;
