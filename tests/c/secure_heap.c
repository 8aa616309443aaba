/*
 * Private key parts in OpenSSL's secure heap:
 *
 *   secure_heap CONFIG PROVIDER KEY.pem
 *
 * Sets up a 256 KiB secure heap (CRYPTO_secure_malloc_init) before
 * anything else, loads CONFIG (the default provider and rustica) into a
 * library context, makes its random generators, then on PROVIDER only ("rustica" or "default"): imports
 * the parts of KEY.pem (EVP_PKEY_fromdata), generates a 2048-bit key, signs
 * once with each, and frees both. Prints, one per line:
 *
 *   heap=1                  the secure heap is set up
 *   import held=N           secure bytes the imported key holds
 *   keygen held=N           secure bytes the generated key holds
 *   sign ok=1               both keys signed
 *   sign held=N             secure bytes the keys hold more after signing
 *                           (on libica: the parts in libica's layout)
 *   left=N                  secure bytes still in use after freeing both,
 *                           relative to before the import
 */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

static int sign_once(OSSL_LIB_CTX *lib, const char *propq, EVP_PKEY *key)
{
    static const unsigned char msg[] = "secure heap";
    unsigned char sig[1024];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL
        && EVP_DigestSignInit_ex(md, NULL, "SHA256", lib, propq, key, NULL) == 1
        && EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) == 1;

    EVP_MD_CTX_free(md);
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *ref = NULL, *imported = NULL, *generated = NULL;
    EVP_PKEY_CTX *ctx;
    OSSL_PARAM *params = NULL;
    char propq[64];
    size_t start, before, ok;
    FILE *f;

    if (argc != 4) {
        fprintf(stderr, "usage: secure_heap CONFIG PROVIDER KEY.pem\n");
        return 2;
    }
    if (CRYPTO_secure_malloc_init(256 * 1024, 32) != 1) {
        fprintf(stderr, "secure_heap: CRYPTO_secure_malloc_init failed\n");
        return 1;
    }
    printf("heap=%d\n", CRYPTO_secure_malloc_initialized());
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    snprintf(propq, sizeof(propq), "provider=%s", argv[2]);
    f = fopen(argv[3], "r");
    if (f == NULL
        || (ref = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, "provider=default")) == NULL
        || EVP_PKEY_todata(ref, EVP_PKEY_KEYPAIR, &params) != 1) {
        fprintf(stderr, "secure_heap: cannot read %s\n", argv[3]);
        ERR_print_errors_fp(stderr);
        return 1;
    }
    fclose(f);

    /* The context's DRBGs live in the secure heap too: made now, before
     * the counting starts. */
    {
        unsigned char warm[16];

        if (RAND_bytes_ex(lib, warm, sizeof(warm), 0) != 1
            || RAND_priv_bytes_ex(lib, warm, sizeof(warm), 0) != 1)
            return 1;
    }
    start = before = CRYPTO_secure_used();
    ctx = EVP_PKEY_CTX_new_from_name(lib, "RSA", propq);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &imported, EVP_PKEY_KEYPAIR, params) != 1) {
        fprintf(stderr, "secure_heap: import failed\n");
        ERR_print_errors_fp(stderr);
        return 1;
    }
    EVP_PKEY_CTX_free(ctx);
    printf("import held=%zu\n", CRYPTO_secure_used() - before);

    before = CRYPTO_secure_used();
    ctx = EVP_PKEY_CTX_new_from_name(lib, "RSA", propq);
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) != 1
        || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048) != 1
        || EVP_PKEY_generate(ctx, &generated) != 1) {
        fprintf(stderr, "secure_heap: key generation failed\n");
        ERR_print_errors_fp(stderr);
        return 1;
    }
    EVP_PKEY_CTX_free(ctx);
    printf("keygen held=%zu\n", CRYPTO_secure_used() - before);

    before = CRYPTO_secure_used();
    ok = sign_once(lib, propq, imported) && sign_once(lib, propq, generated);
    printf("sign ok=%d\n", (int)ok);
    printf("sign held=%zd\n", (ssize_t)(CRYPTO_secure_used() - before));
    ERR_print_errors_fp(stderr);
    EVP_PKEY_free(imported);
    EVP_PKEY_free(generated);
    printf("left=%zd\n", (ssize_t)(CRYPTO_secure_used() - start));

    OSSL_PARAM_free(params);
    EVP_PKEY_free(ref);
    OSSL_LIB_CTX_free(lib);
    return 0;
}
