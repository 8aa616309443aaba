# Sourced by the scripts that put the provider module where OpenSSL and the
# `rustica` command look for it (build.sh, test.sh, test-metrics.sh,
# test-openssl.sh, haproxy-common.sh).
#
#   place_module BUILT MODULE   puts a copy of BUILT (cargo's
#                               librustica.so) at MODULE (rustica.so)
#                               by a rename, and only when it differs
#
# Never rewritten in place: a process that has MODULE mapped (a benchmark
# or lab running beside a build) keeps the file it loaded instead of
# reading a truncated or half-written one. The copy's name carries the
# shell's pid, so two scripts placing the same module at once do not
# write into one temporary file.

place_module() {
  local built=$1 module=$2
  cmp -s "$built" "$module" && return 0
  cp -f "$built" "$module.new.$$"
  mv -f "$module.new.$$" "$module"
}
