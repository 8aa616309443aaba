# Sourced by the benchmark scripts and the s390x lane: the openssl.cnf files
# they load (stock OpenSSL, and rustica preferred beside it).
#
#   stock_conf FILE                     only the default provider (side A)
#   rustica_conf FILE MODULE [LINE...]  rustica beside the default provider
#                                       and preferred (?provider=rustica);
#                                       LINEs are extra keys of its section

stock_conf() {
  cat >"$1" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
[default_sect]
activate = 1
CNF
}

rustica_conf() {
  local file=$1 module=$2
  shift 2
  {
    cat <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = evp_properties
[provider_sect]
default = default_sect
rustica = rustica_sect
[default_sect]
activate = 1
[rustica_sect]
module = $module
CNF
    [ $# -gt 0 ] && printf '%s\n' "$@"
    cat <<CNF
activate = 1
[evp_properties]
default_properties = ?provider=rustica
CNF
  } >"$file"
}
