//! Signature decoding on hostile encoded messages: PKCS#1 v1.5 type 1
//! (`padding::pkcs1_type1_decode`, checked against a plain reference) and
//! EMSA-PSS verification (`Pss::verify`, with fuzzed key size, digests and
//! salt rule), plus encode/verify round trips. The body is
//! `rustica_fuzz::sig_padding`, so unit tests replay inputs through it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rustica_fuzz::sig_padding(data));
