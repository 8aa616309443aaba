//! A zone transfer (AXFR, RFC 5936) over TCP, as small as the PowerDNS
//! step needs: one query, then the answer's messages read until the
//! closing SOA, counting the records and the RRSIGs among them. PowerDNS
//! signs a zone it serves while it sends it, so the transfer's time is its
//! signer's time.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const TYPE_SOA: u16 = 6;
const TYPE_RRSIG: u16 = 46;
const TYPE_AXFR: u16 = 252;

/// What a transfer carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    pub records: u64,
    pub rrsigs: u64,
    /// SOA records seen: the transfer ends with the second.
    pub soas: u64,
}

/// The AXFR query for `zone` ("lab.example."), with its two-byte length
/// prefix.
pub fn query(zone: &str, id: u16) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend(id.to_be_bytes());
    // Flags 0 (a standard query), one question.
    m.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in zone.trim_end_matches('.').split('.') {
        m.push(label.len() as u8);
        m.extend(label.as_bytes());
    }
    m.push(0);
    m.extend(TYPE_AXFR.to_be_bytes());
    m.extend(1u16.to_be_bytes());
    let mut framed = (m.len() as u16).to_be_bytes().to_vec();
    framed.extend(m);
    framed
}

/// The offset after the name at `i` (labels, or a compression pointer).
fn skip_name(m: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let l = *m.get(i)?;
        match l {
            0 => return Some(i + 1),
            l if l & 0xc0 == 0xc0 => return (i + 2 <= m.len()).then_some(i + 2),
            l if l & 0xc0 == 0 => i += 1 + l as usize,
            _ => return None,
        }
    }
}

fn u16_at(m: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*m.get(i)?, *m.get(i + 1)?]))
}

/// Adds one answer message's records to `t`.
pub fn count_message(m: &[u8], t: &mut Transfer) -> Result<(), String> {
    let bad = || format!("a malformed message of {} bytes", m.len());
    let rcode = m.get(3).ok_or_else(bad)? & 0x0f;
    if rcode != 0 {
        return Err(format!("the server answered rcode {rcode} (5: refused)"));
    }
    let questions = u16_at(m, 4).ok_or_else(bad)?;
    let answers = u16_at(m, 6).ok_or_else(bad)?;
    let mut i = 12;
    for _ in 0..questions {
        i = skip_name(m, i).ok_or_else(bad)? + 4;
    }
    for _ in 0..answers {
        i = skip_name(m, i).ok_or_else(bad)?;
        let rtype = u16_at(m, i).ok_or_else(bad)?;
        let rdlength = u16_at(m, i + 8).ok_or_else(bad)? as usize;
        i += 10 + rdlength;
        if i > m.len() {
            return Err(bad());
        }
        t.records += 1;
        match rtype {
            TYPE_SOA => t.soas += 1,
            TYPE_RRSIG => t.rrsigs += 1,
            _ => {}
        }
    }
    Ok(())
}

/// Transfers `zone` from 127.0.0.1:`port`.
pub fn transfer(port: u16, zone: &str, timeout: Duration) -> Result<Transfer, String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(timeout));
    s.write_all(&query(zone, 0x1ab))
        .map_err(|e| format!("cannot send the AXFR query: {e}"))?;
    let mut t = Transfer::default();
    while t.soas < 2 {
        let mut len = [0u8; 2];
        s.read_exact(&mut len)
            .map_err(|e| format!("the transfer stopped after {} records: {e}", t.records))?;
        let mut m = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut m)
            .map_err(|e| format!("the transfer stopped after {} records: {e}", t.records))?;
        count_message(&m, &mut t)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer to `query`: the question, then SOA, an RRSIG whose owner
    /// is a compression pointer, and SOA again.
    fn answer() -> Vec<u8> {
        let q = query("lab.example.", 7);
        let mut m = q[2..].to_vec();
        m[2] = 0x84; // QR, AA
        m[7] = 3; // three answers
        let rr = |owner: &[u8], rtype: u16, rdata: &[u8]| {
            let mut r = owner.to_vec();
            r.extend(rtype.to_be_bytes());
            r.extend([0, 1, 0, 0, 0x0e, 0x10]);
            r.extend((rdata.len() as u16).to_be_bytes());
            r.extend(rdata);
            r
        };
        m.extend(rr(&[0xc0, 12], TYPE_SOA, &[0; 22]));
        m.extend(rr(&[2, b'h', b'1', 0xc0, 12], TYPE_RRSIG, &[1; 30]));
        m.extend(rr(&[0xc0, 12], TYPE_SOA, &[0; 22]));
        m
    }

    #[test]
    fn the_query_asks_for_the_zone() {
        let q = query("lab.example.", 0x1234);
        assert_eq!(u16::from_be_bytes([q[0], q[1]]) as usize, q.len() - 2);
        assert_eq!(&q[2..4], &[0x12, 0x34]);
        assert_eq!(&q[14..27], b"\x03lab\x07example\x00");
        assert_eq!(&q[27..], &[0, 252, 0, 1]);
    }

    #[test]
    fn records_rrsigs_and_the_closing_soa_are_counted() {
        let mut t = Transfer::default();
        count_message(&answer(), &mut t).unwrap();
        assert_eq!(
            t,
            Transfer {
                records: 3,
                rrsigs: 1,
                soas: 2
            }
        );
        let mut short = answer();
        short.truncate(short.len() - 5);
        assert!(count_message(&short, &mut Transfer::default()).is_err());
        let mut refused = answer();
        refused[3] = 5;
        assert!(count_message(&refused, &mut Transfer::default())
            .unwrap_err()
            .contains("rcode 5"));
    }
}
