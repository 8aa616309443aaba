/* The OpenSSL headers rustica's FFI is generated from (build.rs runs bindgen
 * over this file, so ids, typedefs and parameter names come from OpenSSL). */
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/err.h>
#include <openssl/rand.h>
