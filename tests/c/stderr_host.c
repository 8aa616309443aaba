/*
 * A host program for rustica's writes to its file descriptor 2. Unlike the
 * openssl command (which ignores SIGPIPE), it leaves SIGPIPE at its default
 * action, as a C daemon may: a write to a pipe without reader kills it.
 *
 *   stderr_host CONFIG load    loads CONFIG into a library context
 *   stderr_host CONFIG sign    then generates a 1024-bit key and signs
 *                              once with rustica
 *   stderr_host CONFIG panic   then asks rustica for the parameter its
 *                              debug builds panic on
 *
 * Prints on stdout (never on stderr): "loaded=R" (what
 * OSSL_LIB_CTX_load_config returned), then "signed=1" or "signed=0", or
 * "panic caught=1 error=TEXT" (the call failed and left TEXT on the error
 * queue) or "panic caught=0".
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static int sign(OSSL_LIB_CTX *lib)
{
    static const unsigned char msg[] = "fd 2";
    unsigned char sig[512];
    size_t siglen = sizeof(sig);
    EVP_PKEY_CTX *gen = EVP_PKEY_CTX_new_from_name(lib, "RSA", "provider=rustica");
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = gen != NULL && md != NULL && EVP_PKEY_keygen_init(gen) == 1
        && EVP_PKEY_CTX_set_rsa_keygen_bits(gen, 1024) == 1
        && EVP_PKEY_generate(gen, &key) == 1
        && EVP_DigestSignInit_ex(md, NULL, "SHA256", lib, "provider=rustica", key, NULL) == 1
        && EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) == 1;

    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(gen);
    return ok;
}

static void panic(OSSL_LIB_CTX *lib)
{
    OSSL_PROVIDER *prov = OSSL_PROVIDER_try_load(lib, "rustica", 1);
    int value = 0;
    OSSL_PARAM params[2];
    const char *data = "";
    int flags = 0;
    unsigned long e;

    params[0] = OSSL_PARAM_construct_int("rustica-test-panic", &value);
    params[1] = OSSL_PARAM_construct_end();
    if (prov == NULL || OSSL_PROVIDER_get_params(prov, params) == 1) {
        printf("panic caught=0\n");
        return;
    }
    e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags);
    printf("panic caught=%d error=%s\n", e != 0,
           (flags & ERR_TXT_STRING) != 0 && data != NULL ? data : "");
    OSSL_PROVIDER_unload(prov);
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    int loaded;

    if (argc != 3) {
        printf("usage: stderr_host CONFIG load|sign|panic\n");
        return 2;
    }
    signal(SIGPIPE, SIG_DFL);
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL)
        return 1;
    loaded = OSSL_LIB_CTX_load_config(lib, argv[1]);
    printf("loaded=%d\n", loaded);
    fflush(stdout);
    if (strcmp(argv[2], "sign") == 0)
        printf("signed=%d\n", sign(lib));
    else if (strcmp(argv[2], "panic") == 0)
        panic(lib);
    ERR_clear_error();
    OSSL_LIB_CTX_free(lib);
    return 0;
}
