/*
 * An application whose random generator fails (it installed a RAND_METHOD
 * that refuses, as a stand-in for a DRBG in its error state):
 *
 *   rand_failure CONFIG KEY
 *
 * Signs once with PKCS#1 v1.5 (blinding needs private random bytes) and
 * once with PSS (the salt needs public ones), with rustica and with the
 * default provider. Prints "PROVIDER PADDING ok|failed|failed-silently"
 * per signature: an operation that needs random bytes must fail, with an
 * error on the queue, as the default provider's does; rustica must not
 * quietly draw them from a generator of its own.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <stdio.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/opensslv.h>
#include <openssl/rsa.h>

#if OPENSSL_VERSION_MAJOR < 4
static int refuse(unsigned char *buf, int num)
{
    (void)buf;
    (void)num;
    return 0;
}

static int not_ready(void)
{
    return 0;
}

static RAND_METHOD failing = { NULL, refuse, NULL, NULL, refuse, not_ready };

static const char *sign(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *props, int pad)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, props);
    unsigned char md[32], sig[1024];
    size_t siglen = sizeof(sig);
    int ok;

    memset(md, 0x11, sizeof(md));
    ERR_clear_error();
    ok = ctx != NULL && EVP_PKEY_sign_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, pad) == 1
        && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_sign(ctx, sig, &siglen, md, sizeof(md)) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (ok)
        return "ok";
    if (ERR_peek_error() == 0)
        return "failed-silently";
    ERR_print_errors_fp(stderr);
    return "failed";
}

#endif

#if OPENSSL_VERSION_MAJOR >= 4
int main(int argc, char **argv)
{
    /* RAND_METHOD, the stand-in for a failing generator, may be gone. */
    (void)argc;
    (void)argv;
    printf("skip: no RAND_METHOD on OpenSSL %d\n", OPENSSL_VERSION_MAJOR);
    return 0;
}
#else
int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key = NULL;
    BIO *bio;
    const char *provs[] = { "rustica", "default" };
    int i;

    if (argc != 3)
        return 2;

    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1]))
        return 1;
    bio = BIO_new_file(argv[2], "r");
    if (bio != NULL)
        key = PEM_read_bio_PrivateKey_ex(bio, NULL, NULL, NULL, lib, NULL);
    BIO_free(bio);
    if (key == NULL)
        return 1;
    if (!RAND_set_rand_method(&failing))
        return 1;
    for (i = 0; i < 2; i++) {
        char props[32];

        snprintf(props, sizeof(props), "provider=%s", provs[i]);
        printf("%s pkcs1 %s\n", provs[i], sign(lib, key, props, RSA_PKCS1_PADDING));
        printf("%s pss %s\n", provs[i], sign(lib, key, props, RSA_PKCS1_PSS_PADDING));
    }
    RAND_set_rand_method(NULL);
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return 0;
}
#endif
